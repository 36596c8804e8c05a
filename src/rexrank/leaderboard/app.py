"""The ReXrank leaderboard Space (Gradio 6, native components).

``build_app(store)`` returns the Blocks; ``serve`` launches it. Every view reads the store through
``rexrank.leaderboard.board``; submissions go through ``rexrank.leaderboard.submissions``. User-supplied
text reaches the page only inside Dataframe cells and Markdown that we escape, never as raw HTML.

Speed: the overview table (the first tab) is part of the page as built, so the first rows need no request; a dataset
tab shows an HTML preview of its first rows at once (on its first opening the page itself paints it in the frame after
the click, before gradio mounts the tab: ``_INSTANT_JS``), and its filters, Dataframe and plots are built when it is
first opened (``gr.render`` on ``Tab.select``), which keeps the page small; the Models tab and the Submit tab's form
are built the same way, so the first page holds few component types (the browser loads one JS module per type: with
them in the page, the first rows took ~1.2-1.3x a minimal app's time; bench/results/leaderboard.md), and /model,
/submit and /queue are ``gr.api`` endpoints that answer without those tabs; the page's own callbacks skip the queue
(``queue=False``).
A thread refreshes the built values when the store changes (``_Fresh``), so a reload shows new results.
Public API: ``/leaderboard``, ``/overview``, ``/table``, ``/results``, ``/model``, ``/submit``, ``/queue``; every
other callback is private (``api_visibility="private"``).
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import pandas as pd

from rexrank.errors import RexrankError
from rexrank.leaderboard import about, board, plots
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, SOURCES, TRACK_LABELS, TRACKS
from rexrank.leaderboard.store import Store
from rexrank.metrics import LEADERBOARD_METRICS

TITLE = "ReXrank leaderboard"
METRIC_CHOICES = [(board.column_label(m), m) for m in LEADERBOARD_METRICS]
PRIMARY = board.PRIMARY
QUEUED = "Submission #"  # how an accepted submission's message starts (the form is cleared after one)
# Column widths (px): Rank, Model and the ranking column fit a 390 px phone; the rest scroll sideways behind them.
_WIDTHS = {"Rank": 56, "Model": 150, "Institution": 150, "Year": 56, "Source": 110}
_METRIC_WIDTH = 152
# Rows in a dataset tab's HTML preview: more than a 1440x900 or 390x844 screen shows below the tab bar.
_PREVIEW_ROWS = 20
# Gradio's header menu sorts the shown strings ("–" above numbers, CIs compared as text, sorts stacking up): the
# board's "Sort by" sorts by value, direction-aware, missing values last, so the header menu is hidden.
# gradio 6.31 takes ``pinned_columns`` but does not pin them on screen: sticky cells do, inside the grid's own
# scrolling box (Rank's width is fixed so that Model can sit right after it).
CSS = """
.board-table .cell-menu-button { display: none !important; }
.board-links p { margin: 0; }
.pin1 table :is(th, td):nth-child(1), .pin2 table :is(th, td):nth-child(-n+2) {
  position: sticky; z-index: 4; background: var(--background-fill-primary); }
.pin1 table :is(th, td):nth-child(1), .pin2 table :is(th, td):nth-child(1) { left: 0; }
.pin2 table :is(th, td):nth-child(1) { min-width: 56px; max-width: 56px; width: 56px; }
.pin2 table :is(th, td):nth-child(2) { left: 56px; box-shadow: 2px 0 0 var(--border-color-primary); }
.board-view:has(.board-table div[role=row]) .board-preview { display: none !important; }
.board-preview-scroll { overflow-x: auto; border: 1px solid var(--border-color-primary);
  border-radius: var(--table-radius); margin-top: 44px; }
.board-preview table { table-layout: fixed; border-collapse: separate; border-spacing: 0; width: max-content;
  min-width: 100%; margin: 0; font-family: var(--font-mono); font-size: var(--text-md); }
.board-preview :is(table, th, td) { border: none !important; }
.board-preview :is(th, td) { padding: var(--size-2); text-align: left; vertical-align: top;
  overflow-wrap: anywhere; border-bottom: 1px solid var(--border-color-primary) !important; }
.board-preview th { font-weight: 600; white-space: nowrap; }
.board-preview td:nth-child(2) { font-family: var(--font); }
.board-preview-more { margin: var(--size-1) 0; color: var(--body-text-color-subdued); }
"""
# In <head>, not in CSS: gradio scopes custom @media rules to its content box, and the phone rule is for the page
# margin around it (32 px each side would leave a 390 px phone no room for Rank, Model and 1/RadCliQ-v1).
_PHONE_CSS = """@media (max-width: 640px) {
  .main.fillable { padding-left: 8px !important; padding-right: 8px !important; }
  .board-header h1 { font-size: 1.3rem; }
}"""

# A dataset tab's first opening (bench/leaderboard.py, "tab switch"). gradio mounts a tab's content in the click's
# own task and paints it after that (~120 ms from the click to painted rows here, most of it gradio's mount and the
# first layout of the new panel). So the page holds each dataset's opening preview (the rows its tab opens on) in a
# hidden block after the tabs (``_Views.instant_html``); a click on a dataset tab whose panel was never mounted is
# held back for one frame: the page paints that preview over the open panel, exactly where the new panel's own
# preview will be (~25 ms from the click), then hands gradio the same click; once gradio's panel is mounted (its
# preview comes with it), the copy is hidden before the next paint. Nothing here changes what gradio does or sends
# (it gets the click one frame later), the copy is escaped HTML like the preview, and the page is never left masked:
# another tab click, or 5 s without gradio's panel, ends it. Enter on a focused tab is a click: the same path.
_INSTANT_JS = """(() => {
  const root = document.documentElement;
  let watcher = null, timer = null;
  const view = (id) => document.querySelector(`.board-instant-view[data-view="${CSS.escape(id)}"]`);
  const end = () => {
    delete root.dataset.boardInstant;
    if (watcher) watcher.disconnect();
    clearTimeout(timer);
    watcher = timer = null;
  };
  document.addEventListener("click", (event) => {
    const button = event.target instanceof Element
      && event.target.closest("#board-tabs > .tab-wrapper button[data-tab-id]");
    if (!button || "boardPass" in button.dataset) return;
    end();
    const id = button.dataset.tabId, shown = view(id);
    if (!shown || !shown.firstElementChild || button.getAttribute("aria-selected") === "true"
        || document.getElementById(shown.dataset.panel)) return;
    event.stopPropagation();
    // Over the open panel, not in its place: hiding that panel would re-lay the page out and wake every
    // component's resize observer (~50 ms here); the overlay starts where gradio starts the new panel.
    const bar = document.querySelector("#board-tabs > .tab-wrapper"), tabs = document.getElementById("board-tabs");
    const top = bar.getBoundingClientRect().bottom + parseFloat(getComputedStyle(bar).marginBottom);
    const box = tabs.getBoundingClientRect();
    shown.style.cssText = `top:${top}px;left:${box.left}px;width:${box.width}px`;
    root.dataset.boardInstant = id;
    watcher = new MutationObserver(() => { if (document.getElementById(shown.dataset.panel)) end(); });
    watcher.observe(document.body, {childList: true, subtree: true});
    timer = setTimeout(end, 5000);
    requestAnimationFrame(() => setTimeout(() => {
      if (root.dataset.boardInstant !== id) return;
      button.dataset.boardPass = "";
      button.click();
      delete button.dataset.boardPass;
    }, 0));
  }, true);
})();"""


# Where the mounted panel's preview rows start inside the panel (px, gradio 6.31 theme sizes): below its track tabs,
# CSV link and their gaps, and indented like the panel's content.
_INSTANT_TOP, _INSTANT_LEFT = 96.75, 12


def _instant_css() -> str:
    shown = ",\n".join(f'html[data-board-instant="{d}"] .board-instant-view[data-view="{d}"]' for d in DATASETS)
    pending = ",\n".join(f'html[data-board-instant="{d}"] #board-tabs > .tab-wrapper button[data-tab-id="{d}"]'
                         for d in DATASETS)
    # The padding puts the rows where the mounted panel's preview has them (checked at both viewports by
    # test_leaderboard_browser.py).
    return f"""
