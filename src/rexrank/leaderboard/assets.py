"""The page's stylesheet: rules on the board's own classes and ids only (``board-*``), plus the gradio workarounds
of ``gradio_compat`` (the one place that depends on gradio's DOM) and the Arena's rules (``arena-*``, owned by
``arena_tab``), and its theme."""

from __future__ import annotations

from rexrank.leaderboard import gradio_compat, links
from rexrank.leaderboard.arena_tab import ARENA_CSS, ARENA_HEAD

CSS = """
.board-links p { margin: 0; }
.board-links { align-self: center; }
.board-csv a { white-space: nowrap; }
.board-notice { border-left: 4px solid var(--color-accent); padding: 4px 12px; }
.board-notice .board-notice { border-left: none; padding: 0; }  /* gradio puts the class on the inner block too */
.board-notice p { margin: 0; }
""" + (gradio_compat.PINNED_CSS + gradio_compat.HEADER_MENU_CSS + gradio_compat.WIDTHS_CSS + gradio_compat.STICKY_CSS
       + ARENA_CSS)
HEAD = (gradio_compat.PHONE_HEAD + gradio_compat.TAB_KEYS_HEAD + gradio_compat.LIVE_REGION_HEAD + ARENA_HEAD
        + links.HEAD)
theme = gradio_compat.theme  # gradio's Default with whole bold faces (gradio_compat says why)
