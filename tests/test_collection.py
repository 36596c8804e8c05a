"""Collecting the suite imports no heavy framework, so `pytest -k x` and a CI shard start in seconds.

Collection once took 55-80 s of wall time on a loaded machine: test modules imported torch, spaCy/medspacy and scipy
at module level (directly, or through a rexrank module that did), each test process paying for every one of them
before running a single test. A test that needs such a framework imports it in its body or in a fixture.

The check collects the whole suite in a fresh interpreter (as `pytest --collect-only` does) and names, for each
guarded framework present afterwards, the test module whose import brought it in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# Frameworks that cost a second or more to import; pandas, numpy and `datasets` are what the modules under test
# import themselves (the data stage, the per-study tables), so they are not guarded.
HEAVY_AT_COLLECTION = ("torch", "transformers", "spacy", "medspacy", "nltk", "gradio", "scipy", "sklearn",
                       "playwright", "evaluate")
# Printed by the collecting process before its JSON line, so that pytest's own output cannot be mistaken for it.
_MARK = "COLLECTION-IMPORTS "


class _Attribution:
    """Pytest plugin: which guarded frameworks first appear in sys.modules while each test module is collected."""

    def __init__(self):
        self.started: dict[str, set[str]] = {}
        self.brought: dict[str, list[str]] = {}
        self.modules = 0

    @staticmethod
    def _present() -> set[str]:
        return {name for name in HEAVY_AT_COLLECTION if name in sys.modules}

    def pytest_collectstart(self, collector):
        if isinstance(collector, pytest.Module):
            self.started[collector.nodeid] = self._present()

    def pytest_collectreport(self, report):
        before = self.started.pop(report.nodeid, None)
        if before is None:
            return
        self.modules += 1
        new = sorted(self._present() - before)
        if new:
            self.brought[report.nodeid] = new

    def pytest_collection_finish(self, session):
        # Whatever no test module brought in came with conftest.py or a plugin, loaded before collection.
        unattributed = sorted(self._present() - {n for names in self.brought.values() for n in names})
        if unattributed:
            self.brought["tests/conftest.py or a pytest plugin"] = unattributed


def collect_and_report() -> None:
    """Run in a fresh interpreter: collect tests/ quietly, then print the attribution as one marked JSON line."""
    plugin = _Attribution()
    pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", str(TESTS)], plugins=[plugin])
    print(_MARK + json.dumps({"modules": plugin.modules, "brought": plugin.brought}))


@pytest.mark.slow
def test_collecting_the_suite_imports_no_heavy_framework():
    """Each test module imports torch, transformers, spaCy, medspacy, gradio, scipy... inside the tests or fixtures
    that use them, never at module level (a module-level import runs for every collection of the suite)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"}
    code = f"import sys; sys.path.insert(0, {str(TESTS)!r}); import test_collection; test_collection.collect_and_report()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600,
                          cwd=TESTS.parent)
    lines = [line for line in done.stdout.splitlines() if line.startswith(_MARK)]
    assert lines, f"the collecting process printed no report:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    report = json.loads(lines[-1][len(_MARK):])
    assert report["modules"] > 50, report  # the whole suite was collected, not an empty folder
    problems = [f"{module} imports {', '.join(names)} at collection: import it in the tests or fixtures that use it"
                for module, names in sorted(report["brought"].items())]
    assert not problems, "\n".join(problems)