.board-instant-view {{ display: none; }}
{shown} {{ display: block; position: fixed; bottom: 0; z-index: 50; overflow: hidden;
  box-sizing: border-box; padding: {_INSTANT_TOP}px {_INSTANT_LEFT}px 0; background: var(--background-fill-primary); }}
html[data-board-instant] #board-tabs > .tab-wrapper button.selected {{ color: var(--body-text-color); }}
html[data-board-instant] #board-tabs > .tab-wrapper button.selected::after {{ visibility: hidden; }}
{pending} {{ color: var(--color-accent); box-shadow: inset 0 -2px 0 var(--color-accent); }}
"""


HEAD = f"<style>\n{_PHONE_CSS}\n{_instant_css()}</style>\n<script>\n{_INSTANT_JS}\n</script>"


def _check(dataset: str, track: str) -> tuple[str, str]:
    """The canonical (dataset, track) of what an API caller typed: any alias the catalog knows ("gradienthealth",
    "MIMIC-CXR", "chexpert", "Findings") resolves; an unknown name is a gr.Error listing the choices."""
    import gradio as gr

    from rexrank.data import catalog
    from rexrank.errors import UnknownNameError

    try:
        canonical_dataset = catalog.canonical_dataset(dataset)
    except UnknownNameError:
        canonical_dataset = None
    if canonical_dataset not in DATASETS:  # gr.Error reaches the client as a message, never a traceback
        raise gr.Error(f"Unknown dataset {str(dataset)[:40]!r}. Available: {', '.join(DATASETS)} "
                       "(or any of their aliases)")
    return canonical_dataset, _check_track(track)


def _check_track(track: str) -> str:
    """The canonical track of what an API caller typed ("Findings", "findings+impression" ...); an unknown name is a
    gr.Error listing the choices."""
    import gradio as gr

    from rexrank.data import tracks
    from rexrank.errors import UnknownNameError

    try:
        canonical_track = tracks.canonical_track(track)
    except UnknownNameError:
        canonical_track = None
    if canonical_track not in TRACKS:
        raise gr.Error(f"Unknown track {str(track)[:40]!r}. Available: {', '.join(TRACKS)}")
    return canonical_track


def _escape_md(text: str) -> str:
    return html.escape(str(text)).replace("|", "&#124;").replace("\n", " ")


# Inline Markdown: emphasis, code, links (a link needs "[", so parentheses and "!" stay plain), tables, strikethrough.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# Block Markdown only starts a line (a cell is one line): a heading, a list item, a numbered item.
_MD_LINE_START = re.compile(r"^(\s*)(\d*)([#+\-.)])")


def _md_text(text: str) -> str:
    """Plain text inside a one-line Markdown cell: HTML escaped and every character that could start Markdown
    backslash-escaped, and no other (the table's client-side search matches the cell text as written, so
    "MAIRA-2" and "RadPhi3.5Vision" must stay as typed)."""
    escaped = _MD_SPECIAL.sub(r"\\\1", html.escape(str(text)))
    return _MD_LINE_START.sub(lambda m: m.group(0) if bool(m.group(2)) == (m.group(3) in "#+-")
                              else f"{m.group(1)}{m.group(2)}\\{m.group(3)}", escaped)


def _md_link(text: str, url: str) -> str:
    """A Markdown link to an http(s) URL (stored URLs are checked when added); plain text otherwise."""
    if not url or not re.match(r"^https?://", url):
        return _md_text(text)
    safe_url = url.replace("(", "%28").replace(")", "%29").replace(" ", "%20")
    return f"[{_md_text(text)}]({safe_url})"


def _when(epoch: float | None) -> str:
    return "–" if epoch is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def build_app(store: Store, submissions=None, *, oauth: bool = False, upload_ttl: int = 3600):
    """Build the Space. ``submissions``: a ``Submissions`` service (None hides the Submit tab).

    ``oauth``: the Space has Hugging Face login (``hf_oauth`` in its card): the Submit tab gets a login button and
    submissions carry the user's identity. ``upload_ttl``: uploads never submitted are deleted after this many
    seconds (handled ones are deleted at once). One function per tab builds its components and wires its events;
    the views they call read the store through ``board`` (see ``_Views``).
    """
    import gradio as gr

    views = _Views(store, submissions)
    delete_cache = (upload_ttl, upload_ttl) if submissions is not None else None
    with gr.Blocks(title=TITLE, delete_cache=delete_cache, fill_width=True) as demo:
        demo.rexrank_views, demo.rexrank_fresh = views, _Fresh(views)
        fresh = demo.rexrank_fresh
        header = gr.Markdown(views.header_markdown(), elem_classes=["board-header", "board-links"],
                             elem_id="board-header")
        fresh.add(header, views.header_markdown)
        # A phone shows every tab (rows of tabs), none behind a menu.
        with gr.Tabs(overflow_behavior="wrap", elem_id="board-tabs"):
            _overview_tab(gr, views, fresh)
            _dataset_tabs(gr, views, fresh)
            _models_tab(gr, views)
            if submissions is not None:
                _submit_tab(gr, demo, views, submissions, oauth=oauth)
            _about_tab(gr)
        # Shown only for a frame or two while a dataset tab first opens (see _INSTANT_JS).
        instant = gr.HTML(views.instant_html(), elem_id="board-instant", elem_classes=["board-preview"], padding=False,
                          min_height=0)
        fresh.add(instant, views.instant_html)
        _api_endpoints(gr, views)
    return demo


class _Views:
    """What the page and the API show, computed from the store (and the submission queue) on each call."""

    def __init__(self, store: Store, submissions=None):
        self.store = store
        self.submissions = submissions
        self._json_cache: dict[tuple, str] = {}
        self._updated: tuple[tuple, float | None] | None = None

    # Methods end in "_view": gradio names an event's endpoint after its function, and a bare "table" or "queue"
    # would take the public API names /table and /queue (which would then become /table_64...).

    def table_view(self, dataset: str, track: str, search: str = "", institutions=None, years=None,
                   model_types=None, trained: str = "all", sources=None, columns=None,
                   sort_by: str = PRIMARY) -> pd.DataFrame:
        shown, _ = self._filtered(dataset, track, search, institutions, years, model_types, trained, sources,
                                  columns, sort_by)
        return board.display_table(shown, self._columns(columns), sort_by=sort_by or PRIMARY)

    @staticmethod
    def _columns(columns) -> list[str]:
        return [m for m in LEADERBOARD_METRICS if not columns or m in columns]

    def _filtered(self, dataset, track, search="", institutions=None, years=None, model_types=None, trained="all",
                  sources=None, columns=None, sort_by=PRIMARY) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(the filtered rows sorted as asked, every row of the dataset/track)."""
        full = board.numeric_table(self.store, dataset, track)
        df = board.filter_table(full, search=search or "", institutions=institutions or None, years=years or None,
                                model_types=model_types or None, trained=trained or "all", sources=sources or None)
        return board.sort_table(df, sort_by or PRIMARY), full

    def page_table(self, dataset, track, search="", institutions=None, years=None, model_types=None,
                   trained="all", sources=None, columns=None, sort_by=PRIMARY):
        """The table as the page shows it (model names linked to their URL), the empty-result message, the rows
        behind it (for the bar chart) and every row of the dataset/track (for the filter choices)."""
        import gradio as gr

        out, types, widths, empty, shown, full = self.page_parts(dataset, track, search, institutions, years,
                                                                 model_types, trained, sources, columns, sort_by)
        table = gr.Dataframe(value=out, datatype=types, column_widths=widths)
        return table, gr.Markdown(empty, visible=bool(empty)), shown, full

    def page_parts(self, dataset, track, search="", institutions=None, years=None, model_types=None,
                   trained="all", sources=None, columns=None, sort_by=PRIMARY):
        """``page_table``'s pieces as plain values (what the page is built with): the display frame, its column
        types and widths, the empty-result message, the rows shown and every row."""
        shown, full = self._filtered(dataset, track, search, institutions, years, model_types, trained, sources,
                                     columns, sort_by)
        metrics = self._columns(columns)
        # The Model cell links the name to its URL; display_table adds the unofficial-weights marker and the
        # "scored on" label of a row this view cannot rank.
        out = board.display_table(shown, metrics, sort_by=sort_by or PRIMARY,
                                  name_cell=lambda row: _md_link(row["model"], row["url"]))
        widths = [_WIDTHS.get(c, _METRIC_WIDTH) for c in out.columns]
        types = ["markdown" if c == "Model" else "str" for c in out.columns]
        if full.empty:
            empty = "No results on this test set and track yet."
        elif shown.empty:
            empty = ("**No model matches these filters.** Open *Filters, columns and sorting* and remove a "
                     "filter.")
        else:
            empty = ""
        return out, types, widths, empty, shown, full

    def preview_html(self, dataset: str, track: str) -> str:
        """The first rows of the unfiltered table as a plain HTML table: the cells of ``page_parts`` (same order,
        ranks, labels and links), HTML-escaped; empty when the dataset/track has no rows."""
        shown, _ = self._filtered(dataset, track)
        if shown.empty:
            return ""
        # The Model cell is display_table's (its markers included) with the name as an HTML link: display_table calls
        # name_cell once per row in the order it shows them; ranks are over every row, then the first rows are kept.
        links: list[str] = []

        def name_cell(row) -> str:
            name, url = html.escape(str(row["model"])), str(row["url"] or "")
            safe_url = html.escape(url, quote=True)  # opened as the Dataframe opens its links: a new tab
            links.append(f'<a target="_blank" rel="noopener noreferrer" href="{safe_url}">{name}</a>'
                         if re.match(r"^https?://", url) else name)
            return "\x00"

        out = board.display_table(shown, self._columns(None), sort_by=PRIMARY, name_cell=name_cell)
        out = out.head(_PREVIEW_ROWS)
        out["Model"] = [links[k] + html.escape(cell[1:]) for k, cell in enumerate(out["Model"])]
        widths = "".join(f'<col style="width:{_WIDTHS.get(c, _METRIC_WIDTH)}px">' for c in out.columns)
        header = "".join(f"<th>{html.escape(c)}</th>" for c in out.columns)
        body = "".join("<tr>" + "".join(f"<td>{cell if c == 'Model' else html.escape(str(cell))}</td>"
                                        for c, cell in row.items()) + "</tr>" for _, row in out.iterrows())
        more = len(shown) - len(out)
        note = f'<p class="board-preview-more">… {more} more rows</p>' if more > 0 else ""
        return (f'<div class="board-preview-scroll pin2"><table><colgroup>{widths}</colgroup><thead><tr>{header}'
                f"</tr></thead><tbody>{body}</tbody></table></div>{note}")

    def instant_html(self) -> str:
        """Each dataset tab's opening preview (its first track's), hidden, for ``_INSTANT_JS``; ``data-panel``
        names the element that is there once gradio has mounted that tab's panel."""
        track = TRACKS[0]  # gradio opens a dataset tab on its first track's tab
        return "".join(f'<div class="board-instant-view" data-view="{d}" data-panel="{_csv_id(d, track)}">'
                       f"{self.preview_html(d, track)}</div>" for d in DATASETS)

    def results_json(self, dataset: str, track: str) -> str:
        """Aggregates only (means and CIs), never per-study data. A private test set's values come from
        ``board.numeric_table``, which discloses them (3 decimals: the JSON shows no more digits than that).

        The serialised text is cached per store version: under load the API's cost is mostly this JSON.
        """
        key = (self.store.version(), dataset, track)
        if key not in self._json_cache:
            if len(self._json_cache) > 64:
                self._json_cache.clear()
            self._json_cache[key] = json.dumps({"dataset": dataset, "track": track,
                                                "results": self.results_records(dataset, track)})
        return self._json_cache[key]

    def results_records(self, dataset: str, track: str) -> list[dict[str, Any]]:
        df = board.numeric_table(self.store, dataset, track)
        return [] if df.empty else json.loads(df.drop(columns=["url", "note"]).to_json(orient="records"))

    def csv_text(self, dataset: str, track: str) -> str:
        """Every row of one dataset/track as CSV: numeric values and CI bounds as shown on the board."""
        df = board.numeric_table(self.store, dataset, track)
        buffer = io.StringIO()
        df.drop(columns=["note"], errors="ignore").to_csv(buffer, index=False, float_format="%.6g")
        return buffer.getvalue()

    def updated(self) -> float | None:
        version = self.store.version()
        if self._updated is None or self._updated[0] != version:
            self._updated = (version, board.last_updated(self.store))
        return self._updated[1]

    def header_markdown(self) -> str:
        return (f"# {TITLE}\nAI-written chest X-ray reports ranked by the eight ReXrank metrics (by 1/RadCliQ-v1), "
                "with 95% confidence intervals for results scored by rexrank. "
                f"[Paper]({about.PAPER_URL}) · [rexrank.ai]({about.SITE_URL}) · BibTeX in About · "
                f"Last updated: {_when(self.updated())}")

    def overview_view(self, track: str = "findings") -> pd.DataFrame:
        return board.overview(self.store, track)

    def model_view(self, model: str) -> tuple[pd.DataFrame, str]:
        if not model:
            return pd.DataFrame(), "Choose a model."
        info = self.store.model(model)
        if info is None:
            return pd.DataFrame(), f"No model named {_md_text(str(model)[:120])} on this board."
        text = _model_markdown(info, board.model_analyses(self.store, model))
        return board.model_page(self.store, model), text + _corpus_markdown(board.model_corpus_metrics(self.store, model))

    def default_model(self) -> str | None:
        """The model the Models tab opens on: the overview's first."""
        top = self.overview_view("findings")
        return None if top.empty else str(top.loc[0, "Model"])

    def bars_view(self, rows: pd.DataFrame, metric: str):
        """The bar chart of the rows the table shows (its filters), best first by the chosen metric."""
        return plots.metric_bars(board.sort_table(rows, metric), metric, board.column_label(metric))

    def agreement_view(self, dataset: str, track: str):
        return plots.agreement_heatmap(board.metric_agreement(self.store, dataset, track),
                                       f"Kendall tau between metric rankings, {DATASET_LABELS[dataset]}")

    def ranks_view(self, track: str):
        overview = self.overview_view(track)
        top = list(overview["Model"][:plots.RANK_LINES]) if not overview.empty else []
        long = board.ranks_across_datasets(self.store, track)
        return plots.rank_lines(long[long["model"].isin(top)],
                                f"Rank by 1/RadCliQ-v1 across datasets (top {len(top)} by mean rank)")

    def models_list(self) -> list[str]:
        return [m["name"] for m in self.store.models()]

    def queue_view(self) -> pd.DataFrame:
        rows = []
        for job in (self.submissions.queue() if self.submissions else []):
            rows.append({"#": str(job["id"]), "Submitted": _when(job.get("created_at")),
                         "Model": job["model"].get("name"),
                         "Test set": DATASET_LABELS.get(job["dataset"], job["dataset"]),
                         "Track": TRACK_LABELS.get(job["track"], job["track"]), "Status": job["status"],
                         "Message": job.get("error") or ""})
        return pd.DataFrame(rows, columns=["#", "Submitted", "Model", "Test set", "Track", "Status", "Message"])

    def queue_pending(self) -> bool:
        return any(job["status"] in ("queued", "running") for job in (self.submissions.queue(20)
                                                                      if self.submissions else []))


