"""The metric registry's public API: scoped registration, one claim per name, and entry-point plugins.

The plugins are real installed distributions: the tests build three wheels in a temporary folder and install them
with pip (``--no-deps --no-index --target``), so ``importlib.metadata`` finds them on the path exactly as it finds a
package from PyPI. ``wordcount`` adds a metric; ``broken`` fails to import; ``clash`` registers one metric, then
claims rexrank's ``bleu2``. ``REXRANK_METRIC_PLUGINS`` picks which of them a process loads.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from rexrank.errors import ConfigError, UnknownNameError
from rexrank.metrics import REGISTRY
from rexrank.metrics.registry import PLUGIN_GROUP, PLUGINS_ENV, MetricSpec, Registry

REPO = Path(__file__).resolve().parents[1]
LOG_ENV = "WORDCOUNT_TEST_LOG"  # the plugin's metric appends each hypothesis it computes to this file

WORDCOUNT = {
    "rexrank_wordcount/__init__.py": "",
    # The registering module imports nothing heavy: listing metrics loads it.
    "rexrank_wordcount/plugin.py": '''
from rexrank.metrics.registry import MetricSpec

SPEC = MetricSpec("word_overlap", "word_overlap", True, "1",
                  "Test plugin: Jaccard overlap of the two reports' words", value_range=(0.0, 1.0))


def register(registry):
    registry.register(SPEC, "rexrank_wordcount.metric:WordOverlap", aliases=("wordoverlap",))
''',
    "rexrank_wordcount/metric.py": f'''
import os

import numpy as np

from rexrank.metrics.base import Metric
from rexrank_wordcount.plugin import SPEC


class WordOverlap(Metric):
    spec = SPEC

    def __init__(self):
        pass

    def _score(self, hyps, refs):
        log = os.environ.get("{LOG_ENV}")
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write("".join(h + "\\n" for h in hyps))
        out = []
        for h, r in zip(hyps, refs):
            a, b = set(h.lower().split()), set(r.lower().split())
            out.append(len(a & b) / len(a | b) if a | b else 1.0)
        return np.array(out)
''',
}
BROKEN = {"rexrank_broken/__init__.py": "import rexrank_missing_dependency  # noqa: F401\n\n\n"
                                        "def register(registry):\n    pass\n"}
CLASH = {"rexrank_clash/__init__.py": '''
from rexrank.metrics.registry import MetricSpec


def register(registry):
    registry.register(MetricSpec("clash_extra", "clash_extra", True, "1", "registered before the clash"),
                      "rexrank_clash:Nothing")
    registry.register(MetricSpec("bleu2", "clash_bleu", True, "1", "a second BLEU-2"), "rexrank_clash:Nothing")
'''}
PLUGINS = {  # entry-point name: (distribution, files, the function the entry point names)
    "wordcount": ("rexrank_wordcount", WORDCOUNT, "rexrank_wordcount.plugin:register"),
    "broken": ("rexrank_broken", BROKEN, "rexrank_broken:register"),
    "clash": ("rexrank_clash", CLASH, "rexrank_clash:register"),
}
PLUGIN_MODULES = ("rexrank_wordcount", "rexrank_broken", "rexrank_clash")


def _wheel(folder: Path, entry_name: str, dist: str, files: dict[str, str], target: str) -> Path:
    """A pure-Python wheel of ``files`` with one entry point in rexrank's group."""
    info = f"{dist}-0.1.dist-info"
    members = {**files,
               f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: 0.1\n",
               f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: rexrank-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
               f"{info}/entry_points.txt": f"[{PLUGIN_GROUP}]\n{entry_name} = {target}\n"}
    record = []
    for name, text in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    path = folder / f"{dist}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in {**members, f"{info}/RECORD": "\n".join(record) + "\n"}.items():
            zf.writestr(name, text)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A folder the three plugin distributions are pip-installed into (put it on the path to have them)."""
    build = tmp_path_factory.mktemp("wheels")
    wheels = [_wheel(build, name, dist, files, target) for name, (dist, files, target) in PLUGINS.items()]
    return _install(tmp_path_factory.mktemp("site"), wheels)


def _install(target: Path, wheels: list[Path]) -> Path:
    """pip-install ``wheels`` into the folder ``target`` (no index, no dependencies), as a user's pip would."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", str(target), *map(str, wheels)],
                   check=True, capture_output=True)
    return target


