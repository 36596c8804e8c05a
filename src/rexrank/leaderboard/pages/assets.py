"""The pages' stylesheet and script (``board.css``, ``board.js``, package data), read once, with the digest that
versions their URLs: a page names ``static/board.css?v=<digest>``, cached for a year, so a fresh visit asks for
neither again until they change."""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import NamedTuple


class Asset(NamedTuple):
    body: bytes
    media_type: str
    digest: str


def _read(name: str, media_type: str) -> Asset:
    body = resources.files(__package__).joinpath(name).read_bytes()
    return Asset(body, media_type, hashlib.sha256(body).hexdigest()[:16])


ASSETS = {"board.css": _read("board.css", "text/css; charset=utf-8"),
          "board.js": _read("board.js", "text/javascript; charset=utf-8")}


def url(name: str) -> str:
    """The relative URL a page names ``name`` by."""
    return f"static/{name}?v={ASSETS[name].digest}"