def _model_markdown(info: dict[str, Any], analyses: list[dict[str, Any]]) -> str:
    """A model's details and the subgroup results stored with its rexrank results, as Markdown tables."""
    details = []
    if info.get("institution"):
        details.append(f"**Institution:** {_md_text(info['institution'])}")
    if info.get("year"):
        details.append(f"**Year:** {info['year']}")
    if info.get("url"):
        details.append(f"**Link:** {_md_link(info['url'], info['url'])}")
    trained = board.trained_on({"model_name": info["name"], "trained_on": info.get("trained_on")})
    details.append("**Trained on:** " + (", ".join(DATASET_LABELS.get(d, d) for d in trained) or "no ReXrank set"))
    blocks = [" · ".join(details)]
    for entry in analyses:
        blocks.append(_subgroup_markdown(entry))
    if not analyses:
        blocks.append("No subgroup results stored for this model (published rows have none; `rexrank score` "
                      "stores normal/abnormal and per-site results with each result it adds).")
    return "\n\n".join(b for b in blocks if b)


def _corpus_markdown(table: pd.DataFrame) -> str:
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
        lines += ["| " + " | ".join(_md_text(str(row[c])) for c in columns) + " |" for _, row in part.iterrows()]
    return "\n".join(lines)


def _subgroup_markdown(entry: dict[str, Any]) -> str:
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
                      for metric, value in (group.get("metrics") or {}).items() if metric in LEADERBOARD_METRICS}
            rows.append((label, str(group.get("n", "")), values))
    present = [m for m in LEADERBOARD_METRICS if any(m in values for _, _, values in rows)]
    lines = [title]
    if rows:
        header = ["Group", "Studies"] + [board.column_label(m) for m in present]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for label, n, values in rows:
            lines.append("| " + " | ".join([_md_text(label), n] + [values.get(m, "–") for m in present]) + " |")
    nan = float("nan")
    for key, value in (subgroups.get("green") or {}).items():
        if isinstance(value, dict) and value.get("mean") is not None:
            label = "GREEN error-free rate" + (" (abnormal studies)" if key.endswith("abnormal") else "")
            low, high = (nan if value.get(k) is None else value[k] for k in ("ci_low", "ci_high"))
            lines.append(f"- {label}: {board.fmt(value['mean'], low, high)}")
    if len(lines) == 1:
        lines.append("No subgroup results stored for this result.")
    return "\n".join(lines)


