"""The pages' stylesheet and script (``board.css``, ``board.js``, package data), read once, with the digest that
versions their URLs: a page names ``static/board.css?v=<digest>``, cached for a year, so a fresh visit asks for
neither again until they change. ``head``: every page's head, which names the stylesheet."""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from typing import NamedTuple

from rexrank.leaderboard.pages.html import Html, el, join, void
from rexrank.leaderboard.views import TITLE


class Asset(NamedTuple):
    body: bytes
    media_type: str
    digest: str


# What a browser never reads: comments (the files' explanations) and indentation. A comment goes when it has a line
# of its own, or follows a statement's end (";", "{", "}") after two spaces, the files' one way of writing one (a
# test runs the served script), so no code, string or regular expression is touched: two fifths of board.js's
# compressed bytes, which every fresh visit pays (issue 48's bytes target).
_UNREAD = {"text/javascript": re.compile(r"^[ \t]*//[^\n]*\n|^[ \t]+|(?<=[;{}])  +//[^\n]*", re.M),
           "text/css": re.compile(r"^[ \t]*/\*(?:[^*]|\*(?!/))*\*/[ \t]*\n|^[ \t]+", re.M)}


def _read(name: str, media_type: str) -> Asset:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    body = _UNREAD[media_type.split(";")[0]].sub("", text).encode()
    return Asset(body, media_type, hashlib.sha256(body).hexdigest()[:16])


ASSETS = {"board.css": _read("board.css", "text/css; charset=utf-8"),
          "board.js": _read("board.js", "text/javascript; charset=utf-8"),
          # only the views with a search box load it: the others' fresh visits are spared its bytes
          "search.js": _read("search.js", "text/javascript; charset=utf-8")}


def url(name: str) -> str:
    """The relative URL a page names ``name`` by."""
    return f"static/{name}?v={ASSETS[name].digest}"


def loader(names: list[str]) -> str:
    """The text of the one inline script, the last thing in a page's body: it asks for the scripts ``names`` (in
    that order, run in that order) once the parser has put the rows in the document, so a fresh page's HTML and
    stylesheet have the connection to themselves until the rows are there (a deferred script in the head is asked
    for by the preload scanner at once; issue 48's bytes until rows show). Every page works without the scripts."""
    urls = ",".join(f'"{url(name)}"' for name in names)  # ours: digests and fixed names, nothing to escape
    return (f"for(const src of[{urls}])document.head.append("
            "Object.assign(document.createElement(\"script\"),{src,async:false}))")


def head(title: str) -> Html:
    """A page's head: its title (``title · TITLE``), the viewport, both colour schemes, the stylesheet, and no
    favicon request."""
    return join([Html('<meta charset="utf-8">'), void("link", rel="icon", href="data:,"),
                 void("meta", name="viewport", content="width=device-width, initial-scale=1"),
                 void("meta", name="color-scheme", content="light dark"), el("title", f"{title} · {TITLE}"),
                 void("link", rel="stylesheet", href=url("board.css"))])
