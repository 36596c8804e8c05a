"""The list's view as data: which studies (subgroup filters), in which order (a metric of a run, or the difference
between two runs), which page. A view is a query string; the order is an index array computed once per sort and
filters (kept in a small memo), so paging and a study's previous/next links cost a slice.

Query parameters: ``sort`` (``METRIC@RUN``, or ``METRIC@A-B`` for run A's value minus run B's; runs numbered from
0; absent: the first run's file order), ``dir`` (``asc`` / ``desc``), one parameter per subgroup (``normal``,
``site``, ``view``, ``length``), ``page`` (from 1) and ``per`` (rows a page). What is not understood is left out
and named, never echoed.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import urlencode

import numpy as np

from rexrank.explore.data import GROUPS, Explorer

PER_PAGE = 50
MAX_PER_PAGE = 500
_SORT = re.compile(r"^(?P<metric>[a-z0-9][a-z0-9_.-]*)@(?P<a>\d{1,3})(?:-(?P<b>\d{1,3}))?$")
_MEMO_SIZE = 64
MAX_VALUE_CHARS = 200  # a query value longer than this is not one the pages write


class View(NamedTuple):
    sort: str = ""
    desc: bool = True
    filters: tuple[tuple[str, str], ...] = ()
    page: int = 1
    per: int = PER_PAGE

    def query(self, **changes) -> str:
        """This view's query string, with ``changes`` (defaults left out, so each view has one URL)."""
        view = self._replace(**changes)
        pairs: list[tuple[str, str]] = []
        if view.sort:
            pairs += [("sort", view.sort), ("dir", "desc" if view.desc else "asc")]
        pairs += list(view.filters)
        if view.per != PER_PAGE:
            pairs.append(("per", str(view.per)))
        if view.page != 1:
            pairs.append(("page", str(view.page)))
        return urlencode(pairs)


class Sort(NamedTuple):
    metric: str
    a: int
    b: int | None  # None: run a's own values


def parse_sort(explorer: Explorer, value: str) -> Sort | None:
    found = _SORT.match(value)
    if not found:
        return None
    metric, a = found["metric"], int(found["a"])
    b = int(found["b"]) if found["b"] is not None else None
    runs = len(explorer.runs)
    if metric not in explorer.metrics or a >= runs or (b is not None and (b >= runs or b == a)):
        return None
    if metric not in explorer.runs[a].values or (b is not None and metric not in explorer.runs[b].values):
        return None
    return Sort(metric, a, b)


def sort_value(metric: str, a: int, b: int | None = None) -> str:
    return f"{metric}@{a}" if b is None else f"{metric}@{a}-{b}"


def parse(explorer: Explorer, params: Mapping[str, list[str]]) -> tuple[View, list[str]]:
    """The checked view of a request's query (``{name: [values]}``) and the names of what was left out."""
    ignored: list[str] = []

    def one(name: str) -> str | None:
        values = params.get(name) or []
        if len(values) > 1 or any(len(v) > MAX_VALUE_CHARS for v in values):
            ignored.append(name)
            return None
        return values[0] if values else None

    view = View()
    sort = one("sort")
    if sort:
        if parse_sort(explorer, sort) is None:
            ignored.append("sort")
        else:
            view = view._replace(sort=sort)
    direction = one("dir")
    if direction is not None:
        if direction in ("asc", "desc"):
            view = view._replace(desc=direction == "desc")
        else:
            ignored.append("dir")
    filters = []
    for group in GROUPS:
        value = one(group)
        if value is None or value == "":
            continue
        labels = explorer.groups.get(group)
        if labels is None or value not in set(labels.tolist()):
            ignored.append(group)
        else:
            filters.append((group, value))
    view = view._replace(filters=tuple(filters))
    for name, low, high in (("per", 1, MAX_PER_PAGE), ("page", 1, 10**9)):
        value = one(name)
        if value is None:
            continue
        if value.isdigit() and low <= int(value) <= high:
            view = view._replace(**{name: int(value)})
        else:
            ignored.append(name)
    known = {"sort", "dir", "per", "page", "id", *GROUPS}
    ignored += sorted(name if name in known else "an unknown parameter" for name in params if name not in known)
    return view, list(dict.fromkeys(ignored))


def values_of(explorer: Explorer, sort: Sort) -> np.ndarray:
    own = explorer.runs[sort.a].values[sort.metric]
    return own if sort.b is None else own - explorer.runs[sort.b].values[sort.metric]


class Orders:
    """The index array of each (sort, direction, filters), computed once and kept (the last ``_MEMO_SIZE``)."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self._memo: OrderedDict[tuple, np.ndarray] = OrderedDict()

    def order(self, view: View) -> np.ndarray:
        key = (view.sort, view.desc if view.sort else True, view.filters)
        found = self._memo.get(key)
        if found is not None:
            self._memo.move_to_end(key)
            return found
        explorer = self.explorer
        keep = np.ones(len(explorer), dtype=bool)
        for group, value in view.filters:
            keep &= explorer.groups[group] == value
        rows = np.flatnonzero(keep)
        sort = parse_sort(explorer, view.sort) if view.sort else None
        if sort is not None:
            values = values_of(explorer, sort)[rows]
            # NaN (a study a run lacks, a metric that could not tell) stays last in both directions.
            rows = rows[np.argsort(-values if view.desc else values, kind="stable")]
        self._memo[key] = rows
        if len(self._memo) > _MEMO_SIZE:
            self._memo.popitem(last=False)
        return rows

    def page(self, view: View) -> tuple[np.ndarray, int, int]:
        """(this page's study indices, the page shown, the number of pages); a page past the end shows the last."""
        rows = self.order(view)
        pages = max(1, -(-len(rows) // view.per))
        page = min(view.page, pages)
        start = (page - 1) * view.per
        return rows[start:start + view.per], page, pages

    def neighbours(self, view: View, study: int) -> tuple[int | None, int | None, int | None]:
        """(previous, next, position) of ``study`` in the view's order; None where there is none or the study is
        not in the view."""
        rows = self.order(view)
        where = np.flatnonzero(rows == study)
        if not len(where):
            return None, None, None
        k = int(where[0])
        previous = int(rows[k - 1]) if k > 0 else None
        following = int(rows[k + 1]) if k + 1 < len(rows) else None
        return previous, following, k
