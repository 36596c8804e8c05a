"""The leaderboard page in gradio: components, their events and the API endpoints (``build_app``).

Every value comes from ``rexrank.leaderboard.views`` (pure functions of the store); this module only places them.

One table per view: each dataset/track table and each overview table is a ``gr.Dataframe`` built into the page
with its first rows (``views.first_rows``; the rest when the table is shown: ``_complete_when_shown``), and what it
shows is always the current state of its search, filters and sort (each of them is a server event that
replaces the table; an empty result shows no rows and a message naming what to clear). Search matches the model
name as shown and the institution, ignoring case, spaces and punctuation, several terms at once
(``board.search_terms``); a table shown whole answers it in the browser first, and the server's event then skips
resending rows the browser already shows (``quick_search``). gradio's own in-browser table search matches raw
substrings only ("maira 2" would not find MAIRA-2), so it is not used.

Freshness: the page holds the store generation its values were built from (``gr.State``); on page load and every
``FRESH_SECONDS`` (``gr.Timer``) one small request compares it with the store's, and only when it changed are the
header, the overview and every dataset table (with the filters as set) recomputed; of these only the ones that
differ from what that page was last sent go out (the page's ``sent`` state: a digest per output, held by gradio per
session like any ``gr.State``), so a new result on one dataset resends that dataset's table, not all ten. The Models tab and the
Submit form are built when opened (``gr.render``), so they are current when opened; the submission status and the
queue follow the job while it waits.

Public API: ``/leaderboard``, ``/overview``, ``/table``, ``/results``, ``/model``, ``/submit``, ``/queue``
(``gr.api``); every other callback is private (``api_visibility="private"``). The functions gr.api types are
defined here with real annotations (no ``from __future__ import annotations`` in this module): gradio reads them.
"""

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Optional

from rexrank.data.tracks import DEFAULT_TRACK
from rexrank.errors import InputError, RexrankError
from rexrank.leaderboard import about, clients, links, quick_search
from rexrank.leaderboard.compare_tab import compare_tab
from rexrank.leaderboard.compare_tab import restore as compare_restore
from rexrank.leaderboard.gradio_compat import guarded, paint_first, signal
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, SOURCES, TRACK_LABELS, TRACKS
from rexrank.leaderboard.store import Store
from rexrank.leaderboard.submissions import ALLOWED_SUFFIXES
from rexrank.leaderboard.uploads import ReceivedUploads, upload_root
from rexrank.leaderboard.views import (NO_FILE_CHOSEN, PRIMARY, QUEUED, SERVER_PATH_TEXT, TITLE,
                                       TRAINED_CHOICES, Views, chosen_file, first_rows, form_message,
                                       model_page_widths, overview_label, overview_widths, view_key)

FRESH_SECONDS = 5  # how often an open page asks whether the store changed (one tiny request when it has not)
QUEUE_SECONDS = 3  # the queue's own poll while a submission waits or is scored
# Table heights (px): a large screen sees most of the overview (~20 rows at 1920x1080, not gradio's default 500 px
# box) and a dataset table fills a laptop screen. Numbers, not CSS: with "max(..., calc(100vh - ...))" gradio 6.31's
# virtualised grid took 3-4x longer to show its first rows (bench probe: 11.4 s vs 3.4 s on one loaded machine).
OVERVIEW_HEIGHT = 800
TABLE_HEIGHT = 640
_PRIVATE = {"api_visibility": "private", "queue": False, "show_progress": "hidden"}
# The controls a link's restore sets whose change event (the search box's .change fires for a value set by the
# server too) would ask the server again for the rows the restore sent: the search and the filters.
ECHOED = 6
_RENDER = {"queue": False, "show_progress": "hidden"}  # gr.render's events are private already


def check(dataset: str, track: str) -> tuple[str, str]:
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
    return canonical_dataset, check_track(track)


def check_track(track: str) -> str:
    """The canonical track of what an API caller typed; an unknown name is a gr.Error listing the choices."""
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


def oauth_configured() -> bool:
    """Hugging Face login is available: running in a Space whose card sets ``hf_oauth`` (which sets these)."""
    from gradio.utils import get_space

    return get_space() is not None and bool(os.environ.get("OAUTH_CLIENT_ID"))


def digest(value) -> str:
    """A short digest of what an output shows (a table's cells and columns, or any value with a stable repr)."""
    text = value.to_json(orient="split") if hasattr(value, "to_json") else repr(value)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def changed(sent: dict, key: str, value_digest: str) -> bool:
    """Whether the page whose ``sent`` state this is shows something else under ``key`` than ``value_digest``; if
    so, it is noted as sent. ``sent``: the page's ``gr.State`` (gradio keeps one per session, copied from the
    digests of what the page was built with), returned as an output by every event that changes it."""
    if sent.get(key) == value_digest:
        return False
    sent[key] = value_digest
    return True


