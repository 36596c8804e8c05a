"""Hugging Face Space entry point: the ReXrank leaderboard (all logic lives in rexrank.leaderboard).

gradio launches the app; the board is HTML pages rexrank renders, at the Space's root URL, in front of gradio's
routes; gradio serves the Submit form (/submit), the Arena (/arena, when on), Hugging Face login and the JSON API
that gradio_client calls (docs/leaderboard.md, "How the Space is served").

Host settings (Space variables; unset: the defaults of rexrank.leaderboard.limits): REXRANK_STORE,
REXRANK_MAX_UPLOAD_MB (largest predictions file, decimal MB), REXRANK_PRIVATE_QUOTA (submissions per user per private
test set per day), REXRANK_RATE_LIMIT (per user, and per anonymous client, per day on the public sets),
REXRANK_ANONYMOUS_LIMIT (anonymous submissions per day, all clients together), REXRANK_TRUSTED_PROXIES (proxies in
front that append to X-Forwarded-For, which tells anonymous clients apart; default 1 in a Space). Where it listens: GRADIO_SERVER_NAME and GRADIO_SERVER_PORT (then PORT), else
0.0.0.0:7860 inside a Space and 127.0.0.1:7860 elsewhere (rexrank.leaderboard.hosting); one line at start says what it
serves and what it lacks. Hugging Face login
is on when the card sets `hf_oauth: true` (the Submit page then shows the login button; the card's requirements install
gradio[oauth]).
Persistence (docs/leaderboard.md#persistence): REXRANK_RESULTS_REPO and REXRANK_REQUESTS_REPO, Hub dataset repos
the board is pulled from at start and pushed to after every write, with HF_TOKEN (a Space secret) able to write them.
Radiologist Arena (docs/arena.md; off unless REXRANK_ARENA is set): REXRANK_ARENA=1 adds the Arena's page (votes need
Hugging Face login), REXRANK_ARENA_IMAGES a folder of the public set's images shown with each study,
REXRANK_ARENA_EXPERTS_ONLY=1 lets only the host's expert allow-list vote.
"""

import logging
import os

from rexrank.leaderboard import limits
from rexrank.leaderboard.app import serve
from rexrank.leaderboard.hosting import listen_address, start_line


def _number(name: str, default: float) -> float:
    return float(os.environ.get(name) or default)


def _flag(name: str) -> bool:
    """A Space variable that switches something on: 1/true/yes/on (any case); unset or empty is off."""
    value = (os.environ.get(name) or "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise SystemExit(f"{name}={value[:20]!r} is not a switch: set it to 1 (on) or 0 (off)")


if __name__ == "__main__":
    # The host's log shows rexrank's warnings and notes (what the worker scores, a store cleaned, a failed push).
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    host, port = listen_address()  # gradio's own variables; 0.0.0.0 only inside a Space
    store_path = os.environ.get("REXRANK_STORE", "data/leaderboard.sqlite")
    app, store, service = serve(store_path, host=host, port=port, prevent_thread_lock=True,
                      max_bytes=limits.upload_bytes(_number("REXRANK_MAX_UPLOAD_MB", limits.DEFAULT_MAX_UPLOAD_MB)),
                      private_quota=int(_number("REXRANK_PRIVATE_QUOTA", limits.DEFAULT_PRIVATE_QUOTA)),
                      rate_limit=int(_number("REXRANK_RATE_LIMIT", limits.DEFAULT_RATE_LIMIT)),
                      anonymous_limit=int(_number("REXRANK_ANONYMOUS_LIMIT", limits.DEFAULT_ANONYMOUS_LIMIT)),
                      results_repo=os.environ.get("REXRANK_RESULTS_REPO") or None,
                      requests_repo=os.environ.get("REXRANK_REQUESTS_REPO") or None,
                      hub_token=os.environ.get("HF_TOKEN") or None,
                      arena=_flag("REXRANK_ARENA"), arena_images=os.environ.get("REXRANK_ARENA_IMAGES") or None,
                      arena_experts_only=_flag("REXRANK_ARENA_EXPERTS_ONLY"),
                      edition=os.environ.get("REXRANK_BOARD_EDITION") or None)
    print(start_line(store, service, app.sync, host, port, arena=app.arena is not None), flush=True)
    app.block_thread()
