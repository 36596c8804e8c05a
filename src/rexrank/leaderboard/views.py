"""What the leaderboard page and its API show: pure functions of the store (and the submission queue), no gradio.

``Views(store, submissions)`` computes each view from the store on every call: a dataset/track table with its
filters, search and sort applied (``page_table``), the overview, a model's page, the CSV, the queue, the header and
a submission's status. The gradio wiring (``rexrank.leaderboard.wiring``) only puts these values into components;
everything here is testable without a server.

User-supplied text (model names, institutions, URLs, queue messages) reaches the page only as Markdown built by the
helpers below, which HTML-escape it and backslash-escape every Markdown character, or as plain Dataframe cells; the
CSV download prefixes a text cell a spreadsheet would evaluate (OWASP's CSV-injection rule, ``csv_text``).
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Callable, NamedTuple

import pandas as pd

from rexrank.data.tracks import DEFAULT_TRACK
from rexrank.leaderboard import about, board
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, TRACK_LABELS, TRACKS
from rexrank.leaderboard.store import Store
from rexrank.leaderboard.editions import edition_of
from rexrank.metrics import REGISTRY
from rexrank.metrics.aggregation import RECIPROCAL_OF_MEAN, aggregation_name

TITLE = "ReXrank leaderboard"
TOP_BARS = 25  # bars drawn: the best rows of the filtered table by the chosen metric
RANK_LINES = 10  # models in the rank-across-datasets plot: the best by mean rank
PRIMARY = board.PRIMARY
QUEUED = "Submission #"  # how an accepted submission's message starts (the form is cleared after one)
# Column widths (px): Rank, Model and the ranking column fit a 312 px wide screen (a 390 px phone at 125% zoom,
# with gradio_compat.PHONE_HEAD's 8 px margin);
# the rest scroll sideways behind them.
WIDTHS = {"Rank": 52, "Model": 112, "Institution": 140, "Year": 56, "Source": 130}
METRIC_WIDTH = 100
# The Model column breaks a name only after a hyphen or between words (gradio_compat.WIDTHS_CSS), so it is at least
# as wide as the longest such part of a shown name: px per character of the page's 14 px Source Sans (digits and
# capitals included: "Cvt2distilgpt2-" took 126 px in Chromium) plus the cell's 8 px padding each side.
NAME_CHAR_PX = 9
NAME_PADDING_PX = 16
# The overview's and the model page's widths by column name, laid on board's layouts (overview_widths,
# model_page_widths); the overview's other columns are its datasets' rank and value.
OVERVIEW_WIDTHS = WIDTHS | {"Mean rank": 76, "Datasets": 84}
# A dataset's rank and its ranking value: wide enough for their headers in two lines ("CheXpert Plus" above
# "1/RadCliQ-v1"); the page's CSS (gradio_compat.WIDTHS_CSS) spreads any free width over the columns.
OVERVIEW_RANK_WIDTH = 104
OVERVIEW_DATASET_WIDTH = 132
MODEL_PAGE_WIDTHS = {"Dataset": 110, "Track": 110, "Split": 110, "Source": 100, "Studies": 70, "Weights": 100}
TRAINED_CHOICES = [("All models", "all"), ("Exclude models trained on this set", "exclude"),
                   ("Only models trained on this set", "only")]


def view_key(dataset: str, track: str) -> str:
    """The id suffix of one dataset/track view's components (``table-iu_xray-findings`` ...)."""
    return f"{dataset}-{track}"


def table_label(dataset: str, track: str, sort_by: str | None = PRIMARY) -> str:
    """A table's accessible name and caption: the dataset, the track and the sort (Rank follows the sort)."""
    metric = sort_by if board.is_metric(sort_by) else PRIMARY
    return (f"{DATASET_LABELS[dataset]} · {TRACK_LABELS[track]}: ranked by {board.column_label(metric)} "
            "(change it in Filters, columns and sorting)")


def model_width(names: Iterable[str]) -> int:
    """The Model column's width for ``names``: their longest part between hyphens and spaces fits one line."""
    parts = (part for name in names for part in re.split(r"(?<=-)|\s+", str(name)))
    return max([WIDTHS["Model"], *(NAME_PADDING_PX + NAME_CHAR_PX * len(part) for part in parts)])


