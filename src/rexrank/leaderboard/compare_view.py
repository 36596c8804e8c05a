"""The Compare tab's data (issue 37 point 6): 2-4 models side by side on every board, and their paired tests where
the store keeps per-study values. Pure functions of ``Views``/``Store`` public methods, no gradio (``compare_tab``
puts them on the page, ``/compare`` returns them as JSON).

Per board (dataset, track): each board metric's value with its CI per model as the board shows it
(``board.fmt``; a published point estimate without an interval says so) and the model's rank on that board
(``board.view_ranks``). The statistics are the evaluation layer's: ``compare.compare_runs`` on the kept per-study
values (``Store.keep_reports``: public sets' rexrank-scored submissions only), never re-implemented here; its
NaN/inf rule (``statistics.usable_studies``) applies unchanged. Resamples and permutations are bounded
(``RESAMPLES``) so one request stays interactive; the result is memoised per (store generation, sorted models)
in ``Views.memoized``, the page's one memo.

What a reader sees (issue 48 point 4): columns in the order the models were picked; the boards that hold every
picked model first; a p-value at its Monte Carlo floor as a bound with its number of draws (``p_text``); with more
than two models, a note that no correction for multiple comparisons is applied and how to read the tests
(``multiple_comparisons_note``); for each model left out of a board's paired tests, why (``NO_VALUES_*``).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from rexrank.evaluation.compare import Run, compare_runs
from rexrank.evaluation.defaults import DEFAULT_RESAMPLES
from rexrank.leaderboard import board
from rexrank.leaderboard.links import MAX_COMPARED
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, TRACK_LABELS, TRACKS, name_key

MIN_MODELS, MAX_MODELS = 2, MAX_COMPARED  # the most a link may name is the most the tab shows
# Bounded so that 4 models x 1,000 studies answer in well under a second: the run's default resamples, and as many
# permutations (the CLI's compare uses DEFAULT_PERMUTATIONS, 10x that): a page's p-values need two digits, not
# four. Measured ad hoc (see docs/leaderboard.md, Compare).
RESAMPLES = DEFAULT_RESAMPLES
PERMUTATIONS = DEFAULT_RESAMPLES
# Why a model on a board has no per-study values for the paired test (issue 48 point 4): three different facts.
NO_VALUES_PUBLISHED = "published point estimate: no per-study values were released"
NO_VALUES_NOT_KEPT = "scored by rexrank, but its per-study values were not kept"
NO_VALUES_PRIVATE = "private test set: per-study values are never kept"
# The paired tests' columns, as both the pages and the gradio tab show them.
PAIRED_HEADERS = ("Pair", "Metric", "Difference", "CI", "p (bootstrap)", "p (permutation)", "Verdict")
NO_PAIRED_TEST = "No paired test on this board: it needs per-study values of at least two of these models"


def parse_selection(selection: str | list[str] | None) -> list[str]:
    """A selection as the tab and the URL give it (a list, or comma-separated names): names stripped, no blanks,
    duplicates (by ``name_key``) dropped, order kept."""
    names = selection.split(",") if isinstance(selection, str) else list(selection or [])
    out, seen = [], set()
    for name in names:
        name = str(name).strip()
        if name and name_key(name) not in seen:
            seen.add(name_key(name))
            out.append(name)
    return out


def selection_problem(store, models: list[str]) -> str | None:
    """One line naming what is wrong with a selection and the fix, or None when it is usable."""
    if len(models) < MIN_MODELS or len(models) > MAX_MODELS:
        return (f"{len(models)} model{'s' * (len(models) != 1)} chosen: compare needs {MIN_MODELS} to {MAX_MODELS}; "
                f"choose {'more' if len(models) < MIN_MODELS else 'fewer'}.")
    unknown = [m for m in models if store.model(m) is None]
    if unknown:
        return (f"No model named {', '.join(repr(m[:120]) for m in unknown)} on this board: pick names from the "
                "Models list.")
    return None


def compare(views, selection: str | list[str] | None) -> dict[str, Any]:
    """``{"models", "boards"}`` (see the module docstring), or ``{"error": one line}`` for a bad selection."""
    models = parse_selection(selection)
    problem = selection_problem(views.store, models)
    if problem:
        return {"error": problem}
    canonical = [views.store.model(m)["name"] for m in models]
    key = ("compare", tuple(sorted(canonical, key=name_key)))
    result = views.memoized(key, lambda: _compare(views, sorted(canonical, key=name_key)))
    # The memo holds one order; the caller's order is the columns' order (a model with two rows on a board, e.g.
    # published and scored by rexrank, keeps them together, in the board's order).
    order = {name_key(m): k for k, m in enumerate(canonical)}
    boards = [{**entry, "columns": sorted(entry["columns"], key=lambda c: order[name_key(c["model"])])}
              for entry in result["boards"]]
    return {"models": canonical, "boards": boards}


def _compare(views, models: list[str]) -> dict[str, Any]:
    boards = []
    for dataset in DATASETS:
        for track in TRACKS:
            entry = _board(views, dataset, track, models)
            if entry is not None:
                boards.append(entry)
    # The boards that hold the most of the chosen models first (every one of them, then fewer); the board list's
    # own order (test set, then track) among equals: a stable sort.
    boards.sort(key=lambda entry: -len({name_key(c["model"]) for c in entry["columns"]}))
    return {"models": models, "boards": boards}


def p_text(p: float | None, draws: int, what: str) -> str:
    """A Monte Carlo p-value as the pages print it. At its floor (no draw as extreme as the observed difference,
    p = 1/(n+1)) it is an upper bound, not an estimate: "p < 0.001 (1,000 permutations)", never "p 0.0010"."""
    if p is None:
        return "–"
    if p <= 1 / (draws + 1) * (1 + 1e-9):
        return f"p < {1 / draws:.2g} ({draws:,} {what})"
    return f"p = {p:.3f}" if p >= 0.001 else f"p = {p:.1e}"


def multiple_comparisons_note(n_tests: int, alpha: float, permutations: int) -> str:
    """What a reader of several paired tests must know: none is corrected, how many were run, and how to read
    them (Bonferroni's threshold, and whether these permutations can reach it)."""
    threshold = alpha / n_tests
    floor = 1 / (permutations + 1)
    reach = ("" if floor < threshold else
             f" With {permutations:,} permutations the smallest p-value is 1/{permutations + 1:,} = {floor:.3g}, "
             "above it, so none can pass it here: read the verdicts as exploratory.")
    return (f"{n_tests} paired tests on this board, and no correction for multiple comparisons is applied: at "
            f"alpha {alpha:g}, about {alpha * n_tests:.2g} of them would come out significant by chance alone if no "
            f"model differed. To hold the family-wise error at {alpha:g}, compare each p-value with {alpha:g}/"
            f"{n_tests} = {threshold:.3g} (Bonferroni).{reach}")


def _cell(row: pd.Series, metric: str) -> str:
    value, low, high = row[metric], row[f"{metric}_low"], row[f"{metric}_high"]
    text = board.fmt(value, low, high)
    if row["source"] == "published" and not math.isnan(value) and (math.isnan(low) or math.isnan(high)):
        text += " (published, no CI)"
    return text


def _board(views, dataset: str, track: str, models: list[str]) -> dict[str, Any] | None:
    table = views.numeric(dataset, track)
    if table.empty:
        return None
    keys = {name_key(m) for m in models}
    chosen = table[table["model"].map(name_key).isin(keys)]
    if chosen.empty:
        return None
    metrics = list(views.metrics(track))
    ranks = {m: board.view_ranks(table, m) for m in metrics}
    columns = []
    for index, row in chosen.iterrows():
        rank = ranks[board.PRIMARY][index] if board.PRIMARY in ranks else pd.NA
        columns.append({"model": row["model"], "source": row["source"],
                        "rank": None if pd.isna(rank) else int(rank),
                        "values": {m: _cell(row, m) for m in metrics},
                        "ranks": {m: None if pd.isna(ranks[m][index]) else int(ranks[m][index]) for m in metrics}})
    return {"dataset": dataset, "track": track,
            "label": f"{DATASET_LABELS.get(dataset, dataset)} · {TRACK_LABELS.get(track, track)}",
            "metrics": [{"metric": m, "label": board.column_label(m)} for m in metrics],
            "columns": columns, "paired": _paired(views, dataset, track, models, metrics, columns)}


def _runs(views, dataset: str, track: str, models: list[str], metrics: list[str]) -> list[Run]:
    """One ``compare.Run`` per chosen model with kept per-study values on this board (the newest kept result)."""
    from rexrank.metrics import REGISTRY

    by_model: dict[str, list[dict[str, Any]]] = {}
    keys = {name_key(m): m for m in models}
    chosen: dict[str, str | None] = {}  # a stored name -> the chosen model it is (name_key once per name)
    for item in views.store.arena_reports(dataset):
        stored = item["model"]
        if stored not in chosen:
            chosen[stored] = keys.get(name_key(stored))
        if item["track"] == track and chosen[stored] is not None:
            by_model.setdefault(chosen[stored], []).append(item)
    runs = []
    for model in models:
        items = by_model.get(model)
        if not items:
            continue
        frame = pd.DataFrame({"study_id": [i["study"] for i in items]})
        for metric in metrics:
            # A study without a value is NaN: compare's usable_studies rule leaves it out.
            frame[REGISTRY.spec(metric).column] = [i["metrics"].get(metric, math.nan) for i in items]
        frame = frame.dropna(axis=1, how="all")
        runs.append(Run(model, frame, {"dataset": dataset, "split": items[0]["split"], "track": track}, "store"))
    return runs


def _missing(dataset: str, columns: list[dict[str, Any]], runs: list[Run]) -> str | None:
    """Each chosen model on this board without per-study values, and why (published, not kept, private)."""
    if board.is_private(dataset):
        return f"every model here ({NO_VALUES_PRIVATE})"
    with_runs = {name_key(r.name) for r in runs}
    reasons: dict[str, str] = {}
    for column in sorted(columns, key=lambda c: name_key(c["model"])):  # the memo's order, whatever the pick
        if name_key(column["model"]) not in with_runs:
            # One reason per model: a model with a published and a scored row has a result rexrank scored, whose
            # values were not kept (the more useful fact: a re-submission would keep them).
            if column["source"] != "published" or column["model"] not in reasons:
                reasons[column["model"]] = (NO_VALUES_PUBLISHED if column["source"] == "published"
                                            else NO_VALUES_NOT_KEPT)
    return "; ".join(f"{model} ({reason})" for model, reason in reasons.items()) or None


def _paired(views, dataset: str, track: str, models: list[str], metrics: list[str],
            columns: list[dict[str, Any]]) -> dict[str, Any]:
    runs = _runs(views, dataset, track, models, metrics)
    missing = _missing(dataset, columns, runs)
    if len(runs) < 2:
        return {"note": f"{NO_PAIRED_TEST}. Without them: {missing}." if missing else f"{NO_PAIRED_TEST}."}
    report = compare_runs(runs, resamples=RESAMPLES, permutations=PERMUTATIONS)
    settings = report["settings"]
    for pair in report["pairwise"]:
        for test in pair["tests"].values():
            test["p_bootstrap_text"] = p_text(test.get("p_bootstrap"), settings["resamples"], "resamples")
            test["p_randomization_text"] = p_text(test.get("p_randomization"), settings["permutations"],
                                                  "permutations")
    n_tests = sum(len(pair["tests"]) for pair in report["pairwise"])
    multiple = (multiple_comparisons_note(n_tests, settings["alpha"], settings["permutations"])
                if len(models) > 2 and n_tests > 1 else None)
    return {"n_studies": report["n_studies"], "settings": settings,
            "note": f"Not in the paired tests: {missing}." if missing else None, "multiple_comparisons": multiple,
            "ranking": report["ranking"], "pairwise": report["pairwise"]}
