"""The fast tier's rule and the times of every run (issue 51 points 1-2), on a suite of its own: tests/conftest.py
copied beside a few tests with the limits lowered (0.3 s of CPU, 6 s of wall), run by pytest in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

SUITE = '''
import os, subprocess, sys, time
import pytest

BURN = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.6: pass"


def burn():
    exec(BURN)


@pytest.fixture(scope="session")
def shared():
    burn()


def test_cheap():
    pass


def test_burns():
    burn()


def test_at_the_edge():  # over the 0.3 s limit, under the full run's tolerance of 1.5x (0.45 s)
    t = time.process_time()
    while time.process_time() - t < 0.36:
        pass


@pytest.mark.slow
def test_burns_but_is_marked_slow():
    burn()


def test_child_burns():
    subprocess.run([sys.executable, "-c", BURN], check=True)


def test_first_import_is_shared():
    import heavy_module  # burns at import: paid once per process, whichever test comes first


def test_session_fixture_is_shared(shared):
    pass


def test_waits():
    time.sleep(6.5)


SERVER = []


def test_starts_a_server():
    SERVER.append(subprocess.Popen([sys.executable, "-c", BURN + "\\ntime.sleep(60)"]))
    time.sleep(1.2)


def test_reaps_the_server():
    SERVER[0].kill()
    SERVER[0].wait()


def test_uses_the_reference_venv(ref_python, request):
    assert request.node.get_closest_marker("refvenv")
'''


@pytest.mark.slow  # ~4 s of CPU: a pytest subprocess whose tests burn CPU on purpose
def test_the_rule_counts_a_tests_own_cpu_and_every_run_prints_its_times(tmp_path):
    conftest = (TESTS / "conftest.py").read_text()
    lowered = conftest.replace("CPU_LIMIT_S = 2.0", "CPU_LIMIT_S = 0.3").replace("WALL_LIMIT_S = 60.0",
                                                                                "WALL_LIMIT_S = 6.0")
    assert "CPU_LIMIT_S = 0.3" in lowered and "WALL_LIMIT_S = 6.0" in lowered
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(lowered)
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: x\n    refvenv: x\n    browser: x\n")
    (suite / "test_suite.py").write_text(textwrap.dedent(SUITE))
    (suite / "heavy_module.py").write_text("import time\nt = time.process_time()\n"
                                           "while time.process_time() - t < 0.6: pass\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"REXRANK_REF_PYTHON": sys.executable}

    def run(*options):
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
                               str(suite), *options, str(suite)], cwd=suite, env=env, capture_output=True, text=True,
                              timeout=300)
        return proc.stdout + proc.stderr

    out = run()  # every tier, as CI runs it
    failed = set(re.findall(r"^FAILED \S+::(\w+)", out, re.M))
    assert failed == {"test_burns", "test_child_burns", "test_waits"}, out
    assert re.search(r"test_burns took 0\.\d s of CPU and \d+\.\d s of wall time \(its own setup and body\), over the "
                     r"fast tier's 0\.3 s of CPU or 6 s of wall: mark it @pytest\.mark\.slow", out), out
    assert "passed" in out and "8 passed" in out, out
    # at the edge: the full run lists it and passes it; the fast tier's own run fails it
    assert re.search(r"within this run's tolerance \(x1\.5\).*\n +0\.\d\d s CPU  test_suite\.py::test_at_the_edge",
                     out), out
    fast = run("-m", "not slow and not browser and not refvenv")
    assert set(re.findall(r"^FAILED \S+::(\w+)", fast, re.M)) == {"test_burns", "test_child_burns", "test_waits",
                                                                  "test_at_the_edge"}, fast
    # the times of the run: each file's total and the tests with the most CPU of their own, with their tier
    assert "time per test file" in out and re.search(r"s wall +\d+\.\d s CPU +11 tests +test_suite\.py", out), out
    # each tier's wall: test_waits alone puts over 6 s in the fast tier; the slow test's 0.6 s burn in slow
    tiers = dict((t, float(w)) for t, w in re.findall(r"(fast|slow|refvenv) (\d+\.\d) s", out.split("wall by tier:")[1]
                                                                                   .splitlines()[0]))
    assert tiers["fast"] > 6.0 and tiers["slow"] >= 0.5 and set(tiers) == {"fast", "slow", "refvenv"}, out
    assert re.search(r"\d\.\d\d s CPU  slow +test_suite\.py::test_burns_but_is_marked_slow", out), out
    assert re.search(r"\d\.\d\d s CPU  refvenv +test_suite\.py::test_uses_the_reference_venv", out), out