def overview_widths(names: Iterable[str] = ()) -> list[int]:
    """The overview table's column widths, one per column of ``board.overview_layout`` (Model fits ``names``)."""
    return [model_width(names) if c == "Model"
            else OVERVIEW_WIDTHS.get(c, OVERVIEW_RANK_WIDTH if c.endswith(" rank") else OVERVIEW_DATASET_WIDTH)
            for c in board.overview_layout()]


def model_page_widths(edition: str | None = None) -> list[int]:
    """The model page table's column widths, one per column of ``board.model_page_layout`` (of ``edition``)."""
    return [MODEL_PAGE_WIDTHS.get(c, METRIC_WIDTH) for c in board.model_page_layout(edition)]


def overview_label(track: str) -> str:
    return f"Overview · {TRACK_LABELS[track]}: mean rank by 1/RadCliQ-v1 over the datasets"


# -- text that reaches Markdown -------------------------------------------------------------------------------

# Inline Markdown: emphasis, code, links (a link needs "[", so parentheses and "!" stay plain), tables, strikethrough.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# Block Markdown only starts a line (a cell is one line): a heading, a list item, a numbered item.
_MD_LINE_START = re.compile(r"^(\s*)(\d*)([#+\-.)])")


def md_text(text: str) -> str:
    """Plain text (a name, a search, an error message, a note) inside one line of Markdown: the page's one escaper.
    Newlines folded to spaces, HTML escaped and every character that could start Markdown backslash-escaped, links
    included, and no other ("MAIRA-2" and "RadPhi3.5Vision" stay as typed). Search never sees this text: it matches
    the names themselves, on the server (``board.filter_table``)."""
    escaped = _MD_SPECIAL.sub(r"\\\1", html.escape(str(text).replace("\r", " ").replace("\n", " ")))
    return _MD_LINE_START.sub(lambda m: m.group(0) if bool(m.group(2)) == (m.group(3) in "#+-")
                              else f"{m.group(1)}{m.group(2)}\\{m.group(3)}", escaped)


def md_link(text: str, url: str) -> str:
    """A Markdown link to an http(s) URL (stored URLs are checked when added); plain text otherwise."""
    if not url or not re.match(r"^https?://", url):
        return md_text(text)
    safe_url = url.replace("(", "%28").replace(")", "%29").replace(" ", "%20")
    return f"[{md_text(text)}]({safe_url})"


def when(epoch: float | None) -> str:
    return "–" if epoch is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


# OWASP's CSV-injection rule: a cell starting with one of these is a formula to a spreadsheet.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


# The CSV's prefix of a column that holds a metric's board value 1/mean (aggregation's reciprocal rule):
# ``inv_radcliq_v1`` is 1/RadCliQ-v1 (higher is better); a bare ``radcliq_v1`` would read as the lower-is-better
# mean itself (issue 48 point 4).
RECIPROCAL_PREFIX = "inv_"
# numeric_table's 1/RadCliQ-v1 recomputed from a published row's components (published.radcliq_check).
_COMPONENTS = "radcliq_components"


def csv_column(metric: str) -> str:
    """The CSV's name of a metric's board column: the metric's name, ``inv_``-prefixed where the board shows
    1/mean (``MetricSpec.leaderboard_aggregation``, read through ``aggregation.aggregation_name``)."""
    reciprocal = aggregation_name(REGISTRY.spec(metric)) == RECIPROCAL_OF_MEAN
    return f"{RECIPROCAL_PREFIX}{metric}" if reciprocal else metric


def csv_columns(metrics: Iterable[str]) -> dict[str, str]:
    """numeric_table's column -> the CSV's name, for the columns whose names would mislead (value, CI bounds)."""
    out = {}
    for metric in metrics:
        name = csv_column(metric)
        if name != metric:
            out.update({metric: name, f"{metric}_low": f"{name}_low", f"{metric}_high": f"{name}_high"})
    out[_COMPONENTS] = f"{csv_column(board.PRIMARY)}_from_components"
    return out