def _forget(packages) -> None:
    """Drop the plugins' modules from this process, so the next test imports them from its own path."""
    for name in [m for m in sys.modules if m.split(".")[0] in packages]:
        del sys.modules[name]


@pytest.fixture
def on_path(site, monkeypatch):
    """The plugins installed in this process for one test; their modules are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(site))
    yield site
    _forget(PLUGIN_MODULES)


def _run(site: Path, *args: str, plugins: str | None, extra_env: dict | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -c CODE args`` in a fresh process with the plugins installed (``plugins``: REXRANK_METRIC_PLUGINS,
    None to leave it unset)."""
    env = {k: v for k, v in os.environ.items() if k != PLUGINS_ENV}
    env.update({"PYTHONPATH": os.pathsep.join([str(site), str(REPO / "src")]), "HF_HUB_OFFLINE": "1",
                **(extra_env or {})})
    if plugins is not None:
        env[PLUGINS_ENV] = plugins
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def _spec(name: str, column: str | None = None, **kw) -> MetricSpec:
    return MetricSpec(name, column or name, True, "1", f"test metric {name}", **kw)


# -- the public API -------------------------------------------------------------------------------------------------
def test_scoped_registration_is_undone_exactly_even_when_the_block_fails():
    before = [(n, REGISTRY.spec(n)) for n in REGISTRY.names()]
    with pytest.raises(RuntimeError, match="inside"):
        with REGISTRY.scoped() as registry:
            registry.register(_spec("scoped_metric"), "some.module:Class", aliases=("scoped_alias",))
            assert REGISTRY.canonical("SCOPED_ALIAS") == "scoped_metric" and "scoped_metric" in REGISTRY.names()
            raise RuntimeError("inside")
    assert [(n, REGISTRY.spec(n)) for n in REGISTRY.names()] == before
    assert "scoped_metric" not in REGISTRY and "scoped_alias" not in REGISTRY
    with REGISTRY.scoped():  # the name is free again
        REGISTRY.register(_spec("scoped_metric"), "some.module:Class")


@pytest.mark.parametrize(("spec", "aliases", "message"), [
    (_spec("bleu"), (), "'bleu' is already registered (the alias of 'bleu2')"),  # a name that is another's alias
    (_spec("new_metric"), ("bleu2",), "'bleu2' is already registered (the name of 'bleu2')"),
    (_spec("new_metric"), ("bleu-2",), "'bleu-2' is already registered (the alias of 'bleu2')"),
    (_spec("new_metric", "bleu_score"), (), "'bleu_score' is already registered (the column of 'bleu2')"),
    (_spec("new_metric", leaderboard_column="BLEU"), (), "'BLEU' is already registered (the leaderboard column of"),
    (_spec("New_Metric"), (), "'New_Metric' is not a usable name"),  # canonical() could never find it
    (_spec("new_metric"), ("two words",), "'two words' is not a usable name"),
    (_spec("new_metric"), ("x", "x"), "alias 'x' is given twice"),
    (_spec("new_metric", " "), (), "its column must be a non-empty string"),
])
def test_a_second_claim_or_an_unusable_name_is_refused_and_changes_nothing(spec, aliases, message):
    before = {n: REGISTRY.spec(n) for n in REGISTRY.names()}
    bleu2 = REGISTRY.cls("bleu2")
    with REGISTRY.scoped():
        with pytest.raises(ConfigError) as refused:
            REGISTRY.register(spec, "some.module:Class", aliases=aliases)
        assert message in str(refused.value)
        assert {n: REGISTRY.spec(n) for n in REGISTRY.names()} == before
        assert REGISTRY.canonical("bleu") == "bleu2" and REGISTRY.cls("bleu2") is bleu2
        assert "x" not in REGISTRY and "new_metric" not in REGISTRY


