"""The leaderboard's workarounds for gradio limitations, all in one place, with the gradio range they were tested on.

Each one fills a gap in gradio 6.31's public API (CSS, a head script, or one wrapped method: listed below);
tests/test_leaderboard_app.py fails when the installed gradio leaves ``TESTED`` (then re-check each item here and
the browser tests that pin them), and pyproject.toml pins the same range.

- Pinned columns: ``gr.Dataframe(pinned_columns=2)`` is accepted but does not keep the columns on screen when the
  table scrolls sideways; sticky cells in the grid's own scrolling box do (``PINNED_CSS``; the width of Rank is
  fixed so that Model can sit right after it). Browser test: Rank and Model stay put while the table scrolls.
- Tables that fill their box (issue 37 point 2): gradio 6.31 turns each ``column_widths`` value into a fixed width
  (the header ``<th>``s of a table, the body's ``.body-cell`` flex items with ``flex: 0 0 Wpx``), so a table
  narrower than its box left the rest empty (~35% at 1920 px). ``WIDTHS_CSS`` makes the widths minimums the same
  way on both: the header row becomes a flex row like the body's and every cell but Rank (which ``PINNED_CSS``
  keeps at 52 px) grows by an equal share, so header and body columns stay aligned; and the Model cell breaks only
  after a hyphen or between words (``views.model_width`` sizes it for the longest such part). It names gradio's
  ``.body-cell`` class and its header table's ``thead tr`` padding. Browser test:
  tests/test_leaderboard_widths_browser.py.
- The header sort menu: gradio's Dataframe header sorts the shown strings ("–" above numbers, "0.5 [0.4, 0.6]"
  compared as text, sorts stacking up) and cannot be turned off; the board sorts by value on the server (*Sort by*,
  and Rank follows it), so the menu is hidden (``HEADER_MENU_CSS``: it names gradio's ``.cell-menu-button`` class)
  and the table's label says where the sort is chosen. Browser test: no menu button shows on a header.
- The page margin on a phone: gradio pads its main column 32 px each side at every width, which leaves a 312 px
  screen (a 390 px phone zoomed to 125%) no room for Rank, Model and 1/RadCliQ-v1; ``PHONE_HEAD`` narrows it to 8 px
  under 640 px (a rule naming gradio's ``.main.fillable``; ``HEADER_MENU_CSS`` and ``STICKY_CSS`` are the others
  that name its classes, with ``WIDTHS_CSS``). In ``<head>`` (``launch(head=...)``), not in ``css=``: gradio scopes the ``css=`` @media
  rules to its content box. Browser test: the three columns fit at 312 px. The same block keeps each tab bar one
  row that scrolls sideways (gradio wraps it: the main tabs took 2-3 rows of a phone's first screen), by ARIA roles
  only; its overflow needs ``!important`` (gradio's tab-container class sets ``overflow: hidden`` and wins
  otherwise, and opening an off-screen tab then slid gradio's whole container sideways). Browser test: every main
  tab's top is the same at 390 px, and opening the last tab leaves the container unscrolled.
- Error text: gradio's ``show_error`` is all or nothing. Off, its own refusal of a request (a /submit whose FileData
  names a file nobody uploaded, refused before our code runs) reaches the caller as ``{"error": null}``; on, so does
  the text of any exception our code did not expect (paths, SQL, internals). The Space launches with it on and every
  callback it registers goes through ``guarded``: a gr.Error or one of our ``RexrankError``s (written for the
  caller) passes as a message, anything else is logged here with its traceback and the caller gets ``UNEXPECTED``.
  Test: a raw HTTP call that makes a callback fail unexpectedly gets the generic message, not the exception's text,
  and a server path gets gradio's refusal.
- Arrow keys between tabs: gradio 6.31 renders each tab bar as ARIA ``role="tablist"`` with ``role="tab"`` buttons
  (Tab and Enter work) but handles no arrow keys. ``TAB_KEYS_HEAD`` adds the ARIA tabs pattern's keys with manual
  activation: Left/Right move the focus to the previous/next tab of the same tab list (wrapping), Home/End to the
  first/last; Enter or Space (the buttons' own) opens it. It reads ARIA roles only (no gradio class), handles only
  those four keys on a tab (gradio handles none of them there) and prevents their default (scrolling). In ``<head>``
  (``launch(head=...)``): gradio's public way to add a script. Browser test: each key moves exactly one step (a
  gradio that adds its own handling would move two, or break the roles, and fail it).
- The Arena's vote endpoints on the raw API (issue 39 point 6): a CheckboxGroup refuses a value outside its choices
  before our code runs, in a multi-line message echoing the input, and /gradio_api/info types integer choices as
  strings; ``pass_values_through`` makes the boxes hand on what they get (``Arena.vote`` refuses anything but
  category numbers in one line) and describe themselves as what is accepted. A call with fewer values than inputs
  gets gradio's multi-line list of the components' object addresses; ``one_line_input_count`` answers it in one
  line for the named endpoints only, by wrapping the root Blocks' ``validate_inputs`` (the only ones not public
  API here: gradio.context.Context.root_block and that method). Test: tests/test_arena_tab.py, through
  ``Blocks.process_api``.
- Live regions: gradio's Markdown takes no ARIA attributes, so a status message that replaces its text is not
  announced by a screen reader. ``LIVE_REGION_HEAD`` gives every element of rexrank's own class ``board-live``
  ``role="status"`` and ``aria-live="polite"`` as it appears (the Submit form is built when its tab opens). In
  ``<head>`` (``launch(head=...)``). Browser test: the submit status carries both attributes after a rejection.
- Sticky elements: gradio's ``.gradio-container`` has ``overflow: hidden``, which makes it the scroll box every
  ``position: sticky`` inside the page sticks to, so nothing sticks to the screen (the Arena's vote bar stayed
  ~1,000 px below a phone's screen). ``STICKY_CSS`` sets it to ``clip``: the same clipping, no scroll box. Browser
  test: tests/test_arena_browser.py, the phone's vote bar within the screen beside each report.
- Signals: gradio 6.31's frontend fires a ``gr.State``'s change only after a queued event (an unqueued answer
  carries no changed-state ids), and the board's small events are unqueued (their round trips would add up). A
  component whose change starts the next event is therefore a hidden Textbox (``signal``: never mounted, its type
  already in the page), not a State: the freshness check's ``stale``, the plots' ``redraw``, a link's query and
  state. Browser test: in a small page an unqueued answer fires a signal's change and not a State's (a gradio that
  fires both fails it: then use gr.State).
- Bold text's faces: gradio 6.31's Default theme declares Source Sans Pro and IBM Plex Mono at 400 and 600, and the
  600 files it ships hold a few glyphs each (~5 KB, against ~100 KB for the other weights), so every semibold or
  bold text (headings, labels, table headers, Markdown's bold) mixed Source Sans letters with the system's sans
  ("BertScore" with a thin B). ``theme`` is the Default theme with both families at 400 and 700 (gradio's own, whole
  Bold files; a 600 text takes the 700 face), through the public ``gr.themes.LocalFont``. Browser test: bold and
  semibold text is drawn in Source Sans Pro alone, and in gradio's Default theme it is not (when that fails, gradio
  fixed its files: drop ``theme``).
- The search answered in the browser (``quick_search``) reads two behaviours of gradio 6.31's frontend that its
  docs leave unsaid: the events one change starts run one after another in the order they were added, each one's
  outputs applied before the next reads its inputs (so the server's event reads the claim the browser's answer
  wrote); a browser-only event (``js``, no function) that returns ``undefined`` for an output leaves it as it
  is. Browser tests: tests/test_leaderboard_quick_search.py (the server's answer to a search does not resend the
  table: fails when the order changes) and tests/test_links_browser.py (a restored link's rows survive the search
  box's change: fails when ``undefined`` writes over them).
- Paint first (``paint_first``): before gradio 6.31's frontend sends an event with a server function, it marks every
  component that has ever been an event's output as loading, reading each one's value (a deep copy) and searching
  its tree for it: ~20 ms of the main thread on a 200-model board, run before the browser paints what the click or
  the keystroke changed (a CDP profile, bench/results/leaderboard.md). A browser-only step registered first on the
  same trigger returns a Promise that resolves after the next frame; gradio awaits it before dispatching the next
  event of that trigger, so the tab's rows or the browser's search rows are on screen first. At start gradio's
  frontend scans every event once per component (each event and each of its triggers, through its reactive
  proxies), so the page has one such step for all the search boxes and one for all the table tabs, and one event
  for all the table tabs' other rows (``gr.EventData.target`` says which tab was opened); a tab's URL is written by
  the page's head script on a click of the tab's button, which gradio marks with the tab's id (``data-tab-id``,
  read by ``links.HEAD``; browser test: tests/test_links_browser.py, the address follows a click and Enter on a
  tab).
  Browser tests: tests/test_leaderboard_quick_search.py and tests/test_leaderboard_first_rows.py (every request of
  a search or a tab's opening leaves after the frame that draws the rows: fails when the step is dropped or not
  awaited).
- Not worked around: a multiselect's chip buttons are named "Remove 0", "Remove 1"... by gradio (documented in
  docs/leaderboard.md and pinned by a browser test); the console's "Method not implemented." warning is gradio's client
  closing its own stand-in for an event stream (its ``close`` only warns): after every queued event, so the page's
  events are all unqueued (the Submit form, a link's restore, the Arena's votes and board; a link's notice is a note
  in the page since gradio shows ``gr.Warning`` only from a queued event), and twice per file uploaded through
  gr.File (its progress display opens such a stream), so the Submit form's file is chosen with a gr.UploadButton,
  which has no progress display (browser test: a submission's console is empty).
"""