class _Fresh:
    """Values built into the page (no request at load), recomputed when the store changes.

    gradio serves the config it built at launch; ``refresh`` replaces these components' values in it, so the next
    page load shows the store as it is now. ``serve`` runs it on a thread every ``interval`` seconds.
    """

    def __init__(self, views: _Views):
        self.views = views
        self.entries: list[tuple[Any, Callable[[], Any]]] = []
        self.version: tuple | None = None

    def add(self, component, compute: Callable[[], Any]) -> None:
        self.entries.append((component, compute))

    def refresh(self, demo) -> bool:
        from pydantic import BaseModel

        version = self.views.store.version()
        if version == self.version:
            return False
        props = {c["id"]: c.get("props", {}) for c in (getattr(demo, "config", None) or {}).get("components", [])}
        for component, compute in self.entries:
            value = component.postprocess(compute())
            value = value.model_dump() if isinstance(value, BaseModel) else value
            component.value = value
            if component._id in props:
                props[component._id]["value"] = value
        self.version = version
        return True

    def run(self, demo, interval: float = 2.0) -> threading.Thread:
        self.version = self.views.store.version()  # the values were built from this version

        def loop():
            try:
                while True:
                    time.sleep(interval)
                    if not getattr(demo, "is_running", False):
                        break
                    self.refresh(demo)
            except Exception:  # noqa: BLE001 - a closed store at shutdown ends the loop; the page stays as built
                pass
            finally:
                self.views.store.close()  # this thread's connection

        thread = threading.Thread(target=loop, name="rexrank-fresh", daemon=True)
        thread.start()
        return thread


