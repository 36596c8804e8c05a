"""Shared fixtures: offline mode, stand-in models, the reference virtualenv and the ../shared data.

CI rule: with CI set (1/true/yes; `.ci/run` sets it), a missing prerequisite (../shared, .venv-ref, medspacy,
Chromium, an optional module) fails the run instead of skipping: every skip - pytest.skip, importorskip at module
or test level, a skip marker - is turned into a failure by the two hooks below, except the reasons listed in
CI_ALLOWED_SKIPS. Without CI, the same tests skip and say why.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# Skips that are the right outcome in CI too (the condition is not a missing prerequisite).
CI_ALLOWED_SKIPS = ("vllm is installed here",)


def skip_unless_ci(reason: str) -> None:
    """Skip with ``reason`` locally; in CI fail with it (a missing prerequisite must not pass silently)."""
    if IN_CI:
        pytest.fail(f"{reason} [CI is set: a missing prerequisite fails the run]", pytrace=False)
    pytest.skip(reason)


def needs_module(name: str, reason: str):
    """Skip marker for tests that need the optional package ``name`` (a failure in CI, like every skip).

    The package is looked up, not imported: importing medspacy (spaCy, nltk) or torch at collection would cost every
    run of the suite seconds (tests/test_collection.py keeps collection free of them).
    """
    return pytest.mark.skipif(importlib.util.find_spec(name) is None, reason=reason)


NEEDS_MEDSPACY = needs_module("medspacy", "RaTEScore needs the optional medspacy dependency")


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def _fail_skip_in_ci(report) -> None:
    if not IN_CI or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    if any(allowed in reason for allowed in CI_ALLOWED_SKIPS):
        return
    report.outcome = "failed"
    report.longrepr = f"skipped with CI set, which fails the run: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_skip_in_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A module-level pytest.importorskip (e.g. medspacy) skips at collection: in CI that is a collection error."""
    outcome = yield
    _fail_skip_in_ci(outcome.get_result())


def _shared_dir() -> Path | None:
    for candidate in (os.environ.get("REXRANK_SHARED"), REPO.parent / "shared", REPO / "shared"):
        if candidate and (Path(candidate) / "data").is_dir():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared (real IU-Xray JSON, manifests, published tables). Absent: tests using it skip (fail in CI)."""
    found = _shared_dir()
    if found is None:
        skip_unless_ci("../shared (with data/) is not present beside this checkout; set REXRANK_SHARED to its path")
    return found


@pytest.fixture(scope="session")
def iu_xray_test(shared_dir) -> dict:
    return json.loads((shared_dir / "data" / "iu_xray" / "ReXRank_IUXray_test.json").read_text())


@pytest.fixture(scope="session")
def standins(tmp_path_factory):
    """standins(name) -> {key: path}: build one stand-in family once per test session (small size, seed 0)."""
    from rexrank.testing import standins as builder

    root = tmp_path_factory.mktemp("standins")
    built: dict[str, dict[str, str]] = {}

    def get(name: str) -> dict[str, str]:
        if name not in built:
            built[name] = builder.build(root / name, "small", [name], seed=0)
        return built[name]

    return get


def _ref_python() -> Path | None:
    explicit = os.environ.get("REXRANK_REF_PYTHON")
    candidate = Path(explicit) if explicit else REPO / ".venv-ref" / "bin" / "python"
    return candidate if candidate.exists() else None


def meteor_jar_path() -> Path | None:
    """pycocoevalcap's meteor-1.5.jar in the reference virtualenv (scripts/setup_ref.sh installs it), or None."""
    python = _ref_python()
    found = sorted(python.parents[1].glob("lib/python*/site-packages/pycocoevalcap/meteor/meteor-1.5.jar")) if python else []
    return found[0] if found else None


def require_meteor() -> Path:
    """The jar, with java on PATH; otherwise a skip (a failure in CI)."""
    import shutil

    jar = meteor_jar_path()
    if jar is None:
        skip_unless_ci("pycocoevalcap's meteor-1.5.jar is not in .venv-ref: `make test` installs it (scripts/setup_ref.sh)")
    if shutil.which("java") is None:
        skip_unless_ci("METEOR needs java: `make test` installs it (scripts/setup_java.sh)")
    return jar


@pytest.fixture(scope="session")
def ref_python() -> Path:
    """The reference virtualenv's interpreter (scripts/setup_ref.sh). In CI its absence is a failure, not a skip."""
    found = _ref_python()
    if found is None:
        skip_unless_ci("reference virtualenv .venv-ref not found: `make test` creates it (scripts/setup_ref.sh)")
    return found


@pytest.fixture(scope="session")
def run_reference(ref_python):
    """run_reference(script, payload) -> JSON result: runs tests/reference/<script> in .venv-ref.

    The payload goes in as JSON on stdin and the script prints one JSON document on stdout.
    """

    def run(script: str, payload, timeout: float = 1200):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "2"))
        proc = subprocess.run([str(ref_python), str(REPO / "tests" / "reference" / script)],
                              input=json.dumps(payload), capture_output=True, text=True, timeout=timeout, env=env)
        if proc.returncode != 0:
            raise AssertionError(f"reference script {script} failed:\n{proc.stderr[-4000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    return run


@pytest.fixture
def cli(monkeypatch):
    """cli(*args) -> (exit_code, stdout+stderr) running `rexrank` in-process."""
    import contextlib
    import io

    from rexrank.cli import main

    def run(*args: str):

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return code, out.getvalue() + err.getvalue()

    return run


# -- the evaluation harness's tests ------------------------------------------------------------------------------------
@pytest.fixture
def fake_metrics():
    """The fake metrics of tests/evaluation_fakes.py registered for one test (the registry restored after it)."""
    import evaluation_fakes

    with evaluation_fakes.registered():
        yield


# -- the leaderboard's tests ------------------------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path):
    """An empty leaderboard store (files of its own under tmp_path), closed afterwards."""
    from rexrank.leaderboard.store import Store

    s = Store(tmp_path / "board.sqlite")
    yield s
    s.close()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for a module's page tests (``leaderboard_helpers.chromium``)."""
    from leaderboard_helpers import chromium

    with chromium() as b:
        yield b