from __future__ import annotations

import functools
import logging
from typing import Callable

from rexrank.errors import RexrankError

log = logging.getLogger("rexrank.leaderboard")

TESTED = (6, 31)  # gradio major.minor these were checked on (pyproject: gradio>=6.31,<6.32)

PINNED_CSS = """
.pin1 table :is(th, td):nth-child(1), .pin2 table :is(th, td):nth-child(-n+2) {
  position: sticky; z-index: 4; background: var(--background-fill-primary); }
.pin1 table :is(th, td):nth-child(1), .pin2 table :is(th, td):nth-child(1) { left: 0; }
.pin2 table :is(th, td):nth-child(1) { min-width: 52px; max-width: 52px; width: 52px; }
.pin2 table :is(th, td):nth-child(2) { left: 52px; box-shadow: 2px 0 0 var(--border-color-primary); }
"""
# The column widths as minimums (issue 37 point 2; see the module docstring): equal growth on the header's flex row
# and the body's, so they stay aligned; the tr's padding only shows once it is a flex row.
WIDTHS_CSS = """
.board-table table:has(thead) { display: block; min-width: 100% !important; }
.board-table table thead { display: block; }
.board-table table thead tr { display: flex; width: 100%; padding: 0 !important; }
.board-table table th, .board-table .body-cell { flex: 1 0 auto !important; max-width: none !important; }
.board-table table th:nth-child(1), .board-table .body-cell:nth-child(1) { flex-grow: 0 !important; }
.pin2 .body-cell:nth-child(2), .pin2 .body-cell:nth-child(2) * {
  overflow-wrap: normal !important; word-break: keep-all !important; hyphens: manual !important; }
"""
HEADER_MENU_CSS = ".board-table .cell-menu-button { display: none !important; }\n"
STICKY_CSS = ".gradio-container { overflow: clip !important; }\n"
PHONE_HEAD = """<style>@media (max-width: 640px) {
  .main.fillable { padding-left: 8px !important; padding-right: 8px !important; }
  [role=tablist] { flex-wrap: nowrap !important; overflow-x: auto !important; scrollbar-width: none; }
  [role=tablist] > [role=tab] { flex: none; }
}</style>"""
LIVE_REGION_HEAD = """<script>
(() => {
  const mark = () => document.querySelectorAll(".board-live:not([aria-live])").forEach((e) => {
    e.setAttribute("role", "status"); e.setAttribute("aria-live", "polite"); });
  new MutationObserver(mark).observe(document.documentElement, {childList: true, subtree: true});
})();
</script>"""
TAB_KEYS_HEAD = """<script>
document.addEventListener("keydown", (event) => {
  const moves = {ArrowLeft: -1, ArrowRight: 1, Home: "first", End: "last"};
  const tab = event.target instanceof Element ? event.target.closest('[role="tab"]') : null;
  const list = tab && tab.closest('[role="tablist"]');
  if (!list || !(event.key in moves) || event.altKey || event.ctrlKey || event.metaKey) return;
  const tabs = [...list.querySelectorAll('[role="tab"]')].filter(
    (t) => t.closest('[role="tablist"]') === list && !t.disabled && t.checkVisibility());
  const at = tabs.indexOf(tab), move = moves[event.key];
  if (at < 0 || !tabs.length) return;
  const next = move === "first" ? 0 : move === "last" ? tabs.length - 1 : (at + move + tabs.length) % tabs.length;
  event.preventDefault();
  tabs[next].focus();
});
</script>"""


