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


def test_columns_follow_the_callers_order_and_the_memo_serves_any_order(views):
    a = compare_view.compare(views, ["Beta", "Alpha"])
    b = compare_view.compare(views, ["Alpha", "Beta"])
    assert a["models"] == ["Beta", "Alpha"] and b["models"] == ["Alpha", "Beta"]
    assert a["boards"] is b["boards"]  # one memo entry per (generation, sorted models)


def test_published_rows_are_labelled_and_have_no_paired_test(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    seed_store(store)
    views = Views(store)
    names = [m["name"] for m in store.models()][:2]
    out = compare_view.compare(views, names)
    assert "error" not in out and out["boards"]
    cells = [v for b in out["boards"] for c in b["columns"] for v in c["values"].values()]
    assert any(cell.endswith("(published, no CI)") for cell in cells)
    assert {b["paired"]["note"] for b in out["boards"]} <= {compare_view.NO_PER_STUDY,
                                                           compare_view.PRIVATE_NO_PER_STUDY}
    assert all(c["rank"] is None or c["rank"] >= 1 for b in out["boards"] for c in b["columns"])


def test_five_models_or_one_are_refused_in_one_line(views):
    out = compare_view.compare(views, "A,B,C,D,E")
    assert "5 models chosen" in out["error"] and "fewer" in out["error"] and "\n" not in out["error"]
    assert set(out) == {"error"}
    assert "more" in compare_view.compare(views, "Alpha")["error"]


def test_an_unknown_model_is_named(views):
    out = compare_view.compare(views, "Alpha,Nope-7")
    assert "'Nope-7'" in out["error"] and "Alpha" not in out["error"] and "\n" not in out["error"]


def test_a_hostile_model_name_reaches_the_tab_escaped(tmp_path):
    from rexrank.leaderboard.compare_tab import comparison_html

    store = Store(tmp_path / "board.sqlite")
    hostile = "<img src=x onerror=alert(1)>"
    for index, model in enumerate([hostile, "Beta"]):
        add_scored_result(store, model, bleu=0.3 + index / 100)
    text = comparison_html(compare_view.compare(Views(store), [hostile, "Beta"]))
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text


def test_a_selection_in_text_restores_the_tabs_states():
    from rexrank.leaderboard.compare_tab import restore

    assert restore(" Alpha, Beta ,alpha,,") == (["Alpha", "Beta"], ["Alpha", "Beta"])
    assert restore("") == ([], [])