class _DatasetView:
    """One dataset/track view's components: its controls (the inputs of every update) and what they drive."""

    def __init__(self, gr, views: Views, dataset: str, track: str, built: dict):
        self.dataset, self.track, self.key = dataset, track, view_key(dataset, track)
        key = self.key
        # One page's answers for this table may run at once (its dataset tab's and its track tab's select, both
        # unqueued), sharing the page's ``sent`` state: each decides what to send and notes it as one step. Without
        # this, one noted the rows as whole and the other sent them without the label's change: whole rows under
        # "the rest is loading" (1 page in 25 in a bench loop).
        self._lock = threading.Lock()
        self._payload = _frame_payload(gr)  # the base's rows as the table sends them
        self.metric_choices = views.metric_choices(track)  # the board edition's columns of this track
        self.tab = self.dataset_tab = None  # its track's tab and its dataset's (``_dataset_tabs``)
        page = views.page_table(dataset, track)
        first, label = first_rows(page.frame, page.label)  # the other rows arrive when the table is shown
        choices = views.filter_choices(dataset, track)
        built[f"rows-{key}"] = digest(first)  # what the page is built with (its ``sent`` state's start)
        # A table built whole stays whole (the freshness refresh sends all its rows); one built with its first rows
        # gets the rest when shown (``_complete_when_shown``).
        self.partial = built[f"partial-{key}"] = len(first) < len(page.frame)
        built[f"whole-{key}"] = not self.partial
        built[f"choices-{key}"] = digest(choices)
        with gr.Row(equal_height=True):
            # The link keeps its words on one line (board-csv) in a column wide enough for them; where the row has
            # no room for both minimum widths (a narrow phone) it wraps below the box instead of being cut. (A
            # Column, not the Markdown's own min_width: gradio 6.31 ignores that one, and the Checkbox's below.)
            self.search = gr.Textbox(label="Search models and institutions", placeholder="e.g. MAIRA or Stanford",
                                     elem_id=f"search-{key}", max_lines=1, scale=4, min_width=220)
            with gr.Column(scale=0, min_width=120):
                gr.Markdown(f"[Download CSV](csv/{dataset}/{track})", elem_id=f"csv-{key}",
                            elem_classes=["board-links", "board-csv"], min_height=0)
        with gr.Accordion("Filters, columns and sorting", open=False, elem_id=f"filters-{key}"):
            with gr.Row():
                self.inst = gr.Dropdown(choices.institutions, multiselect=True, label="Institution",
                                        elem_id=f"inst-{key}")
                self.year = gr.Dropdown(choices.years, multiselect=True, label="Year", elem_id=f"year-{key}")
                self.mtype = gr.Dropdown(choices.model_types, multiselect=True, label="Model type",
                                         elem_id=f"type-{key}", visible=len(choices.model_types) > 1)
                self.source = gr.Dropdown(list(SOURCES), multiselect=True, label="Source", elem_id=f"source-{key}")
            with gr.Row():
                self.trained = gr.Radio(TRAINED_CHOICES, value="all", label="Trained on this dataset",
                                        elem_id=f"trained-{key}", visible=choices.show_trained)
                self.columns = gr.Dropdown(self.metric_choices, value=list(views.metrics(track)),
                                           multiselect=True, label="Columns", elem_id=f"columns-{key}")
                self.sort = gr.Dropdown(self.metric_choices, value=PRIMARY, label="Sort by (best first; Rank follows)",
                                        elem_id=f"sort-{key}")
        self.empty = gr.Markdown(page.empty, visible=bool(page.empty), elem_id=f"empty-{key}")
        self.table = gr.Dataframe(value=first, datatype=page.datatypes, interactive=False, label=label,
                                  show_label=True, elem_id=f"table-{key}", pinned_columns=2, wrap=True,
                                  elem_classes=["board-table", "pin2"], column_widths=page.widths,
                                  max_height=TABLE_HEIGHT)
        # The search answered in the browser (``quick_search``): the rows with no search (none in the first page),
        # the number of the table's last answer to this page and what the browser showed.
        self.base = gr.JSON(None, visible=False, elem_id=f"base-{key}")
        self.answer = signal(gr, f"answer-{key}", render=False)  # placed by ``render_signals``
        self.claim = signal(gr, f"claim-{key}", render=False)
        self.controls = [self.search, self.inst, self.year, self.mtype, self.trained, self.source, self.columns,
                         self.sort]  # links.ViewLink's order
        # What a link leaves out for this table (its track's columns, ranked by the board's metric).
        self.link_defaults = links.ViewLink(columns=tuple(views.metrics(track)), sort=PRIMARY)
        self._plots(gr, views)

    def render_signals(self) -> None:
        """Place the table's hidden signals. ``build_app`` places every table's beside the page's own: side by side
        they share one form, where each table's two places added two (gradio's frontend scans every component once
        per event trigger at start: gradio_compat, paint first)."""
        for component in (self.answer, self.claim, self.redraw):
            component.render()

    def asked(self, sent: dict, values) -> None:
        """Note in the page's ``sent`` state the control values it last asked this table for. The freshness check
        may have been sent before (with older values) and answer after: ``current`` then tells it not to overwrite
        the newer rows."""
        sent[f"asked-{self.key}"] = list(values)

    def current(self, sent: dict, values) -> bool:
        """Whether ``values`` are still what this page last asked the table for (or it never asked)."""
        latest = sent.get(f"asked-{self.key}")
        return latest is None or latest == list(values)

    def triggers(self) -> list:
        """The events that replace the table's rows: the search box's every change (gradio's Textbox sends no input
        event when text is deleted) and a choice by the user in a filter (.input: a refresh that sets a filter's
        choices must not refill the table)."""
        return [self.search.change] + [c.input for c in (self.inst, self.year, self.mtype, self.trained, self.source)]

    def table_outputs(self) -> list:
        """What ``table_update`` answers, in its order."""
        return [self.table, self.empty, self.base, self.answer]

    def table_update(self, gr, views: Views, values, sent: dict, shape: bool = False,
                     only_if_changed: bool = False, whole: bool = True, claim=None) -> list:
        """``table_outputs`` for the controls' ``values`` (in ``controls`` order), noted as this page's rows.
        Only the rows change unless ``shape`` (the columns or the sort were chosen): then the column types, widths
        and the table's name too (sending them with every search made gradio rebuild the grid:
        bench/results/leaderboard.md), or the name alone when it changes between saying the rows are the first
        ones and not. ``only_if_changed``: two skips when the page already shows these rows. ``whole``: every row,
        else the first ones (``views.first_rows``: a table this page has not shown yet). A table sent whole comes with
        its base when the page's is not the current one (``quick_search``). ``claim``: what the browser says it
        shows after a search; when it ``holds``, the page shows these rows already and the table is not sent."""
        page = views.page_table(self.dataset, self.track, *values)  # the rows: no page's state, outside the lock
        frame, label = (page.frame, page.label) if whole else first_rows(page.frame, page.label)
        with self._lock:
            return self._table_update(gr, views, values, sent, page, frame, label, shape, only_if_changed, claim)

    def _table_update(self, gr, views: Views, values, sent: dict, page, frame, label, shape: bool,
                      only_if_changed: bool, claim) -> list:
        search = values[0]
        partial = len(frame) < len(page.frame)
        answer = str(sent.get(f"answer-{self.key}", ""))
        holds_base = f"base-{self.key}" in sent  # the page holds a base: keep it current
        base, base_v = self._base(views, values, sent, page) if holds_base and not partial else (None, None)
        if (claim and holds_base and base is None and not page.empty
                and quick_search.holds(claim, base_v=base_v, answer=answer, search=search)):
            sent[f"rows-{self.key}"], sent[f"partial-{self.key}"] = digest(frame), False
            return [gr.skip()] * 4
        relabel = sent.get(f"partial-{self.key}", False) != partial  # the label says "first N of" or not
        sent[f"partial-{self.key}"] = partial
        rows_digest = digest(frame)
        if only_if_changed:
            if not changed(sent, f"rows-{self.key}", rows_digest):
                return [gr.skip(), gr.skip(), base if base is not None else gr.skip(), gr.skip()]
        else:
            sent[f"rows-{self.key}"] = rows_digest
        if not holds_base and not partial:  # the page's first whole rows of this table: its base comes with them
            base, _ = self._base(views, values, sent, page)
        base_out = base if base is not None else gr.skip()
        if shape:
            table = gr.Dataframe(value=frame, datatype=page.datatypes, column_widths=page.widths, label=label)
        else:
            table = gr.Dataframe(value=frame, label=label) if relabel else gr.Dataframe(value=frame)
        answer = sent[f"answer-{self.key}"] = str(int(answer or 0) + 1)  # a claim made before this is void
        return [table, gr.Markdown(page.empty, visible=bool(page.empty)), base_out, answer]

    def _base(self, views: Views, values, sent: dict, page) -> tuple:
        """(the base of ``values``' table to send, or None when the page has it; its digest). Computed once per
        store generation and controls other than the search (``page``: the table of ``values``, itself the base when
        there is no search)."""
        at = [views.generation(), list(values[1:])]
        if sent.get(f"base-at-{self.key}") == at:
            return None, sent[f"base-{self.key}"]
        unsearched = page if not values[0] else views.page_table(self.dataset, self.track, "", *values[1:])
        base = quick_search.base_of(unsearched, self._payload)
        sent[f"base-at-{self.key}"] = at
        if sent.get(f"base-{self.key}") == base["v"]:
            return None, base["v"]
        sent[f"base-{self.key}"] = base["v"]
        return base, base["v"]

    def shown(self, gr, views: Views, values, sent: dict) -> list:
        """``table_outputs`` when the table is shown (its tab selected): its other rows if the page was built with the
        first ones only, else skips. Skipped too when the page has asked for other rows since."""
        if not self.current(sent, values):
            return [gr.skip()] * 4
        sent[f"whole-{self.key}"] = True
        return self.table_update(gr, views, values, sent, only_if_changed=True)

    def refresh(self, gr, views: Views, values, sent: dict) -> list:
        """``table_outputs`` + [institution, year, model type, trained] after the store changed, each skipped when this
        page already shows it. The freshness check sends the controls as they were; if the page has asked for other
        rows since (a search typed meanwhile, answered first), these rows would overwrite the newer ones, so the
        table and its message are left to that answer."""
        rows = (self.table_update(gr, views, values, sent, only_if_changed=True,
                                  whole=sent.get(f"whole-{self.key}", False))
                if self.current(sent, values) else [gr.skip()] * 4)
        choices = views.filter_choices(self.dataset, self.track)
        if not changed(sent, f"choices-{self.key}", digest(choices)):
            return rows + [gr.skip()] * 4
        return rows + [
            gr.Dropdown(choices=choices.institutions), gr.Dropdown(choices=choices.years),
            gr.Dropdown(choices=choices.model_types, visible=len(choices.model_types) > 1),
            gr.Radio(visible=choices.show_trained)]

    def refresh_outputs(self) -> list:
        return [*self.table_outputs(), self.inst, self.year, self.mtype, self.trained]

    def answer_in_browser(self) -> None:
        """The browser's own answer to the search: the first event of the search box's change (gradio runs its
        outputs before the next event of the same change reads its inputs: the server's reads this change's claim).
        ``build_app`` adds every table's before the one paint-first step of them all and the server's (``wire``)."""
        self.search.change(None, [self.search, self.base, self.empty, self.answer],
                           [self.table, self.claim], js=quick_search.FAST_JS, **_PRIVATE)

    def wire(self, gr, views: Views, sent) -> None:
        """The table's events; ``sent``: the page's gr.State of what it was sent."""
        def redraw(plots_shown: bool):
            """A new value for ``redraw`` (the plots follow the rows) only while the plots are shown."""
            return str(time.monotonic_ns()) if plots_shown else gr.skip()

        def rows(page_sent: dict, *values):
            *values, plots_shown, claim = values
            if page_sent.pop(f"echo-{self.key}", None) == values[:ECHOED]:
                # The search box's change event for a link's restore, which already sent the rows (and, sent before
                # the page applied the restored sort, it would carry the old one: the rows in the wrong order). If
                # the browser has filtered them since, its claim is checked against the restored controls.
                restored = page_sent.get(f"asked-{self.key}")
                out = (self.table_update(gr, views, restored, page_sent, claim=claim) if claim and restored
                       else [gr.skip()] * 4)
                return [*out, gr.skip(), page_sent]
            self.asked(page_sent, values)
            page_sent[f"whole-{self.key}"] = True
            return [*self.table_update(gr, views, values, page_sent, claim=claim), redraw(plots_shown), page_sent]

        def shape(page_sent: dict, *values):
            *values, plots_shown, _ = values
            self.asked(page_sent, values)
            page_sent[f"whole-{self.key}"] = True
            return [*self.table_update(gr, views, values, page_sent, shape=True), redraw(plots_shown), page_sent]

        inputs = [sent, *self.controls, self.plots_shown, self.claim]
        outputs = [*self.table_outputs(), self.redraw, sent]
        # The page's URL follows the controls: written in the browser by the table's own events' js, which passes
        # their inputs on (an event of its own on each control cost the page's start, gradio_compat: paint first).
        write_url = links.view_js(self.dataset, self.track, self.link_defaults, at=inputs.index(self.controls[0]))
        gr.on(self.triggers(), guarded(rows), inputs, outputs, js=write_url, **_PRIVATE)
        gr.on([self.columns.input, self.sort.input], guarded(shape), inputs, outputs, js=write_url, **_PRIVATE)

    def restored(self, gr, views: Views, view: links.ViewLink, sent: dict) -> list:
        """[each control, table, empty message] for a link's ``view`` of this table."""
        values = [list(v) if isinstance(v, tuple) else v for v in view]
        values[6] = values[6] if values[6] is not None else list(self.link_defaults.columns)
        values[7] = values[7] or self.link_defaults.sort
        self.asked(sent, values)
        sent[f"whole-{self.key}"] = True
        sent[f"echo-{self.key}"] = values[:ECHOED]
        return [*values, *self.table_update(gr, views, values, sent, shape=True)]

    def restore_outputs(self) -> list:
        return [*self.controls, *self.table_outputs()]

    def _plots(self, gr, views: Views) -> None:
        """The bar chart (the table's rows, best first by a metric) and the agreement heatmap, drawn while "Plots" is
        ticked and redrawn with the table's search and filters (a gr.Plot in the first page would load plotly's
        modules with it). A checkbox, not an accordion: its value comes with every table request, which sets
        ``redraw`` (the render's trigger) only when the plots are shown; with the plots hidden a search is one
        request, not two (the render's own request held the table's back by ~150 ms: bench/results/leaderboard.md)."""
        key = self.key
        with gr.Row(equal_height=True):
            # Minimum widths that do not fit side by side on a phone: the row wraps, and the checkbox's label gets
            # the screen's width (beside the dropdown it wrapped to five lines at 390 px).
            with gr.Column(scale=3, min_width=300):
                shown = gr.Checkbox(False, label="Plots: bars of this table's rows and metric agreement",
                                    elem_id=f"plots-{key}")
            with gr.Column(scale=2, min_width=200):
                metric = gr.Dropdown(self.metric_choices, value=PRIMARY, label="Bar chart metric",
                                     elem_id=f"metric-{key}")

        self.plots_shown = shown
        # Set by a table request while the plots are shown; the table's requests are unqueued (gradio_compat.signal:
        # with a gr.State the plots kept the rows of before a search, seen in Chromium).
        self.redraw = signal(gr, f"redraw-{key}", render=False)
        # Redrawn after the table's own requests (not on the table's .change: gradio's Dataframe fires that when a
        # tab mounts it, which cost every tab opening a request).
        @gr.render(inputs=[shown, metric, *self.controls], triggers=[shown.input, metric.input, self.redraw.change],
                   **_RENDER)
        @guarded
        def draw(is_shown, chosen, search, inst, year, mtype, trained, source, columns, sort):
            if not is_shown:
                return
            rows = views.page_table(self.dataset, self.track, search, inst, year, mtype, trained, source, columns,
                                    sort).shown
            gr.Plot(views.bars_view(rows, chosen), show_label=False, elem_id=f"bars-{key}")
            gr.Plot(views.agreement_view(self.dataset, self.track), show_label=False, elem_id=f"heat-{key}")