def theme():
    """gradio's Default theme with its text and code faces at 400 and 700 (see the module docstring)."""
    import gradio as gr

    return gr.themes.Default(
        font=(gr.themes.LocalFont("Source Sans Pro", weights=(400, 700)), "ui-sans-serif", "system-ui", "sans-serif"),
        font_mono=(gr.themes.LocalFont("IBM Plex Mono", weights=(400, 700)), "ui-monospace", "Consolas", "monospace"))


def gradio_version() -> tuple[int, int]:
    import gradio

    major, minor = gradio.__version__.split(".")[:2]
    return int(major), int(minor)


def tested() -> bool:
    """The installed gradio is the one these workarounds were checked on."""
    return gradio_version() == TESTED


UNEXPECTED = ("The board could not answer this request (an unexpected error, logged for the host). Try again; if it "
              "persists, please report it.")


# A Promise that resolves once the next frame has been painted (a task queued from an animation frame callback runs
# after that frame); ``[]``: the step's (no) outputs.
PAINT_FIRST_JS = "() => new Promise((done) => requestAnimationFrame(() => setTimeout(() => done([]), 0)))"


def paint_first(gr, triggers: list) -> None:
    """Let the browser paint what ``triggers`` changed before gradio sends the server events they start (see the
    module docstring). Call it before registering those events: a trigger's events run in the order added."""
    gr.on(triggers, None, None, None, js=PAINT_FIRST_JS, api_visibility="private", queue=False,
          show_progress="hidden")


