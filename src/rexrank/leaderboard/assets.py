"""The gradio pages' stylesheet, head and theme (the Submit form and the Arena; the board's pages have their own:
``pages/board.css``): the gradio workarounds of ``gradio_compat`` (the one place that depends on gradio's DOM), the
Submit page's drop target (``wiring.DROP_*``) and the Arena's rules (``arena-*``, owned by ``arena_tab``)."""

from __future__ import annotations

from rexrank.leaderboard import gradio_compat
from rexrank.leaderboard.arena_tab import ARENA_CSS, ARENA_HEAD
from rexrank.leaderboard.wiring import DROP_CSS, DROP_HEAD

CSS = gradio_compat.STICKY_CSS + DROP_CSS + ARENA_CSS
HEAD = gradio_compat.PHONE_HEAD + gradio_compat.LIVE_REGION_HEAD + ARENA_HEAD + DROP_HEAD
theme = gradio_compat.theme  # gradio's Default with whole bold faces (gradio_compat says why)
