"""The pages' routes: a Starlette app of its own, answering at the root of the app gradio serves (``PagesFirst``).

- ``/`` the page of the link in its query (``params.page_link``); a query that is understood but not written as the
  pages write it (a form's submission, ``compare=A,B``) is redirected to its canonical form, so each view has one URL;
  a query with parts left out shows the rest and says which, in one line (``links.notice``), never echoing them.
- ``/live`` the live part of that page alone (``render.live``): what the page's script fetches for a search as typed
  and after a change of the board; it names the canonical query in ``X-Board-Query``.
- ``/controls`` the view's controls and when the board last changed (JSON: ``controls``, ``updated``): what the
  page's script fetches after a change of the board beside the live part (the filter choices, the models to pick).
- ``/version`` the store's generation (JSON), with an ETag: an open page asks every ``POLL_S`` seconds and gets a
  304 while nothing changed.
- ``/plots`` a table's or the overview's plots as inline SVG, the page's query carried over (``figures``).
- ``/studies`` a model's per-study view on an open test set (``studies``).
- ``/static/board.css``, ``/static/board.js``; ``/csv/{dataset}/{track}`` and ``/json/{dataset}/{track}`` (the
  views' CSV and results JSON).

Pages and fragments carry an ETag on the generation and their query (a 304 costs no rendering). Every response of
500 bytes or more is gzip-compressed when the client accepts it (Starlette's ``GZipMiddleware`` on this app only).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, TypeVar
from urllib.parse import parse_qsl, urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Match, Route

from rexrank.leaderboard import links
from rexrank.leaderboard.pages import figures, render, studies
from rexrank.leaderboard.pages.assets import ASSETS
from rexrank.leaderboard.pages.params import page_link
from rexrank.leaderboard.records import DATASETS, TRACKS
from rexrank.leaderboard.views import Views

PREFIX = ""  # the pages answer the Space's root URL, in front of gradio (``PagesFirst``)
LEGACY_PREFIX = "/board"  # where they were served beside the gradio board: such a link goes to the same view
POLL_S = 10  # how often an open page asks whether the board changed (board.js reads it from the page)
GZIP_MIN_BYTES = 500  # smaller responses gain nothing from compression
RENDERED_MAX = 64  # pages and live parts kept rendered (board_app's once): the views and their common searches
_FRESH = {"Cache-Control": "no-cache"}  # always revalidated: the ETag answers "unchanged" with a 304
T = TypeVar("T")


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


def _page_route(view, views: Views, once=None):
    """A handler for a view of its own (a module with ``PATH``, ``canonical_query(views, query) -> str | None`` and
    ``page(views, query) -> (status, text)``: the per-study view, the plots): the HTML with an ETag on the
    generation and the canonical query, as the board's pages (a 304 costs no rendering), else the one line as plain
    text with its status. ``once``: board_app's memo of rendered pages, for a view worth keeping there."""

    def handler(request: Request) -> Response:
        canonical = view.canonical_query(views, request.url.query)
        if canonical is None:
            status, line = view.page(views, request.url.query)
            return PlainTextResponse(line, status_code=status)
        generation = generation_tag(views)
        etag = _etag(view.PATH, generation, canonical)
        if _unchanged(request, etag):
            return _not_modified(etag)

        def make() -> tuple[int, str]:
            return view.page(views, canonical)
        status, content = once(view.PATH, generation, canonical, make) if once else make()
        if status != 200:  # the board changed between the two reads (the model's rows gone): its one line
            return PlainTextResponse(content, status_code=status)
        return HTMLResponse(content, headers={"ETag": etag, **_FRESH})
    return handler


