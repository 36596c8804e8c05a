"""Clinical-efficacy F1 (``ce_f1``): parity with f1chexbert 0.0.2 and scikit-learn (both run in .venv-ref), its
bootstrap against a slow per-resample loop, compare's paired test, the harness (no CheXbert forward beyond
SembScore's) and a private set's per-study table (no counts).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from parity import Pairs, ParityTester, centred_chexbert, iu_reports, shifted

from rexrank import metrics
from rexrank.errors import ConfigError
from rexrank.evaluation.bootstrap import corpus_intervals, index_matrix, percentile_interval
from rexrank.evaluation.compare import corpus_paired_test, paired_test
from rexrank.metrics import ce_f1
from rexrank.metrics.aggregation import corpus_aggregate, corpus_values
from rexrank.metrics.chexbert import CONDITIONS

N_TEXTS = 40  # IU-Xray pairs in the f1chexbert run (it labels one report per forward pass)


@pytest.fixture(scope="module")
def files(standins):
    return standins("semb")


def _random_cases():
    rng = np.random.default_rng(7)
    cases = []
    for n, p in ((30, 0.5), (200, 0.1), (12, 0.03)):  # sparse: some conditions with no positive on either side
        cases.append({"y_true": (rng.random((n, 14)) < p).astype(int).tolist(),
                      "y_pred": (rng.random((n, 14)) < p).astype(int).tolist()})
    return cases


def _report_values(cr: dict, names) -> dict[str, float]:
    """rexrank output names from an sklearn classification_report dict."""
    out = {}
    for avg in ("micro", "macro"):
        for what, key in (("f1", "f1-score"), ("precision", "precision"), ("recall", "recall")):
            out[f"{avg}_{what}"] = cr[f"{avg} avg"][key]
    out.update({f"f1_{ce_f1.slug(c)}": cr[c]["f1-score"] for c in names})
    return out


CONVENTIONS = {"positive": "rrg", "negative": "negative"}  # uncertain= -> the reference's result for it


class TestCEF1Parity(ParityTester):
    """Same texts, same chexbert.pth (head biases centred on them, parity.centred_chexbert): every F1/precision/
    recall of f1chexbert 0.0.2's forward (uncertain positive, its default) and of sklearn's classification_report on
    its 'classification' codes with only 1 positive (uncertain negative), and the accuracy on the 5, equal rexrank's
    to 1e-12 (tests/reference/ce_f1_f1chexbert_ref.py); corpus values of random label matrices equal sklearn's."""

    metric = "ce_f1"
    reference_script = "ce_f1_f1chexbert_ref.py"
    versions = {"f1chexbert": "0.0.2"}
    compared = tuple((f"{uncertain}:{name}", f"{uncertain}:{name}") for uncertain in CONVENTIONS
                     for name in ce_f1.OUTPUTS)
    atol = 1e-12
    corpus = True

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test, n=N_TEXTS)
        return Pairs.with_edges(shifted(refs, 3), refs, [("", "Heart size normal."), ("No acute disease.", "")])

    @pytest.fixture(scope="class")
    def options(self, files, pairs, tmp_path_factory):
        centred = centred_chexbert(files, pairs.refs + pairs.hyps, tmp_path_factory.mktemp("ce_f1"))
        return {"semb": {"model": centred["semb"], "backbone": centred["semb_backbone"]}, "device": "cpu"}

    def reference_payload(self, pairs, options):
        return {"model": options["semb"]["model"], "backbone": options["semb"]["backbone"], "hyps": pairs.hyps,
                "refs": pairs.refs, "random": _random_cases()}

    def compute_ours(self, metric, pairs, options):
        """Both conventions (the class's scorer is the default, positive)."""
        out = {}
        for uncertain in CONVENTIONS:
            values = metrics.get("ce_f1", uncertain=uncertain, **options).compute(pairs.hyps, pairs.refs)
            out.update({f"{uncertain}:{name}": value for name, value in values.items()})
        return out

    def theirs(self, reference):
        out = {}
        for uncertain, key in CONVENTIONS.items():
            ref = reference[key]
            expected = {f"{k}_14" if not k.startswith("f1_") else k: v
                        for k, v in _report_values(ref["cr"], CONDITIONS).items()}
            expected.update({f"{k}_5": v for k, v in _report_values(ref["cr_5"], ce_f1.TOP5).items()
                             if not k.startswith("f1_")})
            expected["accuracy_5"] = ref["accuracy"]
            assert set(expected) == set(ce_f1.OUTPUTS)
            out.update({f"{uncertain}:{name}": value for name, value in expected.items()})
        return out

    def test_reference_names_the_conditions_and_the_five(self, reference):
        assert set(reference["target_names_5"]) == set(ce_f1.TOP5) and tuple(reference["target_names"]) == CONDITIONS

    def test_inputs_make_the_comparison_meaningful(self, ours, options, pairs, reference):
        """The centred stand-in really exercises the convention: uncertain labels occur and change some F1; the
        accuracy on the 5 is f1chexbert's per-example accuracy averaged."""
        labeller = metrics.get("ce_f1", **options).labeller
        classes = labeller.labels(pairs.refs + pairs.hyps, codes=False).to_numpy()
        assert (classes == 3).any()
        assert reference["rrg"]["cr"]["micro avg"] != reference["negative"]["cr"]["micro avg"]
        assert ours["positive:accuracy_5"] == pytest.approx(np.mean(reference["rrg"]["pe_accuracy"]))

    def test_values_equal_sklearn_on_random_label_matrices(self, reference):
        """corpus_values of summed per-study counts = sklearn's precision/recall/F1 (micro, macro, per class) on the
        same 0/1 matrices, sparse ones included (sklearn's zero_division: 0, counted in the macro mean)."""
        for case, expected in zip(_random_cases(), reference["random"]):
            stats = ce_f1.study_statistics(np.array(case["y_pred"]), np.array(case["y_true"]))
            ours = corpus_aggregate(stats, "ce_f1")
            for avg in ("micro", "macro"):
                for what in ("precision", "recall", "f1"):
                    self.assert_close(ours[f"{avg}_{what}_14"], expected[avg][what], f"{avg} {what}")
            self.assert_close([ours[f"f1_{ce_f1.slug(c)}"] for c in CONDITIONS], expected["per_class_f1"],
                              "per-class F1")