def _overview_tab(gr, views: _Views, fresh: _Fresh) -> None:
    """The overview: one sub-tab per track, like the dataset tabs (a radio would add three component modules to the
    first page: bench/leaderboard.py, first rows). The first track's table is built into the page (no request when it
    loads; _Fresh keeps it current); another track's is built when its tab is first opened. /overview is an API
    endpoint of its own."""
    payload = _frame_payload(gr)

    def overview_api(track: str) -> dict:
        """The overview table of one track ({headers, data}): rank by mean rank over the datasets."""
        return payload(views.overview_view(_check_track(track)))

    overview_api.__annotations__ = {"track": str, "return": dict}  # real types: gr.api reads them
    with gr.Tab("Overview", id="overview"):
        with gr.Tabs(elem_id="overview-tracks"):
            for track in TRACKS:
                with gr.Tab(TRACK_LABELS[track], id=f"overview-{track}") as tab:
                    if track == TRACKS[0]:
                        _overview_track(gr, views, track, fresh)
                    else:
                        @gr.render(triggers=[tab.select], queue=False, show_progress="hidden")
                        def lazy(track=track):
                            _overview_track(gr, views, track, None)
        gr.Markdown("Mean rank: the mean of a model's ranks over the datasets it is ranked on (Datasets), by "
                    "1/RadCliQ-v1. Open a dataset tab for every metric with its 95% CI.")
        # In the tab: gr.Tabs takes only tabs as children.
        gr.api(overview_api, api_name="overview", queue=False)


def _overview_track(gr, views: _Views, track: str, fresh: _Fresh | None) -> None:
    """One track's overview table and its rank plot (the first track's ids are the plain ``overview-table`` and
    ``overview-plot``)."""
    suffix = "" if track == TRACKS[0] else f"-{track}"
    table = gr.Dataframe(value=views.overview_view(track), interactive=False, elem_id=f"overview-table{suffix}",
                         pinned_columns=2, elem_classes=["board-table", "pin2"], wrap=True,
                         column_widths=[56, 150, 76, 84] + [110] * 2 * len(DATASETS), key=f"overview-table{suffix}")
    if fresh is not None:
        fresh.add(table, lambda: views.overview_view(track))
    # The plot is built when its section opens: with a gr.Plot in the page's config, the browser loads the plot
    # modules with the page (bench/leaderboard.py, first rows).
    with gr.Accordion("Rank across datasets (plot)", open=False, elem_id=f"overview-plot{suffix}",
                      key=f"overview-plot{suffix}") as acc:
        @gr.render(triggers=[acc.expand], queue=False, show_progress="hidden")
        def ranks():
            gr.Plot(views.ranks_view(track), show_label=False, key=f"overview-ranks{suffix}")


def _dataset_tabs(gr, views: _Views, fresh: _Fresh) -> None:
    """One tab per dataset, one sub-tab per track: a preview of the first rows built into the page, and the
    filterable table with its plots built when the tab is first opened."""
    for dataset in DATASETS:
        with gr.Tab(DATASET_LABELS[dataset], id=dataset):
            with gr.Tabs():
                for track in TRACKS:
                    # gradio selects (and fires .select for) the first track's tab when the dataset tab first
                    # opens, and each track's tab when the user picks it: one request builds the view shown.
                    with gr.Tab(TRACK_LABELS[track], id=f"{dataset}-{track}", elem_classes=["board-view"]) as tab:
                        _dataset_tab(gr, dataset, track, views, fresh, tab)


def _csv_id(dataset: str, track: str) -> str:
    """The element id of a dataset/track panel's CSV link: the first thing gradio mounts in it."""
    return f"csv-{dataset}-{track}"


def _dataset_tab(gr, dataset: str, track: str, views: _Views, fresh: _Fresh, tab) -> None:
    """One dataset/track view. Speed (bench/leaderboard.py): gradio takes ~0.7 s to mount a 200-row Dataframe, and
    every component built into the page makes the first page load slower. So the page holds only the CSV link and
    a plain HTML preview of the first rows (shown at once when the tab opens, kept current by ``_Fresh``); the
    filters, the Dataframe and the plots are built by ``gr.render`` on the tab's first opening, and CSS hides the
    preview as soon as the Dataframe has its rows (``.board-view:has(...)`` in ``CSS``)."""
    key = f"{dataset}-{track}"
    gr.Markdown(f"[Download CSV](csv/{dataset}/{track})", elem_id=_csv_id(dataset, track), elem_classes=["board-links"],
                min_height=0)
    preview = gr.HTML(views.preview_html(dataset, track), elem_id=f"preview-{key}", elem_classes=["board-preview"],
                      padding=False, min_height=0)
    fresh.add(preview, lambda: views.preview_html(dataset, track))

    # Keys keep the components (and what the user chose in them) when a later opening of the tab re-runs this.
    @gr.render(triggers=[tab.select], queue=False, show_progress="hidden")
    def view():
        _dataset_view(gr, dataset, track, views)


