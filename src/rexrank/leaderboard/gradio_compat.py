"""The leaderboard's workarounds for gradio limitations, all in one place, with the gradio range they were tested on.

Each one is CSS on our own classes, for a gap in gradio 6.31's public API; tests/test_leaderboard_app.py fails when
the installed gradio leaves ``TESTED`` (then re-check each item here and the browser tests that pin them), and
pyproject.toml pins the same range.

- Pinned columns: ``gr.Dataframe(pinned_columns=2)`` is accepted but does not keep the columns on screen when the
  table scrolls sideways; sticky cells in the grid's own scrolling box do (``PINNED_CSS``; the width of Rank is
  fixed so that Model can sit right after it). Browser test: Rank and Model stay put while the table scrolls.
- The header sort menu: gradio's Dataframe header sorts the shown strings ("–" above numbers, "0.5 [0.4, 0.6]"
  compared as text, sorts stacking up) and cannot be turned off; the board sorts by value on the server (*Sort by*,
  and Rank follows it), so the menu is hidden (``HEADER_MENU_CSS``, the one rule naming a gradio class) and the
  table's label says where the sort is chosen. Browser test: no menu button shows on a header.
- The page margin on a phone: gradio pads its main column 32 px each side at every width, which leaves a 312 px
  screen (a 390 px phone zoomed to 125%) no room for Rank, Model and 1/RadCliQ-v1; ``PHONE_HEAD`` narrows it to 8 px
  under 640 px. In ``<head>`` (``launch(head=...)``), not in ``css=``: gradio scopes the ``css=`` @media rules to
  its content box. Browser test: the three columns fit at 312 px.
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
- Not worked around: a multiselect's chip buttons are named "Remove 0", "Remove 1"... by gradio (documented in
  docs/leaderboard.md and pinned by a browser test).
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
HEADER_MENU_CSS = ".board-table .cell-menu-button { display: none !important; }\n"
PHONE_HEAD = """<style>@media (max-width: 640px) {
  .main.fillable { padding-left: 8px !important; padding-right: 8px !important; }
}</style>"""
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


def gradio_version() -> tuple[int, int]:
    import gradio

    major, minor = gradio.__version__.split(".")[:2]
    return int(major), int(minor)


def tested() -> bool:
    """The installed gradio is the one these workarounds were checked on."""
    return gradio_version() == TESTED


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