def build_app(store: Store, submissions=None, *, oauth: bool = False, upload_ttl: int = 3600,
              views: Optional[Views] = None, arena=None, arena_rater: Optional[str] = None,
              trusted_proxies: Optional[int] = None):
    """Build the Space. ``submissions``: a ``Submissions`` service (None hides the Submit tab).

    ``oauth``: the Space has Hugging Face login (``hf_oauth`` in its card): the Submit tab gets a login button and
    submissions carry the user's identity. ``upload_ttl``: uploads never submitted (and gradio's own temporary files)
    are deleted by gradio's ``delete_cache`` after this many seconds; a handled upload leaves gradio's folder at
    once, its kept copy (``uploads.ReceivedUploads``) the service's folder after this many seconds.
    ``trusted_proxies``: how many proxies in front of the server append to X-Forwarded-For, which tells who an
    anonymous submission comes from (None: ``clients.trusted_proxies``'s default: the environment, else 1 in a Space,
    0 elsewhere). ``views``: the page's ``Views`` (``serve`` passes the one its CSV route reads too). ``arena``: an
    ``Arena`` (the host's opt-in; None: no Arena tab, so the first page holds none of its component types);
    ``arena_rater``: who votes there on a server without login (``arena_tab``).
    """
    import gradio as gr

    views = views or Views(store, submissions)
    with gr.Blocks(title=TITLE, delete_cache=(upload_ttl, upload_ttl), fill_width=True) as demo:
        generation = gr.State(views.generation())  # what this page's values were built from
        built: dict = {}  # digests of the values built into the page (each page's ``sent`` state starts as this)
        header = gr.Markdown(views.header_markdown(), elem_classes=["board-header", "board-links"],
                             elem_id="board-header")
        # What a shared link left out (``links.notice``), shown by its restore; a live region for screen readers.
        link_notice = gr.Markdown("", visible=False, elem_id="link-notice", elem_classes=["board-notice", "board-live"])
        # A phone shows every tab (rows of tabs), none behind a menu.
        with gr.Tabs(overflow_behavior="wrap", elem_id="board-tabs") as tabs:
            track_tabs: dict = {}  # tab id -> (its tracks' gr.Tabs, the id of a track's tab)
            overview_tables, overview_tabs = _overview_tab(gr, views, built, track_tabs)
            dataset_views = _dataset_tabs(gr, views, built, track_tabs)
            chosen_model = _models_tab(gr, views)
            compared = compare_tab(gr, views)
            if submissions is not None:
                _submit_tab(gr, views, submissions, oauth=oauth, upload_ttl=upload_ttl,
                            proxies=clients.trusted_proxies(trusted_proxies))
            if arena is not None:
                from rexrank.leaderboard.arena_tab import arena_tab

                arena_tab(gr, arena, oauth=oauth, rater=arena_rater, refresh_s=FRESH_SECONDS)
            about_text = _about_tab(gr, views, built)
        # What this page was sent: a digest per output and the controls each table was last asked for. gradio keeps
        # one per page (session) and drops it with the session; the freshness refresh sends only what differs.
        sent = gr.State(built)
        # A search box's change: the browser's answer, then a paint (one event for every table: each event costs the
        # page's start, gradio_compat), then the server's event. A trigger's events run in the order added.
        for view in dataset_views:
            view.answer_in_browser()
        if dataset_views:
            paint_first(gr, [view.search.change for view in dataset_views])
        for view in dataset_views:
            view.wire(gr, views, sent)
        _complete_when_shown(gr, demo, views, sent, built, overview_tables, overview_tabs, dataset_views)
        _api_endpoints(gr, views)
        # The other tabs a link may name (those this page has).
        linked_tabs = [links.COMPARE_TAB, *([links.SUBMIT_TAB] if submissions is not None else []),
                       *([links.ARENA_TAB] if arena is not None else []), links.ABOUT_TAB]
        for view in dataset_views:  # just before the link's and the freshness check's signals (one form)
            view.render_signals()
        _links(gr, views, demo, tabs, track_tabs, dataset_views, chosen_model, compared, sent, linked_tabs,
               link_notice)
        _freshness(gr, demo, views, sent, generation, header, overview_tables, dataset_views, about_text)
    return demo