def test_a_class_target_must_be_module_colon_class():
    with REGISTRY.scoped(), pytest.raises(ConfigError, match="'package.module:Class' or the class itself"):
        REGISTRY.register(_spec("new_metric"), "not a target")


# -- plugins in this process: what loads when, and what a failure leaves ---------------------------------------------
def _registry_with_bleu2() -> Registry:
    """A registry of rexrank's kind that holds rexrank's BLEU-2 and reads installed plugins."""
    registry = Registry("metric", plugin_group=PLUGIN_GROUP)
    registry.register(REGISTRY.spec("bleu2"), "rexrank.metrics.bleu:Bleu2", aliases=("bleu",))
    return registry


def test_a_plugin_metric_is_found_and_loaded_lazily(on_path, monkeypatch):
    monkeypatch.setenv(PLUGINS_ENV, "wordcount")
    registry = _registry_with_bleu2()
    assert registry.canonical("bleu") == "bleu2" and "rexrank_wordcount.plugin" not in sys.modules  # no plugin needed
    assert registry.names() == ["bleu2", "word_overlap"]
    assert "rexrank_wordcount.metric" not in sys.modules  # listed, not imported
    assert registry.spec("WordOverlap").column == "word_overlap"
    metric = registry.cls("word_overlap")()
    assert list(metric.score(["a b", "lungs clear"], ["a c", "lungs clear"])) == [pytest.approx(1 / 3), 1.0]


def test_a_plugin_that_fails_to_import_is_one_error_naming_it_and_the_fix(on_path, monkeypatch):
    monkeypatch.setenv(PLUGINS_ENV, "broken,wordcount")
    registry = _registry_with_bleu2()
    assert registry.canonical("bleu2") == "bleu2"  # a run that does not need plugins is not stopped by one
    for attempt in (lambda: registry.names(), lambda: registry.canonical("no_such_metric")):
        with pytest.raises(ConfigError) as failed:
            attempt()
        message = str(failed.value)
        assert message.startswith("Metric plugin 'broken' (rexrank-broken 0.1) failed to load: ModuleNotFoundError: "
                                  "No module named 'rexrank_missing_dependency'; fix or uninstall rexrank-broken")
        assert PLUGINS_ENV in message and "\n" not in message
    assert registry.canonical("word_overlap") == "word_overlap"  # the plugin that loaded stays


def test_a_plugin_colliding_with_rexrank_is_refused_and_leaves_nothing_behind(on_path, monkeypatch):
    monkeypatch.setenv(PLUGINS_ENV, "clash")
    registry = _registry_with_bleu2()
    bleu2 = registry.spec("bleu2")
    with pytest.raises(ConfigError, match=r"^Metric 'bleu2' from plugin 'clash' \(rexrank-clash 0\.1\) collides "
                                          r"with rexrank's 'bleu2'; rename it in the plugin"):
        registry.names()
    assert registry.spec("bleu2") is bleu2  # never replaced
    with pytest.raises(ConfigError, match="collides"):  # what it registered before the clash was taken back
        registry.canonical("clash_extra")


def test_plugins_env_naming_no_installed_plugin_is_refused(on_path, monkeypatch):
    monkeypatch.setenv(PLUGINS_ENV, "wordcount,wordcont")
    with pytest.raises(ConfigError, match=r"REXRANK_METRIC_PLUGINS names 'wordcont', which no installed "
                                          r"distribution provides \(installed metric plugins: broken, clash, wordcount"):
        _registry_with_bleu2().names()
    monkeypatch.setenv(PLUGINS_ENV, "")  # none
    assert _registry_with_bleu2().names() == ["bleu2"]


