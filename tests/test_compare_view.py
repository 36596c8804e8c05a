"""The Compare tab's data (leaderboard.compare_view): values side by side, the evaluation layer's paired tests on
kept per-study values, and one line for a bad selection."""

import numpy as np
import pytest

from rexrank.evaluation.compare import Run, compare_runs
from rexrank.leaderboard import compare_view
from rexrank.leaderboard.published import seed_store
from rexrank.leaderboard.store import Store
from rexrank.leaderboard.views import Views
from leaderboard_helpers import add_scored_result

MODELS = ["Alpha", "Beta", "Gamma"]
N = 40


def _values(index: int) -> np.ndarray:
    rng = np.random.default_rng(index)
    return 0.2 + 0.03 * index + rng.normal(0, 0.05, N)


def _fill(store) -> None:
    """MODELS scored by rexrank on IU-Xray findings, each with its per-study BLEU-2 kept (as a submission does)."""
    for index, model in enumerate(MODELS):
        add_scored_result(store, model, bleu=0.3 + index / 100)
        rows = [(f"s{k:03d}", f"report {k}", f"reference {k}", {"bleu2": float(v)})
                for k, v in enumerate(_values(index))]
        store.keep_reports(dataset="iu_xray", split="test", track="findings", model=model, result_hash=f"h-{model}",
                           rows=rows)