def _freshness(gr, demo, views: Views, sent, generation, header, overview_tables: dict,
               dataset_views: list, about_text) -> None:
    """On load and every FRESH_SECONDS: when the store's generation differs from the page's, every view is
    recomputed (with its filters as set) and the About text too (a meta-evaluation published since); the new
    generation and the header (its "last updated") are sent, and of the rest only what differs from what this page
    shows (its ``sent`` state). When the generation is the page's, nothing is recomputed or sent.

    Two steps: the check (``check_generation``) carries the page's generation only and, when it is stale, sets
    ``stale``, whose change runs ``refresh`` with every control. One event with the ~60 controls as inputs and ~50
    outputs on load made gradio's frontend collect and apply them all while the first rows were being painted
    (issue 24: first rows painted 1086 -> 1044 ms in the page, minimal app 777 ms; bench/results/leaderboard.md).
    ``stale`` is a ``gradio_compat.signal``, not a gr.State: the check is not queued (one per open page every
    FRESH_SECONDS).
    """
    timer = gr.Timer(FRESH_SECONDS)
    # A new value on every stale check, so that a refresh that failed is retried on the next tick.
    stale = signal(gr, "board-stale")
    controls = [c for v in dataset_views for c in v.controls]
    outputs = [generation, sent, header, about_text, *overview_tables.values()] + [
        o for v in dataset_views for o in v.refresh_outputs()]

    def refresh(page_generation, page_sent: dict, *values):
        now = views.generation()
        if now == page_generation:
            return [gr.skip()] * len(outputs)
        out = [now, page_sent, views.header_markdown()]
        about_now = views.about_markdown()
        out.append(about_now if changed(page_sent, "about", digest(about_now)) else gr.skip())
        for track in overview_tables:
            out.append(overview_update(gr, views, track, page_sent,
                                       whole=page_sent.get(f"whole-overview-{track}", False)))
        n = len(dataset_views[0].controls) if dataset_views else 0
        for k, view in enumerate(dataset_views):
            out += view.refresh(gr, views, values[k * n:(k + 1) * n], page_sent)
        return out

    def check_generation(page_generation):
        return gr.skip() if views.generation() == page_generation else str(time.monotonic_ns())

    gr.on([demo.load, timer.tick], guarded(check_generation), [generation], [stale], **_PRIVATE)
    stale.change(guarded(refresh), [generation, sent, *controls], outputs, **_PRIVATE)