def signal(gr, elem_id: str, *, render: bool = True):
    """A hidden component whose change starts an event, also after an unqueued one (see the module docstring).
    ``render=False``: placed later (``.render()``), beside the page's other signals."""
    return gr.Textbox(visible=False, elem_id=elem_id, render=render)


def guarded(fn: Callable) -> Callable:
    """``fn`` as a gradio callback whose errors reach the client only as text written for it (see the module
    docstring). ``functools.wraps`` keeps the signature and annotations gradio reads (``gr.Request``,
    ``gr.OAuthProfile`` injection, ``gr.api``'s description)."""
    import gradio as gr

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except RexrankError as exc:  # ours: one line naming the problem and the fix
            raise gr.Error(str(exc)) from None
        except Exception:
            log.exception("leaderboard callback %s failed", getattr(fn, "__qualname__", fn))
            raise gr.Error(UNEXPECTED) from None

    return call


def pass_values_through(boxes: list, schema: dict) -> None:
    """Make each CheckboxGroup of ``boxes`` hand its raw value on to the callback (which must check it) and describe
    itself on the API by ``schema`` (JSON schema of what the callback accepts): see the module docstring."""
    for box in boxes:
        box.preprocess = lambda payload: payload
        box.api_info = lambda: dict(schema)


def one_line_input_count(api_names: tuple[str, ...], message: Callable[[int, int], str]) -> None:
    """Answer a call of one of ``api_names`` with too few values by ``gr.Error(message(expected, got))`` instead of
    gradio's multi-line message; call inside the ``gr.Blocks`` context (see the module docstring)."""
    import gradio as gr
    from gradio.context import Context

    root = Context.root_block
    original = root.validate_inputs

    def validate_inputs(block_fn, inputs):
        if getattr(block_fn, "api_name", None) in api_names and len(inputs) < len(block_fn.inputs):
            raise gr.Error(message(len(block_fn.inputs), len(inputs)))
        return original(block_fn, inputs)

    root.validate_inputs = validate_inputs