def board_app(views: Views, poll_s: int = POLL_S) -> Starlette:
    """The pages as an ASGI app (``mount`` puts it under ``PREFIX``; tests drive it alone); an open page asks for
    the generation every ``poll_s`` seconds."""
    rendered: dict[tuple[str, str, str], Any] = {}  # (generation, kind, query) -> HTML (or (status, HTML)): ``once``

    def once(kind: str, generation: str, query: str, make: Callable[[], T]) -> T:
        """A page or live part rendered once per generation of the board (what the ETag already promises: the same
        query at the same generation is the same HTML), for every visitor: a view's first visit in a browser costs
        no rendering after anyone's (issue 48's view switch: 7 ms of CPU per view at 1,000 results). At most
        ``RENDERED_MAX`` kept, all dropped when the board changes."""
        key = (generation, kind, query)
        body = rendered.get(key)
        if body is None:
            body = make()
            if len(rendered) >= RENDERED_MAX or any(k[0] != generation for k in list(rendered)[:1]):
                rendered.clear()
            rendered[key] = body
        return body

    def page(request: Request) -> Response:
        link = page_link(views, request.url.query)
        canonical = render.canonical_query(views, link)
        if not link.ignored and canonical != request.url.query:
            return RedirectResponse("./" + (f"?{canonical}" if canonical else ""), status_code=303)
        generation = generation_tag(views)
        etag = _etag("page", generation, request.url.query)
        if _unchanged(request, etag):
            return _not_modified(etag)
        body = once("page", generation, request.url.query, lambda: render.page(views, link, generation, poll_s))
        return HTMLResponse(body, headers={"ETag": etag, **_FRESH})

    def live(request: Request) -> Response:
        link = page_link(views, request.url.query)
        canonical = render.canonical_query(views, link)
        generation = generation_tag(views)
        etag = _etag("live", generation, canonical)
        headers = {"ETag": etag, "X-Board-Query": canonical, "X-Board-Generation": generation, **_FRESH}
        if _unchanged(request, etag):
            return Response(status_code=304, headers=headers)
        return HTMLResponse(once("live", generation, canonical, lambda: render.live(views, link)), headers=headers)

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
    # A model's per-study view (open sets): not kept in ``once``, its rows are memoized by the views and a page of
    # them costs ~1 ms of CPU, while its many pages (every model's, 50 studies each) would push the views' out.
    routes.append(Route(studies.PATH, _page_route(studies, views)))
    # A table's or the overview's plots (SVG): 8-17 ms of CPU to draw at the published board, kept.
    routes.append(Route(figures.PATH, _page_route(figures, views, once)))
    return Starlette(routes=routes, middleware=[Middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES)])


class PagesFirst:
    """ASGI middleware that puts the pages (``board_app``) in front of the app it wraps (gradio's: ``launch(
    app_kwargs={"middleware": [...]})``, public Starlette API): a request that one of the pages' routes matches (the
    root URL and the files and fragments beside it) is the pages', every other (gradio's pages, API, login and
    files) goes on to the app. ``elsewhere``: the views a link may name that the app behind serves, by tab ({"submit":
    "/submit"}): ``/?tab=submit`` is redirected there, and to a one-line 404 for such a view the app lacks
    (``gradio_tabs``, e.g. the Arena a host left off). A link of ``LEGACY_PREFIX`` goes to the same view at the
    root."""

    def __init__(self, app, pages: Starlette, elsewhere: dict[str, str], gradio_tabs: tuple[str, ...] = ()):
        self.app, self.pages, self.elsewhere, self.gradio_tabs = app, pages, dict(elsewhere), tuple(gradio_tabs)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            response = self._moved(scope)
            if response is not None:
                return await response(scope, receive, send)
            if any(route.matches(scope)[0] == Match.FULL for route in self.pages.routes):
                return await self.pages(scope, receive, send)
        await self.app(scope, receive, send)

    def _moved(self, scope) -> Response | None:
        path, query = scope["path"], scope.get("query_string", b"").decode("latin-1")
        if path == LEGACY_PREFIX or path.startswith(LEGACY_PREFIX + "/"):
            return RedirectResponse((path[len(LEGACY_PREFIX):] or "/") + (f"?{query}" if query else ""), 308)
        if path != "/":
            return None
        pairs = parse_qsl(query)
        tab = next((value for key, value in pairs if key == links.TAB), None)
        if tab in self.elsewhere:  # gradio's own parameters (__theme) go along
            kept = urlencode([(k, v) for k, v in pairs if k.startswith(links.GRADIO_PREFIX)])
            return RedirectResponse(self.elsewhere[tab] + (f"?{kept}" if kept else ""), 303)
        if tab in self.gradio_tabs:
            return PlainTextResponse(f"This board has no {tab} page: its host has it off.", status_code=404)
        return None
