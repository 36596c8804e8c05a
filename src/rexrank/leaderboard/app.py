"""The ReXrank leaderboard Space (a Gradio Space): where the CLI, the Space and the tests import it.

The Space is split by job:
- ``rexrank.leaderboard.views``: what every view and API endpoint shows, pure functions of the store (no gradio);
- ``rexrank.leaderboard.pages``: the board itself, every view an HTML page rexrank renders on the server, answering
  the Space's root URL (public Starlette API, no gradio);
- ``rexrank.leaderboard.wiring``: what gradio serves (``build_app``): the Submit form (``/submit``), the Arena
  (``/arena``), Hugging Face login and the JSON API gradio_client users call; ``rexrank.leaderboard.assets`` its
  stylesheet, ``rexrank.leaderboard.gradio_compat`` the workarounds for gradio limitations, with the gradio range
  they were tested on;
- ``rexrank.leaderboard.serve``: open the store, start the worker, launch gradio with the pages in front (``serve``).
"""

from __future__ import annotations

from rexrank.leaderboard.serve import serve
from rexrank.leaderboard.wiring import build_app, oauth_configured

__all__ = ["build_app", "oauth_configured", "serve"]
