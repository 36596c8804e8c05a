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
NO_PER_STUDY = "paired test needs per-study values; published results have none"
PRIVATE_NO_PER_STUDY = "paired test needs per-study values; a private test set's are never kept"


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
    # The memo holds one order; the caller's order is the columns' order.
    return {**result, "models": canonical}


def _compare(views, models: list[str]) -> dict[str, Any]:
    boards = []
    for dataset in DATASETS:
        for track in TRACKS:
            entry = _board(views, dataset, track, models)
            if entry is not None:
                boards.append(entry)
    return {"models": models, "boards": boards}


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
            "columns": columns, "paired": _paired(views, dataset, track, models, metrics)}


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


def _paired(views, dataset: str, track: str, models: list[str], metrics: list[str]) -> dict[str, Any]:
    runs = _runs(views, dataset, track, models, metrics)
    if len(runs) < 2:
        return {"note": PRIVATE_NO_PER_STUDY if board.is_private(dataset) else NO_PER_STUDY}
    report = compare_runs(runs, resamples=RESAMPLES, permutations=PERMUTATIONS)
    note = None
    if len(runs) < len(models):
        missing = sorted(set(models) - {r.name for r in runs})
        note = f"{', '.join(missing)}: no per-study values on this set (published results have none)"
    return {"n_studies": report["n_studies"], "settings": report["settings"], "note": note,
            "ranking": report["ranking"], "pairwise": report["pairwise"]}
