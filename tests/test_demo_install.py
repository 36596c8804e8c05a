"""The README's metric tables and `make demo`'s install agree (issue 29 point 9): a metric listed without a note runs
in the venv `make demo` builds (`scripts/setup.sh`'s extras; the suite runs in that same `.venv`), and a metric that
needs more says so in its row, with the commands to add it in the README's "The two commands".

METEOR was listed as if `make demo` gave it, but its meteor-1.5.jar comes from pycocoevalcap (the `meteor` extra,
not installed by setup.sh) and it needs Java (`make setup-java`, installed for `make test` only).
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from rexrank.metrics import REGISTRY, meteor

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
EXTRAS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
NOT_IN_DEMO = "not in `make demo`'s install"


def _setup_extras() -> set[str]:
    """The extras scripts/setup.sh (make setup, run by make demo) installs rexrank with."""
    found = re.findall(r'-e "\.\[([\w,]+)\]"', (REPO / "scripts" / "setup.sh").read_text())
    assert len(found) == 1, found
    return set(found[0].split(","))


def _installed(extra: str) -> bool:
    for line in EXTRAS[extra]:
        try:
            metadata.version(Requirement(line).name)
        except metadata.PackageNotFoundError:
            return False
    return True


def _metric_rows() -> dict[str, str]:
    """Registry name -> the README table row that lists it (the first backticked name of the row's second cell)."""
    rows = {}
    for line in README.splitlines():
        cells = line.split(" | ")
        if line.startswith("| ") and len(cells) >= 3:
            names = re.findall(r"`([\w.-]+)`", cells[1])
            if names and names[0] in REGISTRY.names():
                rows[names[0]] = line
    return rows


def test_each_listed_metric_runs_in_the_demo_install_or_its_row_says_what_it_needs():
    rows = _metric_rows()
    assert {"bleu2", "ratescore", "nlg", "meteor"} <= set(rows)  # the parse finds both tables
    demo = _setup_extras()
    for name, row in rows.items():
        REGISTRY.cls(name)  # its code imports with the demo's packages
        named = set(re.findall(r"`rexrank\[(\w+)\]`", row))
        assert named <= set(EXTRAS), (name, named)
        missing = {extra for extra in named if extra not in demo and not _installed(extra)}
        assert (NOT_IN_DEMO in row) == bool(missing), (name, row)
        for extra in missing:  # the README shows how to add it
            assert f"-e '.[{extra}]'" in README, extra


def test_meteor_needs_what_its_row_says():
    """The demo's venv has no meteor-1.5.jar (pycocoevalcap is not among setup.sh's extras), so METEOR's row must
    name the extra, and the README its commands: Java's make target and the install line."""
    assert "meteor" not in _setup_extras() and meteor.default_jar() is None
    row = _metric_rows()["meteor"]
    assert NOT_IN_DEMO in row and "`rexrank[meteor]`" in row and "Java" in row
    assert "make setup-java && .venv/bin/pip install -c constraints.txt -e '.[meteor]'" in README
    assert re.search(r"^setup-java:", (REPO / "Makefile").read_text(), re.M)
