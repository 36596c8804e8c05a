"""Every CLI usage error is a few lines and exit 2, never a traceback, and is caught before any model loads.

The walk enumerates every command and sub-command from the typer app itself, so a new command is covered the day it
is added: run bare (if it needs arguments), with an unknown option, and with a non-number for each int/float option.

Design (rexrank.cli): no command prints its whole help when run bare. A group or a command that needs arguments
names what is missing (exit 2); a command that needs none does its job when run bare (RUN_BARE below, so adding
one is a conscious choice). `rexrank --help` prints the help.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import typer

import rexrank
import rexrank.cli as cli_module
from rexrank.evaluation.bootstrap import MAX_RESAMPLES

MAX_LINES = 15
# Commands that need no argument and do their job when run bare (list, download, serve, ...): the walk does not
# run them bare (a server would block); it still feeds them bad options.
RUN_BARE = {"data list", "models list", "models download", "leaderboard serve", "leaderboard worker",
            "leaderboard import-published", "leaderboard arena-integrity"}  # the last: the default store's Arena


def _tree():
    cli_module._register()
    root = typer.main.get_command(cli_module.app)

    def walk(command, path):
        yield path, command
        for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
            yield from walk(sub, [*path, name])

    return list(walk(root, []))


TREE = _tree()
IDS = [" ".join(path) or "rexrank" for path, _ in TREE]


def _is_group(command) -> bool:
    return bool(getattr(command, "commands", None))


def _numeric_options(command) -> list[str]:
    """The int/float options, read from the annotations of the function behind the command."""
    if command.callback is None:
        return []
    hints = typing.get_type_hints(inspect.unwrap(command.callback))
    numeric = []
    for param in command.params:
        annotation = hints.get(param.name)
        if param.param_type_name == "option" and {int, float} & {annotation, *typing.get_args(annotation)}:
            numeric.append(param.opts[0])
    return numeric


def _assert_usage_error(code: int, text: str, *names: str) -> None:
    assert code == 2, text
    assert "Traceback" not in text, text
    assert len(text.strip().splitlines()) <= MAX_LINES, text
    assert "error: " in text, text
    for name in names:  # case aside: click versions spell an argument 'results' or 'RESULTS'
        assert name.lower() in text.lower(), f"{name!r} not named in:\n{text}"


def test_the_walk_sees_every_command():
    names = set(IDS)
    assert {"score", "compare", "explore", "generate", "leaderboard add", "data export", "models download",
            "hub publish-metrics"} <= names
    bare = {name for name, (_, command) in zip(IDS, TREE)
            if not _is_group(command) and not any(p.required for p in command.params)}
    assert bare == RUN_BARE, ("a command that needs no argument runs when called bare: add it to RUN_BARE if that is "
                              "its design, else give it a required parameter")


@pytest.mark.parametrize(("path", "command"), TREE, ids=IDS)
def test_no_arguments_names_what_is_missing(cli, path, command):
    if " ".join(path) in RUN_BARE:
        return  # runs when bare (see RUN_BARE); its bad options are walked below
    code, text = cli(*path)
    _assert_usage_error(code, text, "Missing", f"Try 'rexrank{''.join(' ' + p for p in path)} --help'")
    if _is_group(command):
        assert all(name in text for name in command.commands), text  # a group lists what it offers


@pytest.mark.parametrize(("path", "command"), TREE, ids=IDS)
def test_unknown_option_is_a_usage_error(cli, path, command):
    code, text = cli(*path, "--nonsense")
    _assert_usage_error(code, text, "--nonsense")


@pytest.mark.parametrize(("path", "command"), TREE, ids=IDS)
def test_non_numbers_for_numeric_options_are_usage_errors(cli, path, command):
    for option in _numeric_options(command):
        code, text = cli(*path, option, "abc")
        _assert_usage_error(code, text, option)


def _float_options(command) -> list[str]:
    if command.callback is None:
        return []
    hints = typing.get_type_hints(inspect.unwrap(command.callback))
    return [param.opts[0] for param in command.params if param.param_type_name == "option"
            and float in {hints.get(param.name), *typing.get_args(hints.get(param.name))}]


@pytest.mark.parametrize(("path", "command"), TREE, ids=IDS)
def test_non_finite_values_for_float_options_are_usage_errors(cli, path, command):
    """Issue 35 point 8: `score --max-file-size-mb inf` was a 50-line OverflowError (`leaderboard serve
    --max-upload-mb inf` too). Every float option refuses inf, nan and 1e400 (an overflow to inf) as it is parsed
    (rexrank.cli.values), before any other option or argument is looked at."""
    for option in _float_options(command):
        for value in ("inf", "-inf", "nan", "1e400"):
            code, text = cli(*path, option, value)
            _assert_usage_error(code, text, option, "finite")


def test_numeric_options_are_found():
    """The walk above would pass vacuously if annotations were not read: pin a few known ones."""
    by_name = dict(zip(IDS, (command for _, command in TREE)))
    assert {"--resamples", "--confidence", "--batch-size", "--max-file-size-mb"} <= set(
        _numeric_options(by_name["score"]))
    assert {"--resamples", "--permutations"} <= set(_numeric_options(by_name["compare"]))
    assert "--port" in _numeric_options(by_name["leaderboard serve"])
    floats = {name: set(_float_options(command)) for name, command in by_name.items()}
    assert {"--max-file-size-mb", "--confidence"} <= floats["score"] and "--max-upload-mb" in floats[
        "leaderboard serve"] and {"--temperature", "--top-p"} <= floats["generate"]


ISSUE_EXAMPLES = [
    (["scor"], ["No such command 'scor'", "score"]),
    (["score"], ["--predictions"]),
    (["score", "-p", "p.json", "--resamples", "abc"], ["--resamples"]),
    (["generate", "--dataset", "iu_xray"], ["--model"]),
    (["leaderboard", "add"], ["results"]),
    (["compare"], ["runs"]),
    (["explore"], ["runs"]),
]


@pytest.mark.parametrize(("args", "names"), ISSUE_EXAMPLES, ids=[" ".join(a) for a, _ in ISSUE_EXAMPLES])
def test_issue_examples(cli, args, names):
    code, text = cli(*args)
    _assert_usage_error(code, text, *names)


def test_in_a_real_process():
    """Through the console entry point's code path (python -m rexrank), not only in-process."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for args, expected in ((["scor"], "No such command"), (["score"], "Missing option '--predictions'")):
        proc = subprocess.run([sys.executable, "-m", "rexrank", *args], capture_output=True, text=True, env=env,
                              timeout=120)
        _assert_usage_error(proc.returncode, proc.stdout + proc.stderr, expected)


