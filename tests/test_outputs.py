"""Outputs a researcher can read at a glance without misreading them (issue 15).

Each test pins one way an output used to mislead: a mean printed under the reciprocal's direction, a negative or
NaN mean shown without a word, a "better" model named at p = 0.82, 580 "pairs" for 590 studies unexplained,
`make demo` storing the same result again on every run, and eight copies of one published-table quirk.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from rexrank.evaluation.aggregate import build_results
from rexrank.evaluation.compare import NO_SIGNIFICANT_DIFFERENCE, Run, compare_runs, markdown, verdict
from rexrank.evaluation.report import markdown_table, print_summary
from rexrank.metrics import aggregation as agg


def _results(columns: dict[str, list[float]], order: list[str]) -> dict:
    return build_results(pd.DataFrame(columns), {}, model="m", dataset=None, split=None, track="findings",
                         order=order, resamples=50)


def _console_text(results: dict) -> str:
    from rich.console import Console

    buffer = io.StringIO()
    print_summary(results, Console(file=buffer, width=220, color_system=None))
    return buffer.getvalue()


def _row(text: str, label: str) -> list[str]:
    """The cells of the table row (Markdown or rich) whose first cell is ``label``."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.replace("│", "|").strip("| ").split("|")]
        if cells and cells[0] == label:
            return cells
    raise AssertionError(f"no row {label!r} in:\n{text}")


# --- RadCliQ: two figures, each with its own direction ----------------------------------------------------------

def test_radcliq_mean_and_reciprocal_are_two_rows_with_their_own_directions():
    results = _results({"radcliq_v1": [0.5, 0.9, 0.6], "bleu_score": [0.1, 0.2, 0.3]}, ["bleu2", "radcliq_v1"])
    entry = results["metrics"]["radcliq_v1"]
    # results.json says which direction belongs to which figure.
    assert entry["higher_is_better"] is False and entry["leaderboard_higher_is_better"] is True
    for text in (markdown_table(results), _console_text(results)):
        mean = _row(text, "RadCliQ-v1 (mean per report)")
        reciprocal = _row(text, "1/RadCliQ-v1 (1/mean)")
        assert mean[1] == f"{2 / 3:.4f}" and mean[-1] == "lower"
        assert reciprocal[1] == "1.5000" and reciprocal[-1] == "higher"
        assert _row(text, "BLEU")[1:2] == ["0.2000"] and _row(text, "BLEU")[-1] == "higher"
        assert "Per-report mean" not in text  # the old column that put the mean under 1/mean's "higher"
    assert "RadCliQ-v1 is the mean of the per-report values (lower is better)" in markdown_table(results)


# --- negative and NaN means are flagged everywhere ---------------------------------------------------------------

@pytest.mark.parametrize(("values", "flag", "label"), [
    ([-0.1, -0.2, 0.05], agg.NEGATIVE_MEAN, "1/RadCliQ-v1 (1/mean)"),
    ([np.nan, np.nan, np.nan], agg.NAN_MEAN, "1/RadCliQ-v1 (1/mean)"),
])
def test_negative_and_nan_means_are_flagged_in_every_output(values, flag, label):
    results = _results({"radcliq_v1": values}, ["radcliq_v1"])
    assert results["metrics"]["radcliq_v1"]["leaderboard_flags"] == [flag]  # results.json
    json.dumps(results, allow_nan=False)
    for text in (markdown_table(results), _console_text(results)):
        assert _row(text, label)[1].endswith("(!)")
        assert f"1/RadCliQ-v1: {flag}" in " ".join(text.split())


def test_nan_mean_of_a_plain_metric_is_flagged_and_partial_nan_is_counted():
    results = _results({"bleu_score": [np.nan, np.nan], "bertscore": [0.2, np.nan]}, ["bleu2", "bertscore"])
    assert results["metrics"]["bleu2"]["leaderboard_value"] is None
    assert results["metrics"]["bleu2"]["leaderboard_flags"] == [agg.NAN_MEAN]
    assert results["metrics"]["bertscore"]["leaderboard_flags"] == []
    text = markdown_table(results)
    assert _row(text, "BLEU")[1:3] == ["n/a (!)", "[n/a, n/a]"]
    assert f"BLEU: {agg.NAN_MEAN}" in text and "BertScore: 1 of 2 per-report values is NaN" in text
    console = _console_text(results)
    assert "[n/a, n/a]" in console  # not swallowed as rich markup
    assert f"BLEU: {agg.NAN_MEAN}" in " ".join(console.split())