def test_conventions_map_uncertain_and_reject_unknown():
    classes = np.array([[0, 1, 2, 3] * 3 + [0, 1]])
    assert ce_f1.binary_labels(classes, "positive")[0, :4].tolist() == [0, 1, 0, 1]
    assert ce_f1.binary_labels(classes, "negative")[0, :4].tolist() == [0, 1, 0, 0]
    with pytest.raises(ConfigError, match="uncertain=positive"):
        metrics.get("ce_f1", uncertain="maybe")


def _stats(n=60, seed=3):
    rng = np.random.default_rng(seed)
    return ce_f1.study_statistics(rng.random((n, 14)) < 0.3, rng.random((n, 14)) < 0.3)


def test_bootstrap_ci_equals_a_slow_loop_recomputing_f1_per_resample():
    """corpus_intervals (count vectors @ statistics, vectorised) = the percentile interval of F1s recomputed from
    the resampled studies one resample at a time, on the bootstrap's own index stream."""
    stats = _stats()
    fast = corpus_intervals(stats, "ce_f1", resamples=300, seed=5)
    slow = np.array([corpus_values(stats[idx].sum(axis=0), len(idx), "ce_f1") for idx in index_matrix(60, 300, 5)])
    low, high = percentile_interval(slow)
    for j, name in enumerate(ce_f1.OUTPUTS):
        assert fast[name]["ci_low"] == pytest.approx(low[j], abs=1e-12)
        assert fast[name]["ci_high"] == pytest.approx(high[j], abs=1e-12)
    assert fast["micro_f1_14"]["ci_low"] < fast["micro_f1_14"]["value"] < fast["micro_f1_14"]["ci_high"]