def test_scoped_restores_the_plugins_loaded_inside_it(on_path, monkeypatch):
    monkeypatch.setenv(PLUGINS_ENV, "wordcount")
    registry = _registry_with_bleu2()
    with registry.scoped():
        assert registry.names() == ["bleu2", "word_overlap"]
    assert registry.names(plugins=False) == ["bleu2"]  # unloaded again, and loaded again on the next listing
    assert registry.names() == ["bleu2", "word_overlap"]


# -- plugins through the command line and the harness --------------------------------------------------------------
LISTING = """
import sys
from rexrank.cli import main
code = main(["score", "--help"])
print("imported:", sorted(m for m in ("torch", "rexrank_wordcount.metric") if m in sys.modules))
sys.exit(code)
"""


def test_score_help_lists_a_plugin_metric_without_importing_torch(site):
    done = _run(site, "-c", LISTING, plugins="wordcount")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "word_overlap: Test plugin: Jaccard overlap of the two reports' words." in text
    assert "bleu2: Sentence BLEU-2" in text
    assert "imported: []" in done.stdout


def test_a_broken_plugin_is_one_line_on_the_command_line_and_the_help_still_works(site, tmp_path):
    refs, preds = _files(tmp_path, 3)
    done = _run(site, "-m", "rexrank", "score", "-p", str(preds), "-r", str(refs), "-m", "all", "--no-cache",
                "-o", str(tmp_path / "out"), plugins=None)  # every installed plugin: broken and clash fail
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: Metric plugin 'broken' (rexrank-broken 0.1) failed to load")
    assert "Metric 'bleu2' from plugin 'clash' (rexrank-clash 0.1) collides with rexrank's 'bleu2'" in lines[0]
    assert not (tmp_path / "out").exists()
    helped = _run(site, "-m", "rexrank", "score", "--help", plugins=None)
    assert helped.returncode == 0 and "Traceback" not in helped.stderr
    text = " ".join(helped.stdout.split())
    assert "bleu2: Sentence BLEU-2" in text and "Not listed: Metric plugin 'broken'" in text


def _files(folder: Path, n: int) -> tuple[Path, Path]:
    refs = folder / "refs.jsonl"
    hyps = [f"lungs clear study {i}" + " small effusion" * (i % 3) for i in range(n)]
    truth = [f"lungs are clear study {i}" + " effusion" * (i % 2) for i in range(n)]
    refs.write_text("".join(json.dumps({"study_id": f"s{i}", "report": r}) + "\n" for i, r in enumerate(truth)))
    preds = folder / "plugin_model.csv"
    pd.DataFrame({"study_id": [f"s{i}" for i in range(n)], "report": hyps}).to_csv(preds, index=False)
    return refs, preds


@pytest.mark.slow  # 1.7 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_a_plugin_metric_runs_through_the_harness_with_cache_and_aggregation(site, tmp_path):
    refs, preds = _files(tmp_path, 12)
    log = tmp_path / "computed.log"
    truth = [json.loads(line)["report"] for line in refs.read_text().splitlines()]
    hyps = pd.read_csv(preds)["report"].tolist()
    expected = [len(set(h.split()) & set(r.split())) / len(set(h.split()) | set(r.split()))
                for h, r in zip(hyps, truth)]
    runs = []
    for out in ("first", "second"):
        done = _run(site, "-m", "rexrank", "score", "-p", str(preds), "-r", str(refs), "-m", "wordoverlap,bleu2",
                    "--cache-dir", str(tmp_path / "cache"), "--resamples", "200", "-o", str(tmp_path / out),
                    plugins="wordcount", extra_env={LOG_ENV: str(log)})
        assert done.returncode == 0, done.stderr
        runs.append(log.read_text().splitlines() if log.exists() else [])
        results = json.loads((tmp_path / out / "results.json").read_text())
        per_study = pd.read_parquet(tmp_path / out / "per_study.parquet")
        assert list(results["metrics"]) == ["word_overlap", "bleu2"]
        entry = results["metrics"]["word_overlap"]
        assert per_study["word_overlap"].tolist() == pytest.approx(expected)
        assert entry["mean"] == pytest.approx(sum(expected) / len(expected))
        assert entry["ci_low"] <= entry["mean"] <= entry["ci_high"] and entry["higher_is_better"] is True
    assert sorted(runs[0]) == sorted(hyps) and runs[1] == runs[0]  # the second run computed nothing: cached
    first, second = (json.loads((tmp_path / o / "results.json").read_text())["metrics"] for o in ("first", "second"))
    assert first == second


