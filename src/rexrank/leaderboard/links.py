"""Shareable links: what a page shows, in its URL's query (issue 37 point 5).

A link names the tab, the track, one dataset table's search, filters, columns and ranking metric, the page of a
table's rows, the model open on the Models tab and the models on the Compare tab, e.g.
``?tab=mimic_cxr&track=findings_impression&sort=green``.
This module owns the parameter names, their defaults and limits, reads a query (``parse``, ``checked``) and writes
one (``pairs``, ``query``): the board's pages (``pages``) are URLs in this language, each view one URL, and a link
of the gradio board the Space had before (``/?tab=...``) opens the same view. Pure: no gradio here.

A query is hostile input: it is bounded (``MAX_QUERY`` characters, ``MAX_VALUES`` values of ``MAX_VALUE``
characters), every value is checked against the names the board knows, and what is not understood is left out and
counted, never echoed (``Link.ignored`` holds this module's own parameter names only).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Optional, Sequence
from urllib.parse import parse_qsl, urlencode

from rexrank.data.tracks import DEFAULT_TRACK
from rexrank.leaderboard.records import DATASETS, SOURCES, TRACKS

DEFAULT_TAB, MODELS_TAB, COMPARE_TAB = "overview", "models", "compare"  # the views' ids
SUBMIT_TAB, ARENA_TAB, ABOUT_TAB = "submit", "arena", "about"  # the other views a link may name
TABS = (DEFAULT_TAB, *DATASETS, MODELS_TAB, COMPARE_TAB, SUBMIT_TAB, ARENA_TAB, ABOUT_TAB)  # every view's id
TAB, TRACK, MODEL, COMPARE, PAGE = "tab", "track", "model", "compare", "page"
ALL_PAGES = 0  # Link.page of a view showing every row ("page=all")
MAX_PAGE = 100_000  # a larger page number is not a page a person reached
MAX_QUERY = 4000  # characters: a link a person shares is far shorter
MAX_VALUES = 60  # parameters in one query
MAX_VALUE = 200  # characters of one value: a model name, an institution or a search a person typed
MAX_COMPARED = 4  # models on the Compare tab (compare_view reads it)
# gradio's own parameters ("__theme=dark"): passed through untouched, never part of a link's state.
GRADIO_PREFIX = "__"


class ViewLink(NamedTuple):
    """One dataset table's controls: search, filters, columns and sort (the order the API's ``/table`` takes them)."""

    search: str = ""
    institutions: tuple[str, ...] = ()
    years: tuple[int, ...] = ()
    model_types: tuple[str, ...] = ()
    trained: str = "all"
    sources: tuple[str, ...] = ()
    columns: Optional[tuple[str, ...]] = None  # None: the track's default columns
    sort: Optional[str] = None  # None: the board's ranking metric


# Each control's parameter in a link, in ViewLink's order.
PARAMS = {"search": "q", "institutions": "inst", "years": "year", "model_types": "type", "trained": "trained",
          "sources": "source", "columns": "cols", "sort": "sort"}
_LISTS = {"institutions", "years", "model_types", "sources", "columns"}


class Link(NamedTuple):
    tab: str = DEFAULT_TAB
    track: str = DEFAULT_TRACK
    view: ViewLink = ViewLink()
    model: Optional[str] = None
    compare: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()  # parameters left out (this module's names; "other" for unknown ones)
    page: int = 1  # the page of the overview's or a dataset table's rows, from 1; ALL_PAGES: every row


def parse(query: str, tabs: Sequence[str], datasets: Sequence[str]) -> Link:
    """The link in ``query`` (with or without its "?"), syntax only: tabs, tracks, lengths and kinds. Values that
    name things on the board (institutions, metrics, models) are checked by ``checked`` against the board."""
    text = (query or "").lstrip("?")
    if len(text) > MAX_QUERY:
        return Link(ignored=("the whole link (too long)",))
    try:
        items = parse_qsl(text, keep_blank_values=False, max_num_fields=MAX_VALUES)
    except ValueError:
        return Link(ignored=("the whole link (too many parameters)",))
    ignored: list[str] = []
    known = {TAB, TRACK, MODEL, COMPARE, PAGE, *PARAMS.values()}
    values: dict[str, list[str]] = {}
    for key, value in items:
        if key.startswith(GRADIO_PREFIX):
            continue
        if key not in known:
            _note(ignored, "other")
        elif len(value) > MAX_VALUE:
            _note(ignored, key)
        else:
            values.setdefault(key, []).append(value)

    def one(key: str, allowed: Iterable[str]) -> Optional[str]:
        got = values.get(key, [])
        if not got:
            return None
        if len(got) > 1 or got[0] not in allowed:
            _note(ignored, key)
            return None
        return got[0]

    tab = one(TAB, tabs) or DEFAULT_TAB
    track = one(TRACK, TRACKS) or DEFAULT_TRACK
    fields = {}
    for field, key in PARAMS.items():
        got = values.get(key, [])
        if not got:
            continue
        if field in _LISTS:
            if field == "years":
                if not all(v.isdigit() and len(v) == 4 for v in got):
                    _note(ignored, key)
                    continue
                got = [int(v) for v in got]
            if field == "sources" and not set(got) <= set(SOURCES):
                _note(ignored, key)
                continue
            fields[field] = tuple(dict.fromkeys(got))
        elif len(got) > 1:
            _note(ignored, key)
        else:
            fields[field] = got[0]
    if fields and tab not in datasets:  # a table's controls belong to a dataset tab
        for field in fields:
            _note(ignored, PARAMS[field])
        fields = {}
    model = values.get(MODEL, [None])[-1] if tab == MODELS_TAB else None
    if values.get(MODEL) and tab != MODELS_TAB:
        _note(ignored, MODEL)
    compare = tuple(dict.fromkeys(values.get(COMPARE, []))) if tab == COMPARE_TAB else ()
    if values.get(COMPARE) and tab != COMPARE_TAB:
        _note(ignored, COMPARE)
    if len(compare) > MAX_COMPARED:
        _note(ignored, COMPARE)
        compare = compare[:MAX_COMPARED]
    page = 1
    asked = values.get(PAGE, [])
    if asked:
        value = asked[0]
        if len(asked) > 1 or (tab != DEFAULT_TAB and tab not in datasets) or not (
                value == "all" or (value.isdigit() and 1 <= int(value) <= MAX_PAGE)):
            _note(ignored, PAGE)
        else:
            page = ALL_PAGES if value == "all" else int(value)
    return Link(tab, track, ViewLink(**fields), model, compare, tuple(ignored), page)


def checked(link: Link, *, institutions: Iterable[str] = (), years: Iterable[int] = (),
            model_types: Iterable[str] = (), trained: Iterable[str] = (), metrics: Iterable[str] = (),
            models: Iterable[str] = ()) -> Link:
    """``link`` with every value the board does not know left out (and named in ``ignored``): the institutions,
    years and model types of its table's filters, the trained filter's values, the metric names of its track, the
    model names of the board."""
    ignored = list(link.ignored)
    view = link.view
    allowed = {"institutions": set(institutions), "years": set(years), "model_types": set(model_types)}
    metric_names = set(metrics)
    changes = {}
    for field, names in allowed.items():
        value = getattr(view, field)
        if value and not set(value) <= names:
            _note(ignored, PARAMS[field])
            changes[field] = tuple(v for v in value if v in names)
    if view.columns is not None and not set(view.columns) <= metric_names:
        _note(ignored, PARAMS["columns"])
        kept = tuple(c for c in view.columns if c in metric_names)
        changes["columns"] = kept or None
    if view.trained != ViewLink().trained and view.trained not in set(trained):
        _note(ignored, PARAMS["trained"])
        changes["trained"] = ViewLink().trained
    if view.sort is not None and view.sort not in metric_names:
        _note(ignored, PARAMS["sort"])
        changes["sort"] = None
    model_names = set(models)
    model = link.model
    if model is not None and model not in model_names:
        _note(ignored, MODEL)
        model = None
    compare = tuple(m for m in link.compare if m in model_names)
    if compare != link.compare:
        _note(ignored, COMPARE)
    return link._replace(view=view._replace(**changes), model=model, compare=compare, ignored=tuple(ignored))


def pairs(link: Link, defaults: Optional[ViewLink] = None) -> list[tuple[str, str]]:
    """The link's parameters in their order, each value that differs from its default (``defaults``: the view's
    own, with its track's columns and ranking metric) written, lists as repeated parameters."""
    defaults = defaults or ViewLink()
    out: list[tuple[str, str]] = []
    if link.tab != DEFAULT_TAB:
        out.append((TAB, link.tab))
    if link.track != DEFAULT_TRACK:
        out.append((TRACK, link.track))
    for field, key in PARAMS.items():
        value, default = getattr(link.view, field), getattr(defaults, field)
        if value is None or value == default or value == "":
            continue
        out.extend((key, str(v)) for v in value) if field in _LISTS else out.append((key, str(value)))
    if link.page != 1:
        out.append((PAGE, "all" if link.page == ALL_PAGES else str(link.page)))
    if link.model:
        out.append((MODEL, link.model))
    out.extend((COMPARE, m) for m in link.compare)
    return out


def query(link: Link, defaults: Optional[ViewLink] = None) -> str:
    """The link's query, without its "?" ("" for the default page)."""
    return urlencode(pairs(link, defaults))


def notice(link: Link) -> str:
    """One line for a link with parts left out ("" when all of it was understood)."""
    if not link.ignored:
        return ""
    names = ", ".join(link.ignored)
    return (f"Part of this link was not understood and is left out ({names}): the page shows the rest. "
            "Copy the address again from a page set up as you want it.")


def _note(ignored: list[str], name: str) -> None:
    if name not in ignored:
        ignored.append(name)
