"""The ReXrank leaderboard Space (Gradio 6.31, native components): where the CLI, the Space and the tests import it.

The page is split by job:
- ``rexrank.leaderboard.views``: what every tab and API endpoint shows, pure functions of the store (no gradio);
- ``rexrank.leaderboard.assets``: the stylesheet; ``rexrank.leaderboard.gradio_compat``: the workarounds for
  gradio limitations, with the gradio range they were tested on;
- ``rexrank.leaderboard.wiring``: the gradio components, events and API endpoints (``build_app``);
- ``rexrank.leaderboard.serve``: open the store, start the worker, launch (``serve``).
"""

from __future__ import annotations

from rexrank.leaderboard.serve import serve
from rexrank.leaderboard.wiring import build_app, oauth_configured

__all__ = ["build_app", "oauth_configured", "serve"]