@pytest.fixture
def views(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    _fill(store)
    return Views(store)


def test_the_paired_p_value_is_compare_runs_on_the_same_runs(views):
    out = compare_view.compare(views, "Alpha, Beta")
    iu = next(b for b in out["boards"] if b["dataset"] == "iu_xray" and b["track"] == "findings")
    assert [c["model"] for c in iu["columns"]] and {c["model"] for c in iu["columns"]} == {"Alpha", "Beta"}
    runs = [Run(m, __import__("pandas").DataFrame({"study_id": [f"s{k:03d}" for k in range(N)],
                                                   "bleu_score": _values(i)}), None, "x")
            for i, m in enumerate(["Alpha", "Beta"])]
    expected = compare_runs(runs, resamples=compare_view.RESAMPLES, permutations=compare_view.PERMUTATIONS)
    got = iu["paired"]["pairwise"][0]["tests"]["bleu2"]
    want = expected["pairwise"][0]["tests"]["bleu2"]
    assert 0 < got["p_bootstrap"] <= 1 and got["p_bootstrap"] == want["p_bootstrap"] and got["difference"] == want["difference"]
    assert iu["paired"]["ranking"]["bleu2"]["models"]["Beta"]["rank"] == 1
    assert iu["paired"]["n_studies"] == N


def _iu(out) -> dict:
    return next(b for b in out["boards"] if b["dataset"] == "iu_xray" and b["track"] == "findings")


def test_columns_follow_the_callers_order_and_the_memo_serves_any_order(views, monkeypatch):
    """Issue 48 point 4: a board's columns are in the order picked (before: the board's rank order whatever the
    pick); one memo entry serves every order of the same models."""
    computed = []
    real = compare_view._compare
    monkeypatch.setattr(compare_view, "_compare", lambda v, m: computed.append(m) or real(v, m))
    for order in (["Gamma", "Alpha", "Beta"], ["Alpha", "Gamma", "Beta"], ["Beta", "Gamma", "Alpha"]):
        out = compare_view.compare(views, order)
        assert out["models"] == order and [c["model"] for c in _iu(out)["columns"]] == order
    assert computed == [["Alpha", "Beta", "Gamma"]]  # one memo entry per (generation, sorted models)


def test_the_board_every_picked_model_shares_comes_first(views):
    """Issue 48 point 4: a board holding only one of the picked models (here the private ReXGradient, first in
    the board list) comes after the one they all share (before: it came first)."""
    add_scored_result(views.store, "Beta", bleu=0.4, dataset="rexgradient")
    out = compare_view.compare(views, "Alpha,Beta")
    assert [(b["dataset"], b["track"]) for b in out["boards"]] == [("iu_xray", "findings"),
                                                                  ("rexgradient", "findings")]
    assert [c["model"] for c in out["boards"][1]["columns"]] == ["Beta"]


def test_a_p_value_at_the_permutation_floor_is_a_bound_with_its_draws(views):
    """Issue 48 point 4: no permutation as extreme as Alpha - Gamma gives p = 1/(n+1): printed "p < 0.001 (1,000
    permutations)", never "p 0.0010"; a p above the floor is printed as a value."""
    test = _iu(compare_view.compare(views, "Alpha,Gamma"))["paired"]["pairwise"][0]["tests"]["bleu2"]
    assert test["p_randomization"] == pytest.approx(1 / (compare_view.PERMUTATIONS + 1))
    assert test["p_randomization_text"] == "p < 0.001 (1,000 permutations)"
    assert test["p_bootstrap_text"] == "p < 0.001 (1,000 resamples)"
    assert compare_view.p_text(0.0412, 1000, "permutations") == "p = 0.041"
    assert compare_view.p_text(None, 1000, "permutations") == "–"
    assert compare_view.p_text(1 / 10_001, 10_000, "permutations") == "p < 0.0001 (10,000 permutations)"


def test_more_than_two_models_carry_a_note_on_multiple_comparisons(views):
    """Issue 48 point 4: with three models, three pairs of tests: the note says none is corrected, how many tests
    were run and Bonferroni's threshold; two models have no such note."""
    paired = _iu(compare_view.compare(views, "Alpha,Beta,Gamma"))["paired"]
    n_tests = sum(len(p["tests"]) for p in paired["pairwise"])
    assert n_tests == 3
    note = paired["multiple_comparisons"]
    assert note.startswith("3 paired tests on this board, and no correction for multiple comparisons is applied")
    assert "0.05/3 = 0.0167 (Bonferroni)" in note
    assert _iu(compare_view.compare(views, "Alpha,Beta"))["paired"]["multiple_comparisons"] is None
    assert "none can pass" not in compare_view.multiple_comparisons_note(48, 0.05, 1000)  # 0.00104 > 1/1001
    floor_note = compare_view.multiple_comparisons_note(60, 0.05, 1000)  # 0.000833 < 1/1001: out of reach
    assert "0.05/60 = 0.000833" in floor_note and "none can pass it here" in floor_note


def test_each_model_without_per_study_values_is_named_with_its_reason(views):
    """Issue 48 point 4: before, every missing model was "published results have none", a result rexrank scored
    itself included. Now: scored but not kept, published, and private are three reasons."""
    add_scored_result(views.store, "Delta", bleu=0.25)  # scored by rexrank; no per-study values kept
    note = _iu(compare_view.compare(views, "Alpha,Beta,Delta"))["paired"]["note"]
    assert note == f"Not in the paired tests: Delta ({compare_view.NO_VALUES_NOT_KEPT})."
    alone = _iu(compare_view.compare(views, "Alpha,Delta"))["paired"]
    assert alone == {"note": f"{compare_view.NO_PAIRED_TEST}. Without them: Delta "
                              f"({compare_view.NO_VALUES_NOT_KEPT})."}
    from rexrank.leaderboard.records import MetricValue, ModelInfo, ResultRecord

    # A model with a published row and a scored one: the scored one's values were not kept (not "published").
    views.store.add_result(ResultRecord(model=ModelInfo(name="Delta"), dataset="iu_xray", split="test",
                                        track="findings", source="published",
                                        metrics={"bleu2": MetricValue(0.9), "radcliq_v1": MetricValue(0.8)}))
    # ranked by 1/RadCliQ-v1, Delta's published row comes before its scored one (the reason was the first row's)
    assert [(c["model"], c["source"]) for c in _iu(compare_view.compare(views, "Alpha,Delta"))["columns"]] == [
        ("Alpha", "rexrank"), ("Delta", "published"), ("Delta", "rexrank")]
    again = _iu(compare_view.compare(views, "Alpha,Beta,Delta"))["paired"]["note"]
    assert again == f"Not in the paired tests: Delta ({compare_view.NO_VALUES_NOT_KEPT})."
    add_scored_result(views.store, "Delta", bleu=0.25, dataset="rexgradient")
    add_scored_result(views.store, "Alpha", bleu=0.25, dataset="rexgradient")
    private = next(b for b in compare_view.compare(views, "Alpha,Delta")["boards"] if b["dataset"] == "rexgradient")
    assert private["paired"]["note"] == (f"{compare_view.NO_PAIRED_TEST}. Without them: every model here "
                                         f"({compare_view.NO_VALUES_PRIVATE}).")


def test_published_rows_are_labelled_and_have_no_paired_test(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    seed_store(store)
    views = Views(store)
    names = [m["name"] for m in store.models()][:2]
    out = compare_view.compare(views, names)
    assert "error" not in out and out["boards"]
    cells = [v for b in out["boards"] for c in b["columns"] for v in c["values"].values()]
    assert any(cell.endswith("(published, no CI)") for cell in cells)
    for entry in out["boards"]:
        expected = (f"every model here ({compare_view.NO_VALUES_PRIVATE})" if entry["dataset"] == "rexgradient"
                    else "; ".join(f"{m} ({compare_view.NO_VALUES_PUBLISHED})" for m in sorted(
                        {c["model"] for c in entry["columns"]}, key=str.lower)))
        assert entry["paired"] == {"note": f"{compare_view.NO_PAIRED_TEST}. Without them: {expected}."}, entry["paired"]
    assert all(c["rank"] is None or c["rank"] >= 1 for b in out["boards"] for c in b["columns"])


def test_five_models_or_one_are_refused_in_one_line(views):
    out = compare_view.compare(views, "A,B,C,D,E")
    assert "5 models chosen" in out["error"] and "fewer" in out["error"] and "\n" not in out["error"]
    assert set(out) == {"error"}
    assert "more" in compare_view.compare(views, "Alpha")["error"]


def test_an_unknown_model_is_named(views):
    out = compare_view.compare(views, "Alpha,Nope-7")
    assert "'Nope-7'" in out["error"] and "Alpha" not in out["error"] and "\n" not in out["error"]


def test_a_hostile_model_name_reaches_the_compare_page_escaped(tmp_path):
    from rexrank.leaderboard import links
    from rexrank.leaderboard.pages import render

    store = Store(tmp_path / "board.sqlite")
    hostile = "<img src=x onerror=alert(1)>"
    for index, model in enumerate([hostile, "Beta"]):
        add_scored_result(store, model, bleu=0.3 + index / 100)
    text = render.compare_live(Views(store), links.Link(links.COMPARE_TAB, compare=(hostile, "Beta")))
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text


def test_a_selection_in_text_is_split_like_a_links_repeated_names():
    assert compare_view.parse_selection(" Alpha, Beta ,alpha,,") == ["Alpha", "Beta"]
    assert compare_view.parse_selection("") == []
