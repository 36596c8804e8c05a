"""Shared fixtures: offline mode, stand-in models, the reference virtualenv and the ../shared data.

CI rule: with CI set (1/true/yes; `.ci/run` sets it), a missing prerequisite (../shared, .venv-ref, medspacy,
Chromium, an optional module) fails the run instead of skipping: every skip - pytest.skip, importorskip at module
or test level, a skip marker - is turned into a failure by the two hooks below, except the reasons listed in
CI_ALLOWED_SKIPS. Without CI, the same tests skip and say why.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# torch's OpenMP threads otherwise spin while they wait for work (GOMP's default), burning CPU that belongs to no one:
# on a busy machine it took from the other processes and made a 0.2 s test read 10-12 s of CPU (issue 51). Passive
# waiting changes no number (how idle threads wait, not how work is split); it must be set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

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


# -- the fast tier's time rule and the times of every run --------------------------------------------------------------
# A test outside these markers is in the fast tier (`make test-fast`) and must stay cheap (tests/README.md, "Tiers").
TIER_MARKERS = ("slow", "browser", "refvenv")
# Its own CPU time (this process's, threads included, plus the subprocesses it waited for): what the test costs, the
# same on a quiet machine and a busy one, so the rule cannot make the suite flaky under load.
CPU_LIMIT_S = 2.0
# Wall time only catches waiting (sleeps, timeouts, a server that never answers), which CPU time does not see. It is
# generous on purpose: at the load seen in CI (up to ~21 on 2 cores) a test at the CPU limit takes ~20 s of wall.
WALL_LIMIT_S = 60.0
# CPU time still grows under load (shared caches, hyper-threads): CI's full run saw a test measured at 1.6 s on the
# fast tier read 2.2 s. `make test-fast`, the tier's own run, holds the rule at CPU_LIMIT_S; a run of every tier (what
# CI lands on) fails a test only past this factor and lists the ones between in its summary, so noise at the edge
# cannot refuse a landing while a test that really grew still does.
FULL_RUN_TOLERANCE = 1.5
_STRICT = [True]  # set per run in pytest_configure: is this the fast tier's own run?


def _cpu_now() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


# CPU and wall seconds of shared work (fixtures wider than a test, stand-ins built for the session) inside the
# current test's phases: paid once, they are not charged to whichever test happens to run first, so a clean run
# and a warm one agree.
_SHARED = [0.0, 0.0]
_SHARED_DEPTH = [0]
_OWN_KEY = pytest.StashKey[list]()


@contextlib.contextmanager
def shared_cost():
    """Time spent inside is the suite's shared cost, not the running test's own."""
    _SHARED_DEPTH[0] += 1
    cpu, wall = _cpu_now(), time.perf_counter()
    try:
        yield
    finally:
        _SHARED_DEPTH[0] -= 1
        if _SHARED_DEPTH[0] == 0:  # nested shared work is inside the outer one's time already
            _SHARED[0] += _cpu_now() - cpu
            _SHARED[1] += time.perf_counter() - wall


class _FirstImports(importlib.abc.MetaPathFinder):
    """Times every module's first import as shared work: torch, gradio or pandas cost seconds to import once per
    process, and whichever test imports them first would otherwise be charged, so running one file alone and the
    whole suite would disagree. Only per-module file loaders are wrapped (a shared loader would be wrapped twice)."""

    def __init__(self) -> None:
        self._looking: set[str] = set()

    def find_spec(self, fullname, path, target=None):
        if fullname in self._looking:
            return None
        self._looking.add(fullname)
        try:
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None) if finder is not self else None
                spec = find(fullname, path, target) if find else None
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._looking.discard(fullname)
        loader = spec.loader
        per_module = (importlib.abc.FileLoader, importlib.machinery.ExtensionFileLoader)
        if isinstance(loader, per_module) and "exec_module" not in vars(loader):
            run = loader.exec_module

            def exec_module(module):
                with shared_cost():
                    run(module)

            loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _FirstImports())


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    if fixturedef.scope == "function":
        yield
        return
    with shared_cost():
        yield


_TICK_S = 1 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


def _children_cpu() -> dict[int, float]:
    """CPU used so far by each live child of this process (with the children it reaped), read from Linux's /proc
    (each thread's ``children`` list, then the child's ``stat``): ~50 us, where psutil scans every process. Elsewhere
    an empty answer (no correction)."""
    used = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return used
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as listing:
                pids = listing.read().split()
        except OSError:
            continue
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as stat_file:
                    fields = stat_file.read().rpartition(")")[2].split()
                used[int(pid)] = sum(int(f) for f in fields[11:15]) * _TICK_S  # utime stime cutime cstime
            except (OSError, ValueError):
                continue
    return used


def _reaped_before(alive: dict[int, float]) -> float:
    """CPU that children alive at a phase's start had used before it, for those reaped since: RUSAGE_CHILDREN counts
    a child's whole life when it is reaped, so a server started by an earlier test and reaped in this one would
    charge this test with its past."""
    if not alive:
        return 0.0
    still = _children_cpu()  # a zombie is still listed: not reaped yet, not in RUSAGE_CHILDREN yet
    return sum(used for pid, used in alive.items() if pid not in still)


def _own_time(item):
    """Run one phase (a generator hook's yield) and add its time, less shared work, to the test's own."""
    _SHARED[:] = [0.0, 0.0]
    alive = _children_cpu()
    cpu, wall = _cpu_now(), time.perf_counter()
    yield
    own = item.stash.setdefault(_OWN_KEY, [0.0, 0.0])
    own[0] += max(0.0, _cpu_now() - cpu - _SHARED[0] - _reaped_before(alive))
    own[1] += time.perf_counter() - wall - _SHARED[1]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item.stash[_OWN_KEY] = [0.0, 0.0]
    yield from _own_time(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _own_time(item)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    """A test that runs the reference virtualenv (the ``ref_python`` fixture, directly or through ``run_reference``)
    or belongs to a parity class (``parity.ParityTester``: its other tests share the class's heavy fixtures, the
    model's outputs on the compared inputs) is ``refvenv``, marked or not: the marker cannot drift from what the test
    needs, and the fast tier never pays for a parity class's setup."""
    for item in items:
        cls = getattr(item, "cls", None)
        parity = cls is not None and any(base.__name__ == "ParityTester" for base in cls.__mro__)
        if (parity or "ref_python" in getattr(item, "fixturenames", ())) and not item.get_closest_marker("refvenv"):
            item.add_marker(pytest.mark.refvenv)


def pytest_configure(config):
    # The fast tier's own run deselects a tier (`-m "not slow and ..."`, make test-fast); a run of all of them does not.
    markexpr = config.getoption("markexpr", "") or ""
    _STRICT[0] = any(f"not {name}" in markexpr for name in TIER_MARKERS)


def _tier_marker(item) -> str | None:
    return next((name for name in TIER_MARKERS if item.get_closest_marker(name)), None)


def _time_rule(item, report) -> None:
    """Fail a passing fast-tier test whose own setup and body took over CPU_LIMIT_S of CPU or WALL_LIMIT_S of wall."""
    own_cpu, own_wall = item.stash.get(_OWN_KEY, (0.0, 0.0))
    tier = _tier_marker(item) or "fast"
    report.user_properties = [*report.user_properties, ("cpu_s", own_cpu), ("tier", tier)]  # travel with the report
    if report.when != "call" or not report.passed or tier != "fast":
        return
    cpu_limit = CPU_LIMIT_S * (1.0 if _STRICT[0] else FULL_RUN_TOLERANCE)
    if own_cpu > CPU_LIMIT_S and own_cpu <= cpu_limit and own_wall <= WALL_LIMIT_S:
        _AT_THE_EDGE.append((own_cpu, item.nodeid))
        return
    if own_cpu > cpu_limit or own_wall > WALL_LIMIT_S:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {own_cpu:.1f} s of CPU and {own_wall:.1f} s of wall time (its own setup and body), "
            "over "
            f"the fast tier's {CPU_LIMIT_S:g} s of CPU or {WALL_LIMIT_S:g} s of wall: mark it "
            "@pytest.mark.slow (or browser/refvenv) or make it cheaper (tests/README.md, \"Tiers\")")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    _fail_skip_in_ci(report)
    report.user_properties = [*report.user_properties, ("phase_tier", _tier_marker(item) or "fast")]
    if call.when == "call":
        _time_rule(item, report)


_FILE_TIMES: dict[str, list] = defaultdict(lambda: [0, 0.0, 0.0])  # file -> [tests, wall s, own CPU s]
_TIER_WALL: dict[str, float] = defaultdict(float)  # tier -> wall s of its tests' phases (shared fixtures included)
_AT_THE_EDGE: list[tuple[float, str]] = []  # (own CPU s, node id): over the limit, under the full run's tolerance
_TEST_CPU: list[tuple[float, str, str]] = []  # (own CPU s, node id, tier marker or "fast")
SUMMARY_TESTS = 25


def pytest_runtest_logreport(report):
    """Sum each file's time: every phase's wall time (shared fixtures included) and the tests' own CPU."""
    entry = _FILE_TIMES[report.nodeid.split("::", 1)[0]]
    entry[1] += report.duration
    properties = dict(report.user_properties)
    _TIER_WALL[properties.get("phase_tier", "fast")] += report.duration
    if report.when == "call" and "cpu_s" in properties:
        entry[0] += 1
        entry[2] += properties["cpu_s"]
        _TEST_CPU.append((properties["cpu_s"], report.nodeid, properties.get("tier", "fast")))


def pytest_terminal_summary(terminalreporter):
    """Each file's total, slowest first, and the tests that used the most CPU themselves (what the fast tier's rule
    reads), so every run's log (CI's included) shows where the time goes."""
    if not _FILE_TIMES:
        return
    rows = sorted(_FILE_TIMES.items(), key=lambda kv: kv[1][1], reverse=True)
    terminalreporter.section("time per test file (wall: all phases, shared fixtures included; CPU: the tests' own)")
    for path, (tests, wall, cpu) in rows:
        terminalreporter.write_line(f"{wall:9.1f} s wall {cpu:9.1f} s CPU {tests:5d} tests  {path}")
    total = sum(v[1] for v in _FILE_TIMES.values())
    terminalreporter.write_line(f"{total:9.1f} s wall in {len(rows)} files")
    # The fast tier's share of a full run estimates `make test-fast` (issue 51's 5 minutes) from CI's own log.
    terminalreporter.write_line("wall by tier: " + ", ".join(f"{tier} {wall:.1f} s" for tier, wall in
                                                             sorted(_TIER_WALL.items(), key=lambda kv: -kv[1])))
    terminalreporter.section(f"the {SUMMARY_TESTS} tests with the most CPU of their own (the fast tier's rule: "
                             f"{CPU_LIMIT_S:g} s outside {'/'.join(TIER_MARKERS)})")
    for cpu, nodeid, tier in sorted(_TEST_CPU, reverse=True)[:SUMMARY_TESTS]:
        terminalreporter.write_line(f"{cpu:9.2f} s CPU  {tier:8s} {nodeid}")
    if _AT_THE_EDGE:
        terminalreporter.section(f"fast-tier tests over {CPU_LIMIT_S:g} s of CPU, within this run's tolerance "
                                 f"(x{FULL_RUN_TOLERANCE:g}): `make test-fast` fails them; mark them slow or make "
                                 "them cheaper")
        for cpu, nodeid in sorted(_AT_THE_EDGE, reverse=True):
            terminalreporter.write_line(f"{cpu:9.2f} s CPU  {nodeid}")


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
    """standins(name) -> {key: path}: one stand-in family (small size, seed 0), built once per machine: kept under
    ``standins.cache_root()`` by its builder's code and package versions (``$REXRANK_STANDIN_CACHE=off``: built
    afresh in this session's temporary folder)."""
    from rexrank.testing import standins as builder

    cache = builder.cache_root()
    built: dict[str, dict[str, str]] = {}

    def get(name: str) -> dict[str, str]:
        if name not in built:
            with shared_cost():  # paid once, often inside the first test that asks
                if cache is None:
                    built[name] = builder.build(tmp_path_factory.mktemp(name), "small", [name], seed=0)
                else:
                    built[name] = builder.cached(cache, name, "small", seed=0)
        return built[name]

    return get


@pytest.fixture(scope="module")
def source_tree():
    """tests/source_scan.py with every Python file of the tree read, parsed and walked once for a module's owner
    scans (test_catalog.py: five of them), as shared setup; forgotten after the module, since ~300,000 live AST nodes
    slow every later garbage collection of the session."""
    import source_scan

    for folder in ("src", "spaces", "scripts", "dataset_scripts", "metrics", "bench"):
        for path in source_scan.python_files(REPO / folder):
            source_scan.nodes(path)
    yield source_scan
    source_scan.forget()


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


class _ReferenceWorker:
    """A tests/reference/worker.py process in .venv-ref serving one script's runs until its module ends."""

    def __init__(self, ref_python: Path, env: dict, folder: Path):
        self.folder = folder
        self.stderr = open(folder / "stderr.txt", "w+")  # noqa: SIM115 - read back on a failure, closed in stop()
        self.proc = subprocess.Popen([str(ref_python), str(REPO / "tests" / "reference" / "worker.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
                                     env=env, start_new_session=True)  # its own group: stop() ends java etc. too
        self.runs = 0
        self.stopped = False

    def run(self, script: str, payload, timeout: float) -> str:
        """The script's stdout for this payload; AssertionError with its traceback and stderr if it failed."""
        import threading

        self.runs += 1
        given, out = self.folder / f"payload{self.runs}.json", self.folder / f"out{self.runs}.json"
        given.write_text(json.dumps(payload))
        start = self.stderr.seek(0, os.SEEK_END)
        timed_out = threading.Event()

        def expire():
            timed_out.set()
            self.stop()

        timer = threading.Timer(timeout, expire)
        timer.start()
        try:
            self.proc.stdin.write(json.dumps({"script": str(REPO / "tests" / "reference" / script),
                                              "payload": str(given), "out": str(out)}) + "\n")
            self.proc.stdin.flush()
            while (line := self.proc.stdout.readline()) and not line.endswith(f"done {out}\n"):
                pass  # anything a library printed at the C level, outside the script's captured stdout
        except (BrokenPipeError, ValueError):  # the worker died, or the timer stopped it
            line = ""
        finally:
            timer.cancel()
        if not line:
            if timed_out.is_set():
                raise subprocess.TimeoutExpired(script, timeout)
            stderr = self._stderr_since(start)
            self.stop()
            raise AssertionError(f"reference worker for {script} ended:\n{stderr}")
        result = json.loads(out.read_text())
        if not result["ok"]:
            raise AssertionError(f"reference script {script} failed:\n{result['error'][-4000:]}\n"
                                 f"{self._stderr_since(start)}")
        return result["stdout"]

    def _stderr_since(self, start: int) -> str:
        if self.stderr.closed:
            return ""
        self.stderr.flush()
        self.stderr.seek(start)
        return self.stderr.read()[-4000:]

    def stop(self) -> None:
        import signal

        if self.stopped:  # the timer's and the module's end may both ask
            return
        self.stopped = True
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):  # the worker if still busy, and anything a script left running
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if not self.stderr.closed:
            self.stderr.close()


_REFERENCE_WORKERS: dict[str, _ReferenceWorker] = {}  # script -> its worker, for the running test module


@pytest.fixture(scope="module", autouse=True)
def _reference_workers_end_with_their_module():
    """A module's reference workers stop when it ends: a worker holds its packages' memory (torch, a model), and
    sharing one across modules would only save imports while keeping every module's packages alive at once."""
    yield
    while _REFERENCE_WORKERS:
        _REFERENCE_WORKERS.popitem()[1].stop()


@pytest.fixture(scope="session")
def run_reference(ref_python, tmp_path_factory):
    """run_reference(script, payload) -> JSON result: runs tests/reference/<script> in .venv-ref.

    The payload goes in as JSON on stdin and the script prints one JSON document on stdout. A test module's runs of
    one script share one .venv-ref process (tests/reference/worker.py: the script runs there as ``__main__``, as it
    would alone), so torch, transformers and the compared package are imported once per module and script instead of
    once per run (~6 s of CPU each; test_bertscore.py runs its script for 4 parity classes).
    """

    def run(script: str, payload, timeout: float = 1200):
        worker = _REFERENCE_WORKERS.get(script)
        if worker is None or worker.stopped or worker.proc.poll() is not None:
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
            env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                       OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "2"))
            worker = _REFERENCE_WORKERS[script] = _ReferenceWorker(ref_python, env, tmp_path_factory.mktemp("ref"))
        return json.loads(worker.run(script, payload, timeout).strip().splitlines()[-1])

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