def _links(gr, views: Views, demo, tabs, track_tabs: dict, dataset_views: list, chosen_model, compared,
           sent, linked_tabs: list[str], link_notice) -> None:
    """Shareable links (``links``): a page opened with a query shows what it names.

    The query goes to the server only when there is one (``links.READ_JS`` gives nothing otherwise, so a plain
    visit costs no request); it is checked against the board (``links.parse``/``checked``), then one answer selects
    the tab and track, sets the table's controls and rows (or the Models tab's model), and resets the page's URL
    writer to the link as understood. What was not understood is left out and named in ``link_notice`` above the
    tabs (a note in the page, not a gradio toast: gradio shows one only from a queued event, and a queued event
    leaves its client's "Method not implemented." in the console)."""
    query = signal(gr, "board-link")  # set in the browser (READ_JS)
    state = signal(gr, "board-link-state")  # the link as understood, for the page's URL writer
    by_key = {(v.dataset, v.track): v for v in dataset_views}
    tab_ids = [links.DEFAULT_TAB, *DATASETS, links.MODELS_TAB, *linked_tabs]
    outputs = [tabs, chosen_model, compared.requested, compared.chosen, state, sent, link_notice,
               *(t for t, _ in track_tabs.values())] + [
        o for v in dataset_views for o in v.restore_outputs()]

    def restore(page_sent: dict, text: str):
        link = links.parse(text, tab_ids, DATASETS)
        view = by_key.get((link.tab, link.track))
        choices = views.filter_choices(link.tab, link.track) if view else None
        link = links.checked(link, institutions=choices.institutions if choices else (),
                             years=choices.years if choices else (),
                             model_types=choices.model_types if choices else (),
                             trained=[value for _, value in TRAINED_CHOICES],
                             metrics=views.metrics(link.track), models=views.models_list())
        compare = (list(compare_restore(list(link.compare))) if link.compare
                   else [gr.skip(), gr.skip()])
        out = [gr.Tabs(selected=link.tab), link.model or gr.skip(), *compare,
               links.state_json(link, view.link_defaults if view else None), page_sent,
               gr.Markdown(links.notice(link), visible=True) if link.ignored else gr.skip()]
        for tab_id, (track_tabs_of, track_id) in track_tabs.items():
            out.append(gr.Tabs(selected=track_id(link.track)) if tab_id == link.tab else gr.skip())
        for v in dataset_views:
            out += (v.restored(gr, views, link.view, page_sent) if v is view
                    else [gr.skip()] * len(v.restore_outputs()))
        return out

    demo.load(None, None, [query], js=links.READ_JS, **_PRIVATE)
    query.change(guarded(restore), [sent, query], outputs, **_PRIVATE)  # one request per opened link
    state.change(None, [state], None, js=links.RESET_JS, **_PRIVATE)


def _overview_tab(gr, views: Views, built: dict, track_tabs: dict) -> dict:
    """The overview: one sub-tab per track, each a table built into the page; /overview is an API endpoint."""
    payload = _frame_payload(gr)

    def overview_api(track: str) -> dict:
        """The overview table of one track ({headers, data}): rank by mean rank over the datasets."""
        return payload(views.overview_view(check_track(track)))

    tables, tabs = {}, {}
    with gr.Tab("Overview", id=links.DEFAULT_TAB):
        with gr.Tabs(elem_id="overview-tracks") as tracks:
            track_tabs[links.DEFAULT_TAB] = (tracks, lambda track: links.track_tab_id(links.DEFAULT_TAB, track))
            for track in TRACKS:
                suffix = "" if track == TRACKS[0] else f"-{track}"
                with gr.Tab(TRACK_LABELS[track], id=links.track_tab_id(links.DEFAULT_TAB, track)) as track_tab:
                    whole = views.overview_view(track)
                    table, label = first_rows(whole, overview_label(track))
                    built[f"overview-{track}"] = digest(table)
                    built[f"partial-overview-{track}"] = len(table) < len(whole)
                    built[f"whole-overview-{track}"] = len(table) == len(whole)  # as a dataset table's
                    tabs[track] = track_tab
                    tables[track] = gr.Dataframe(
                        value=table, interactive=False, label=label,
                        show_label=True, elem_id=f"overview-table{suffix}", pinned_columns=2,
                        elem_classes=["board-table", "pin2"], wrap=True, max_height=OVERVIEW_HEIGHT,
                        column_widths=overview_widths(views.models_list()))
                    with gr.Accordion("Rank across datasets (plot)", open=False,
                                      elem_id=f"overview-plot{suffix}") as section:
                        # Drawn on each opening (with the store as it is then).
                        @gr.render(triggers=[section.expand], **_RENDER)
                        @guarded
                        def ranks(track=track, suffix=suffix):
                            gr.Plot(views.ranks_view(track), show_label=False, elem_id=f"overview-ranks{suffix}")
        gr.Markdown("Mean rank: the mean of a model's ranks over the datasets it is ranked on (Datasets), by "
                    "1/RadCliQ-v1. Open a dataset tab for every metric with its 95% CI.")
        # In the tab: gr.Tabs takes only tabs as children.
        gr.api(guarded(overview_api), api_name="overview", queue=False)
    return tables, tabs