def _dataset_view(gr, dataset: str, track: str, views: _Views) -> None:
    """The filters, the table and its plots, built with the rows there now: filter choices come from those rows (a
    choice with one value filters nothing, so such a filter is hidden)."""
    key = f"{dataset}-{track}"
    out, types, widths, empty_text, shown, full = views.page_parts(dataset, track)
    institutions = sorted({x for x in full.get("institution", pd.Series(dtype=str)) if x})
    years = sorted({int(y) for y in full.get("year", pd.Series(dtype=float)).dropna()})
    model_types = sorted({x for x in full.get("model_type", pd.Series(dtype=str)) if x})
    n_trained = int(full["trained_on_this"].sum()) if not full.empty else 0
    # interactive=True: gradio marks a component built by gr.render read-only unless told (they are event inputs).
    with gr.Accordion("Filters, columns and sorting", open=False, elem_id=f"filters-{key}", key=f"filters-{key}"):
        with gr.Row(key=f"row1-{key}"):
            inst = gr.Dropdown(institutions, multiselect=True, label="Institution", elem_id=f"inst-{key}",
                               key=f"inst-{key}", interactive=True)
            year = gr.Dropdown(years, multiselect=True, label="Year", elem_id=f"year-{key}", key=f"year-{key}", interactive=True)
            mtype = gr.Dropdown(model_types, multiselect=True, label="Model type", elem_id=f"type-{key}",
                                visible=len(model_types) > 1, key=f"type-{key}", interactive=True)
            source = gr.Dropdown(list(SOURCES), multiselect=True, label="Source", elem_id=f"source-{key}",
                                 key=f"source-{key}", interactive=True)
        with gr.Row(key=f"row2-{key}"):
            trained = gr.Radio([("All models", "all"), ("Exclude models trained on this set", "exclude"),
                                ("Only models trained on this set", "only")], value="all",
                               label="Trained on this dataset", elem_id=f"trained-{key}",
                               visible=0 < n_trained < len(full), key=f"trained-{key}", interactive=True)
            columns = gr.Dropdown(METRIC_CHOICES, value=list(LEADERBOARD_METRICS), multiselect=True,
                                  label="Columns", elem_id=f"columns-{key}", key=f"columns-{key}", interactive=True)
            sort = gr.Dropdown(METRIC_CHOICES, value=PRIMARY, label="Sort by (best first)", elem_id=f"sort-{key}",
                               key=f"sort-{key}", interactive=True)
    empty = gr.Markdown(empty_text, visible=bool(empty_text), elem_id=f"empty-{key}", key=f"empty-{key}")
    # The search box is the table's own (client-side, no request); the filters above go to the server (they drive
    # the plots). The rows are those of the first opening: a filter or a reload shows later results.
    table = gr.Dataframe(value=out, datatype=types, interactive=False, elem_id=f"table-{key}", pinned_columns=2,
                         wrap=True, elem_classes=["board-table", "pin2"], column_widths=widths, show_search="search",
                         key=f"table-{key}")
    with gr.Accordion("Plots", open=False, elem_id=f"plots-{key}", key=f"plots-{key}") as plots_acc:
        metric = gr.Dropdown(METRIC_CHOICES, value=PRIMARY, label="Metric", elem_id=f"metric-{key}",
                             key=f"metric-{key}", interactive=True)
        bars = gr.Plot(show_label=False, elem_id=f"bars-{key}", key=f"bars-{key}")
        heat = gr.Plot(show_label=False, elem_id=f"heat-{key}", key=f"heat-{key}")
    plots_open = gr.State(False)
    ds, tr, search = gr.State(dataset), gr.State(track), gr.State("")
    filters = [inst, year, mtype, trained, source, columns, sort]
    inputs = [ds, tr, search, *filters, plots_open, metric]

    def update(dataset, track, search, inst, year, mtype, trained, source, columns, sort, plots_open, metric):
        out, message, shown, _ = views.page_table(dataset, track, search, inst, year, mtype, trained, source, columns,
                                                  sort)
        return out, message, views.bars_view(shown, metric) if plots_open else gr.skip()

    def open_plots(dataset, track, search, inst, year, mtype, trained, source, columns, sort, _open, metric):
        shown = views.page_table(dataset, track, search, inst, year, mtype, trained, source, columns, sort)[2]
        return True, views.bars_view(shown, metric), views.agreement_view(dataset, track)

    # .input (a choice by the user), not .change: building the view sets these values, which must not refill it.
    private = {"api_visibility": "private", "queue": False}
    for control in filters:
        control.input(update, inputs, [table, empty, bars], **private)
    metric.input(update, inputs, [table, empty, bars], **private)
    plots_acc.expand(open_plots, inputs, [plots_open, bars, heat], **private)
    plots_acc.collapse(lambda: False, None, plots_open, **private)


def _frame_payload(gr):
    """The JSON a gr.Dataframe output sends ({headers, data, metadata}), for the API endpoints that return a table
    without a component on the page (``gr.api``)."""
    frame = gr.Dataframe(render=False)
    return lambda df: frame.postprocess(df).model_dump()


def _models_tab(gr, views: _Views) -> None:
    """The Models tab, built by ``gr.render`` when it is opened (none of its components in the first page: see
    ``build_app``); /model is an API endpoint of its own, so it answers without the tab."""
    payload = _frame_payload(gr)

    def model_api(model: str) -> tuple[dict, str]:
        """One model's results on every dataset and track ({headers, data}) and its details and subgroup results
        (Markdown)."""
        table, text = views.model_view(model)
        return payload(table), text

    # Real objects, not the module's postponed (string) annotations: gr.api types the endpoint (and counts its
    # outputs) from them.
    model_api.__annotations__ = {"model": str, "return": tuple[dict, str]}
    with gr.Tab("Models", id="models") as tab:
        # Each opening rebuilds the tab (the choices: models registered since) on the model chosen last, else the
        # overview's first (never empty). Any name is accepted (the API may ask for a newer model).
        chosen = gr.State(None)

        @gr.render(inputs=chosen, triggers=[tab.select], queue=False, show_progress="hidden")
        def view(current: str | None):
            name = current or views.default_model()
            table, text = views.model_view(name)
            model_pick = gr.Dropdown(views.models_list(), value=name, label="Model", elem_id="model-pick",
                                     allow_custom_value=True, interactive=True)
            model_table = gr.Dataframe(table, interactive=False, elem_id="model-table", pinned_columns=1,
                                       wrap=True, elem_classes=["board-table", "pin1"],
                                       column_widths=[110, 110] + [_METRIC_WIDTH] * len(LEADERBOARD_METRICS)
                                       + [90, 100, 70, 100])
            model_text = gr.Markdown(text, elem_id="model-details")

            def pick(model: str):
                return (*views.model_view(model), model)

            # .input: a choice by the user; the value set when the tab is built fires no second request.
            model_pick.input(pick, model_pick, [model_table, model_text, chosen], api_visibility="private",
                             queue=False)
        # In the tab: gr.Tabs takes only tabs as children.
        gr.api(model_api, api_name="model", concurrency_limit=None)


_CLI_HINT = re.compile(r"\s*\((?:[^()]*?\s)?(?:check |use |raise |score )?[^()]*--[a-z][^()]*\)")


def _form_message(error: Exception) -> str:
    """A rejection as the form shows it: one Markdown list item per problem (the harness's message lists them one
    per line), without the `rexrank score` flags its hints name (the form has none: the fix is in the file, or in
    the Test set and Track chosen)."""
    text = _CLI_HINT.sub("", str(error))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    head, items = lines[0], [line[2:] if line.startswith("- ") else line for line in lines[1:]]
    out = f"**Submission rejected:** {_escape_md(head)}"
    if items:
        out += "\n\n" + "\n".join(f"- {_escape_md(item)}" for item in items)
    if re.search(r"no reference study|has no prediction|have no prediction", text):
        out += ("\n\nEach study of the chosen test set and track needs exactly one prediction: check the file, and "
                "the *Test set* and *Track* chosen above.")
    return out


