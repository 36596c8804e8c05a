"""What the Space shows, as pandas tables computed from the store: ranking, filters, model pages, analyses.

Values shown are the leaderboard's: means, except 1/RadCliQ-v1 and 1/FineRadScore, the reciprocal of the mean.
A reciprocal's CI is the reciprocal of the mean's CI bounds, swapped (a percentile bootstrap commutes with a
monotone transform, so this equals the CI of each resample's reciprocal). Value, interval and direction all come
from ``rexrank.metrics.aggregation``.

Every store row goes through ``rexrank.evaluation.disclosure`` before a view uses it (``_rows``): a private test
set's means, CIs, shown values and subgroup analyses leave here rounded to 3 decimals with small groups suppressed,
whatever precision the row was stored with.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
import pandas as pd

from rexrank.evaluation import disclosure
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, TRACKS
from rexrank.leaderboard.store import Store
from rexrank.metrics import LEADERBOARD_METRICS, REGISTRY
from rexrank.metrics.aggregation import leaderboard_higher_is_better, leaderboard_interval, leaderboard_values

PRIMARY = "radcliq_v1"


def column_label(metric: str) -> str:
    spec = REGISTRY.spec(metric)
    arrow = "↑" if _shown_higher_is_better(metric) else "↓"
    return f"{spec.leaderboard_column or spec.column} {arrow}"


def _shown_higher_is_better(metric: str) -> bool:
    return leaderboard_higher_is_better(REGISTRY.spec(metric))


def shown_value(metric: str, entry: dict[str, Any] | None, private: bool = False) -> tuple[float, float, float]:
    """(value, ci_low, ci_high) as the board shows them; NaN where missing.

    The store keeps means and the mean's CI; value and interval come from ``rexrank.metrics.aggregation``
    (a reciprocal's CI is its bounds' reciprocals, swapped; NaN when the mean's CI reaches 0). ``private``: a
    private test set's (disclosed) entry, and the values rounded as its policy says (``disclosure.bounded``).
    """
    if not entry or entry.get("mean") is None:
        return (math.nan, math.nan, math.nan)
    spec = REGISTRY.spec(metric)
    low, high = (math.nan if entry.get(k) is None else entry[k] for k in ("ci_low", "ci_high"))
    shown_low, shown_high = leaderboard_interval(low, high, spec)
    shown = (float(leaderboard_values(entry["mean"], spec)), shown_low, shown_high)
    return tuple(disclosure.bounded(v) for v in shown) if private else shown


def _rows(store: Store, dataset: str | None = None, track: str | None = None, **kwargs) -> list[dict[str, Any]]:
    """The store's rows as a view may use them: every private set's row disclosed (rexrank.evaluation.disclosure)."""
    return disclosure.disclose_records(store.results(dataset, track, **kwargs))


def fmt(value: float, low: float, high: float, digits: int = 3) -> str:
    if math.isnan(value):
        return "–"
    text = f"{value:.{digits}f}"
    if not (math.isnan(low) or math.isnan(high)):
        text += f" [{low:.{digits}f}, {high:.{digits}f}]"
    return text


_CACHE: dict[tuple, pd.DataFrame] = {}


def numeric_table(store: Store, dataset: str, track: str, metrics: Iterable[str] = LEADERBOARD_METRICS) -> pd.DataFrame:
    """One row per (model, source) with numeric value/low/high columns per metric, ranked by 1/RadCliQ-v1.

    Cached per store version: a page load asks for every tab's table, and nothing changes between results.
    """
    metrics = tuple(metrics)
    key = (str(store.path), store.version(), dataset, track, metrics)
    if key not in _CACHE:
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[key] = _numeric_table(store, dataset, track, metrics)
    return _CACHE[key].copy()


def _numeric_table(store: Store, dataset: str, track: str, metrics: tuple[str, ...]) -> pd.DataFrame:
    rows = []
    private = is_private(dataset)
    for item in _rows(store, dataset, track):
        row: dict[str, Any] = {"model": item["model_name"], "institution": item["institution"] or "",
                               "year": item["year"], "model_type": item["model_type"] or "",
                               "trained_on_this": dataset in (item["trained_on"] or []),
                               "source": item["source"], "n_studies": item["n_studies"], "url": item["url"] or "",
                               "note": item["note"] or "", "split": item["split"],
                               "weights": weights_label(item)}
        for metric in metrics:
            value, low, high = shown_value(metric, item["metrics"].get(metric), private)
            row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = value, low, high
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df = df.sort_values(PRIMARY, ascending=False, na_position="last").reset_index(drop=True)
    df.insert(0, "rank", df[PRIMARY].rank(ascending=False, method="min").astype("Int64"))
    return df


def filter_table(df: pd.DataFrame, *, search: str = "", institutions: list[str] | None = None,
                 years: list[int] | None = None, model_types: list[str] | None = None,
                 trained: str = "all", sources: list[str] | None = None) -> pd.DataFrame:
    if df.empty:
        return df
    mask = pd.Series(True, index=df.index)
    if search:
        needle = search.strip().lower()
        mask &= df["model"].str.lower().str.contains(needle, regex=False) | df["institution"].str.lower().str.contains(
            needle, regex=False)
    if institutions:
        mask &= df["institution"].isin(institutions)
    if years:
        mask &= df["year"].isin([int(y) for y in years])
    if model_types:
        mask &= df["model_type"].isin(model_types)
    if sources:
        mask &= df["source"].isin(sources)
    if trained == "exclude":
        mask &= ~df["trained_on_this"]
    elif trained == "only":
        mask &= df["trained_on_this"]
    return df[mask].reset_index(drop=True)


def display_table(df: pd.DataFrame, metrics: Iterable[str] = LEADERBOARD_METRICS, sort_by: str | None = None,
                  ascending: bool | None = None) -> pd.DataFrame:
    """Strings for the page: 'mean [low, high]' per metric, direction arrows in headers."""
    metrics = list(metrics)
    columns = ["Rank", "Model", "Institution", "Year", "Source"] + [column_label(m) for m in metrics]
    if df.empty:
        return pd.DataFrame(columns=columns)
    if sort_by and sort_by in df.columns:
        if ascending is None:
            ascending = not _shown_higher_is_better(sort_by) if sort_by in metrics else True
        df = df.sort_values(sort_by, ascending=ascending, na_position="last")
    out = pd.DataFrame({
        "Rank": df["rank"].map(lambda r: "–" if pd.isna(r) else str(int(r))), "Model": df["model"], "Institution": df["institution"],
        "Year": df["year"].map(lambda y: "" if pd.isna(y) else str(int(y))), "Source": df["source"]})
    if "weights" in df.columns:  # a marker on rows scored with unofficial/unverified weights, the label beside it
        label = df["weights"].fillna("").astype(str)
        out["Model"] = out["Model"].where(label == "", out["Model"] + " ⚠")
        out["Source"] = out["Source"].where(label == "", out["Source"] + " · " + label)
    for metric in metrics:
        out[column_label(metric)] = [fmt(v, lo, hi) for v, lo, hi in
                                     zip(df[metric], df[f"{metric}_low"], df[f"{metric}_high"])]
    return out.reset_index(drop=True)


def overview(store: Store, track: str = "findings") -> pd.DataFrame:
    """Rank by 1/RadCliQ-v1 on each dataset (findings track): one row per model, rank and value per dataset."""
    frames = []
    for dataset in DATASETS:
        df = numeric_table(store, dataset, track, [PRIMARY])
        if df.empty:
            continue
        df = df.drop_duplicates("model")  # a model with published and rexrank rows: keep its best-ranked one
        frames.append(df.set_index("model")[["rank", PRIMARY]].rename(columns={
            "rank": f"{DATASET_LABELS[dataset]} rank", PRIMARY: f"{DATASET_LABELS[dataset]} 1/RadCliQ-v1"}))
    if not frames:
        return pd.DataFrame(columns=["Model"])
    table = pd.concat(frames, axis=1)
    rank_cols = [c for c in table.columns if c.endswith(" rank")]
    table["Mean rank"] = table[rank_cols].astype(float).mean(axis=1).round(2)
    table = table.sort_values("Mean rank").reset_index()
    table = table.rename(columns={table.columns[0]: "Model"})
    for col in table.columns:
        if col.endswith("1/RadCliQ-v1"):
            table[col] = table[col].map(lambda v: "–" if pd.isna(v) else f"{v:.3f}")
        elif col.endswith(" rank"):
            table[col] = table[col].map(lambda v: "–" if pd.isna(v) else str(int(v)))
    return table


def model_page(store: Store, model: str) -> pd.DataFrame:
    """Every dataset and track of one model, with all metrics (strings with CIs)."""
    rows = []
    for item in _rows(store, model=model):
        row = {"Dataset": DATASET_LABELS.get(item["dataset"], item["dataset"]), "Split": item["split"],
               "Track": item["track"], "Source": item["source"],
               "Studies": "" if item["n_studies"] is None else str(item["n_studies"]),
               "Weights": weights_label(item) or ("official" if (item.get("extra") or {}).get("weights") else "")}
        for metric in LEADERBOARD_METRICS:
            row[column_label(metric)] = fmt(*shown_value(metric, item["metrics"].get(metric),
                                                         is_private(item["dataset"])))
        rows.append(row)
    return pd.DataFrame(rows)


def weights_label(item: dict[str, Any]) -> str:
    """'unofficial weights: semb; unverified weights: radgraph' when a result was added with
    --allow-unofficial-weights ('' otherwise): stored in the record's extra JSON by `rexrank leaderboard add`."""
    return str(((item.get("extra") or {}).get("weights") or {}).get("label") or "")


def model_analyses(store: Store, model: str) -> list[dict[str, Any]]:
    """Subgroup results, per-site ranks and error-free rates stored with a model's rexrank results (a private
    set's rounded, with groups under the minimum size suppressed)."""
    out = []
    for item in _rows(store, model=model):
        extra = item["extra"] or {}
        keep = {k: extra[k] for k in ("subgroups", "analyses") if k in extra}
        if keep:
            out.append({"dataset": item["dataset"], "track": item["track"], **keep})
    return out


def metric_agreement(store: Store, dataset: str, track: str = "findings") -> pd.DataFrame:
    """Kendall tau between the model rankings that each pair of metrics gives (models with both values)."""
    from scipy.stats import kendalltau

    df = numeric_table(store, dataset, track)
    labels = [column_label(m) for m in LEADERBOARD_METRICS]
    matrix = np.full((len(labels), len(labels)), np.nan)
    for i, a in enumerate(LEADERBOARD_METRICS):
        for j, b in enumerate(LEADERBOARD_METRICS):
            if df.empty:
                continue
            both = df[[a, b]].dropna()
            if len(both) >= 3:
                sa = both[a] if _shown_higher_is_better(a) else -both[a]
                sb = both[b] if _shown_higher_is_better(b) else -both[b]
                matrix[i, j] = kendalltau(sa, sb).statistic
    return pd.DataFrame(matrix, index=labels, columns=labels)


def ranks_across_datasets(store: Store, track: str = "findings") -> pd.DataFrame:
    """Long table (model, dataset, rank) for the rank-across-datasets plot."""
    rows = []
    for dataset in DATASETS:
        df = numeric_table(store, dataset, track, [PRIMARY])
        for _, r in df.iterrows():
            if not pd.isna(r[PRIMARY]):
                rows.append({"model": r["model"], "dataset": DATASET_LABELS[dataset], "rank": int(r["rank"])})
    return pd.DataFrame(rows, columns=["model", "dataset", "rank"])


def is_private(dataset: str) -> bool:
    return disclosure.is_private(dataset)


__all__ = ["DATASETS", "TRACKS", "column_label", "display_table", "filter_table", "fmt", "metric_agreement",
           "model_analyses", "model_page", "numeric_table", "overview", "ranks_across_datasets", "shown_value"]
