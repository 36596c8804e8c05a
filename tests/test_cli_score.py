"""`rexrank score` and `rexrank compare` end to end: files in, the result contract out (docs/harness.md, "Outputs").

Uses BLEU-2 and the fake metrics of tests/evaluation_fakes.py (a CheXbert-like labeller, a GREEN-like judge with
error counts, a reciprocal-aggregated metric), so every column family of the per-study table is exercised without
models. One test runs the real model-backed metrics on stand-ins; one runs two processes under torchrun.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import evaluation_fakes as fakes
import rexrank

TESTS = Path(__file__).resolve().parent
DRIVER = TESTS / "evaluation_driver.py"

REFS = [
    ("s1", "Heart size normal. Lungs are clear.", "north"),
    ("s2", "Cardiomegaly with small left effusion.", "north"),
    ("s3", "Normal chest radiograph.", "south"),
    ("s4", "Right lower lobe opacity, possibly pneumonia.", "south"),
    ("s5", "Cardiomegaly. No pneumothorax.", "south"),
    ("s6", "Lungs are clear. normal heart.", "north"),
]
HYPS = {"s1": "Heart size normal. Lungs clear.", "s2": "Cardiomegaly. No effusion.", "s3": "Normal chest.",
        "s4": "unparseable output", "s5": "Cardiomegaly. No pneumothorax.", "s6": "Lungs are clear."}


@pytest.fixture
def files(tmp_path):
    refs = tmp_path / "refs.jsonl"
    refs.write_text("".join(json.dumps({"study_id": i, "report": r, "site": s}) + "\n" for i, r, s in REFS))
    preds = tmp_path / "model_a.csv"
    pd.DataFrame({"study_id": list(HYPS), "report": list(HYPS.values())}).to_csv(preds, index=False)
    return preds, refs


METRICS = "bleu2,fake_len,fake_judge,fake_lower"


def test_score_writes_the_result_contract(cli, tmp_path, files, fake_metrics):
    preds, refs = files
    out = tmp_path / "out"
    code, text = cli("score", "-p", str(preds), "-r", str(refs), "-m", METRICS, "--dataset", "iu_xray",
                     "--split", "test", "--cache-dir", str(tmp_path / "cache"), "-o", str(out), "--resamples", "200")
    assert code == 0, text
    assert "BLEU" in text and "1/FakeLower" in text and "95% CI" in text  # the terminal summary table
    per_study = pd.read_parquet(out / "per_study.parquet")
    assert list(per_study.columns) == [
        "study_id", "hyp_sha256", "ref_sha256", "site", "bleu_score", "fake_len", "fake_judge", "fake_lower",
        "green_significant_errors", "green_insignificant_errors", "ref_chexbert_cardiomegaly",
        "ref_chexbert_no_finding", "ref_normal", "green_error_free"]
    assert list(per_study["study_id"]) == [r[0] for r in REFS]
    assert per_study["ref_normal"].tolist() == [True, False, True, False, False, True]
    assert np.isnan(per_study.loc[3, "green_error_free"]) and per_study.loc[4, "green_error_free"] == 1.0
    from rexrank.metrics.base import text_key

    assert per_study.loc[0, "ref_sha256"] == text_key(REFS[0][1])
    assert not any(REFS[0][1] in str(v) for v in per_study.to_numpy().ravel()), "texts must not leak"

    results = json.loads((out / "results.json").read_text())
    assert {k: results[k] for k in ("model", "dataset", "split", "track", "n_studies")} == {
        "model": "model_a", "dataset": "iu_xray", "split": "test", "track": "findings", "n_studies": 6}
    assert list(results["metrics"]) == ["bleu2", "fake_len", "fake_judge", "fake_lower"]
    for name, entry in results["metrics"].items():
        assert {"mean", "ci_low", "ci_high", "higher_is_better", "leaderboard_column", "leaderboard_value"} <= set(entry)
    judge = results["metrics"]["fake_judge"]
    assert judge["n"] == 5 and judge["n_nan"] == 1
    lower = results["metrics"]["fake_lower"]
    assert lower["leaderboard_value"] == pytest.approx(1 / per_study["fake_lower"].mean())
    assert lower["higher_is_better"] is False
    assert results["leaderboard"]["BLEU"] == pytest.approx(per_study["bleu_score"].mean())
    assert set(results["configs"]) == set(results["fingerprints"]) == set(results["metrics"])
    assert {"python", "rexrank", "numpy", "torch"} <= set(results["versions"])
    sub = results["subgroups"]
    assert sub["normal_vs_abnormal"]["normal"]["n"] == 3 and sub["normal_vs_abnormal"]["abnormal"]["n"] == 3
    assert set(sub["sites"]) == {"north", "south"} and sub["sites"]["north"]["n"] == 3
    assert sub["green"]["error_free_rate"]["n"] == 5
    assert "error_free_rate_abnormal" in sub["green"]
    assert results["analyses"]["spearman_per_study"]["bleu2"]["bleu2"] == pytest.approx(1.0)

    card = yaml.safe_load((out / "model_index.yaml").read_text())
    entry = card["model-index"][0]
    assert entry["name"] == "model_a" and entry["results"][0]["dataset"]["type"] == "rexrank/iu_xray"
    assert {m["name"] for m in entry["results"][0]["metrics"]} == {"BLEU", "FakeLen", "FakeJudge", "1/FakeLower"}
    markdown = (out / "results.md").read_text()
    assert "| Metric | Value | 95% CI | Better |" in markdown and "| BLEU |" in markdown
    assert sorted(p.name for p in out.iterdir()) == ["model_index.yaml", "per_study.parquet", "results.json",
                                                      "results.md"]


def test_results_feed_the_leaderboard_record(cli, tmp_path, files):
    """results.json is what `rexrank leaderboard add` reads: the record must build from it."""
    records = pytest.importorskip("rexrank.leaderboard.records")
    preds, refs = files
    out = tmp_path / "out"
    code, text = cli("score", "-p", str(preds), "-r", str(refs), "-m", "bleu2", "--dataset", "iu_xray", "--split",
                     "test", "--no-cache", "-o", str(out), "-q")
    assert code == 0, text
    results = json.loads((out / "results.json").read_text())
    record = records.from_results_json(results, records.ModelInfo.from_dict({"name": "model_a"}))
    assert record.metrics["bleu2"].mean == pytest.approx(results["metrics"]["bleu2"]["mean"])
    assert record.metrics["bleu2"].ci_low == pytest.approx(results["metrics"]["bleu2"]["ci_low"])


def test_harness_and_library_agree(tmp_path, files, fake_metrics):
    """`rexrank.score` (in memory) and the cached, chunked harness are one core: same values."""
    from rexrank.evaluation.harness import ScoreOptions, evaluate
    from rexrank.evaluation.inputs import load_inputs

    preds, refs = files
    inputs = load_inputs(preds, references=refs, track="findings")
    evaluation = evaluate(inputs, model="m", track="findings",
                          options=ScoreOptions(metrics=METRICS.split(","), cache_dir=tmp_path, chunk_size=2,
                                               resamples=20))
    library = rexrank.score(inputs.hyps, inputs.refs, METRICS.split(","))
    for column in ("bleu_score", "fake_len", "fake_judge", "fake_lower"):
        np.testing.assert_array_equal(evaluation.per_study[column].to_numpy(), library[column].to_numpy())
    assert library.attrs["metrics"]["bleu2"]["fingerprint"] == evaluation.results["fingerprints"]["bleu2"]


def test_compare_two_score_runs(cli, tmp_path, files, fake_metrics):
    preds, refs = files
    other = tmp_path / "model_b.json"
    other.write_text(json.dumps({i: "Lungs are clear." for i in HYPS}))
    for p, name in ((preds, "a"), (other, "b")):
        code, text = cli("score", "-p", str(p), "-r", str(refs), "-m", "bleu2,fake_len", "--cache-dir",
                         str(tmp_path / "cache"), "-o", str(tmp_path / name), "-q", "--resamples", "100")
        assert code == 0, text
    code, text = cli("compare", str(tmp_path / "a"), str(tmp_path / "b" / "per_study.parquet"), "--resamples", "200",
                     "--permutations", "500", "-o", str(tmp_path / "cmp"))
    assert code == 0, text
    assert "Paired tests" in text and "p rand" in text
    report = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert report["models"] == ["model_a", "model_b"] and report["n_studies"] == 6
    test = report["pairwise"][0]["tests"]["bleu2"]
    assert 0 < test["p_bootstrap"] <= 1 and 0 < test["p_randomization"] <= 1
    assert test["ci_low"] <= test["difference"] <= test["ci_high"]
    assert report["subgroups"]["normal_vs_abnormal"]["normal"]["n"] == 3
    assert set(report["subgroups"]["sites"]) == {"north", "south"}
    assert "| A | B | Metric | A - B |" in (tmp_path / "cmp" / "compare.md").read_text()
    code, text = cli("compare", str(tmp_path / "a"), str(tmp_path / "nowhere"))
    assert code == 2 and "expected a `rexrank score` results folder" in text


@pytest.mark.parametrize(("flags", "env", "shown"), [
    (["--no-progress"], None, False), (["--progress"], "0", True), ([], "0", False), ([], None, True)])
def test_compare_progress_switch(cli, tmp_path, monkeypatch, flags, env, shown):
    """Issue 35 point 8: the README lists --no-progress for compare, which answered "No such option". The flag
    wins over REXRANK_PROGRESS, as in `score` (rexrank.progress.enabled, read when the paired tests start)."""
    import rexrank.evaluation.statistics as statistics
    from rexrank import progress

    seen = []
    real_task = progress.task

    def recording_task(*args, **kwargs):
        seen.append(progress.enabled())
        return real_task(*args, **kwargs)

    monkeypatch.setattr(statistics.progress, "task", recording_task)
    if env is None:
        monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    else:
        monkeypatch.setenv(progress.PROGRESS_ENV, env)
    ids = [f"s{i}" for i in range(20)]
    for name, shift in (("a", 0.0), ("b", 0.1)):
        (tmp_path / name).mkdir()
        pd.DataFrame({"study_id": ids, "bleu_score": np.linspace(0.1, 0.5, 20) + shift}).to_parquet(
            tmp_path / name / "per_study.parquet")
    code, text = cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--resamples", "20", "--permutations",
                     "20", *flags)
    assert code == 0, text
    assert seen == [shown]


def test_iu_xray_dataset_route(cli, tmp_path, shared_dir):
    """References from the IU-Xray builder (--dataset iu_xray --split test), predictions in ReXrank JSON."""
    data = json.loads((shared_dir / "data" / "iu_xray" / "ReXRank_IUXray_test.json").read_text())
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({k: {**v, "model_prediction": v["section_findings"] or "x"} for k, v in data.items()}))
    out = tmp_path / "out"
    code, text = cli("score", "-p", str(preds), "--dataset", "iu_xray", "--split", "test", "-m", "bleu2",
                     "--no-cache", "-o", str(out), "-q", "--resamples", "100")
    assert code == 0, text
    results = json.loads((out / "results.json").read_text())
    assert results["n_studies"] == 590 and results["dataset"] == "iu_xray"
    assert results["metrics"]["bleu2"]["mean"] == pytest.approx(1.0)


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path, files):
    """torchrun with 2 CPU processes (gloo): each scores a shard into the shared cache, rank 0 gathers; the files
    equal a single-process run's (except timestamps)."""
    preds, refs = files
    env = dict(os.environ, OMP_NUM_THREADS="1", REXRANK_PROGRESS="0")
    common = ["score", "-p", str(preds), "-r", str(refs), "-m", METRICS, "--resamples", "100", "-q",
              "--chunk-size", "2"]
    single = subprocess.run([sys.executable, str(DRIVER), *common, "--no-cache", "-o", str(tmp_path / "one")],
                            env=env, capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr
    multi = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                            str(DRIVER), *common, "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / "two")],
                           env=env, capture_output=True, text=True, timeout=300)
    assert multi.returncode == 0, multi.stderr[-3000:]
    from rexrank.evaluation.harness import check_equal

    one, two = (pd.read_parquet(tmp_path / d / "per_study.parquet") for d in ("one", "two"))
    assert check_equal(one, two)
    r1, r2 = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("one", "two"))
    assert r1["metrics"] == r2["metrics"] and r1["subgroups"] == r2["subgroups"]
    assert r2["analyses"]["processes"] == 2 and r1["analyses"]["processes"] == 1
    from rexrank.evaluation.cache import ScoreCache

    assert ScoreCache(tmp_path / "cache").stats()["pairs"] == 6 * 4  # both ranks filled the shared cache