# One page's answers for an overview table may run at once (its load and a track tab's select): as a dataset
# table's (``_DatasetView._lock``), each decides and notes what it sends as one step.
_OVERVIEW_LOCK = threading.Lock()


def overview_update(gr, views: Views, track: str, sent: dict, whole: bool):
    """The overview table of ``track`` for a page whose ``sent`` state this is: every row (``whole``) or the first
    ones (``views.first_rows``: a track this page has not shown yet), or a skip when the page already shows them."""
    every = views.overview_view(track)
    table, label = (every, overview_label(track)) if whole else first_rows(every, overview_label(track))
    partial = len(table) < len(every)
    table_digest = digest(table)
    with _OVERVIEW_LOCK:
        relabel = sent.get(f"partial-overview-{track}", False) != partial  # the label says "first N of" or not
        sent[f"partial-overview-{track}"] = partial
        if not changed(sent, f"overview-{track}", table_digest):
            return gr.skip()
    return gr.Dataframe(value=table, label=label) if relabel else gr.Dataframe(value=table)


def _complete_when_shown(gr, demo, views: Views, sent, built: dict, overview_tables: dict, overview_tabs: dict,
                         dataset_views: list) -> None:
    """The other rows of a table built with its first ones (``views.first_rows``) go to a page when it shows the
    table: the overview's first track on the page's load, another track when its tab is selected, a dataset's
    tables when its tab or a track's is selected (then nothing more). A table built whole has no such event: a
    small board's page sends no request when a tab is opened."""
    # What each tab's opening completes: ("overview", track) or ("view", a dataset view), by the tab's block.
    parts: dict = {}
    on_load: list = []
    for k, (track, tab) in enumerate(overview_tabs.items()):
        if not built[f"whole-overview-{track}"]:
            parts.setdefault(id(tab), (tab, []))[1].append(("overview", track))
            on_load += [("overview", track)] if k == 0 else []
    shown_views = [v for v in dataset_views if v.partial]
    for view in shown_views:
        for tab in (view.tab, view.dataset_tab):
            parts.setdefault(id(tab), (tab, []))[1].append(("view", view))
    if not parts:
        return
    tracks = [track for track in overview_tables if not built[f"whole-overview-{track}"]]
    n = len(shown_views[0].controls) if shown_views else 0

    def complete(evt: gr.EventData, page_sent: dict, *values):
        """The tables the selected tab (``evt.target``; none: the page's load) shows: their other rows."""
        chosen = on_load if evt.target is None else parts[id(evt.target)][1]
        out = []
        for track in tracks:
            if ("overview", track) in chosen:
                page_sent[f"whole-overview-{track}"] = True
            out.append(overview_update(gr, views, track, page_sent, whole=True) if ("overview", track) in chosen
                       else gr.skip())
        for k, view in enumerate(shown_views):
            out += (view.shown(gr, views, values[k * n:(k + 1) * n], page_sent) if ("view", view) in chosen
                    else [gr.skip()] * len(view.table_outputs()))
        return [*out, page_sent]

    selects = [tab.select for tab, _ in parts.values()]
    # One event for every such tab (each event costs the page's start: gradio_compat, paint first), after one
    # paint-first step for them all; "multiple": a tab opened while another's answer is on its way is answered too.
    paint_first(gr, selects)
    gr.on([*selects, *([demo.load] if on_load else [])], guarded(complete),
          [sent, *(c for v in shown_views for c in v.controls)],
          [*(overview_tables[t] for t in tracks), *(o for v in shown_views for o in v.table_outputs()), sent],
          trigger_mode="multiple", **_PRIVATE)


def _dataset_tabs(gr, views: Views, built: dict, track_tabs: dict) -> list:
    """One tab per dataset, one sub-tab per track, each with its own table, controls and plots (their events are
    wired by ``build_app`` once the page's ``sent`` state exists)."""
    views_built = []
    for dataset in DATASETS:
        with gr.Tab(DATASET_LABELS[dataset], id=dataset) as dataset_tab:
            with gr.Tabs() as tracks:
                track_tabs[dataset] = (tracks, lambda track, dataset=dataset: links.track_tab_id(dataset, track))
                for track in TRACKS:
                    with gr.Tab(TRACK_LABELS[track], id=links.track_tab_id(dataset, track)) as track_tab:
                        view = _DatasetView(gr, views, dataset, track, built)
                        view.tab, view.dataset_tab = track_tab, dataset_tab
                        views_built.append(view)
    return views_built


def _frame_payload(gr):
    """The JSON a gr.Dataframe output sends ({headers, data, metadata}), for the API endpoints that return a table
    without a component on the page (``gr.api``)."""
    frame = gr.Dataframe(render=False)
    return lambda df: frame.postprocess(df).model_dump()