def _submit_tab(gr, demo, views: _Views, submissions, *, oauth: bool = False) -> None:
    """The Submit tab: its text (and login button) in the page, the form and the queue built by ``gr.render`` when
    it is opened (see ``build_app``); /submit and /queue are API endpoints of their own, so they answer without it."""
    from gradio.data_classes import FileData

    def send(file, name, institution, url, year, model_type, trained_on, dataset, track, profile) -> str:
        # profile: gradio injects the logged-in user's gr.OAuthProfile (None when logged out or without OAuth).
        user = getattr(profile, "username", None) if oauth else None
        if isinstance(file, dict):  # the API's FileData, as sent (gr.api does not preprocess)
            file = file.get("path")
        path = file if isinstance(file, str) or file is None else getattr(file, "name", None)
        if path is not None and _upload_root() not in Path(path).resolve().parents:
            # Hostile input: the API takes any string, and a server-side path would make the host read its own file
            # (a private reference set, say). Only what a user uploaded through gradio may be submitted.
            return ("**Submission rejected:** the predictions file must be uploaded with the request (gradio_client: "
                    "`handle_file(path)`); a path on the server is never read.")
        try:
            job_id, note = submissions.submit_with_note(
                path, {"name": name, "institution": institution, "url": url, "year": year or None,
                       "model_type": model_type, "trained_on": trained_on or []}, dataset, track, user=user)
        except RexrankError as exc:
            return _form_message(exc)
        finally:
            _discard_upload(demo, path)  # accepted (copied into the queue) or rejected: the upload is gone
        message = (f"{QUEUED}{job_id} queued: it will appear on the board once scored (the queue below updates). "
                   + submissions.scoring_note())
        return message + (f"\n\n{_escape_md(note)}" if note else "")

    payload = _frame_payload(gr)

    def submit(file, name, institution, url, year, model_type, trained_on, dataset, track, profile=None):
        """Submit a predictions file ({study_id: report} .json, .jsonl or .csv) for one test set and track: the
        status message (Markdown) and the queue ({headers, data})."""
        return (send(file, name, institution, url, year, model_type, trained_on, dataset, track, profile),
                payload(views.queue_view()))

    def submit_form(file, name, institution, url, year, model_type, trained_on, dataset, track, profile=None):
        return (send(file, name, institution, url, year, model_type, trained_on, dataset, track, profile),
                views.queue_view())

    # Real objects, not the module's postponed (string) annotations: gr.api types the endpoint from them, and gradio
    # resolves ``profile`` to inject the logged-in user's profile.
    profile_type = Optional[gr.OAuthProfile]
    submit.__annotations__ = {"file": Optional[FileData], "name": str, "institution": str, "url": str,
                              "year": Optional[int | str], "model_type": str, "trained_on": Optional[list[str]],
                              "dataset": str, "track": str, "profile": profile_type, "return": tuple[str, dict]}
    submit_form.__annotations__ = {"profile": profile_type}

    def queue_api() -> dict:
        """The latest submissions and their status ({headers, data})."""
        return payload(views.queue_view())

    queue_api.__annotations__ = {"return": dict}

    with gr.Tab("Submit", id="submit") as tab:
        gr.Markdown(submissions.instructions())
        if oauth:
            with gr.Row():
                gr.LoginButton(elem_id="login-button")
                gr.Markdown(f"Logged in, you own the model names you register and have your own quota ("
                            f"{submissions.private_quota}/day per private test set, {submissions.rate_limit}/day on "
                            "the public ones; rejected submissions count). Anonymous submissions may only register "
                            "new names.")
        else:
            gr.Markdown("This server runs without Hugging Face login (the hosted Space has it: `hf_oauth` in its "
                        "card): submissions are anonymous and may only register new model names (never submit "
                        "under an existing one); private test sets need a login.")

        # Keys keep what the user entered (and the last status) when a later opening re-runs this; the queue and
        # its timer are rebuilt (the queue as it is now).
        @gr.render(triggers=[tab.select], queue=False, show_progress="hidden")
        def form_view():
            _submit_form(gr, views, submissions, submit_form)

        # In the tab: gr.Tabs takes only tabs as children.
        gr.api(submit, api_name="submit")
        gr.api(queue_api, api_name="queue")


def _submit_form(gr, views: _Views, submissions, submit_form) -> None:
    """The Submit tab's form, status and queue (built by ``gr.render``: see ``_submit_tab``)."""
    with gr.Row(key="submit-row"):
        sub_file = _single_use_file(gr, label="Predictions file (.json, .jsonl or .csv)", type="filepath",
                                    elem_id="submit-file", key="submit-file", interactive=True)
        with gr.Column(key="submit-col1"):
            sub_name = gr.Textbox(label="Model name", elem_id="submit-name", key="submit-name", interactive=True)
            sub_inst = gr.Textbox(label="Institution", elem_id="submit-institution", key="submit-institution",
                                  interactive=True)
            sub_url = gr.Textbox(label="Model URL", placeholder="https://...", elem_id="submit-url", key="submit-url",
                                 interactive=True)
            this_year = time.gmtime().tm_year
            sub_year = gr.Dropdown(list(range(this_year, 2014, -1)), value=None, label="Year (optional)",
                                   allow_custom_value=True, elem_id="submit-year", key="submit-year",
                                   interactive=True)
            sub_type = gr.Textbox(label="Model type (e.g. VLM, encoder-decoder)", elem_id="submit-type",
                                  key="submit-type", interactive=True)
            sub_trained = gr.CheckboxGroup([(DATASET_LABELS[d], d) for d in DATASETS], label="Trained on",
                                           elem_id="submit-trained", key="submit-trained", interactive=True)
        with gr.Column(key="submit-col2"):
            sub_dataset = gr.Dropdown([(DATASET_LABELS[d], d) for d in submissions.public_datasets()],
                                      value=submissions.public_datasets()[0], label="Test set", key="submit-dataset",
                                      interactive=True)
            sub_track = gr.Radio([(TRACK_LABELS[t], t) for t in TRACKS], value="findings", label="Track",
                                 key="submit-track", interactive=True)
            sub_button = gr.Button("Submit", variant="primary", elem_id="submit-button", key="submit-button")
    sub_status = gr.Markdown(elem_id="submit-status", key="submit-status")
    queue_table = gr.Dataframe(value=views.queue_view(), interactive=False, elem_id="queue-table", wrap=True)
    refresh = gr.Button("Refresh queue", size="sm")
    # Polls the queue only while a job is waiting or running (checked when the tab is built, after a submission
    # and on each tick): an idle board sends no requests.
    timer = gr.Timer(3, active=views.queue_pending())
    form = [sub_file, sub_name, sub_inst, sub_url, sub_year, sub_type, sub_trained]

    def after_submit(status: str):
        # The upload was used (and deleted) either way: its field is cleared; an accepted entry clears the form.
        if status.startswith(QUEUED):
            cleared = [None, "", "", "", None, "", []]
        else:
            cleared = [None] + [gr.skip()] * (len(form) - 1)
        return cleared + [gr.Timer(active=views.queue_pending())]

    def poll():
        return views.queue_view(), gr.Timer(active=views.queue_pending())

    private = {"api_visibility": "private"}
    sub_button.click(submit_form, [*form, sub_dataset, sub_track], [sub_status, queue_table], **private).then(
        after_submit, sub_status, [*form, timer], **private)
    refresh.click(views.queue_view, None, queue_table, queue=False, **private)
    timer.tick(poll, None, [queue_table, timer], queue=False, **private)


def _single_use_file(gr, **kwargs):
    """A gr.File whose filepath input is the uploaded file itself. gradio's File leaves an empty temporary file in
    its cache on every event (``tempfile.NamedTemporaryFile(delete=False)`` in ``_process_single_file``); this one
    makes no copy, so deleting the upload after the submission (``_discard_upload``) leaves nothing behind.

    The instance's method is replaced rather than subclassing: gradio writes a ``.pyi`` stub next to the module of
    every component subclass. (If gradio renames the method, the upload-cleanup test fails.)
    """
    import types

    from gradio.utils import NamedString

    component = gr.File(**kwargs)
    component._process_single_file = types.MethodType(lambda self, f: NamedString(f.path), component)
    return component


