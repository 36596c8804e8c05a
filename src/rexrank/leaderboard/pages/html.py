"""Escaping and element helpers: the pages' one way of turning text into HTML.

Text from the store (model names, institutions, URLs, notes) and from a request (a search) is hostile: it reaches a
page only through ``text`` (escaped, quotes included, so it is safe in an attribute too). ``Html`` marks a string
that is already markup built here; ``el`` escapes every child that is not one, and every attribute value.
"""

from __future__ import annotations

import html
import re
from typing import Any, Iterable

_ATTRIBUTE = re.compile(r"^[a-z][a-z0-9-]*$")


class Html(str):
    """Markup built by these helpers (never text from outside)."""


def text(value: Any) -> Html:
    """``value`` as escaped text (None is empty)."""
    return Html(html.escape("" if value is None else str(value), quote=True))


# Characters after which a browser may break a line inside a word (UAX #14: hyphens, dashes, the solidus):
# "1/RadCliQ-v1", "MAIRA-2", "IU-Xray" would be split there on a narrow screen.
_BREAKS_INSIDE = re.compile(r"[-/\u2010\u2012\u2013\u2014]")
_SPACES = re.compile(r"(\s+)")
WORD_CLASS = "w"  # board.css: white-space: nowrap


def words(value: Any) -> Html:
    """``value`` as escaped text whose words are never broken inside: lines wrap between words only. A word with a
    break opportunity inside (a hyphen, a dash, a slash) is kept whole in a ``span.w``; other words need nothing
    (the stylesheet never breaks a word, ``overflow-wrap: normal``)."""
    parts = _SPACES.split("" if value is None else str(value))
    return Html("".join(f'<span class="{WORD_CLASS}">{text(part)}</span>' if _BREAKS_INSIDE.search(part)
                        else text(part) for part in parts))


def _whole(value: Any) -> Any:
    """A cell's or caption's content with its words kept whole (markup built here is left as it is)."""
    return value if isinstance(value, Html) else words(value)


def join(parts: Iterable[Any], sep: str = "") -> Html:
    """Children as one piece of markup, each escaped unless it is ``Html``."""
    return Html(sep.join(part if isinstance(part, Html) else text(part) for part in parts))


def attributes(**values: Any) -> str:
    """``name="value"`` pairs: a trailing ``_`` is dropped (``class_``), ``_`` becomes ``-`` (``data_key``); None and
    False leave the attribute out, True writes it bare."""
    out = []
    for key, value in values.items():
        name = key.rstrip("_").replace("_", "-")
        if not _ATTRIBUTE.match(name):  # names are ours, never input: a bad one is a bug here
            raise ValueError(f"not an attribute name: {name!r}")
        if value is None or value is False:
            continue
        out.append(f" {name}" if value is True else f' {name}="{text(value)}"')
    return "".join(out)


def el(tag: str, *children: Any, **attrs: Any) -> Html:
    """``<tag attrs>children</tag>``."""
    return Html(f"<{tag}{attributes(**attrs)}>{join(children)}</{tag}>")


def void(tag: str, **attrs: Any) -> Html:
    """An element without content (``<input ...>``)."""
    return Html(f"<{tag}{attributes(**attrs)}>")


def table(caption: Any, headers: list[Any], rows: Iterable[list[Any]], *, row_header: int | None = 1,
          sticky: bool = True, row_attrs: Iterable[dict[str, Any]] | None = None, **attrs: Any) -> Html:
    """A real table: a ``<caption>``, column headers ``<th scope="col">``, and in each row the cell at
    ``row_header`` (the model's name) a ``<th scope="row">``, sticky on a narrow screen when ``sticky``; wrapped in
    a box that scrolls sideways on its own (the page never does). ``row_attrs``: each row's ``<tr>`` attributes."""
    head = el("tr", *(el("th", _whole(h), scope="col", class_="sticky" if sticky and k == row_header else None)
                      for k, h in enumerate(headers)))
    body = []
    row_attrs = iter(row_attrs) if row_attrs is not None else None
    for row in rows:
        # Header cells wrap between words (kept whole); values never wrap (board.css: td is nowrap).
        cells = [el("th", _whole(cell), scope="row", class_="sticky" if sticky else None) if k == row_header
                 else el("td", cell) for k, cell in enumerate(row)]
        body.append(el("tr", *cells, **(next(row_attrs) if row_attrs is not None else {})))
    return el("div", el("table", el("caption", _whole(caption)), el("thead", head), el("tbody", *body), **attrs),
              class_="table-box", role="region", aria_label=caption if not isinstance(caption, Html) else None,
              tabindex="0")