def test_negative_plain_mean_is_not_flagged():
    """Rescaled BERTScore can be negative: a plain mean is only flagged when there is none."""
    assert _results({"bertscore": [-0.2, -0.1]}, ["bertscore"])["metrics"]["bertscore"]["leaderboard_flags"] == []


# --- compare: a winner only when the difference is significant --------------------------------------------------

def _test(difference, low, high, p_boot, p_rand):
    return {"difference": difference, "ci_low": low, "ci_high": high, "p_bootstrap": p_boot,
            "p_randomization": p_rand}


def test_verdict_at_p_082_is_no_significant_difference():
    out = verdict(_test(0.003, -0.01, 0.016, 0.82, 0.82), "bleu2", "base", "shift", 0.05)
    assert out == {"significant": False, "better": None, "verdict": NO_SIGNIFICANT_DIFFERENCE}


@pytest.mark.parametrize(("low", "high", "p_boot", "p_rand"), [
    (0.001, 0.02, 0.03, 0.07),  # randomization disagrees
    (-0.001, 0.02, 0.03, 0.03),  # CI reaches 0
    (0.001, 0.02, 0.06, 0.01),  # bootstrap p above alpha
])
def test_verdict_needs_every_measure(low, high, p_boot, p_rand):
    assert verdict(_test(0.01, low, high, p_boot, p_rand), "bleu2", "a", "b", 0.05)["better"] is None


def test_verdict_names_the_better_side_by_the_leaderboard_direction():
    clear = _test(-0.2, -0.3, -0.1, 0.001, 0.001)
    assert verdict(clear, "bleu2", "a", "b", 0.05) == {"significant": True, "better": "b", "verdict": "b is better"}
    # 1/RadCliQ-v1: A - B < 0 means B has the higher 1/mean, the better one.
    assert verdict(clear, "radcliq_v1", "a", "b", 0.05)["better"] == "b"
    assert verdict(_test(None, None, None, None, None), "bleu2", "a", "b", 0.05)["significant"] is None


def _frame(ids, values):
    return pd.DataFrame({"study_id": ids, "hyp_sha256": [f"h{i}" for i in ids], "ref_sha256": [f"r{i}" for i in ids],
                         **values})


def test_compare_end_to_end_noise_vs_clear_difference():
    rng = np.random.default_rng(0)
    n = 150
    ids = [f"s{i}" for i in range(n)]
    base = rng.random(n)
    noise = base + rng.normal(0, 0.05, n)
    runs = [Run("base", _frame(ids, {"bleu_score": base, "bertscore": base}), None, "mem"),
            Run("shift", _frame(ids, {"bleu_score": noise, "bertscore": base + 0.2}), None, "mem")]
    report = compare_runs(runs, resamples=300, permutations=500)
    tests = report["pairwise"][0]["tests"]
    assert tests["bleu2"]["p_randomization"] > 0.05
    assert (tests["bleu2"]["significant"], tests["bleu2"]["better"]) == (False, None)
    assert (tests["bertscore"]["significant"], tests["bertscore"]["better"]) == (True, "shift")
    assert report["settings"]["alpha"] == 0.05 and "excludes 0" in report["settings"]["significance_rule"]
    text = markdown(report)
    assert _row(text, "base")[-1] in (NO_SIGNIFICANT_DIFFERENCE, "shift is better")
    assert f"| {NO_SIGNIFICANT_DIFFERENCE} |" in text and "| shift is better |" in text
    assert "Verdict (alpha 0.05)" in text


def test_compare_does_not_rank_a_flagged_reciprocal():
    ids = [f"s{i}" for i in range(40)]
    runs = [Run("a", _frame(ids, {"radcliq_v1": np.full(40, -0.5)}), None, "mem"),
            Run("b", _frame(ids, {"radcliq_v1": np.full(40, 0.5)}), None, "mem")]
    test = compare_runs(runs, resamples=50, permutations=50)["pairwise"][0]["tests"]["radcliq_v1"]
    assert test["better"] is None and test["significant"] is None
    assert test["flags_a"] == [agg.NEGATIVE_MEAN] and test["verdict"].startswith("not decided: a: negative mean")


# --- rexrank score explains deduplicated pairs ------------------------------------------------------------------