# -- --help: the first thing a new user reads ------------------------------------------------------------------
def _help(path: list[str]) -> str:
    from typer.testing import CliRunner

    result = CliRunner().invoke(cli_module.app, [*path, "--help"], prog_name="rexrank", env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(("path", "command"), TREE, ids=IDS)
def test_help_lists_every_option_and_no_value_for_a_flag(path, command):
    """Issue 29 point 9: typer 0.29's rich help showed `<bool>` beside every flag (--help itself included), as if
    it took a value. Every option is listed by all its names; no flag shows a type."""
    text = _help(path)
    assert "<bool>" not in text, text
    for param in command.params:
        if param.param_type_name == "option" and not param.hidden:
            assert all(name in text for name in [*param.opts, *param.secondary_opts]), (param.opts, text)


def test_score_help_lists_every_metric_from_the_registry():
    """`score --help` names every registered metric with its description, generated from the registry (a new
    metric appears without editing the CLI). Compared without whitespace: the help wraps lines."""
    from rexrank.metrics import REGISTRY

    text = "".join(_help(["score"]).split())
    for name in REGISTRY.names():
        assert "".join(f"{name}: {REGISTRY.spec(name).description}".split()) in text, name


def test_version(cli):
    code, text = cli("--version")
    assert code == 0
    assert text.strip() == f"rexrank {importlib.metadata.version('rexrank')}"
    assert importlib.metadata.version("rexrank") == rexrank.__version__  # the installed copy is this tree


def _click_exception_classes():
    """Real click's exceptions and typer's vendored copy (typer 0.29), whichever this environment has."""
    found = []
    for module in ("click.exceptions", "typer._click.exceptions"):
        try:
            found.append(importlib.import_module(module))
        except ImportError:
            continue
    assert found
    return found


@pytest.mark.parametrize("module", _click_exception_classes(), ids=lambda m: m.__name__)
def test_click_and_vendored_click_errors_are_shown_not_raised(monkeypatch, capsys, module):
    cli_module._register()
    for exc, code in ((module.UsageError("bad usage"), 2), (module.ClickException("bad thing"), 1)):
        def app(*args, exc=exc, **kwargs):
            raise exc

        monkeypatch.setattr(cli_module, "app", app)
        assert cli_module.main(["anything"]) == code
        err = capsys.readouterr().err
        assert err.strip() == f"error: {exc.format_message()}"


# -- option values: refused before any input is read, model loaded or pair scored ------------------------------
@pytest.fixture
def tiny(tmp_path):
    preds, refs = tmp_path / "p.json", tmp_path / "r.json"
    preds.write_text(json.dumps({"a": "No acute findings.", "b": "Small left effusion."}))
    refs.write_text(json.dumps({"a": "No acute disease.", "b": "Left pleural effusion."}))
    return tmp_path, preds, refs


def _score(cli, tiny, *extra):
    tmp_path, preds, refs = tiny
    cache, out = tmp_path / "cache", tmp_path / "out"
    args = ["score", "-p", str(preds), "-r", str(refs), "-m", "bleu2", "--cache-dir", str(cache), "-o", str(out),
            "-q", *extra]
    code, text = cli(*args)
    return code, text, cache, out


def test_tiny_run_scores(cli, tiny):
    """The fixture itself scores (so the refusals below are the options' doing), creating the cache."""
    code, text, cache, out = _score(cli, tiny)
    assert code == 0, text
    assert cache.is_dir() and (out / "results.json").is_file()


BAD_VALUES = [
    (["--resamples", "100000000"], ["--resamples", f"{MAX_RESAMPLES:,}", "cap"]),
    (["--confidence", "1.5"], ["--confidence"]),
    (["--confidence", "nan"], ["--confidence"]),
    (["--batch-size", "0"], ["--batch-size"]),
    (["--chunk-size", "0"], ["--chunk-size"]),
    (["--seed", "-1"], ["--seed"]),
    (["--max-file-size-mb", "0"], ["--max-file-size-mb"]),
    (["--max-report-words", "0"], ["--max-report-words"]),
    (["--device", "tpu"], ["--device", "cpu, cuda, cuda:N"]),
    (["--option", "bleu2.nonsense=3"], ["bleu2", "'nonsense'", "takes no options"]),
    (["--option", "bertscore.nonsense=1"], ["bertscore", "'nonsense'", "num_layers", "rescale_with_baseline"]),
    (["--option", "nometric.x=1"], ["Unknown metric 'nometric'"]),
    (["--model-path", "bleu2=/models/x"], ["--model-path", "bleu2"]),
    # Issue 35 point 8: settings for a metric this run does not compute were silently ignored.
    (["--model-path", "bertscore=/nonexist"], ["--model-path bertscore", "no metric of this run reads it", "bleu2"]),
    (["--option", "semb.backbone=/x"], ["--option semb", "no metric of this run reads it"]),
    (["--max-file-size-mb", "inf"], ["--max-file-size-mb", "finite"]),
]


@pytest.mark.parametrize(("extra", "names"), BAD_VALUES, ids=[" ".join(a) for a, _ in BAD_VALUES])
def test_bad_option_values_fail_before_scoring(cli, tiny, extra, names):
    code, text, cache, out = _score(cli, tiny, *extra)
    _assert_usage_error(code, text, *names)
    assert not cache.exists() and not out.exists()  # nothing was read into the cache, nothing written


def test_out_and_cache_dir_that_are_files(cli, tiny):
    tmp_path = tiny[0]
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    code, text, cache, out = _score(cli, tiny, "-o", str(a_file))
    _assert_usage_error(code, text, "--out", str(a_file), "existing file")
    assert not cache.exists()  # refused before scoring: the cache was never opened
    code, text, cache, out = _score(cli, tiny, "--cache-dir", str(a_file))
    _assert_usage_error(code, text, "--cache-dir", "existing file")
    code, text, cache, out = _score(cli, tiny, "-o", str(a_file / "below"))
    _assert_usage_error(code, text, "--out", "cannot be created", "is a file")
    assert not cache.exists() and not out.exists()


def test_cuda_devices_are_checked_against_this_machine(cli, tiny, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    code, text, cache, _ = _score(cli, tiny, "--device", "cuda:7")
    _assert_usage_error(code, text, "--device cuda:7", "CUDA is not available", "the devices here are cpu")
    code, text, cache, _ = _score(cli, tiny, "--device", "mps")
    _assert_usage_error(code, text, "MPS", "the devices here are cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    code, text, cache, _ = _score(cli, tiny, "--device", "cuda:7")
    _assert_usage_error(code, text, "no such CUDA device", "cpu, cuda:0, cuda:1")
    assert not cache.exists()
    from rexrank.evaluation.harness import check_device

    check_device("cuda:1")  # present (as far as torch says): accepted
    check_device("cuda")


@pytest.mark.parametrize(("content", "problem"), [
    ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ('{"a": ' + "7" * 5_000 + ', "b": "x"}', "digits long"),
], ids=["nested-100000-deep", "5000-digit-number"])
@pytest.mark.parametrize("side", ["predictions", "references"])
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_hostile_json_is_an_input_error_naming_the_file(cli, tiny, content, problem, side, suffix):
    tmp_path, preds, refs = tiny
    bad = tmp_path / f"bad{suffix}"
    bad.write_text(content if suffix == ".json" else content.replace('{"a": ', '{"study_id": "a", "report": ') + "\n")
    args = ["-p", str(bad)] if side == "predictions" else ["-r", str(bad)]
    code, text, cache, _ = _score(cli, tiny, *args)
    _assert_usage_error(code, text, f"{side} file {bad.name}", problem, "nothing was scored")
    assert not cache.exists()


def test_hostile_json_elsewhere(cli, tmp_path):
    """The other JSON inputs of the CLI: `leaderboard add`'s results.json and generate's --input-json."""
    from rexrank.data.rexrank_json import read_rexrank_json
    from rexrank.errors import InputError

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    big = tmp_path / "big.json"
    big.write_text('{"a": ' + "7" * 5_000 + "}")
    for path in (deep, big):
        code, text = cli("leaderboard", "add", str(path), "--name", "m", "--store", str(tmp_path / "s.sqlite"))
        _assert_usage_error(code, text, f"cannot read {path}")
        with pytest.raises(InputError, match=f"{path.name} cannot be read as JSON"):
            read_rexrank_json(path)
    assert not (tmp_path / "s.sqlite").exists()
    # compare reads each run's results.json beside its per_study.parquet
    import pandas as pd

    for n, path in enumerate((deep, big)):
        run = tmp_path / f"run{n}"
        run.mkdir()
        pd.DataFrame({"study_id": ["s1"], "bleu_score": [0.5]}).to_parquet(run / "per_study.parquet")
        (run / "results.json").write_text(path.read_text())
        code, text = cli("compare", str(run), str(run))
        _assert_usage_error(code, text, "results.json")


def test_compare_caps_and_checks_before_reading_runs(cli, tmp_path):
    missing = [str(tmp_path / "run_a"), str(tmp_path / "run_b")]
    for extra, names in ((["--resamples", str(MAX_RESAMPLES + 1)], ["--resamples", f"{MAX_RESAMPLES:,}"]),
                         (["--permutations", "100000000"], ["--permutations", f"{MAX_RESAMPLES:,}"]),
                         (["--permutations", "0"], ["--permutations"]),
                         (["--confidence", "0"], ["--confidence"]),
                         (["-o", __file__], ["--out", "existing file"])):
        code, text = cli("compare", *missing, *extra)
        _assert_usage_error(code, text, *names)
        assert "run_a" not in text  # the options were refused before the runs were looked at


def test_other_commands_check_options_first(cli, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    store = str(tmp_path / "s.sqlite")
    cases = [
        (["leaderboard", "serve", "--store", store, "--port", "70000"], ["--port"]),
        (["leaderboard", "serve", "--store", store, "--max-upload-mb", "0"], ["--max-upload-mb"]),
        (["leaderboard", "serve", "--store", store, "--rate-limit", "-1"], ["--rate-limit"]),
        (["leaderboard", "serve", "--store", store, "--submission-metrics", "nope"], ["Unknown metric 'nope'"]),
        (["leaderboard", "worker", "--store", store, "--references-dir", str(a_file)], ["--references-dir"]),
        (["explore", str(tmp_path / "run"), "--port", "70000"], ["--port"]),
        (["explore", str(tmp_path / "run"), "--batch-size", "0"], ["--batch-size"]),
        (["leaderboard", "import-published", str(a_file), "--store", store],
         ["its name does not say which test set and track", "--dataset"]),
        (["leaderboard", "sync", "--repo", "x/y", "--store", str(tmp_path)], ["--store", "existing folder"]),
        (["leaderboard", "edit-model", "m", "--store", str(a_file / "s.sqlite")], ["--store", "cannot be created"]),
        (["data", "export", "iu_xray", "--out", str(tmp_path)], ["--out", "existing folder"]),
        (["data", "prepare", "iu_xray", "--cache-dir", str(a_file)], ["--cache-dir", "existing file"]),
        (["data", "verify", "iu_xray", "--max-listed", "-1"], ["--max-listed"]),
        (["models", "download", "--only", "chexbert", "--only", "nope"], ["Unknown model 'nope'"]),
        (["models", "download", "--cache-dir", str(a_file)], ["--cache-dir", "existing file"]),
        (["generate", "--model", "m", "--dataset", "iu_xray", "--out", str(a_file)], ["--out", "existing file"]),
        (["generate", "--model", "m", "--dataset", "iu_xray", "--out", str(tmp_path / "o"), "--device", "gpu"],
         ["--device"]),
        (["generate", "--model", "m", "--dataset", "iu_xray", "--out", str(tmp_path / "o"), "--num-beams", "0"],
         ["--num-beams"]),
        (["generate", "--model", "m", "--dataset", "iu_xray", "--out", str(tmp_path / "o"), "--do-sample",
          "--temperature", "0"], ["--temperature", "positive"]),
        (["generate", "--model", "m", "--dataset", "iu_xray", "--out", str(tmp_path / "o"), "--do-sample",
          "--top-p", "1.5"], ["--top-p", "(0, 1]"]),
    ]
    for args, names in cases:
        code, text = cli(*args)
        _assert_usage_error(code, text, *names)
    assert not Path(store).exists() and not (tmp_path / "o").exists()


def test_settings_of_a_shared_or_component_metric_are_read():
    """The refusal of unread --model-path/--option values (issue 35 point 8) knows what a run reads: CE F1 builds
    its labeller from semb's settings (MetricSpec.shares) and RadCliQ-v1 computes its components."""
    from rexrank.errors import ConfigError
    from rexrank.evaluation.plan import check_settings_read, settings_readers
    from rexrank.metrics import REGISTRY

    assert {"ce_f1", "semb"} <= settings_readers(["ce_f1"])
    assert set(REGISTRY.spec("radcliq_v1").components) <= settings_readers(["radcliq_v1"])
    check_settings_read(["ce_f1"], {"semb": "--model-path"})
    check_settings_read(["radcliq_v1"], {"bertscore": "--option"})
    with pytest.raises(ConfigError, match="--model-path semb: no metric of this run reads it"):
        check_settings_read(["bleu2", "bertscore"], {"semb": "--model-path"})


def test_metric_options_come_from_the_constructor():
    from rexrank.metrics import REGISTRY

    assert REGISTRY.options("bleu2") == ([], False)
    named, open_ended = REGISTRY.options("bertscore")
    assert {"model", "device", "batch_size", "num_layers"} <= set(named) and not open_ended
    assert REGISTRY.options("green")[1]  # forwards backend options: any key is accepted
    REGISTRY.check_options("green", ["gpu_memory_utilization"])
    REGISTRY.check_options("semb", ["backbone", "device"])


def _never_called(what: str):
    def refuse(*args, **kwargs):
        raise AssertionError(f"{what} was called before every option was checked")
    return refuse


@pytest.mark.parametrize("extra", [
    # Two ways to name the same models: only the metric's constructor knows they conflict (issue 26, point 5).
    ["--model-path", "ratescore={tmp}", "--option", "ratescore.embed_model={tmp}"],
    ["--option", "ratescore.batch_size=0"],  # a value the constructor refuses (not a key the signature lacks)
], ids=["model-path and embed_model", "batch_size 0"])
def test_metric_option_values_are_checked_before_any_input_is_read(cli, tiny, monkeypatch, extra):
    """Every --option/--model-path value reaches the metric's constructor before the predictions are parsed or the
    dataset loads (docs/harness.md): the loaders are replaced by ones that fail the test if called."""
    import time

    import rexrank.data
    import rexrank.evaluation.inputs as inputs_module

    monkeypatch.setattr(inputs_module, "load_inputs", _never_called("load_inputs"))
    monkeypatch.setattr(rexrank.data, "load", _never_called("the dataset loader"))
    tmp_path, preds, _ = tiny
    args = [a.format(tmp=tmp_path) for a in extra]
    start = time.monotonic()
    code, text = cli("score", "-p", str(preds), "--dataset", "iu_xray", "-m", "ratescore", "-o",
                     str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), *args)
    _assert_usage_error(code, text, "ratescore")
    assert time.monotonic() - start < 30  # no dataset, no model: seconds at most even on a loaded machine
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()