def test_paired_test_on_a_corpus_metric():
    """A model that copies the reference labels beats a random one significantly; a model against itself shows no
    difference; the exact-match output agrees with the per-report paired test on its 0/1 column."""
    rng = np.random.default_rng(11)
    ref = rng.random((80, 14)) < 0.3
    good = ce_f1.study_statistics(np.where(rng.random((80, 14)) < 0.9, ref, ~ref), ref)
    bad = ce_f1.study_statistics(rng.random((80, 14)) < 0.3, ref)
    test = corpus_paired_test(good, bad, "ce_f1", resamples=500, permutations=500, seed=0)
    assert test["difference"] > 0.3 and test["ci_low"] > 0 and test["p_randomization"] < 0.01
    same = corpus_paired_test(good, good, "ce_f1", resamples=200, permutations=200, seed=0)
    assert same["difference"] == 0 and same["p_randomization"] == 1.0
    plain = paired_test(good[:, 0], bad[:, 0], resamples=500, permutations=500, seed=0)
    acc = test["outputs"]["accuracy_5"]
    assert acc["difference"] == pytest.approx(plain["difference"])
    assert (acc["ci_low"], acc["ci_high"]) == pytest.approx((plain["ci_low"], plain["ci_high"]))
    assert acc["p_randomization"] == pytest.approx(plain["p_randomization"])


def test_score_semb_and_ce_f1_adds_no_chexbert_forward(cli, tmp_path, files, iu_xray_test, monkeypatch):
    """`rexrank score --metrics semb,ce_f1` forwards exactly the texts `--metrics semb` does (labels from the same
    per-text cache entries); results.json carries every CE output with a CI, results.md the F1 rows, and
    per_study.parquet the counts; `compare` ranks and tests ce_f1."""
    from rexrank.metrics import chexbert

    forwarded = []
    real_run = chexbert.run

    def counting_run(model, tokenizer, texts, **kwargs):
        forwarded.extend(texts)
        return real_run(model, tokenizer, texts, **kwargs)

    monkeypatch.setattr(chexbert, "run", counting_run)
    ids = [i for i in iu_xray_test if iu_xray_test[i]["section_findings"]][:8]
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({i: iu_xray_test[i] for i in ids}))
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({i: iu_xray_test[ids[(k + 1) % 8]]["section_findings"] for k, i in enumerate(ids)}))
    model = ["--model-path", f"semb={files['semb']}", "--option", f"semb.backbone={files['semb_backbone']}"]
    counts = {}
    for run, names in (("semb", "semb"), ("both", "semb,ce_f1"), ("alone", "ce_f1")):
        forwarded.clear()
        code, text = cli("score", "-p", str(preds), "-r", str(refs), "-m", names, *model, "--no-cache",
                         "-o", str(tmp_path / run), "-q", "--resamples", "50")
        assert code == 0, text
        counts[run] = sorted(forwarded)
    assert counts["both"] == counts["semb"] == counts["alone"] and counts["semb"]
    results = json.loads((tmp_path / "both" / "results.json").read_text())
    entry = results["metrics"]["ce_f1"]
    assert set(entry["values"]) == set(ce_f1.OUTPUTS) and entry["leaderboard_column"] is None
    assert all({"value", "ci_low", "ci_high"} <= set(v) for v in entry["values"].values())
    assert "CE micro F1 (14)" in (tmp_path / "both" / "results.md").read_text()
    assert results["configs"]["ce_f1"]["uncertain"] == "positive"
    table = pd.read_parquet(tmp_path / "both" / "per_study.parquet")
    assert set(ce_f1.STATISTICS) <= set(table.columns)
    assert corpus_aggregate(table[list(ce_f1.STATISTICS)], "ce_f1")["micro_f1_14"] == pytest.approx(entry["mean"])
    from rexrank.metrics.official import check_metric

    # The official-weights check reads CE F1's labeller weights: the same verdict as SembScore's.
    assert check_metric("ce_f1", results["configs"]).status == check_metric("semb", results["configs"]).status
    assert check_metric("ce_f1", {"ce_f1": {}}).status == "unofficial"
    # rexrank.score (in memory) summarises CE F1 from the counts, not as a mean of its per-study column.
    import rexrank

    hyps = list(json.loads(preds.read_text()).values())
    refs_text = [iu_xray_test[i]["section_findings"] for i in ids]
    frame = rexrank.score(hyps, refs_text, metrics=["ce_f1"], metric_configs={
        "ce_f1": {"semb": {"model": files["semb"], "backbone": files["semb_backbone"]}}}, device="cpu")
    assert frame.attrs["summary"]["ce_f1"]["values"] == corpus_aggregate(frame[list(ce_f1.STATISTICS)], "ce_f1")
    code, text = cli("compare", str(tmp_path / "both"), str(tmp_path / "alone"), "--metrics", "ce_f1",
                     "--resamples", "50", "--permutations", "50", "-o", str(tmp_path / "cmp"))
    assert code == 0, text
    # Same labels both runs: no difference.
    report = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert report["pairwise"][0]["tests"]["ce_f1"]["difference"] == 0


