"""What the Space shows, as pandas tables computed from the store: ranking, filters, model pages, analyses.

Which metrics a table shows is the store's board edition (``editions.edition_of``; the editions themselves are
``rexrank.metrics.boards``). Values shown are the leaderboard's: means, except 1/RadCliQ-v1 and 1/FineRadScore, the
reciprocal of the mean.
A reciprocal's CI is the reciprocal of the mean's CI bounds, swapped (a percentile bootstrap commutes with a
monotone transform, so this equals the CI of each resample's reciprocal). Value, interval and direction all come
from ``rexrank.metrics.aggregation``.

Every store row goes through ``rexrank.evaluation.disclosure`` before a view uses it (``_rows``): a private test
set's means, CIs, shown values and subgroup analyses leave here rounded to 3 decimals with small groups suppressed,
whatever precision the row was stored with.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any, Iterable

import numpy as np
import pandas as pd

from rexrank.data.tracks import DEFAULT_TRACK
from rexrank.errors import UnknownNameError
from rexrank.evaluation import disclosure
from rexrank.leaderboard.editions import edition_of
from rexrank.leaderboard.published import bundled_tables
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, TRACK_LABELS, TRACKS, name_key, search_key
from rexrank.leaderboard.store import META_EVAL_KIND, MODEL_EVENT_KINDS, Store
from rexrank.metrics import REGISTRY, boards
from rexrank.metrics.aggregation import leaderboard_higher_is_better, leaderboard_interval, leaderboard_values

# The ranking metric: the default edition's (every edition ranks by it: tests/test_boards.py).
PRIMARY = boards.edition().ranking
# The column layouts other modules size (views' column widths): the overview's columns before the per-dataset pairs
# (``overview_columns``), and the model page's before and after its metrics.
OVERVIEW_LEAD = ("Rank", "Model", "Mean rank", "Datasets")
MODEL_PAGE_LEAD = ("Dataset", "Track")
MODEL_PAGE_TAIL = ("Split", "Source", "Studies", "Weights")
# A withdrawn published row's Source on its model page (the published tables no longer list the model there).
WITHDRAWN = "withdrawn: no longer in the published table"
# The mark on a published 1/RadCliQ-v1 that disagrees with its own component means (published.KNOWN_QUIRKS).
RADCLIQ_MARK = "†"


def institution_label(name: str | None) -> str:
    """How the board shows (and groups) an institution: as it was published or registered ("Microsoft Research"
    stays), spaces around it dropped."""
    return (name or "").strip()


def board_metrics(store: Store, track: str) -> tuple[str, ...]:
    """The columns of ``track``'s tables on ``store``'s board (its edition's)."""
    return boards.edition(edition_of(store)).metrics(track)


def is_metric(name: str | None) -> bool:
    """Whether ``name`` is a registered metric (a sort or ranking choice), not another column."""
    return bool(name) and name in REGISTRY.names()


def column_metrics() -> list[str]:
    """Every registered metric with a board column (``MetricSpec.leaderboard_column``), in registry order."""
    return [name for name in REGISTRY.names() if REGISTRY.spec(name).leaderboard_column]


def column_label(metric: str) -> str:
    arrow = "↑" if _shown_higher_is_better(metric) else "↓"
    return f"{metric_name(metric)} {arrow}"


def metric_name(metric: str) -> str:
    """The leaderboard's name of a metric's column (1/RadCliQ-v1, BLEU, ...), without the direction arrow."""
    spec = REGISTRY.spec(metric)
    return spec.leaderboard_column or spec.column


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


@functools.lru_cache(maxsize=1)
def published_trained_on() -> dict[str, tuple[str, ...]]:
    """name_key(model) -> the test sets a published model was trained on, as the ReXrank site marks them
    (``published_tables/trained_on.json``, its source noted there). The published CSVs lack this column, so a
    published row's "trained on this dataset" comes from here; a model's own ``trained_on`` adds to it."""
    data = json.loads((bundled_tables() / "trained_on.json").read_text(encoding="utf-8"))
    return {name_key(name): tuple(sets) for name, sets in data["trained_on"].items()}


def trained_on(item: dict[str, Any]) -> list[str]:
    """The test sets a stored row's model was trained on: its own metadata and the published marking."""
    own = list(item.get("trained_on") or [])
    return own + [d for d in published_trained_on().get(name_key(item["model_name"]), ()) if d not in own]


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


def numeric_table(store: Store, dataset: str, track: str, metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per (model, source) with numeric value/low/high columns per metric (default: the board's columns of
    ``track``), ranked by 1/RadCliQ-v1 among the rows scored with official weights (``official``): a result added
    with unofficial weights is shown, labelled, but never ranked among them. ``search_key``: what a search compares
    (``search_terms``); the API and the CSV leave it out (``INTERNAL_COLUMNS``).

    Computed on each call: the page's one memo, per store generation, is ``views.Views``'s.
    """
    metrics = tuple(board_metrics(store, track) if metrics is None else metrics)
    return _numeric_table(store, dataset, track, metrics)


def _numeric_table(store: Store, dataset: str, track: str, metrics: tuple[str, ...]) -> pd.DataFrame:
    rows = []
    private = is_private(dataset)
    for item in _rows(store, dataset, track):
        row: dict[str, Any] = {"model": item["model_name"], "institution": institution_label(item["institution"]),
                               "year": item["year"], "model_type": item["model_type"] or "",
                               "trained_on_this": dataset in trained_on(item),
                               "source": item["source"], "n_studies": item["n_studies"], "url": item["url"] or "",
                               "note": item["note"] or "", "split": item["split"],
                               "weights": weights_label(item),
                               # a published 1/RadCliQ-v1 that its own components contradict: their value, found
                               # when the table was imported (published.radcliq_check)
                               "radcliq_components": ((item.get("extra") or {}).get("radcliq_components")
                                                      if item["source"] == "published" else None),
                               "search_key": SEARCH_SEPARATOR.join(
                                   search_key(text) for text in (item["model_name"], item["institution"] or ""))}
        for metric in metrics:
            value, low, high = shown_value(metric, item["metrics"].get(metric), private)
            row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = value, low, high
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["official"] = df["weights"] == ""
    df = df.sort_values(["official", PRIMARY], ascending=False, na_position="last").reset_index(drop=True)
    df.insert(0, "rank", df[PRIMARY].where(df["official"]).rank(ascending=False, method="min").astype("Int64"))
    return df


# Between a row's model key and its institution key: never in a key (``search_key`` keeps letters and digits), so
# no term matches across the two.
SEARCH_SEPARATOR = "\n"
# numeric_table's columns for the page's own use, left out of the /results API and the CSV.
INTERNAL_COLUMNS = ("url", "note", "search_key")
# What separates alternatives in a search ("MAIRA-2|MedGemma"); spaces separate words (see ``search_terms``).
ALTERNATIVES = re.compile(r"[|,;]")
# What of a search is read: a person types far less; a longer one (the API takes any string) would cost a scan of the
# keys per word.
SEARCH_CHARS = 200


def search_terms(query: str, keys: Iterable[str]) -> list[str]:
    """The terms a search matches, each a ``search_key``: a row matches when any term is part of its model's or
    institution's key. ``|``, ``,`` and ``;`` separate alternatives ("MAIRA-2|MedGemma"); within one, words are
    alternatives too ("maira medgemma") except where consecutive words read together as part of some row's key
    ("maira 2" is one term, "maira2", when a name like MAIRA-2 is on the board: a person spaces what the name
    hyphenates). Words are joined greedily, left to right. A query with no letter or digit has no terms; only its first
    ``SEARCH_CHARS`` characters are read."""
    every = SEARCH_SEPARATOR.join(keys)  # one string: a word pair is looked up in C, not row by row
    terms = []
    for alternative in ALTERNATIVES.split(str(query)[:SEARCH_CHARS]):
        words = [key for key in map(search_key, alternative.split()) if key]
        at = 0
        while at < len(words):
            term, at = words[at], at + 1
            while at < len(words) and term + words[at] in every:
                term, at = term + words[at], at + 1
            terms.append(term)
    return terms


def filter_table(df: pd.DataFrame, *, search: str = "", institutions: list[str] | None = None,
                 years: list[int] | None = None, model_types: list[str] | None = None,
                 trained: str = "all", sources: list[str] | None = None) -> pd.DataFrame:
    if df.empty:
        return df
    mask = pd.Series(True, index=df.index)
    terms = search_terms(search, df["search_key"]) if search else []
    if terms:
        mask &= df["search_key"].str.contains("|".join(map(re.escape, terms)), regex=True)
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


def sort_table(df: pd.DataFrame, sort_by: str | None, ascending: bool | None = None) -> pd.DataFrame:
    """Rows ordered by one metric in its shown direction (best first, whether or not its column is shown);
    rows without a value last, ties by rank then name; rows that are never ranked (``official`` false: unofficial
    weights) after every ranked one. Unknown or empty ``sort_by``: the ranking order."""
    if df.empty or not sort_by or sort_by not in df.columns:
        return df
    if ascending is None:
        ascending = not _shown_higher_is_better(sort_by) if is_metric(sort_by) else True
    keys, order = [sort_by, "rank", "model"], [ascending, True, True]
    if "official" in df.columns:
        keys, order = ["official", *keys], [False, *order]
    return df.sort_values(keys, ascending=order, na_position="last", kind="stable").reset_index(drop=True)


def display_columns(metrics: Iterable[str]) -> list[str]:
    """The page's column order: Rank, Model, the ranking column (1/RadCliQ-v1) when shown, the other metrics,
    then Institution, Year and Source (a phone sees the first three without scrolling)."""
    metrics = list(metrics)
    ordered = [PRIMARY] * (PRIMARY in metrics) + [m for m in metrics if m != PRIMARY]
    return ["Rank", "Model"] + [column_label(m) for m in ordered] + ["Institution", "Year", "Source"]


def display_table(df: pd.DataFrame, metrics: Iterable[str], sort_by: str | None = None,
                  ascending: bool | None = None, name_cell=None) -> pd.DataFrame:
    """Strings for the page: 'mean [low, high]' per metric, direction arrows in headers (see ``display_columns``).

    Rank is the position in the chosen sort: by ``sort_by`` when it is a metric, shown or hidden (``view_ranks``),
    else by 1/RadCliQ-v1; one rule for every column. A row scored with unofficial weights has no rank (``official``).
    ``name_cell(row)``: how the Model cell shows a row's name (the page links it); default the plain name."""
    metrics = list(metrics)
    columns = display_columns(metrics)
    if df.empty:
        return pd.DataFrame(columns=columns)
    df = sort_table(df, sort_by, ascending)
    ranking = sort_by if is_metric(sort_by) and sort_by in df.columns else PRIMARY
    ranks = view_ranks(df, ranking)
    out = pd.DataFrame({
        "Rank": ranks.map(lambda r: "–" if pd.isna(r) else str(int(r))),
        "Model": [name_cell(row) for _, row in df.iterrows()] if name_cell else df["model"],
        "Institution": df["institution"], "Year": df["year"].map(lambda y: "" if pd.isna(y) else str(int(y))),
        "Source": df["source"]})
    if "weights" in df.columns:  # a marker on rows scored with unofficial/unverified weights, the label beside it
        label = df["weights"].fillna("").astype(str)
        out["Model"] = out["Model"].where(label == "", out["Model"] + " ⚠")
        out["Source"] = out["Source"].where(label == "", out["Source"] + " · " + label)
    for metric in metrics:
        out[column_label(metric)] = [fmt(v, lo, hi) for v, lo, hi in
                                     zip(df[metric], df[f"{metric}_low"], df[f"{metric}_high"])]
    if "radcliq_components" in df.columns:  # a published value its own components contradict: both, marked
        recomputed = df["radcliq_components"].astype(float)
        marked = recomputed.notna()
        if marked.any() and PRIMARY in metrics:
            label = column_label(PRIMARY)
            out[label] = out[label].where(~marked, out[label] + f" {RADCLIQ_MARK}")
        out["Source"] = [f"{src} · {RADCLIQ_MARK} {metric_name(PRIMARY)} {v:.3f} published, {r:.3f} from its "
                         "components" if m else src
                         for src, m, v, r in zip(out["Source"], marked, df[PRIMARY], recomputed)]
    # A row without the ranking metric is not ranked in this view, and says what it was scored on instead of sitting
    # silently at the bottom (a submission scored on the metrics this host has weights for).
    unranked = df[ranking].isna() if ranking in df.columns else pd.Series(False, index=df.index)
    if unranked.any():
        every = [column for column in df.columns if is_metric(column)]  # the board's columns, shown or not
        scored = [scored_on(row, every) for _, row in df.iterrows()]
        out["Model"] = [f"{name} (no {metric_name(ranking)}: {len(have)} of {len(every)} metrics)"
                        if miss and have else name for name, miss, have in zip(out["Model"], unranked, scored)]
        out["Source"] = [f"{src} · scored on {', '.join(metric_name(m) for m in have)}" if miss and have else src
                         for src, miss, have in zip(out["Source"], unranked, scored)]
    return out[columns].reset_index(drop=True)


def scored_on(row: pd.Series, metrics: Iterable[str]) -> list[str]:
    """The board's ``metrics`` a numeric-table row has a value for."""
    return [m for m in metrics if m in row.index and not pd.isna(row[m])]


def view_ranks(df: pd.DataFrame, metric: str) -> pd.Series:
    """Rank 1 = best by ``metric`` in its shown direction, among the rows that have it (others NaN): the ranking
    column ranks by 1/RadCliQ-v1, a view sorted by another metric ranks by that metric."""
    if df.empty or metric not in df.columns:
        return pd.Series(pd.NA, index=df.index, dtype="Int64")
    if metric == PRIMARY and "rank" in df.columns:
        return df["rank"]
    values = df[metric].where(df["official"]) if "official" in df.columns else df[metric]
    return values.rank(ascending=not _shown_higher_is_better(metric), method="min").astype("Int64")


def overview_columns(dataset: str) -> tuple[str, str]:
    """The overview's two columns of one dataset: its rank, and its value of the ranking column (1/RadCliQ-v1)."""
    label = DATASET_LABELS[dataset]
    return f"{label} rank", f"{label} {metric_name(PRIMARY)}"


def overview_layout() -> list[str]:
    """Every column the overview can show, in its order (a dataset's pair only once a model is ranked on it)."""
    return [*OVERVIEW_LEAD, *(column for dataset in DATASETS for column in overview_columns(dataset))]


def model_page_layout(edition: str | None = None) -> list[str]:
    """The model page's columns, in order (``edition``: the board's; default the default edition)."""
    return [*MODEL_PAGE_LEAD, *(column_label(m) for m in _model_page_metrics(edition)), *MODEL_PAGE_TAIL]


def _model_page_metrics(edition: str | None = None) -> list[str]:
    """The ranking metric, then every other column of any track of the edition."""
    return [PRIMARY] + [m for m in boards.edition(edition).all_metrics() if m != PRIMARY]


def overview(store: Store, track: str = DEFAULT_TRACK) -> pd.DataFrame:
    """Rank by 1/RadCliQ-v1 on each dataset: one row per model, ordered by its mean rank over the datasets it has.

    Columns: Rank (by mean rank), Model, Mean rank (two decimals: 4.25 and 4.00 must not look alike), Datasets (how
    many it is ranked on), then the rank and value per dataset.
    """
    rank_col, model_col, mean_col, count_col = OVERVIEW_LEAD
    frames, rank_cols, value_cols = [], [], []
    for dataset in DATASETS:
        df = numeric_table(store, dataset, track, [PRIMARY])
        if df.empty:
            continue
        # published and rexrank rows: the best-ranked; a row without a rank (unofficial weights) is not in it
        df = df.dropna(subset=[PRIMARY, "rank"]).drop_duplicates("model")
        ranks_of, values_of = overview_columns(dataset)
        frames.append(df.set_index("model")[["rank", PRIMARY]].rename(columns={"rank": ranks_of, PRIMARY: values_of}))
        rank_cols.append(ranks_of)
        value_cols.append(values_of)
    if not frames:
        return pd.DataFrame(columns=list(OVERVIEW_LEAD))
    table = pd.concat(frames, axis=1)
    ranks = table[rank_cols].astype(float)
    table.insert(0, mean_col, ranks.mean(axis=1))
    table.insert(1, count_col, ranks.notna().sum(axis=1).astype(int).astype(str))
    table = table.rename_axis(model_col).reset_index()
    table = table.sort_values([mean_col, model_col], kind="stable").reset_index(drop=True)
    table.insert(0, rank_col, table[mean_col].rank(method="min").astype(int).astype(str))
    table[mean_col] = table[mean_col].map(lambda v: f"{v:.2f}")
    for col in value_cols:
        table[col] = table[col].map(lambda v: "–" if pd.isna(v) else f"{v:.3f}")
    for col in rank_cols:
        table[col] = table[col].map(lambda v: "–" if pd.isna(v) else str(int(v)))
    return table


def last_updated(store: Store) -> float | None:
    """When the board last changed (epoch seconds; None for an empty store): the newest shown result, or the newest
    model event (a registration, an edit of the details, an owner hand-over) or published meta-evaluation, whichever
    came later. Arena votes are left out: they change the Arena's board, not the rankings this line dates."""
    times = [item.get("created_at") for item in store.results()]
    times += [event.get("at") for _, event in store.events(MODEL_EVENT_KINDS + (META_EVAL_KIND,))]
    return max((t for t in times if t), default=None)


def model_page(store: Store, model: str) -> pd.DataFrame:
    """Every dataset and track of one model, with all metrics (strings with CIs): the dataset, the track and the
    ranking column first (what a phone shows without scrolling), the provenance columns last. Published rows the
    published tables no longer list stay here, their Source saying so (the board's tables leave them out)."""
    rows = []
    edition = edition_of(store)
    for item in sorted(_rows(store, model=model, withdrawn=True), key=_tab_order):
        row = dict(zip(MODEL_PAGE_LEAD, (DATASET_LABELS.get(item["dataset"], item["dataset"]),
                                         TRACK_LABELS.get(item["track"], item["track"])), strict=True))
        for metric in _model_page_metrics(edition):
            row[column_label(metric)] = fmt(*shown_value(metric, item["metrics"].get(metric),
                                                         is_private(item["dataset"])))
        weights = weights_label(item) or ("official" if (item.get("extra") or {}).get("weights") else "")
        source = item["source"] + (f" · {WITHDRAWN}" if item.get("withdrawn") else "")
        row.update(zip(MODEL_PAGE_TAIL, (item["split"], source,
                                         "" if item["n_studies"] is None else str(item["n_studies"]), weights),
                       strict=True))
        rows.append(row)
    return pd.DataFrame(rows)


def _tab_order(item: dict[str, Any]) -> tuple[int, int, str]:
    """A row's place in the page's order: datasets and tracks as their tabs stand, then source."""
    def place(names, name):
        return names.index(name) if name in names else len(names)
    return place(list(DATASETS), item["dataset"]), place(list(TRACKS), item["track"]), str(item.get("source"))


def corpus_display(name: str) -> tuple[str, tuple[str, ...]]:
    """(section title, option names worth showing) of a corpus-level metric's model-page table: the metric class
    declares both (TITLE, SHOWN_OPTIONS); an unknown stored name shows under its own name."""
    try:
        cls = REGISTRY.cls(name)
    except UnknownNameError:  # a record written by another rexrank version may name a metric this one lacks
        return name, ()
    return str(getattr(cls, "TITLE", name)), tuple(getattr(cls, "SHOWN_OPTIONS", ()))


def model_corpus_metrics(store: Store, model: str) -> pd.DataFrame:
    """A model's corpus-level metrics (CE F1) per dataset and track, as stored with its rexrank results: the values
    each metric's tables show, with CIs, and the options that change them (CE F1's uncertain convention). Model pages
    only: these are not ReXrank columns and never rank. A private set's values rounded by its policy."""
    rows = []
    for item in sorted(_rows(store, model=model), key=_tab_order):
        for name, entry in ((item.get("extra") or {}).get("corpus_metrics") or {}).items():
            values = entry.get("values") or {}
            if is_private(item["dataset"]):
                values = disclosure.bounded_tree(values)
            shown_options = corpus_display(name)[1]
            row = {"Dataset": DATASET_LABELS.get(item["dataset"], item["dataset"]),
                   "Track": TRACK_LABELS.get(item["track"], item["track"]), "Metric": name,
                   "Options": ", ".join(f"{k}={v}" for k, v in (entry.get("config") or {}).items()
                                        if isinstance(v, str) and k in shown_options)}
            for output, label in (entry.get("shown") or {}).items():
                value = values.get(output) or {}
                row[label] = fmt(*(math.nan if value.get(k) is None else float(value[k])
                                   for k in ("value", "ci_low", "ci_high")))
            rows.append(row)
    return pd.DataFrame(rows)


def model_other_metrics(store: Store, model: str) -> pd.DataFrame:
    """The per-report metrics a model's stored results hold beyond the ReXrank columns (RadEval-BERTScore, SRR-BERT,
    temporal F1, RadGraph's reward levels, ...): one row per dataset and track, one column per metric any row holds,
    each named and directed by the registry (``column_label``) and valued with its CI as the ranking columns are
    (``shown_value``; a private set's rounded by its policy). Registry order. Model pages only: these never rank.
    Corpus-level metrics have their own tables (``model_corpus_metrics``); a stored name this rexrank does not know
    is left out (no direction to show)."""
    shown = boards.edition(edition_of(store)).all_metrics()
    known = [name for name in REGISTRY.names() if name not in shown and REGISTRY.spec(name).level != "corpus"]
    items = sorted(_rows(store, model=model), key=_tab_order)
    held = [name for name in known if any(item["metrics"].get(name) for item in items)]
    rows = []
    for item in items:
        if not any(item["metrics"].get(name) for name in held):
            continue
        row = {"Dataset": DATASET_LABELS.get(item["dataset"], item["dataset"]),
               "Track": TRACK_LABELS.get(item["track"], item["track"])}
        for name in held:
            row[column_label(name)] = fmt(*shown_value(name, item["metrics"].get(name), is_private(item["dataset"])))
        rows.append(row)
    return pd.DataFrame(rows, columns=["Dataset", "Track", *(column_label(name) for name in held)])


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


def metric_agreement(store: Store, dataset: str, track: str = DEFAULT_TRACK) -> pd.DataFrame:
    """Kendall tau between the model rankings that each pair of metrics gives (models with both values)."""
    from scipy.stats import kendalltau

    df = numeric_table(store, dataset, track)
    metrics = board_metrics(store, track)
    labels = [column_label(m) for m in metrics]
    matrix = np.full((len(labels), len(labels)), np.nan)
    for i, a in enumerate(metrics):
        for j, b in enumerate(metrics):
            if df.empty:
                continue
            both = df[[a, b]].dropna()
            if len(both) >= 3:
                sa = both[a] if _shown_higher_is_better(a) else -both[a]
                sb = both[b] if _shown_higher_is_better(b) else -both[b]
                matrix[i, j] = kendalltau(sa, sb).statistic
    return pd.DataFrame(matrix, index=labels, columns=labels)


def ranks_across_datasets(store: Store, track: str = DEFAULT_TRACK) -> pd.DataFrame:
    """Long table (model, dataset, rank) for the rank-across-datasets plot."""
    rows = []
    for dataset in DATASETS:
        df = numeric_table(store, dataset, track, [PRIMARY])
        for _, r in df.iterrows():
            if not pd.isna(r["rank"]):
                rows.append({"model": r["model"], "dataset": DATASET_LABELS[dataset], "rank": int(r["rank"])})
    return pd.DataFrame(rows, columns=["model", "dataset", "rank"])


def is_private(dataset: str) -> bool:
    return disclosure.is_private(dataset)


__all__ = ["DATASETS", "TRACKS", "board_metrics", "column_label", "display_columns", "display_table", "filter_table",
           "fmt",
           "last_updated", "metric_agreement", "model_analyses", "model_page", "numeric_table", "overview",
           "published_trained_on", "ranks_across_datasets", "search_terms", "shown_value", "sort_table", "trained_on"]
