"""The install lock (constraints.txt, written by scripts/lock.sh): every direct dependency is pinned, the pins satisfy
pyproject's bounds, and the environment the suite runs in is the locked one (unless REXRANK_UNLOCKED=1 asked for the
newest releases)."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]


def _pins(path: Path) -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep, f"{path.name}: {line!r} is not an exact pin"
        pins[canonicalize_name(name)] = Version(version)
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in ("dev", "space", "ratescore"):
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return reqs


def test_every_direct_dependency_is_pinned_within_its_bounds():
    pins = _pins(REPO / "constraints.txt")
    for req in _requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in constraints.txt: run scripts/lock.sh"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject's {req.specifier}"


def test_reference_lock_pins_the_reference_packages():
    pins = _pins(REPO / "tests" / "reference" / "constraints.txt")
    for line in (REPO / "tests" / "reference" / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            assert canonicalize_name(req.name) in pins, f"{req.name} missing from tests/reference/constraints.txt"
            assert req.specifier.contains(pins[canonicalize_name(req.name)], prereleases=True)


def test_the_suite_runs_on_the_locked_stack():
    if os.environ.get("REXRANK_UNLOCKED") == "1":
        return  # asked for the newest releases: the lock is what this run is checking against, not a promise
    pins = _pins(REPO / "constraints.txt")
    drift = []
    for req in _requirements():
        name = canonicalize_name(req.name)
        installed = Version(metadata.version(req.name))
        if Version(installed.base_version) != pins[name] and installed != pins[name]:
            drift.append(f"{req.name} {installed} (locked {pins[name]})")
    assert not drift, "installed versions differ from constraints.txt: " + ", ".join(drift) + \
        ". Run `make setup` (or scripts/lock.sh if you meant to move the lock)"


def test_setup_scripts_install_through_the_locks():
    setup = (REPO / "scripts" / "setup.sh").read_text()
    ref = (REPO / "scripts" / "setup_ref.sh").read_text()
    assert re.search(r"-c constraints\.txt", setup) and "REXRANK_UNLOCKED" in setup
    assert re.search(r"-c tests/reference/constraints\.txt", ref) and "REXRANK_UNLOCKED" in ref


def test_setup_step_prints_signs_of_life(tmp_path):
    """A long install step says what it installs, prints a line per interval while it runs, and how long it took."""
    script = tmp_path / "t.sh"
    script.write_text(f'source {REPO / "scripts" / "steps.sh"}\nstep "waiting on a slow thing" sleep 1.3\n'
                      'step "a failing thing" false\n')
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "REXRANK_PROGRESS_INTERVAL_S": "0.4"})
    lines = proc.stdout.splitlines()
    assert lines[0] == "setup: waiting on a slow thing ..."
    assert sum("still waiting on a slow thing" in line for line in lines) >= 2
    assert any(line.startswith("setup: done: waiting on a slow thing") for line in lines)
    assert proc.returncode == 1 and "setup: FAILED: a failing thing (exit 1)" in proc.stderr