def test_private_per_study_table_has_no_counts():
    """Per-study TP/FN reveal the reference's labels: a private set's table drops every statistic of a corpus metric
    (and the metric column), an open set's keeps them."""
    from rexrank.evaluation.harness import shareable

    stats = _stats(5)
    frame = pd.concat([pd.DataFrame({"study_id": list("abcde"), "hyp_sha256": ["x"] * 5, "bleu_score": 0.5}),
                       pd.DataFrame(stats, columns=list(ce_f1.STATISTICS))], axis=1)
    private = shareable(frame, private=True)
    assert not set(ce_f1.STATISTICS) & set(private.columns) and "bleu_score" in private.columns
    assert set(ce_f1.STATISTICS) <= set(shareable(frame, private=False).columns)


def test_model_page_shows_ce_f1_outside_the_ranking_columns(tmp_path):
    """A stored rexrank result with CE F1: the model page's CE table shows its F1s with CIs and its convention (a
    private set's rounded); the ranking table has no CE column."""
    from rexrank.evaluation.aggregate import metric_summary
    from rexrank.leaderboard import board
    from rexrank.metrics.boards import edition
    from rexrank.leaderboard.views import corpus_markdown as _corpus_markdown
    from rexrank.leaderboard.records import ModelInfo, from_results_json
    from rexrank.leaderboard.store import Store

    frame = pd.DataFrame(_stats(), columns=list(ce_f1.STATISTICS))
    summary = metric_summary(frame, resamples=100)
    assert list(summary) == ["ce_f1"] and summary["ce_f1"]["leaderboard_column"] is None
    store = Store(tmp_path / "board.sqlite")
    try:
        for dataset in ("iu_xray", "rexgradient"):  # an open and a private set
            store.add_result(from_results_json(
                {"dataset": dataset, "split": "test", "track": "findings", "metrics": summary, "n_studies": 60,
                 "configs": {"ce_f1": {"uncertain": "negative"}}}, ModelInfo(name="M")),
                allow_unofficial_weights=True)  # counts made up here: no SembScore weights behind them
        table = board.model_corpus_metrics(store, "M")
        assert len(table) == 2 and set(table["Options"]) == {"uncertain=negative"}
        micro = summary["ce_f1"]["values"]["micro_f1_14"]
        open_row = table[table["Dataset"] == board.DATASET_LABELS["iu_xray"]].iloc[0]
        assert open_row["CE micro F1 (14)"] == board.fmt(micro["value"], micro["ci_low"], micro["ci_high"])
        assert "CE macro F1 (5)" in table.columns
        assert "Clinical efficacy" in _corpus_markdown(table) and _corpus_markdown(table.iloc[:0]) == ""
        assert not any("CE" in c for c in board.display_columns(edition().all_metrics()))
    finally:
        store.close()