def csv_safe(cell: Any) -> Any:
    """A text cell a spreadsheet would evaluate (``=HYPERLINK(...)``, ``+1``, ``@SUM``, a tab- or CR-led cell) gets
    a leading ``'``; numbers and other text are left as they are."""
    return "'" + cell if isinstance(cell, str) and cell.startswith(_FORMULA_START) else cell


# -- the published meta-evaluation (``Store.meta_eval``): how each metric agrees with radiologists -----------------
META_EVAL_TITLE = "Metrics vs radiologists"
META_EVAL_EMPTY = "No meta-evaluation published yet."
META_EVAL_HEADERS = ["metric", "tau vs all errors [CI]", "tau vs significant errors [CI]", "raters' ceiling",
                     "verdicts"]
_GOAL_WORDS = {"total": "all errors", "significant": "significant errors"}


def _estimate(entry: dict[str, Any] | None, point: str) -> str:
    if entry is None or entry[point] is None:
        return "n/a"
    interval = "" if entry["ci_low"] is None or entry["ci_high"] is None else \
        f" [{entry['ci_low']:.2f}, {entry['ci_high']:.2f}]"
    return f"{entry[point]:.2f}{interval}"


def meta_eval_table(summary: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The meta-evaluation as a table, one row per metric (``META_EVAL_HEADERS`` plus ``name``, the metric's id):
    Kendall tau-b vs all and vs clinically significant errors with intervals, the raters' ceiling (each rater vs
    the others' mean: what a metric could reach), and the verdicts of the paired tests the metric won or lost (a
    test with no significant difference is left out). Empty without a published meta-evaluation."""
    if not summary:
        return []
    raters = summary["raters"]
    ceiling = "; ".join(f"{_GOAL_WORDS[g]} {_estimate(raters[g], 'mean')}" for g in _GOAL_WORDS)
    labels = {name: entry["label"] for name, entry in summary["metrics"].items()}
    rows = []
    for name, entry in summary["metrics"].items():
        verdicts = [f"{_GOAL_WORDS[goal]}, {labels[pair['a']]} vs {labels[pair['b']]}: {test['verdict']}"
                    for pair in summary["pairwise"] if name in (pair["a"], pair["b"])
                    for goal, test in pair["tests"].items() if test["significant"]]
        rows.append({"name": name, "metric": entry["label"],
                     "tau vs all errors [CI]": _estimate(entry["targets"]["total"], "tau"),
                     "tau vs significant errors [CI]": _estimate(entry["targets"]["significant"], "tau"),
                     "raters' ceiling": ceiling, "verdicts": verdicts})
    return rows


def meta_eval_markdown(summary: dict[str, Any] | None) -> str:
    """The About tab's "Metrics vs radiologists" section: one list item per metric, each opening with its anchor
    (``meta_anchor``; the metric's About entry links there), then the raters' ceiling and the notes. Every text from
    the stored summary (labels, verdicts, notes) is escaped. The empty state says none was published."""
    lines = [f"## {META_EVAL_TITLE}", ""]
    rows = meta_eval_table(summary)
    if not rows:
        return "\n".join(lines + [META_EVAL_EMPTY])
    level = f"{100 * summary['confidence']:g}%"
    lines += [f"How each metric agrees with radiologists' error counts on {md_text(summary['dataset'])} "
              f"({summary['n_pairs']} report pairs, {summary['n_studies']} studies, {summary['n_raters']} raters): "
              "Kendall tau-b between the metric (oriented so that a worse score means more errors) and the raters' "
              f"mean count of errors, with {level} bootstrap intervals over studies; 1 is perfect agreement. "
              f"Published {when(summary.get('at'))}.", ""]
    for row in rows:
        verdicts = "; ".join(md_text(v) for v in row["verdicts"]) or "no significant difference from the others"
        lines.append(f'- <span id="{about.meta_anchor(row["name"])}"></span>**{md_text(row["metric"])}**: '
                     f"tau vs all errors {row['tau vs all errors [CI]']}, vs significant errors "
                     f"{row['tau vs significant errors [CI]']}. Paired tests: {verdicts}.")
    ceiling = rows[0]["raters' ceiling"]
    lines.append(f"- **Raters' ceiling** (each rater vs the others' mean, what a metric could reach): {ceiling}.")
    if summary["notes"]:
        lines += ["", "Notes:", "", *[f"- {md_text(note)}" for note in summary["notes"]]]
    return "\n".join(lines)


class PageTable(NamedTuple):
    """One dataset/track view as the page shows it."""

    frame: pd.DataFrame  # display strings, the Model cell a Markdown link
    datatypes: list[str]
    widths: list[int]
    empty: str  # the message shown instead of rows ("" when there are rows)
    label: str  # the table's accessible name (dataset, track, sort)
    shown: pd.DataFrame  # the numeric rows behind the frame (the bar chart's)
    full: pd.DataFrame  # every row of the dataset/track (the filter choices)


class FilterChoices(NamedTuple):
    institutions: list[str]
    years: list[int]
    model_types: list[str]
    show_trained: bool  # some, not all, rows were trained on this set: the filter can select something


class Views:
    """What the page and the API show, computed from the store (and the submission queue) on each call."""

    def __init__(self, store: Store, submissions=None):
        self.store = store
        self.submissions = submissions
        # The one memo: what was computed for the store's generation it holds, reused until the generation changes
        # (then dropped whole). Its keys are views, never a visitor's search, so it holds at most one entry per view.
        self._memo: tuple[Any, dict[tuple, Any]] = (None, {})

    def memoized(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()`` for the store's current generation, computed once per generation and ``key``; a table comes
        back as a copy (callers may change theirs). Values read the store at or after the generation they are
        filed under, never before. Callbacks run in worker threads: the memo is replaced whole, never emptied in
        place, and two threads computing one key at once both get a correct value."""
        generation = self.generation()
        memo = self._memo
        if memo[0] != generation:
            memo = self._memo = (generation, {})
        if key not in memo[1]:
            memo[1][key] = compute()
        value = memo[1][key]
        return value.copy() if isinstance(value, pd.DataFrame) else value

    def numeric(self, dataset: str, track: str) -> pd.DataFrame:
        """``board.numeric_table`` of one dataset/track with the board's columns (memoized per generation)."""
        return self.memoized(("numeric", dataset, track), lambda: board.numeric_table(self.store, dataset, track))

    def edition(self) -> str:
        """The board edition this store shows (``editions.edition_of``)."""
        return edition_of(self.store)

    def metrics(self, track: str) -> tuple[str, ...]:
        """The columns of ``track``'s tables (the edition's)."""
        return board.board_metrics(self.store, track)

    def metric_choices(self, track: str) -> list[tuple[str, str]]:
        """(label, metric) of every column of ``track``'s tables: the Columns, Sort and bar-chart choices."""
        return [(board.column_label(m), m) for m in self.metrics(track)]

    def generation(self) -> Any:
        """The store's generation: changes with every committed change (an opaque, hashable key)."""
        return self.store.version()

    # -- dataset tables ---------------------------------------------------------------------------------------
    # Methods end in "_view": gradio names an event's endpoint after its function, and a bare "table" or "queue"
    # would take the public API names /table and /queue.

    def _filtered(self, dataset, track, search="", institutions=None, years=None, model_types=None, trained="all",
                  sources=None, sort_by=PRIMARY) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(the filtered rows sorted as asked, every row of the dataset/track)."""
        full = self.numeric(dataset, track)
        df = board.filter_table(full, search=search or "", institutions=institutions or None, years=years or None,
                                model_types=model_types or None, trained=trained or "all", sources=sources or None)
        return board.sort_table(df, sort_by or PRIMARY), full

    def _metrics(self, track, columns) -> list[str]:
        return [m for m in self.metrics(track) if not columns or m in columns]

    def table_view(self, dataset: str, track: str, search: str = "", institutions=None, years=None,
                   model_types=None, trained: str = "all", sources=None, columns=None,
                   sort_by: str = PRIMARY) -> pd.DataFrame:
        """The /table API's frame: the page's cells with plain model names."""
        shown, _ = self._filtered(dataset, track, search, institutions, years, model_types, trained, sources, sort_by)
        return board.display_table(shown, self._metrics(track, columns), sort_by=sort_by or PRIMARY)

    def page_table(self, dataset, track, search="", institutions=None, years=None, model_types=None,
                   trained="all", sources=None, columns=None, sort_by=PRIMARY) -> PageTable:
        """The table as the page shows it, always the current state of its filters, search and sort: no rows when
        nothing matches, and then a message naming what to clear."""
        shown, full = self._filtered(dataset, track, search, institutions, years, model_types, trained, sources,
                                     sort_by)
        # The Model cell links the name to its URL; display_table adds the markers (unofficial weights, a published
        # 1/RadCliQ-v1 that disagrees with its components) and the "scored on" label of a row this view cannot rank.
        out = board.display_table(shown, self._metrics(track, columns), sort_by=sort_by or PRIMARY,
                                  name_cell=lambda row: md_link(row["model"], row["url"]))
        names = full["model"] if "model" in full else ()  # a board with no rows has no columns either
        widths = [model_width(names) if c == "Model" else WIDTHS.get(c, METRIC_WIDTH) for c in out.columns]
        types = ["markdown" if c == "Model" else "str" for c in out.columns]
        label = table_label(dataset, track, sort_by)
        if full.empty:
            empty = "No results on this test set and track yet." + self._unimported_note(track)
        elif shown.empty:
            active = [f"Search “{md_text(str(search)[:60])}”"] * bool(search) + [
                label for label, value in (("Institution", institutions), ("Year", years),
                                           ("Model type", model_types), ("Source", sources),
                                           ("Trained on this dataset", trained not in (None, "", "all")))
                if value]
            empty = ("**No model matches these filters.** Clear " + ", ".join(active) + " to see rows again."
                     if active else "**No model matches these filters.**")
        else:
            empty = ""
        # A column no row fills (an edition's metric this store's rows never had: 1/FineRadScore of the 2025 edition
        # over today's rows) is named, not left as a silent column of dashes.
        blank = [m for m in self._metrics(track, columns) if not full.empty and m in full and full[m].isna().all()]
        if blank:
            label += (f" · no row has a value of {', '.join(board.metric_name(m) for m in blank)} (edition "
                      f"{self.edition()})")
        return PageTable(out, types, widths, empty, label, shown, full)

    def _unimported_note(self, track: str) -> str:
        """Why a whole track is empty on a store whose host imported the published tables: they imported other
        tracks' tables only (rexrank.ai shows this one)."""
        from rexrank.leaderboard.published import SEED_KEY

        if (self.store.meta(SEED_KEY) or {}).get("state") != "imported" or self.store.results(track=track):
            return ""
        return (f" This board's host imported the published ReXrank tables of other tracks only: rexrank.ai's "
                f"{TRACK_LABELS.get(track, track)} rows are not here.")

    def filter_choices(self, dataset: str, track: str) -> FilterChoices:
        """The filter choices the rows there now allow (a filter with one choice filters nothing)."""
        return self.memoized(("choices", dataset, track), lambda: self._filter_choices(dataset, track))

    def _filter_choices(self, dataset: str, track: str) -> FilterChoices:
        full = self.numeric(dataset, track)
        if full.empty:
            return FilterChoices([], [], [], False)
        n_trained = int(full["trained_on_this"].sum())
        return FilterChoices(sorted({x for x in full["institution"] if x}),
                             sorted({int(y) for y in full["year"].dropna()}),
                             sorted({x for x in full["model_type"] if x}), 0 < n_trained < len(full))

    def bars_view(self, rows: pd.DataFrame, metric: str) -> pd.DataFrame:
        """The bar chart's rows: the first ``TOP_BARS`` of the rows the table shows (its filters) with a value of
        the chosen metric, best first by it (columns model, source, the metric and its ``_low``/``_high``)."""
        if rows.empty or metric not in rows:
            return rows.iloc[0:0]
        return board.sort_table(rows, metric).dropna(subset=[metric]).head(TOP_BARS).reset_index(drop=True)

    def agreement_view(self, dataset: str, track: str) -> pd.DataFrame:
        """Kendall tau between the model rankings of each pair of the track's metrics (labels as the columns')."""
        return self.memoized(("agreement", dataset, track),
                             lambda: board.metric_agreement(self.store, dataset, track))

    # -- API payloads -----------------------------------------------------------------------------------------

    def results_json(self, dataset: str, track: str) -> str:
        """Aggregates only (means and CIs), never per-study data. A private test set's values come from
        ``board.numeric_table``, which discloses them (3 decimals: the JSON shows no more digits than that).

        The serialised text is memoized per store generation: under load the API's cost is mostly this JSON.
        """
        return self.memoized(("results", dataset, track), lambda: json.dumps(
            {"dataset": dataset, "track": track, "results": self.results_records(dataset, track)}))

    def results_records(self, dataset: str, track: str) -> list[dict[str, Any]]:
        df = self.numeric(dataset, track)
        return [] if df.empty else json.loads(df.drop(columns=list(board.INTERNAL_COLUMNS)).to_json(orient="records"))

    def leaderboard(self) -> dict[str, Any]:
        return {"updated": self.updated(),
                "boards": [{"dataset": d, "track": t, "results": self.results_records(d, t)}
                           for d in DATASETS for t in TRACKS]}

    def csv_text(self, dataset: str, track: str) -> str:
        """Every row of one dataset/track as CSV: numeric values and CI bounds as shown on the board, each column
        named for what it holds (``csv_columns``: ``inv_radcliq_v1`` is the board's 1/RadCliQ-v1); text cells a
        spreadsheet would evaluate are prefixed with ``'`` (``csv_safe``)."""
        # The URL stays (a reader of the CSV follows it); the other internal columns go.
        df = self.numeric(dataset, track).drop(columns=[c for c in board.INTERNAL_COLUMNS if c != "url"],
                                               errors="ignore")
        df = df.rename(columns=csv_columns(self.metrics(track)))
        for column in df.columns:
            if not pd.api.types.is_numeric_dtype(df[column]):
                df[column] = df[column].map(csv_safe)
        buffer = io.StringIO()
        df.to_csv(buffer, index=False, float_format="%.6g", quoting=csv.QUOTE_MINIMAL)
        return buffer.getvalue()

    # -- header, overview, models ----------------------------------------------------------------------------

    def updated(self) -> float | None:
        return self.memoized(("updated",), lambda: board.last_updated(self.store))

    def about_markdown(self) -> str:
        """The About tab's text: ``about.markdown`` (each metric with a meta-evaluation row linking to it), then the
        "Metrics vs radiologists" section of the newest published meta-evaluation (``meta_eval_markdown``)."""
        summary = self.store.meta_eval()
        return (about.markdown(summary["metrics"] if summary else (), self.edition()) + "\n\n"
                + meta_eval_markdown(summary))

    def header_markdown(self) -> str:
        return (f"# {TITLE}\nAI-written chest X-ray reports ranked by the eight ReXrank metrics (by 1/RadCliQ-v1), "
                "with 95% confidence intervals for results scored by rexrank. "
                f"[Paper]({about.PAPER_URL}) · [rexrank.ai]({about.SITE_URL}) · BibTeX in About · "
                f"Last updated: {when(self.updated())}")

    def overview_view(self, track: str = DEFAULT_TRACK) -> pd.DataFrame:
        return self.memoized(("overview", track), lambda: board.overview(self.store, track))

    def ranks_view(self, track: str) -> tuple[list[str], pd.DataFrame]:
        """The rank-across-datasets plot's data: the best ``RANK_LINES`` models by mean rank (the overview's order)
        and their ranks by the board's metric on each dataset (long: model, dataset, rank)."""
        overview = self.overview_view(track)
        top = [str(m) for m in overview["Model"][:RANK_LINES]] if not overview.empty else []
        long = self.memoized(("ranks", track), lambda: board.ranks_across_datasets(self.store, track))
        return top, long[long["model"].isin(top)]

    def model_view(self, model: str) -> tuple[pd.DataFrame, str]:
        if not model:
            return pd.DataFrame(), "Choose a model."
        info = self.store.model(model)
        if info is None:
            return pd.DataFrame(), f"No model named {md_text(str(model)[:120])} on this board."
        text = model_markdown(info, board.model_analyses(self.store, model))
        return board.model_page(self.store, model), (text + other_metrics_markdown(board.model_other_metrics(
            self.store, model)) + corpus_markdown(board.model_corpus_metrics(self.store, model)))

    def default_model(self) -> str | None:
        """The model the Models tab opens on: the overview's first."""
        top = self.overview_view()
        return None if top.empty else str(top.loc[0, "Model"])

    def models_list(self) -> list[str]:
        return [m["name"] for m in self.store.models()]

    # -- the submission queue --------------------------------------------------------------------------------

    def queue_view(self) -> pd.DataFrame:
        rows = []
        for job in (self.submissions.queue() if self.submissions else []):
            rows.append({"#": str(job["id"]), "Submitted": when(job.get("created_at")),
                         "Model": job["model"].get("name"),
                         "Test set": DATASET_LABELS.get(job["dataset"], job["dataset"]),
                         "Track": TRACK_LABELS.get(job["track"], job["track"]), "Status": job["status"],
                         "Message": job.get("error") or ""})
        return pd.DataFrame(rows, columns=["#", "Submitted", "Model", "Test set", "Track", "Status", "Message"])

    def queue_note(self) -> str:
        """What the queue's caption says: that it is empty, or how many jobs wait."""
        jobs = self.submissions.queue() if self.submissions else []
        if not jobs:
            return "The queue is empty: no submissions yet."
        waiting = sum(job["status"] in ("queued", "running") for job in jobs)
        return (f"{waiting} submission{'s' * (waiting != 1)} waiting or being scored; this list updates itself."
                if waiting else "Every submission below has been handled.")

    def queue_pending(self) -> bool:
        return any(job["status"] in ("queued", "running") for job in (self.submissions.queue(20)
                                                                      if self.submissions else []))

    def submit_status(self, job_id: int | None, note: str | None = None, *, plain: bool = False) -> str:
        """An accepted submission's message, with the job's status as it is now (it follows the queue): Markdown
        for the page, plain text (``plain``) for an API caller."""
        if job_id is None or self.submissions is None:
            return ""
        shown = (lambda line: line) if plain else md_text
        job = next((j for j in self.submissions.queue(200) if j["id"] == job_id), None)
        status = job["status"] if job else "queued"
        if status == "done":
            text = f"{QUEUED}{job_id} done: scored and on the board."
        elif status == "failed":
            text = f"{QUEUED}{job_id} failed: {shown((job or {}).get('error') or 'see the queue below')}"
        else:
            text = (f"{QUEUED}{job_id} {status}: it will appear on the board once scored (the queue below updates). "
                    + self.submissions.scoring_note())
        return text + (f"\n\n{shown(note)}" if note else "")


def model_markdown(info: dict[str, Any], analyses: list[dict[str, Any]]) -> str:
    """A model's details and the subgroup results stored with its rexrank results, as Markdown tables."""
    details = []
    if info.get("institution"):
        details.append(f"**Institution:** {md_text(board.institution_label(info['institution']))}")
    if info.get("year"):
        details.append(f"**Year:** {info['year']}")
    if info.get("url"):
        details.append(f"**Link:** {md_link(info['url'], info['url'])}")
    trained = board.trained_on({"model_name": info["name"], "trained_on": info.get("trained_on")})
    details.append("**Trained on:** " + (", ".join(DATASET_LABELS.get(d, d) for d in trained) or "no ReXrank set"))
    blocks = [" · ".join(details)]
    for entry in analyses:
        blocks.append(subgroup_markdown(entry))
    if not analyses:
        blocks.append("No subgroup results stored for this model (published rows have none; `rexrank score` "
                      "stores normal/abnormal and per-site results with each result it adds).")
    return "\n\n".join(b for b in blocks if b)


def other_metrics_markdown(table: pd.DataFrame) -> str:
    """The model's other per-report metrics (``board.model_other_metrics``) under the ranking table: Markdown, or
    nothing when its results hold none."""
    if table.empty:
        return ""
    columns = list(table.columns)
    lines = ["", "", "### Other metrics (not ReXrank columns)", "",
             "| " + " | ".join(md_text(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(md_text(str(row[c])) for c in columns) + " |" for _, row in table.iterrows()]
    return "\n".join(lines)


def corpus_markdown(table: pd.DataFrame) -> str:
    """CE F1 (and any corpus-level metric) stored with the model's rexrank results: a Markdown table, or nothing."""
    if table.empty:
        return ""
    lines = []
    for name, part in table.groupby("Metric", sort=False):  # one section per metric: each has its own outputs
        part = part.dropna(axis=1, how="all").drop(columns=["Metric"])
        if not part["Options"].astype(bool).any():
            part = part.drop(columns=["Options"])
        columns = list(part.columns)
        lines += ["", "", f"### {board.corpus_display(str(name))[0]} (not a ReXrank column)", "",
                  "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(md_text(str(row[c])) for c in columns) + " |" for _, row in part.iterrows()]
    return "\n".join(lines)


def subgroup_markdown(entry: dict[str, Any]) -> str:
    """One dataset/track's subgroups: one row per group, the board's value and CI per metric."""
    title = f"### {DATASET_LABELS.get(entry['dataset'], entry['dataset'])} · {TRACK_LABELS.get(entry['track'])}"
    subgroups = entry.get("subgroups") or {}
    rows: list[tuple[str, str, dict[str, str]]] = []
    for breakdown, groups in subgroups.items():
        if breakdown == "green" or not isinstance(groups, dict):
            continue
        for name, group in groups.items():
            if not isinstance(group, dict):
                continue  # e.g. the breakdown's "definition"
            label = f"{breakdown.replace('_', ' ')}: {name}"
            if "suppressed" in group:  # a private set's small group (rexrank.evaluation.disclosure)
                rows.append((label, f"suppressed ({group['suppressed']})", {}))
                continue
            values = {metric: board.fmt(*board.shown_value(metric, value))
                      for metric, value in (group.get("metrics") or {}).items() if metric in board.column_metrics()}
            rows.append((label, str(group.get("n", "")), values))
    present = [m for m in board.column_metrics() if any(m in values for _, _, values in rows)]
    lines = [title]
    if rows:
        header = ["Group", "Studies"] + [board.column_label(m) for m in present]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for label, n, values in rows:
            lines.append("| " + " | ".join([md_text(label), n] + [values.get(m, "–") for m in present]) + " |")
    nan = float("nan")
    for key, value in (subgroups.get("green") or {}).items():
        if isinstance(value, dict) and value.get("mean") is not None:
            label = "GREEN error-free rate" + (" (abnormal studies)" if key.endswith("abnormal") else "")
            low, high = (nan if value.get(k) is None else value[k] for k in ("ci_low", "ci_high"))
            lines.append(f"- {label}: {board.fmt(value['mean'], low, high)}")
    if len(lines) == 1:
        lines.append("No subgroup results stored for this result.")
    return "\n".join(lines)


_CLI_HINT = re.compile(r"\s*\((?:[^()]*?\s)?(?:check |use |raise |score )?[^()]*--[a-z][^()]*\)")


NO_FILE_CHOSEN = "No file chosen yet."


def chosen_file(path: str | None) -> str:
    """The Submit form's line under its file button: the name of the file uploaded (as the user's machine named it:
    gradio keeps that name), or that none is."""
    return f"Chosen: **{md_text(Path(path).name)}**" if path else NO_FILE_CHOSEN


def form_message(error: Exception, *, plain: bool = False) -> str:
    """A rejection as the form shows it: one Markdown list item per problem (the harness's message lists them one
    per line), without the `rexrank score` flags its hints name (the form has none: the fix is in the file, or in
    the Test set and Track chosen). ``plain``: the same as plain text, what an API caller gets (issue 49 point 7:
    gradio_client users got Markdown escapes and HTML entities)."""
    text = _CLI_HINT.sub("", str(error))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    head, items = lines[0], [line[2:] if line.startswith("- ") else line for line in lines[1:]]
    shown = (lambda line: line) if plain else md_text
    out = f"Submission rejected: {head}" if plain else f"**Submission rejected:** {md_text(head)}"
    if items:
        out += "\n\n" + "\n".join(f"- {shown(item)}" for item in items)
    if re.search(r"no reference study|has no prediction|have no prediction", text):
        chosen = "Test set and Track" if plain else "*Test set* and *Track*"
        out += ("\n\nEach study of the chosen test set and track needs exactly one prediction: check the file, and "
                f"the {chosen} chosen above.")
    return out


# Why /submit refuses a path on the server (as an error's text: ``form_message`` words it for the form or the API).
SERVER_PATH_TEXT = ("the predictions file must be uploaded with the request (gradio_client: handle_file(path)); a "
                    "path on the server is never read.")