def _models_tab(gr, views: Views):
    """The Models tab, built by ``gr.render`` each time it is opened (so it shows the store as it is then); /model
    is an API endpoint of its own, so it answers without the tab. Returns the State of the model shown (a link sets
    it)."""
    payload = _frame_payload(gr)

    def model_api(model: str) -> tuple[dict, str]:
        """One model's results on every dataset and track ({headers, data}) and its details and subgroup results
        (Markdown)."""
        table, text = views.model_view(model)
        return payload(table), text

    with gr.Tab("Models", id=links.MODELS_TAB) as tab:
        paint_first(gr, [tab.select])  # the tab shown before its render's request (added before the render)
        # Each opening rebuilds the tab on the model chosen last, else the overview's first (never empty). Any name
        # is accepted (the API may ask for a newer model).
        chosen = gr.State(None)

        @gr.render(inputs=chosen, triggers=[tab.select], **_RENDER)
        @guarded
        def view(current: Optional[str]):
            name = current or views.default_model()
            table, text = views.model_view(name)
            model_pick = gr.Dropdown(views.models_list(), value=name, label="Model", elem_id="model-pick",
                                     allow_custom_value=True, interactive=True)
            model_table = gr.Dataframe(table, interactive=False, elem_id="model-table", pinned_columns=1,
                                       wrap=True, elem_classes=["board-table", "pin1"], label=f"Results of {name}",
                                       show_label=True,
                                       column_widths=model_page_widths(views.edition()))
            model_text = gr.Markdown(text, elem_id="model-details")

            def pick(model: str):
                table, text = views.model_view(model)
                return gr.Dataframe(table, label=f"Results of {model}"), text, model

            # .input: a choice by the user; the value set when the tab is built fires no second request.
            model_pick.input(guarded(pick), model_pick, [model_table, model_text, chosen], **_PRIVATE)
            model_pick.input(None, model_pick, None, js=links.MODEL_JS, **_PRIVATE)  # the URL follows
        # In the tab: gr.Tabs takes only tabs as children.
        gr.api(guarded(model_api), api_name="model", concurrency_limit=None)
    return chosen


def _submit_tab(gr, views: Views, submissions, *, oauth: bool = False, upload_ttl: float = 3600,
                proxies: int = 0) -> None:
    """The Submit tab: its text (and login button) in the page, the form and the queue built by ``gr.render`` when
    it is opened; /submit and /queue are API endpoints of their own, so they answer without it.

    Each request is handled from its own copy of its upload (``ReceivedUploads.take``): gradio stores identical
    uploads as one file, which several requests may name at once. An anonymous request counts against its client's
    quota (``clients.request_client`` behind ``proxies`` trusted proxies)."""
    from gradio.data_classes import FileData

    received = ReceivedUploads(Path(submissions.upload_dir) / "received", ttl=upload_ttl)

    def send(file, name, institution, url, year, model_type, trained_on, dataset, track, profile, request):
        """(the refusal or None, job id or None, note): the submission handled, its upload deleted. The form words
        the answer as Markdown, the API as plain text."""
        # profile: gradio injects the logged-in user's gr.OAuthProfile (None when logged out or without OAuth);
        # request: the gr.Request (who an anonymous submission comes from).
        user = getattr(profile, "username", None) if oauth else None
        client = None if user else clients.request_client(request, proxies)
        if isinstance(file, dict):  # the API's FileData, as sent (gr.api does not preprocess)
            file = file.get("path")
        path = file if isinstance(file, str) or file is None else getattr(file, "path", None) or getattr(
            file, "name", None)
        if path is not None and upload_root() not in Path(path).resolve().parents:
            # Hostile input: the API takes any string, and a server-side path would make the host read its own file
            # (a private reference set, say). Only what a user uploaded through gradio may be submitted.
            return InputError(SERVER_PATH_TEXT), None, None
        own = None
        try:
            own = received.take(path) if path is not None else None  # gradio's file is gone from here on
            job_id, note = submissions.submit_with_note(
                own, {"name": name, "institution": institution, "url": url, "year": year or None,
                      "model_type": model_type, "trained_on": trained_on or []}, dataset, track, user=user,
                client=client)
        except RexrankError as exc:
            return exc, None, None
        finally:
            received.release(own)  # accepted (copied into the queue) or rejected: this request's copy is gone
        return None, job_id, note

    payload = _frame_payload(gr)

    def submit(file: Optional[FileData], name: str, institution: str, url: str, year: Optional[int | str],
               model_type: str, trained_on: Optional[list[str]], dataset: str, track: str,
               profile: Optional[gr.OAuthProfile] = None, request: Optional[gr.Request] = None) -> tuple[str, dict]:
        """Submit a predictions file ({study_id: report} .json, .jsonl or .csv) for one test set and track: the
        status message (plain text) and the queue ({headers, data})."""
        refused, job_id, note = send(file, name, institution, url, year, model_type, trained_on, dataset, track,
                                     profile, request)
        message = form_message(refused, plain=True) if refused else views.submit_status(job_id, note, plain=True)
        return message, payload(views.queue_view())

    def queue_api() -> dict:
        """The latest submissions and their status ({headers, data})."""
        return payload(views.queue_view())

    with gr.Tab("Submit", id=links.SUBMIT_TAB) as tab:
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
        job = gr.State(None)  # (job id, note) of this page's last accepted submission: its status follows the queue

        # Keys keep what the user entered (and the last status) when a later opening re-runs this; the queue is
        # rebuilt as it is now.
        @gr.render(inputs=[job], triggers=[tab.select], **_RENDER)
        @guarded
        def form_view(last):
            _submit_form(gr, views, submissions, send, job, last)

        # In the tab: gr.Tabs takes only tabs as children.
        gr.api(guarded(submit), api_name="submit")
        gr.api(guarded(queue_api), api_name="queue")
    return tab