def _upload_root() -> Path:
    """gradio's upload folder: the only place a submitted file may come from, and the only one we delete in."""
    from gradio.utils import get_upload_folder

    return Path(get_upload_folder()).resolve()


def _discard_upload(demo, path: str | None) -> None:
    """Delete an uploaded file and its folder, if (and only if) they are inside gradio's upload folder."""
    if not path:
        return
    root = _upload_root()
    target = Path(path).resolve()
    if root not in target.parents:  # not an upload (e.g. a host-side path): never delete it
        return
    target.unlink(missing_ok=True)
    for name in (str(path), str(target)):
        demo.upload_file_set.discard(name)
    folder = target.parent  # gradio keeps each upload in a folder named after its hash
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()  # only if empty: the same file uploaded by someone else at the same moment stays
        except OSError:
            break
        folder = folder.parent


def oauth_configured() -> bool:
    """Hugging Face login is available: running in a Space whose card sets ``hf_oauth`` (which sets these)."""
    from gradio.utils import get_space

    return get_space() is not None and bool(os.environ.get("OAUTH_CLIENT_ID"))


def _about_tab(gr) -> None:
    with gr.Tab("About", id="about"):
        gr.Markdown(about.markdown(), elem_id="about-text")
        # A Markdown code block (with its copy button), not gr.Code: the browser loads every component type in the
        # page's config when the page loads, and the code editor's modules are among the largest.
        gr.Markdown(f"**Cite ReXrank (BibTeX)**\n\n```bibtex\n{about.CITATION_BIBTEX.strip()}\n```", elem_id="cite")


def _api_endpoints(gr, views: _Views) -> None:
    """API-only endpoints: the whole board, aggregates as JSON, and the filtered table of any dataset/track.

    Read-only and fast: no concurrency cap (the store gives each worker thread its own connection). gradio builds
    each endpoint's API description from the function's signature, type hints and docstring, hence plain functions.
    """

    def leaderboard_api() -> dict:
        """The whole board: every dataset and track, each model's shown values and CIs, ranked by 1/RadCliQ-v1,
        and when the board last changed (epoch seconds)."""
        return {"updated": views.updated(),
                "boards": [{"dataset": d, "track": t, "results": views.results_records(d, t)}
                           for d in DATASETS for t in TRACKS]}

    def results_api(dataset: str, track: str) -> str:
        """JSON aggregates (means, CIs) of every model on one dataset and track (aliases accepted)."""
        dataset, track = _check(dataset, track)
        return views.results_json(dataset, track)

    def table_api(dataset: str, track: str, search: str = "", institutions: list[str] | None = None,
                  years: list[int] | None = None, model_types: list[str] | None = None, trained: str = "all",
                  sources: list[str] | None = None, columns: list[str] | None = None,
                  sort_by: str = PRIMARY) -> dict:
        """The dataset/track table as shown on the page, filtered and sorted: {headers, data} (aliases accepted)."""
        dataset, track = _check(dataset, track)
        df = views.table_view(dataset, track, search, institutions, years, model_types, trained, sources, columns,
                              sort_by)
        return {"headers": list(df.columns), "data": df.to_numpy().tolist()}

    gr.api(leaderboard_api, api_name="leaderboard", concurrency_limit=None)
    gr.api(results_api, api_name="results", concurrency_limit=None)
    gr.api(table_api, api_name="table", concurrency_limit=None)


def _add_csv_route(demo, views: _Views) -> None:
    """GET /csv/{dataset}/{track}: the table as CSV, a plain link (no gradio event, nothing written to disk)."""
    from fastapi import HTTPException
    from fastapi.responses import Response

    def csv_route(dataset: str, track: str):
        if dataset not in DATASETS or track not in TRACKS:
            raise HTTPException(404, f"unknown dataset/track {dataset[:40]}/{track[:40]}: "
                                     f"datasets {', '.join(DATASETS)}; tracks {', '.join(TRACKS)}")
        return Response(views.csv_text(dataset, track), media_type="text/csv", headers={
            "Content-Disposition": f'attachment; filename="rexrank_{dataset}_{track}.csv"'})

    demo.app.add_api_route("/csv/{dataset}/{track}", csv_route, methods=["GET"])


def serve(store_path: str, host: str = "127.0.0.1", port: int = 7860, *, seed: bool = True, worker: bool = True,
          submissions_dir: str | None = None, prevent_thread_lock: bool = False, oauth: bool | None = None,
          upload_ttl: int = 3600, results_repo: str | None = None, requests_repo: str | None = None,
          hub_token: str | None = None, hub_api: Any = None, **submission_options: Any):
    """Open the store (pulled from the Hub and seeded as ``published.seed_store`` says), start the scoring worker,
    launch the Space.

    ``oauth``: Hugging Face login (None: on when the Space card sets ``hf_oauth``). ``submission_options`` go to
    ``Submissions`` (``max_bytes``: the largest predictions file, also gradio's upload limit; quotas; ``metrics``,
    default every leaderboard metric this host has official weights for ...). ``results_repo``/``requests_repo``:
    Hub dataset repos the store is pulled from now and pushed to after every write (``hub_sync``; token
    ``hub_token``, else HF_TOKEN); the sync is ``demo.rexrank_sync``.
    """
    from rexrank.errors import ConfigError
    from rexrank.leaderboard.published import seed_store
    from rexrank.leaderboard.submissions import DEFAULT_MAX_UPLOAD_MB

    if requests_repo and not results_repo:
        raise ConfigError("a requests repo needs a results repo too (REXRANK_RESULTS_REPO / results_repo): "
                          "finished submissions are results")
    store = Store(store_path)
    sync = None
    if results_repo:
        from rexrank.leaderboard.hub_sync import HubSync

        sync = HubSync(store, results_repo, requests_repo=requests_repo, token=hub_token, api=hub_api)
        sync.pull_with_retries()  # before anything writes: the repos hold the board
    seed_store(store, seed=seed)
    if sync is not None:
        sync.start()
    service = None
    try:
        from rexrank.leaderboard.submissions import Submissions

        service = Submissions(store, Path(submissions_dir or Path(store_path).with_suffix(".uploads")),
                              **submission_options)
        if worker:
            service.start_worker()
    except ImportError:  # the harness is optional for a read-only board
        service = None
    demo = build_app(store, service, oauth=oauth_configured() if oauth is None else oauth, upload_ttl=upload_ttl)
    demo.rexrank_sync = sync
    demo.queue(default_concurrency_limit=8)
    # Gradio refuses a larger upload while it streams in (HTTP 413) and deletes what it had written of it.
    max_bytes = service.max_bytes if service is not None else DEFAULT_MAX_UPLOAD_MB * 1_000_000
    demo.launch(server_name=host, server_port=port, prevent_thread_lock=True, show_error=False,
                quiet=True, max_file_size=int(max_bytes), css=CSS, head=HEAD)
    _add_csv_route(demo, demo.rexrank_views)
    demo.rexrank_fresh.run(demo)
    if not prevent_thread_lock:
        demo.block_thread()
    return demo, store, service