def test_score_explains_repeated_pairs(cli, tmp_path):
    refs = tmp_path / "refs.jsonl"
    texts = {"s1": "Lungs are clear.", "s2": "Lungs are clear.", "s3": "Small effusion.", "s4": "No acute process."}
    refs.write_text("".join(json.dumps({"study_id": i, "report": r}) + "\n" for i, r in texts.items()))
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"s1": "Clear lungs.", "s2": "Clear lungs.", "s3": "Effusion.", "s4": "Normal."}))
    code, text = cli("score", "-p", str(preds), "-r", str(refs), "-m", "bleu2", "--no-cache", "--resamples", "20",
                     "-o", str(tmp_path / "out"))
    assert code == 0, text
    flat = " ".join(text.split())
    assert ("4 studies, 3 distinct (prediction, reference) pairs: 1 study repeats an earlier study's pair and reuses "
            "its score") in flat
    assert "distinct pairs computed: 3, from the cache: 0 (bleu2)" in flat


# --- the same result is stored once, however often it is re-scored and added -------------------------------------

def test_rescored_result_added_twice_is_stored_once(cli, tmp_path):
    refs = tmp_path / "refs.jsonl"
    refs.write_text("".join(json.dumps({"study_id": f"s{i}", "report": f"finding {i} seen."}) + "\n" for i in range(5)))
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({f"s{i}": f"finding {(i + 1) % 5} seen." for i in range(5)}))
    store = tmp_path / "board.sqlite"
    outputs = []
    for attempt in range(2):  # as `make demo` does: score (cache warm the second time), then add
        code, text = cli("score", "-p", str(preds), "-r", str(refs), "--dataset", "iu_xray", "--split", "test",
                         "-m", "bleu2", "--cache-dir", str(tmp_path / "cache"), "--resamples", "20",
                         "-o", str(tmp_path / "out"), "-q")
        assert code == 0, text
        outputs.append(json.loads((tmp_path / "out" / "results.json").read_text()))
        code, text = cli("leaderboard", "add", str(tmp_path / "out" / "results.json"), "--name", "Demo",
                         "--store", str(store), "--allow-unofficial-weights", "--no-seed")
        assert code == 0, text
    assert outputs[0]["analyses"]["cache"] != outputs[1]["analyses"]["cache"]  # the two results.json differ
    assert "already on the board as #1" in text and "nothing added" in text
    from rexrank.leaderboard.store import Store

    assert Store(store).counts()["results"] == 1


def test_same_numbers_from_another_run_are_one_row_but_new_numbers_are_added(tmp_path):
    from rexrank.leaderboard.records import MetricValue, ModelInfo, Provenance, ResultRecord
    from rexrank.leaderboard.store import Store

    def record(mean, created, name="M"):
        return ResultRecord(model=ModelInfo(name=name), dataset="iu_xray", split="test", track="findings",
                            source="rexrank", metrics={"bleu2": MetricValue(mean, mean - 0.1, mean + 0.1)},
                            n_studies=590, extra={"created_at": created, "analyses": {"cache": {"hits": created}}})

    store = Store(tmp_path / "s.sqlite")
    first, new = store.add_result(record(0.5, "t1"))
    assert new
    assert store.add_result(record(0.5, "t2", name="m")) == (first, False)  # same name by name_key
    assert store.is_shown(first)
    second, new = store.add_result(record(0.6, "t3"))
    assert new and not store.is_shown(first)
    # Someone else's identical numbers are not the host's row (ownership decides what is shown, not the numbers).
    assert store.add_result(record(0.7, "t4", name="Other"), provenance=Provenance(submitted_by="hf:x"))[1]
    assert store.counts()["results"] == 3


# --- the published import: one note, once ------------------------------------------------------------------------

def test_published_import_prints_at_most_one_note(cli, tmp_path):
    store = tmp_path / "board.sqlite"
    code, first = cli("leaderboard", "import-published", "--store", str(store))
    assert code == 0, first
    assert first.count("note:") == 1 and "UniRG-CXR 1/FineRadScore (4 of 8 tables)" in first
    code, again = cli("leaderboard", "import-published", "--store", str(store))
    assert code == 0 and "note:" not in again and again.startswith("0 added, 0 changed, 0 withdrawn, 152 unchanged")


def test_a_table_without_the_column_is_not_a_quirk():
    from rexrank.leaderboard.published import parse_table

    text = "Rank,Date,Model Name,BLEU,1/RadCliQ-v1\n1,2025,X,0.1,1.25\n"
    records, notes = parse_table(text, "iu_xray", "test", "findings")
    assert notes == [] and set(records[0].metrics) == {"bleu2", "radcliq_v1"}
    assert records[0].metrics["radcliq_v1"].mean == pytest.approx(0.8)
