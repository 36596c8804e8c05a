"""The explorer's routes (a Starlette app, like the board pages') and its launch on 127.0.0.1.

- ``/`` the list of studies (``table.View`` in the query); ``/study?id=...`` a study, in the list's view (its
  previous and next links follow the same order and filters); ``/run/{k}`` a run;
- ``/static/board.css`` (the board's stylesheet, the same bytes) and ``/static/explore.css``.

Responses of 500 bytes or more are gzip-compressed when the client accepts it. Nothing is written to disk.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from rexrank.errors import ConfigError
from rexrank.explore import pages
from rexrank.explore.data import Explorer
from rexrank.explore.detail import Details
from rexrank.explore.table import Orders, parse

HOST = "127.0.0.1"  # the explorer shows the user's own (possibly licensed) texts: never on another interface
DEFAULT_PORT = 7870
GZIP_MIN_BYTES = 500
_NO_STORE = {"Cache-Control": "no-store"}  # a page holds report text: the browser keeps no copy on disk


def _params(query: str) -> dict[str, list[str]]:
    return parse_qs(query, keep_blank_values=True, max_num_fields=60)


def explore_app(explorer: Explorer, details: Details | None = None):
    """The explorer as an ASGI app (``serve`` runs it; tests drive it with Starlette's TestClient)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.gzip import GZipMiddleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, PlainTextResponse, Response
    from starlette.routing import Route

    from rexrank.leaderboard.pages.assets import ASSETS

    orders = Orders(explorer)
    details = details if details is not None else Details(explorer)

    def _checked(request: Request):
        try:
            params = _params(request.url.query)
        except ValueError:  # over max_num_fields
            return None
        return params

    def listing(request: Request) -> Response:
        params = _checked(request)
        if params is None:
            return PlainTextResponse("too many query parameters", status_code=400)
        view, ignored = parse(explorer, params)
        if "id" in params:
            ignored.append("id")
        return HTMLResponse(pages.list_page(explorer, orders, view, ignored), headers=_NO_STORE)

    def study(request: Request) -> Response:
        params = _checked(request)
        if params is None:
            return PlainTextResponse("too many query parameters", status_code=400)
        ids = params.pop("id", [])
        view, ignored = parse(explorer, params)
        index = explorer.index.get(ids[0]) if len(ids) == 1 else None
        if index is None:
            return PlainTextResponse("no such study in these runs: open one from the list (./)", status_code=404)
        return HTMLResponse(pages.study_page(explorer, orders, details, view, index, ignored), headers=_NO_STORE)

    def run(request: Request) -> Response:
        raw = request.path_params["k"]
        if not raw.isdigit() or int(raw) >= len(explorer.runs):
            return PlainTextResponse(f"no such run: the runs are 0 to {len(explorer.runs) - 1}", status_code=404)
        return HTMLResponse(pages.run_page(explorer, int(raw)), headers=_NO_STORE)

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name == "explore.css":
            return Response(pages.EXPLORE_CSS, media_type="text/css; charset=utf-8")
        asset = ASSETS.get(name) if name == "board.css" else None
        if asset is None:
            return PlainTextResponse("no such file; the explorer's files are board.css, explore.css", status_code=404)
        return Response(asset.body, media_type=asset.media_type, headers={"Cache-Control": "public, max-age=86400"})

    routes = [Route("/", listing), Route("/study", study), Route("/run/{k}", run), Route("/static/{name}", static)]
    return Starlette(routes=routes, middleware=[Middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES)])


def check_port(port: int) -> None:
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be between 0 and 65535 (got {port})")


def build(runs: list[str | os.PathLike], *, data_dir=None, model_paths: Mapping[str, Any] | None = None,
          metric_configs: Mapping[str, Mapping[str, Any]] | None = None, cache_dir=None,
          batch_size: int | None = None):
    """(the explorer's data, its details, the app) for ``runs``."""
    from rexrank.explore.data import load

    explorer = load(list(runs), data_dir=data_dir)
    details = Details(explorer, model_paths=model_paths, metric_configs=metric_configs, cache_dir=cache_dir,
                      batch_size=batch_size)
    return explorer, details, explore_app(explorer, details)


def usable_port(port: int) -> int:
    """``port`` (0: a free one) if 127.0.0.1 can listen on it now; else one ConfigError line."""
    import socket

    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError as exc:
            raise ConfigError(f"--port {port}: {HOST}:{port} cannot be used ({exc.strerror or exc}); choose another "
                              "port, or 0 for any free one") from None
        return probe.getsockname()[1]


def serve(app, port: int = DEFAULT_PORT, *, announce=print) -> None:
    """Run ``app`` on 127.0.0.1 until interrupted (the port checked first, so a busy one is one line)."""
    import uvicorn

    port = usable_port(port)
    announce(f"rexrank explore: http://{HOST}:{port}/ (this machine only; Ctrl+C stops it)")
    uvicorn.run(app, host=HOST, port=port, log_level="warning")