@pytest.mark.slow
def test_a_plugin_metric_scored_by_two_launched_processes_equals_one(site, tmp_path):
    """Each launched process loads the plugin itself (the same rule, lazily): `rexrank score` under torchrun with 2
    gloo processes gives the single-process per-study table and results."""
    refs, preds = _files(tmp_path, 9)
    common = ["rexrank", "score", "-p", str(preds), "-r", str(refs), "-m", "word_overlap", "--no-cache",
              "--resamples", "50", "-q"]
    one = _run(site, "-m", *common, "-o", str(tmp_path / "one"), plugins="wordcount")
    two = _run(site, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", *common,
               "-o", str(tmp_path / "two"), plugins="wordcount")
    assert one.returncode == 0 and two.returncode == 0, (one.stderr + two.stderr)[-4000:]
    a, b = (pd.read_parquet(tmp_path / out / "per_study.parquet") for out in ("one", "two"))
    pd.testing.assert_frame_equal(a, b)
    first, second = (json.loads((tmp_path / out / "results.json").read_text()) for out in ("one", "two"))
    assert second["analyses"]["processes"] == 2
    assert first["metrics"] == second["metrics"]


def _documented_plugin() -> tuple[dict[str, str], str, str]:
    """The plugin of docs/architecture.md's "Adding a metric (plugins)": (files by the path each block's first
    comment names, entry-point name, its function)."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Adding a metric (plugins)\n", 1)[1].split("\n## ", 1)[0]
    files, entry = {}, None
    for language, code in re.findall(r"```(\w+)\n(.*?)```", section, re.S):
        if language == "python":
            files[code.splitlines()[0].removeprefix("# ").split(":")[0]] = code
        elif language == "toml":
            entry = re.search(r'^(\w+) = "([\w.:]+)"$', code, re.M).groups()
    package = {path.split("/")[0] for path in files}
    assert entry and len(files) == 2 and len(package) == 1, "the documented plugin is one package of two modules"
    return {**files, f"{package.pop()}/__init__.py": ""}, *entry


def test_the_documented_plugin_works_as_written(tmp_path, monkeypatch):
    files, entry_name, target = _documented_plugin()
    wheel = _wheel(tmp_path, entry_name, "rexrank_doc_example", files, target)
    monkeypatch.syspath_prepend(str(_install(tmp_path / "site", [wheel])))
    monkeypatch.setenv(PLUGINS_ENV, entry_name)
    packages = {path.split("/")[0] for path in files}
    try:
        registry = _registry_with_bleu2()
        assert registry.names() == ["bleu2", "word_overlap"] and registry.canonical("wordoverlap") == "word_overlap"
        values = registry.cls("word_overlap")().score(["a b", "lungs clear", ""], ["a c", "Lungs clear", ""])
        assert list(values) == [pytest.approx(1 / 3), 1.0, 1.0]
    finally:
        _forget(packages)


def test_unknown_names_still_list_what_is_available(on_path, monkeypatch):
    monkeypatch.setenv(PLUGINS_ENV, "wordcount")
    with pytest.raises(UnknownNameError, match=r"Unknown metric 'nope'\. Available: bleu2, word_overlap"):
        _registry_with_bleu2().canonical("nope")
