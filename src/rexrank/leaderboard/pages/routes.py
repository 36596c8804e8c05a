"""The pages' routes: a Starlette app of its own, mounted under ``PREFIX`` on the app gradio serves (``mount``).

- ``/`` the page of the link in its query (``params.page_link``); a query that is understood but not written as the
  pages write it (a form's submission, ``compare=A,B``) is redirected to its canonical form, so each view has one URL;
  a query with parts left out shows the rest and says which, in one line (``links.notice``), never echoing them.
- ``/live`` the live part of that page alone (``render.live``): what the page's script fetches for a search as typed
  and after a change of the board; it names the canonical query in ``X-Board-Query``.
- ``/controls`` the view's controls and when the board last changed (JSON: ``controls``, ``updated``): what the
  page's script fetches after a change of the board beside the live part (the filter choices, the models to pick).
- ``/version`` the store's generation (JSON), with an ETag: an open page asks every ``POLL_S`` seconds and gets a
  304 while nothing changed.
- ``/static/board.css``, ``/static/board.js``; ``/csv/{dataset}/{track}`` and ``/json/{dataset}/{track}`` (the
  views' CSV and results JSON).

Pages and fragments carry an ETag on the generation and their query (a 304 costs no rendering). Every response of
500 bytes or more is gzip-compressed when the client accepts it (Starlette's ``GZipMiddleware`` on this app only).
"""

from __future__ import annotations

import hashlib
import json

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from rexrank.leaderboard.pages import render, studies
from rexrank.leaderboard.pages.assets import ASSETS
from rexrank.leaderboard.pages.params import page_link
from rexrank.leaderboard.records import DATASETS, TRACKS
from rexrank.leaderboard.views import Views

PREFIX = "/board"
POLL_S = 10  # how often an open page asks whether the board changed (board.js reads it from the page)
GZIP_MIN_BYTES = 500  # smaller responses gain nothing from compression
_FRESH = {"Cache-Control": "no-cache"}  # always revalidated: the ETag answers "unchanged" with a 304


def generation_tag(views: Views) -> str:
    """The store's generation as the pages show it: a digest (the store's id stays on the server)."""
    return hashlib.sha256(str(views.generation()).encode()).hexdigest()[:20]


def _etag(*parts: str) -> str:
    """A weak ETag: the same content is sent gzip-compressed or not (one tag for both representations)."""
    return 'W/"' + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24] + '"'


def _unchanged(request: Request, etag: str) -> bool:
    """If-None-Match names ``etag`` (weak comparison, RFC 9110)."""
    asked = request.headers.get("if-none-match", "")
    return etag.removeprefix("W/") in [tag.strip().removeprefix("W/") for tag in asked.split(",")]


def _not_modified(etag: str) -> Response:
    return Response(status_code=304, headers={"ETag": etag, **_FRESH})


def board_app(views: Views, poll_s: int = POLL_S) -> Starlette:
    """The pages as an ASGI app (``mount`` puts it under ``PREFIX``; tests drive it alone); an open page asks for
    the generation every ``poll_s`` seconds."""

    def page(request: Request) -> Response:
        link = page_link(views, request.url.query)
        canonical = render.canonical_query(views, link)
        if not link.ignored and canonical != request.url.query:
            return RedirectResponse("./" + (f"?{canonical}" if canonical else ""), status_code=303)
        generation = generation_tag(views)
        etag = _etag("page", generation, request.url.query)
        if _unchanged(request, etag):
            return _not_modified(etag)
        return HTMLResponse(render.page(views, link, generation, poll_s), headers={"ETag": etag, **_FRESH})

    def live(request: Request) -> Response:
        link = page_link(views, request.url.query)
        canonical = render.canonical_query(views, link)
        generation = generation_tag(views)
        etag = _etag("live", generation, canonical)
        headers = {"ETag": etag, "X-Board-Query": canonical, "X-Board-Generation": generation, **_FRESH}
        if _unchanged(request, etag):
            return Response(status_code=304, headers=headers)
        return HTMLResponse(render.live(views, link), headers=headers)

    def controls(request: Request) -> Response:
        link = page_link(views, request.url.query)
        generation = generation_tag(views)
        etag = _etag("controls", generation, render.canonical_query(views, link))
        if _unchanged(request, etag):
            return _not_modified(etag)
        body = {"controls": render.heading(views, link)[1], "updated": render.updated(views)}
        return Response(json.dumps(body), media_type="application/json", headers={"ETag": etag, **_FRESH})

    def version(request: Request) -> Response:
        generation = generation_tag(views)
        etag = _etag("version", generation)
        if _unchanged(request, etag):
            return _not_modified(etag)
        return Response(json.dumps({"generation": generation}), media_type="application/json",
                        headers={"ETag": etag, **_FRESH})

    def static(request: Request) -> Response:
        asset = ASSETS.get(request.path_params["name"])
        if asset is None:
            return PlainTextResponse(f"no such file; the pages' files are {', '.join(ASSETS)}", status_code=404)
        return Response(asset.body, media_type=asset.media_type,
                        headers={"Cache-Control": "public, max-age=31536000, immutable"})

    def _board(request: Request) -> tuple[str, str] | Response:
        dataset, track = request.path_params["dataset"], request.path_params["track"]
        if dataset not in DATASETS or track not in TRACKS:
            return PlainTextResponse("unknown test set or track: test sets " + ", ".join(DATASETS)
                                     + "; tracks " + ", ".join(TRACKS), status_code=404)
        return dataset, track

    def csv(request: Request) -> Response:
        found = _board(request)
        if isinstance(found, Response):
            return found
        dataset, track = found
        return Response(views.csv_text(dataset, track), media_type="text/csv; charset=utf-8", headers={
            "Content-Disposition": f'attachment; filename="rexrank_{dataset}_{track}.csv"'})

    def results(request: Request) -> Response:
        found = _board(request)
        if isinstance(found, Response):
            return found
        return Response(views.results_json(*found), media_type="application/json")

    routes = [Route("/", page), Route("/live", live), Route("/controls", controls), Route("/version", version),
              Route("/static/{name}", static), Route("/csv/{dataset}/{track}", csv),
              Route("/json/{dataset}/{track}", results)]
    routes.append(Route(studies.PATH, studies.endpoint(views)))  # a model's per-study view (open sets)
    return Starlette(routes=routes, middleware=[Middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES)])


def mount(app, views: Views, prefix: str = PREFIX) -> None:
    """Serve the pages under ``prefix`` on ``app`` (gradio's FastAPI app: ``demo.app``), beside gradio's routes;
    public Starlette API (``mount``), which a running app accepts like ``add_api_route``."""
    app.mount(prefix, board_app(views))
