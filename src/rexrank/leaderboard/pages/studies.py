"""A model's per-study view on an open test set (issue 53 point 2): each study's reference, the model's report and
its per-study values, from what ``Store.keep_reports`` kept of the model's scored submission.

Only a set whose text may be shown (``data.catalog.licensed`` false: IU-Xray today) has this view; for any other
the route answers one line and no text, and ``model_links`` offers no link. (The store keeps no licensed text
anyway: ``keep_reports`` stores a licensed set's rows with empty texts; this page does not rely on that.)

``/studies?model=M&dataset=D&track=T&page=N``: the names are checked against the board's (``DATASETS``, ``TRACKS``,
a model's name key), every text goes through ``html``'s escaping, ``PER_PAGE`` studies a page, in the stored order.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlencode

from rexrank.data import catalog
from rexrank.leaderboard import board, links
from rexrank.leaderboard.pages import assets
from rexrank.leaderboard.pages.html import Html, el, join, table, words
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, TRACK_LABELS, TRACKS, name_key
from rexrank.leaderboard.views import TITLE, Views

PATH = "/studies"
PER_PAGE = 50
MAX_VALUE = 200  # a query value longer than this is no name the board holds


def shows_text(dataset: str) -> bool:
    """Whether this view exists for ``dataset``: the catalog says its text is open."""
    return dataset in DATASETS and not catalog.licensed(dataset)


def href(model: str, dataset: str, track: str, page: int = 1) -> str:
    """The view's URL, relative to the pages' root."""
    pairs = [("model", model), ("dataset", dataset), ("track", track)] + ([("page", str(page))] if page > 1 else [])
    return "studies?" + urlencode(pairs)


def _rows(views: Views, model: str, dataset: str, track: str) -> list[dict[str, Any]]:
    """The kept rows of ``model`` (by name key) on ``dataset``/``track``, in the stored order (memoized per store
    generation)."""
    key = name_key(model)

    def compute() -> list[dict[str, Any]]:
        return [item for item in views.store.arena_reports(dataset)
                if item["track"] == track and name_key(item["model"]) == key]
    return views.memoized(("page-studies", key, dataset, track), compute)


def model_links(views: Views, model: str) -> Html:
    """The model page's links to its per-study views: one per open set and track where the board kept its
    reports; nothing where there are none."""
    items = []
    for dataset in DATASETS:
        if not shows_text(dataset):
            continue
        for track in TRACKS:
            if _rows(views, model, dataset, track):
                items.append(el("li", el("a", f"Every study of {DATASET_LABELS[dataset]} · {TRACK_LABELS[track]}: "
                                              "reference, report and per-study values",
                                         href=href(model, dataset, track))))
    if not items:
        return Html("")
    return el("section", el("h4", "Per-study view"), el("ul", *items), class_="studies-links")


def _num(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "–"
    return "–" if math.isnan(number) else f"{number:.4f}"


def _one(params: dict[str, list[str]], name: str) -> str | None:
    values = params.get(name) or []
    return values[0] if len(values) == 1 and len(values[0]) <= MAX_VALUE else None


def frame(title: str, body: Any) -> Html:
    """A page of its own beside the board's views (the per-study view, the plots): the pages' head, the title
    linking to the board, ``body`` as its main part."""
    header = el("header", el("h1", el("a", TITLE, href="./")))
    return Html("<!doctype html>\n" + el("html", el("head", assets.head(title)),
                                          el("body", header, el("main", body, id="board")), lang="en"))


class _Shown(NamedTuple):
    """The view a query shows: the model as stored, the set, the track, the page of how many, its kept rows."""
    model: str
    dataset: str
    track: str
    number: int
    pages: int
    rows: list[dict[str, Any]]


def _checked(views: Views, query: str) -> _Shown | tuple[int, str]:
    """The view ``query`` shows, else (status, the one line saying why)."""
    try:
        params = parse_qs(query, keep_blank_values=True, max_num_fields=20)
    except ValueError:
        return 400, "too many query parameters"
    model, dataset, track = _one(params, "model"), _one(params, "dataset"), _one(params, "track")
    if dataset not in DATASETS or track not in TRACKS or not model:
        return 404, "name a model, a test set and a track: open this view from a model's page"
    if not shows_text(dataset):
        return 404, (f"{DATASET_LABELS[dataset]}'s reports are licensed: the board shows its aggregates only, never "
                     "a study's text")
    rows = _rows(views, model, dataset, track)
    if not rows:
        return 404, "this model has no kept per-study results on this test set and track"
    raw_page = _one(params, "page") or "1"
    pages = max(1, -(-len(rows) // PER_PAGE))
    number = min(int(raw_page), pages) if raw_page.isdigit() and int(raw_page) >= 1 else 1
    return _Shown(rows[0]["model"], dataset, track, number, pages, rows)


def canonical_query(views: Views, query: str) -> str | None:
    """The query of the view ``query`` shows as ``href`` writes it (the model's stored name, the page number within
    the pages), what its ETag and memo key on; None where it shows none (``page`` answers why in one line)."""
    checked = _checked(views, query)
    if not isinstance(checked, _Shown):
        return None
    return href(checked.model, checked.dataset, checked.track, checked.number).split("?", 1)[1]


def page(views: Views, query: str) -> tuple[int, str]:
    """(status, HTML or one plain line) for a request's query."""
    checked = _checked(views, query)
    if not isinstance(checked, _Shown):
        return checked
    shown_name, dataset, track, number, pages, rows = checked
    metrics = sorted({m for row in rows for m in row["metrics"]}, key=board.column_label)
    headers = ["Study", "Reference", "Report"] + [board.column_label(m) for m in metrics]
    chunk = rows[(number - 1) * PER_PAGE: number * PER_PAGE]
    body_rows = [[row["study"], el("span", row["reference"]), el("span", row["report"])]
                 + [_num(row["metrics"].get(m)) for m in metrics] for row in chunk]
    label = f"{DATASET_LABELS[dataset]} · {TRACK_LABELS[track]}"
    pager = []
    for text_, target in (("‹ Previous", number - 1), ("Next ›", number + 1)):
        if 1 <= target <= pages:
            pager.append(el("a", text_, href=href(shown_name, dataset, track, target)))
    model_page = "./?" + links.query(links.Link(tab=links.MODELS_TAB, model=shown_name))
    body = join([el("h2", words(f"{shown_name}: every study of {label}")),
                 el("p", f"{len(rows)} studies · page {number} of {pages} · ",
                    el("a", "the model's page", href=model_page), class_="count"),
                 table(f"{shown_name} on {label}: reference, report and per-study values", headers, body_rows,
                       row_header=0, id="studies"),
                 el("nav", *pager, aria_label="Pages", class_="pager")])
    return 200, frame(f"{shown_name} · {label}", body)

