"""The Space's workarounds for gradio limitations, all in one place, with the gradio range they were tested on.

The board is HTML pages rexrank renders (``rexrank.leaderboard.pages``: public Starlette API, no gradio); what is
left here serves the two pages gradio still draws, the Submit form and the Arena (``wiring``, ``arena_tab``). Each
fills a gap in gradio's public API (CSS, a head script, or one wrapped method: listed below);
tests/test_leaderboard_app.py fails when the installed gradio is none of ``TESTED``'s minor versions (then re-check
each item here and the tests that pin them), and pyproject.toml pins the same range (``pin``). The lock
(constraints.txt) and the Space's ``sdk_version`` hold the newest of them.

- The page margin on a phone: gradio pads its main column 32 px each side at every width; ``PHONE_HEAD`` narrows it
  to 8 px under 640 px (a rule naming gradio's ``.main.fillable``; ``STICKY_CSS`` is the other that names its
  classes), so the Arena's four vote buttons share a 390 px phone's width and the Submit form its fields. In
  ``<head>`` (``launch(head=...)``), not in ``css=``: gradio scopes the ``css=`` @media rules to its content box.
  Browser test: tests/test_submit_page_browser.py, the form's column at 390 px.
- Error text: gradio's ``show_error`` is all or nothing. Off, its own refusal of a request (a /submit whose FileData
  names a file nobody uploaded, refused before our code runs) reaches the caller as ``{"error": null}``; on, so does
  the text of any exception our code did not expect (paths, SQL, internals). The Space launches with it on and every
  callback it registers goes through ``guarded``: a gr.Error or one of our ``RexrankError``s (written for the
  caller) passes as a message, anything else is logged here with its traceback and the caller gets ``UNEXPECTED``.
  Test: a raw HTTP call that makes a callback fail unexpectedly gets the generic message, not the exception's text,
  and a server path gets gradio's refusal.
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
  ``role="status"`` and ``aria-live="polite"`` as it appears. In ``<head>`` (``launch(head=...)``). Browser test:
  tests/test_submit_page_browser.py, the submit status carries both attributes after a rejection.
- Sticky elements: gradio's ``.gradio-container`` has ``overflow: hidden``, which makes it the scroll box every
  ``position: sticky`` inside the page sticks to, so nothing sticks to the screen (the Arena's vote bar stayed
  ~1,000 px below a phone's screen). ``STICKY_CSS`` sets it to ``clip``: the same clipping, no scroll box. Browser
  test: tests/test_arena_browser.py, the phone's vote bar within the screen beside each report.
- Bold text's faces: gradio 6.31's Default theme declares Source Sans Pro and IBM Plex Mono at 400 and 600, and the
  600 files it ships hold a few glyphs each (~5 KB, against ~100 KB for the other weights), so every semibold or
  bold text (headings, labels, Markdown's bold) mixed Source Sans letters with the system's sans ("BertScore" with a
  thin B). ``theme`` is the Default theme with both families at 400 and 700 (gradio's own, whole Bold files; a 600
  text takes the 700 face), through the public ``gr.themes.LocalFont``. Browser test: bold and semibold text is
  drawn in Source Sans Pro alone, and in gradio's Default theme it is not (when that fails, gradio fixed its files:
  drop ``theme``).
- Not worked around: the console's "Method not implemented." warning is gradio's client closing its own stand-in
  for an event stream (its ``close`` only warns): after every queued event, so the pages' events are all unqueued
  (the Submit form, the Arena's votes and board), and twice per file uploaded through gr.File (its progress display
  opens such a stream), so the Submit form's file is chosen with a gr.UploadButton, which has no progress display
  (browser test: a submission's console is empty).
"""

from __future__ import annotations

import functools
import logging
from typing import Callable

from rexrank.errors import RexrankError

log = logging.getLogger("rexrank.leaderboard")

# gradio major.minor versions the gradio-touching tests passed on (the Space, its API, Submit, the Arena, these
# workarounds' pinning tests): 6.31 in every run, 6.30 in a scratch environment of the lock with gradio 6.30.0
# instead (gradio_client 2.7.2 both). 6.31 is the newest release; a range over both is pyproject's pin (``pin``).
TESTED = ((6, 30), (6, 31))

STICKY_CSS = ".gradio-container { overflow: clip !important; }\n"
PHONE_HEAD = """<style>@media (max-width: 640px) {
  .main.fillable { padding-left: 8px !important; padding-right: 8px !important; }
}</style>"""
LIVE_REGION_HEAD = """<script>
(() => {
  const mark = () => document.querySelectorAll(".board-live:not([aria-live])").forEach((e) => {
    e.setAttribute("role", "status"); e.setAttribute("aria-live", "polite"); });
  new MutationObserver(mark).observe(document.documentElement, {childList: true, subtree: true});
})();
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
    """The installed gradio is one of the minor versions these workarounds were checked on."""
    return gradio_version() in TESTED


def pin() -> str:
    """The version range of ``TESTED`` as pyproject and the Space's requirements write it (">=6.30,<6.32")."""
    (low_major, low_minor), (high_major, high_minor) = min(TESTED), max(TESTED)
    return f">={low_major}.{low_minor},<{high_major}.{high_minor + 1}"


UNEXPECTED = ("The board could not answer this request (an unexpected error, logged for the host). Try again; if it "
              "persists, please report it.")


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