def _submit_form(gr, views: Views, submissions, send, job, last) -> None:
    """The Submit tab's form, status and queue (built by ``gr.render``: see ``_submit_tab``)."""
    with gr.Row(key="submit-row"):
        with gr.Column(key="submit-col0"):
            # A button, not gr.File: gr.File's upload progress display opens an event stream whose close prints
            # gradio 6.31's "Method not implemented." twice per file (issue 37 point 7: the console clean).
            sub_file = gr.UploadButton(f"Choose the predictions file ({', '.join(ALLOWED_SUFFIXES)})",
                                       type="filepath", file_types=list(ALLOWED_SUFFIXES), elem_id="submit-file",
                                       key="submit-file", variant="secondary")
            sub_chosen = gr.Markdown(NO_FILE_CHOSEN, elem_id="submit-chosen", elem_classes=["board-live"],
                                     key="submit-chosen")
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
            sub_track = gr.Radio([(TRACK_LABELS[t], t) for t in TRACKS], value=DEFAULT_TRACK, label="Track",
                                 key="submit-track", interactive=True)
            sub_button = gr.Button("Submit", variant="primary", elem_id="submit-button", key="submit-button")
            # Under the button, where the eye is after a click (issue 37 point 3), and a live region for screen
            # readers (gradio_compat.LIVE_REGION_HEAD gives ``board-live`` elements role=status).
            sub_status = gr.Markdown(views.submit_status(*last) if last else "", elem_id="submit-status",
                                     elem_classes=["board-live"], key="submit-status")
    queue_note = gr.Markdown(views.queue_note(), elem_id="queue-note")
    queue_table = gr.Dataframe(value=views.queue_view(), interactive=False, elem_id="queue-table", wrap=True,
                               label="Submission queue", show_label=True)
    refresh = gr.Button("Refresh queue", size="sm")
    # Polls the queue only while a job is waiting or running (checked when the tab is built, after a submission
    # and on each tick): an idle board sends no requests.
    timer = gr.Timer(QUEUE_SECONDS, active=views.queue_pending())
    form = [sub_file, sub_name, sub_inst, sub_url, sub_year, sub_type, sub_trained]

    def submit_form(file, name, institution, url, year, model_type, trained_on, dataset, track,
                    profile: Optional[gr.OAuthProfile] = None, request: Optional[gr.Request] = None):
        refused, job_id, note = send(file, name, institution, url, year, model_type, trained_on, dataset, track,
                                     profile, request)
        message = form_message(refused) if refused else views.submit_status(job_id, note)
        accepted = job_id is not None
        # The upload was used (and deleted) either way: its field is cleared; an accepted entry clears the form.
        cleared = [None, "", "", "", None, "", []] if accepted else [None] + [gr.skip()] * (len(form) - 1)
        return [message, views.queue_note(), views.queue_view(), (job_id, note) if accepted else None,
                *cleared, NO_FILE_CHOSEN, gr.Timer(active=views.queue_pending())]

    def poll(last):
        status = views.submit_status(*last) if last else gr.skip()
        return status, views.queue_note(), views.queue_view(), gr.Timer(active=views.queue_pending())

    sub_button.click(guarded(submit_form), [*form, sub_dataset, sub_track],
                     [sub_status, queue_note, queue_table, job, *form, sub_chosen, timer], api_visibility="private",
                     queue=False)
    # The file's name under its button once the upload is in (the button itself does not show it).
    sub_file.upload(guarded(chosen_file), sub_file, sub_chosen, **_PRIVATE)
    # Unqueued (a queued event leaves gradio 6.31's client warning "Method not implemented." in the console, issue
    # 37): the service bounds how many files it reads at once (``limits.SUBMISSIONS_AT_ONCE``), not the queue.
    refresh.click(guarded(poll), job, [sub_status, queue_note, queue_table, timer], **_PRIVATE)
    timer.tick(guarded(poll), job, [sub_status, queue_note, queue_table, timer], **_PRIVATE)


def _about_tab(gr, views: Views, built: dict):
    """The About tab: for readers (``about``), with the "Metrics vs radiologists" section of the published
    meta-evaluation (``views.meta_eval_markdown``; Markdown, already in the first page: no new component type).
    Returns the text's component (the freshness refresh rewrites it)."""
    with gr.Tab("About", id=links.ABOUT_TAB):
        about_text = views.about_markdown()
        built["about"] = digest(about_text)
        text = gr.Markdown(about_text, elem_id="about-text")
        # A Markdown code block (with its copy button), not gr.Code: the browser loads every component type in the
        # page's config when the page loads, and the code editor's modules are among the largest.
        gr.Markdown(f"**Cite ReXrank (BibTeX)**\n\n```bibtex\n{about.CITATION_BIBTEX.strip()}\n```", elem_id="cite")
    return text


def _api_endpoints(gr, views: Views) -> None:
    """API-only endpoints: the whole board, aggregates as JSON, and the filtered table of any dataset/track.

    Read-only and fast: no concurrency cap (the store gives each worker thread its own connection). gradio builds
    each endpoint's API description from the function's signature, type hints and docstring, hence plain functions.
    """

    def leaderboard_api() -> dict:
        """The whole board: every dataset and track, each model's shown values and CIs, ranked by 1/RadCliQ-v1,
        and when the board last changed (epoch seconds)."""
        return views.leaderboard()

    def results_api(dataset: str, track: str) -> str:
        """JSON aggregates (means, CIs) of every model on one dataset and track (aliases accepted)."""
        dataset, track = check(dataset, track)
        return views.results_json(dataset, track)

    def table_api(dataset: str, track: str, search: str = "", institutions: Optional[list[str]] = None,
                  years: Optional[list[int]] = None, model_types: Optional[list[str]] = None, trained: str = "all",
                  sources: Optional[list[str]] = None, columns: Optional[list[str]] = None,
                  sort_by: str = PRIMARY) -> dict:
        """The dataset/track table as shown on the page, filtered and sorted: {headers, data} (aliases accepted)."""
        dataset, track = check(dataset, track)
        search = "" if search is None else search
        if not isinstance(search, str):
            raise gr.Error(f"search must be text (got {type(search).__name__}): send \"\" for no search")
        choices = {"institutions": (institutions, str), "years": (years, int), "model_types": (model_types, str),
                   "sources": (sources, str), "columns": (columns, str)}
        for name, (value, kind) in choices.items():
            # gr.api passes any JSON through unchecked: a wrong type would fail inside the view.
            if value is not None and (not isinstance(value, list) or not all(
                    isinstance(v, kind) and not isinstance(v, bool) for v in value)):
                raise gr.Error(f"{name} must be a list of {'whole numbers' if kind is int else 'text'} or null "
                               f"(got {str(value)[:40]!r})")
        trained_values = [value for _, value in TRAINED_CHOICES]
        if trained not in trained_values:
            raise gr.Error(f"trained must be one of {', '.join(trained_values)} (got {str(trained)[:40]!r})")
        if not isinstance(sort_by, str):
            raise gr.Error(f"sort_by must be a metric name (got {str(sort_by)[:40]!r})")
        df = views.table_view(dataset, track, search, institutions, years, model_types, trained, sources, columns,
                              sort_by)
        return {"headers": list(df.columns), "data": df.to_numpy().tolist()}

    gr.api(guarded(leaderboard_api), api_name="leaderboard", concurrency_limit=None)
    gr.api(guarded(results_api), api_name="results", concurrency_limit=None)
    gr.api(guarded(table_api), api_name="table", concurrency_limit=None)


def add_csv_route(demo, views: Views) -> None:
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