def _model_backed(standins) -> tuple[list[str], list[str]]:
    """--metrics and --model-path/--option arguments for every model-backed metric that exists in this build."""
    from rexrank.metrics import REGISTRY

    wanted = {"bertscore": "bertscore", "semb": "semb", "radgraph": "radgraph", "ratescore": "ratescore",
              "green": "green"}
    names, args = ["bleu2"], []
    for name, builder in wanted.items():
        try:
            REGISTRY.cls(name)
        except (ImportError, AttributeError):
            continue  # that metric has not landed in this checkout yet
        paths = standins(builder)
        names.append(name)
        if name == "semb":
            args += ["--model-path", f"semb={paths['semb']}", "--option", f"semb.backbone={paths['semb_backbone']}"]
        elif name == "ratescore":
            args += ["--model-path", f"ratescore={Path(paths['ratescore_ner']).parent}"]
        else:
            args += ["--model-path", f"{name}={paths[name]}"]
        if name == "green":  # the random stand-in never writes EOS: cap its analyses (fingerprinted, unofficial)
            args += ["--option", "green.max_new_tokens=16"]
    if {"radgraph", "bertscore", "semb"} <= set(names):
        names.append("radcliq_v1")
    return names, args


@pytest.mark.slow
def test_model_backed_metrics_on_standins_reuse_reference_side_work(cli, tmp_path, standins, iu_xray_test):
    """The real metrics (random-weight stand-ins: plumbing, not real numbers) through `rexrank score`: a second
    model against the same references adds per-text cache entries for its own reports only."""
    import sqlite3

    from rexrank.metrics.base import text_key

    names, model_args = _model_backed(standins)
    ids = [i for i in iu_xray_test if iu_xray_test[i]["section_findings"]][:6]
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({i: iu_xray_test[i] for i in ids}))
    hyps = {"a": {i: iu_xray_test[ids[(k + 1) % 6]]["section_findings"] for k, i in enumerate(ids)},
            "b": {i: "No acute cardiopulmonary abnormality. " + iu_xray_test[i]["section_findings"][:60]
                  for i in ids}}
    cache = tmp_path / "cache"

    def text_keys():
        with sqlite3.connect(cache / "scores.sqlite") as conn:
            return set(conn.execute("SELECT namespace, key FROM texts").fetchall())

    for model in ("a", "b"):
        preds = tmp_path / f"{model}.json"
        preds.write_text(json.dumps(hyps[model]))
        before = text_keys() if model == "b" else set()
        code, text = cli("score", "-p", str(preds), "-r", str(refs), "-m", ",".join(names), *model_args,
                         "--cache-dir", str(cache), "-o", str(tmp_path / model), "-q", "--resamples", "100",
                         "--batch-size", "4")
        assert code == 0, text
        if model == "b":
            # Namespaces keyed by whole report texts (CheXbert outputs, BERTScore reference embeddings, RaTEScore
            # entities); GREEN keys pairs and RaTEScore entity names, which a new model legitimately adds.
            per_report = {(ns, key) for ns, key in text_keys() - before
                          if any(f":{a}:" in ns for a in ("chexbert", "tokens", "entities"))}
            hyp_keys = {text_key(t) for t in hyps["b"].values()}
            assert all(key in hyp_keys for _, key in per_report), "a reference-side result was recomputed"
            if "semb" in names:
                assert any(":chexbert:" in ns for ns, _ in per_report)
    results = json.loads((tmp_path / "b" / "results.json").read_text())
    assert list(results["metrics"])[: len(names)] == names
    per_study = pd.read_parquet(tmp_path / "b" / "per_study.parquet")
    if "semb" in names:
        assert "ref_chexbert_no_finding" in per_study.columns and "normal_vs_abnormal" in results["subgroups"]
    if "green" in names:
        assert "green_error_free" in per_study.columns and "green_analysis" not in per_study.columns
    if "radcliq_v1" in names:
        entry = results["metrics"]["radcliq_v1"]
        assert entry["leaderboard_column"] == "1/RadCliQ-v1"
        assert entry["leaderboard_value"] == pytest.approx(1 / per_study["radcliq_v1"].mean())
    code, text = cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--resamples", "100",
                     "--permutations", "200")
    assert code == 0, text


def test_progress_bars_show_eta(capsys, monkeypatch, fake_metrics):
    """Long steps show a progress bar with an ETA (tqdm's "<remaining" field) on stderr."""
    from rexrank.evaluation.runner import build_metrics, score_pairs

    monkeypatch.setenv(fakes.SLEEP_ENV, "0.06")  # slow enough for the bar to redraw between chunks
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a bar on a terminal (log lines otherwise)
    score_pairs([f"a {i}" for i in range(6)], ["b"] * 6, build_metrics(["fake_slow"]), chunk_size=2, progress=True)
    err = capsys.readouterr().err
    import re

    assert "fake_slow" in err and "pair/s" in err
    assert re.search(r"[2-6]/6 \[\d\d:\d\d<\d\d:\d\d", err), err  # elapsed<remaining: the ETA
