"""The explorer's pages as HTML, built like the board's (``leaderboard.pages.html``: every text escaped, quotes
included, by ``el``/``text``; markup only from those helpers) and styled by the board's stylesheet plus a few rules
of its own (``EXPLORE_CSS``: reports side by side, wrapped report text).

- the list: every study of the view (``table.View``), a page of it at a time, with the reference, each run's report
  (shortened to ``PREVIEW_CHARS``) and each metric's value per run; column headers sort; plain GET forms;
- a study: the reports side by side, each metric's value per run, the study's subgroups, what each metric saw
  (``detail``), and the previous and next study of the same view;
- a run: its name, the files it read, its results.json values with their intervals.
"""

from __future__ import annotations

import math
from typing import Any

from rexrank.explore import detail as detail_mod
from rexrank.explore.data import GROUP_LABELS, GROUPS, Explorer
from rexrank.explore.table import Orders, View, parse_sort, sort_value, values_of
from rexrank.leaderboard.pages.html import Html, el, join, table, void, words

TITLE = "rexrank explore"
PREVIEW_CHARS = 160
PER_CHOICES = (25, 50, 100, 200, 500)
# CheXpert codes (chexbert.classes_to_frame, codes=True) as words.
CODE_WORDS = {1.0: "positive", 0.0: "negative", -1.0: "uncertain"}

EXPLORE_CSS = """
.reports { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: 1rem; }
.report { border: 1px solid color-mix(in srgb, currentColor 25%, transparent); border-radius: .4rem; padding: .6rem; }
.report h3 { margin: 0 0 .4rem; font-size: 1rem; }
.report-text, .judge { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; font: inherit; }
td.text { white-space: normal; min-width: 14rem; max-width: 28rem; overflow-wrap: anywhere; }
.pager a, .pager span { margin-right: .8rem; }
.saw { margin-top: 1.2rem; }
.saw ul { margin: .2rem 0 .6rem; padding-left: 1.2rem; }
.missed { color: #b3261e; } .matched { color: #1b6e35; }
@media (prefers-color-scheme: dark) { .missed { color: #ffb4ab; } .matched { color: #8fd19e; } }
form.explore-controls label { display: inline-block; margin: 0 .8rem .4rem 0; }
"""


def _num(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def _preview(value: str | None) -> str:
    if value is None:
        return "–"
    return value if len(value) <= PREVIEW_CHARS else value[:PREVIEW_CHARS].rstrip() + "…"


def _metric_label(name: str) -> str:
    from rexrank.metrics import REGISTRY

    try:
        return REGISTRY.spec(name).column
    except Exception:  # noqa: BLE001 - a plugin's metric that is not installed here: its name will do
        return name


def sort_label(explorer: Explorer, value: str) -> str:
    sort = parse_sort(explorer, value)
    if sort is None:
        return "file order"
    runs = explorer.runs
    if sort.b is None:
        return f"{_metric_label(sort.metric)} · {runs[sort.a].name}"
    return f"{_metric_label(sort.metric)} · {runs[sort.a].name} − {runs[sort.b].name}"


def _sorts(explorer: Explorer) -> list[str]:
    out = []
    for metric in explorer.metrics:
        for a, run in enumerate(explorer.runs):
            if metric in run.values:
                out.append(sort_value(metric, a))
        for a in range(len(explorer.runs)):
            for b in range(len(explorer.runs)):
                if a != b and all(metric in explorer.runs[k].values for k in (a, b)):
                    out.append(sort_value(metric, a, b))
    return out


# -- the page frame -------------------------------------------------------------------------------------------------

def _nav(explorer: Explorer, current: str) -> Html:
    items = [el("li", el("a", "Studies", href="./", aria_current="page" if current == "list" else None))]
    for k, run in enumerate(explorer.runs):  # every page names <base>: links hang from the explorer's root
        items.append(el("li", el("a", words(run.name), href=f"run/{k}",
                                 aria_current="page" if current == f"run/{k}" else None)))
    return el("nav", el("ul", *items), aria_label="Explorer views", class_="views")


def frame(explorer: Explorer, title: str, body: Any, current: str, base: str = "./", notice: str = "") -> Html:
    """A whole page: ``base`` is the explorer's root relative to this page (links and styles hang from it)."""
    from rexrank.leaderboard.pages import assets

    board_css = assets.url("board.css")
    head = join([Html('<meta charset="utf-8">'), void("link", rel="icon", href="data:,"),
                 void("meta", name="viewport", content="width=device-width, initial-scale=1"),
                 void("meta", name="color-scheme", content="light dark"),
                 void("base", href=base),
                 el("title", f"{title} · {TITLE}"),
                 void("link", rel="stylesheet", href=board_css),
                 void("link", rel="stylesheet", href="static/explore.css")])
    what = explorer.dataset or "references from a file"
    header = el("header", el("h1", el("a", TITLE, href="./")),
                el("p", f"{len(explorer)} studies of {what} ({explorer.track or 'track not recorded'} track), "
                        f"{len(explorer.runs)} run{'s' if len(explorer.runs) != 1 else ''}; references read from ",
                   el("code", explorer.references_source), ". Served on this machine only."))
    shown = el("p", notice, class_="notice", role="alert") if notice else ""
    main = el("main", shown, body, id="explore")
    return Html("<!doctype html>\n" + el("html", el("head", head),
                                          el("body", header, _nav(explorer, current), main), lang="en"))


def ignored_notice(ignored: list[str]) -> str:
    if not ignored:
        return ""
    return ("Left out of this link (not understood or not possible here): " + ", ".join(ignored)
            + ". The rest is shown.")


# -- the list ------------------------------------------------------------------------------------------------------

def _controls(explorer: Explorer, view: View) -> Html:
    sorts = [el("option", "file order", value="", selected=not view.sort)]
    sorts += [el("option", sort_label(explorer, value), value=value, selected=value == view.sort)
              for value in _sorts(explorer)]
    fields = [el("label", "Sort by ", el("select", *sorts, name="sort")),
              el("label", "Direction ", el("select", el("option", "highest first", value="desc", selected=view.desc),
                                           el("option", "lowest first", value="asc", selected=not view.desc),
                                           name="dir"))]
    chosen = dict(view.filters)
    for group in GROUPS:
        labels = explorer.groups.get(group)
        if labels is None:
            continue
        values = sorted({v for v in labels.tolist() if v})
        if not values:
            continue
        options = [el("option", "all", value="")] + [el("option", v, value=v, selected=chosen.get(group) == v)
                                                     for v in values]
        fields.append(el("label", f"{GROUP_LABELS[group]} ", el("select", *options, name=group)))
    fields.append(el("label", "Rows a page ", el("select", *(el("option", str(n), value=str(n),
                                                                selected=n == view.per) for n in PER_CHOICES),
                                                 name="per")))
    return el("form", *fields, el("button", "Apply", type="submit"), " ", el("a", "Clear all", href="./"),
              method="get", action="./", class_="controls explore-controls", role="search")


def _pager(view: View, page: int, pages: int) -> Html:
    parts = []
    for label, target, rel in (("« First", 1, None), ("‹ Previous", page - 1, "prev"), ("Next ›", page + 1, "next"),
                               (f"Last ({pages}) »", pages, None)):
        if 1 <= target <= pages and target != page:
            query = view.query(page=target)
            parts.append(el("a", label, href=f"./?{query}" if query else "./", rel=rel))
        else:
            parts.append(el("span", label, aria_disabled="true"))
    return el("nav", *parts, aria_label="Pages", class_="pager")


def list_page(explorer: Explorer, orders: Orders, view: View, ignored: list[str]) -> Html:
    rows_index, page, pages = orders.page(view)
    total = len(orders.order(view))
    view = view._replace(page=page)
    sort = parse_sort(explorer, view.sort) if view.sort else None
    headers: list[Any] = ["#", "Study", "Reference"] + [join(["Report: ", words(r.name)]) for r in explorer.runs]
    columns: list[tuple[str, int, int | None]] = []
    for metric in explorer.metrics:
        for a, run in enumerate(explorer.runs):
            if metric in run.values:
                columns.append((metric, a, None))
    if sort is not None and sort.b is not None:
        columns.append((sort.metric, sort.a, sort.b))
    for metric, a, b in columns:
        value = sort_value(metric, a, b)
        current = value == view.sort
        # A header sorts by its column; the current one flips the direction.
        target = view.query(sort=value, desc=not view.desc if current else True, page=1)
        label = sort_label(explorer, value)
        headers.append(el("a", words(label), href=f"./?{target}", aria_current="true" if current else None))
    study_query = view.query(page=1)
    arrays = {(m, a, b): values_of(explorer, parse_sort(explorer, sort_value(m, a, b))) for m, a, b in columns}
    body = []
    start = (page - 1) * view.per
    for k, i in enumerate(rows_index.tolist()):
        sid = explorer.study_ids[i]
        link_query = "&".join(q for q in (f"id={_quote(sid)}", study_query) if q)
        # words(): an id like "CXR3030_IM-1405" is never broken at its hyphen on a narrow screen.
        cells: list[Any] = [str(start + k + 1), el("a", words(sid), href=f"study?{link_query}"),
                            el("span", _preview(explorer.refs[i]))]
        cells += [el("span", _preview(run.hyps[i])) for run in explorer.runs]
        cells += [_num(float(arrays[c][i])) for c in columns]
        body.append(cells)
    count = (f"{total} of {len(explorer)} studies" if total != len(explorer) else f"{len(explorer)} studies")
    count += f" · page {page} of {pages} · sorted by {sort_label(explorer, view.sort)}"
    if view.sort:
        count += " (highest first)" if view.desc else " (lowest first)"
    parts = [el("h2", "Studies"), _controls(explorer, view), el("p", count, class_="count", role="status"),
             _pager(view, page, pages)]
    if body:
        grid = table("Studies, their reports and each metric's value per run", headers, body, row_header=1,
                     id="studies")
        parts.append(Html(grid.replace("<td><span>", '<td class="text"><span>')))
    else:
        parts.append(el("p", "No study is in this subgroup.", class_="empty"))
    parts.append(_pager(view, page, pages))
    return frame(explorer, "Studies", join(parts), "list", notice=ignored_notice(ignored))


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


# -- a study -------------------------------------------------------------------------------------------------------

def _items(title: str, values: list[str], cls: str) -> Html:
    if not values:
        return el("p", f"{title}: none", class_=cls)
    # One line of items: an n-gram or an entity per item, " · " between (the items are escaped text).
    return el("p", el("span", f"{title} ({len(values)}): ", class_=cls), join(values, " · "))


def _matched_lists(found: dict[str, list[str]], what: str) -> Html:
    return join([_items(f"{what} matched", found["matched"], "matched"),
                 _items(f"{what} in the reference, missed", found["missed"], "missed"),
                 _items(f"{what} only in the report", found["extra"], "extra")])


def _code(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "–"
    return "blank" if math.isnan(number) else CODE_WORDS.get(number, str(value))


def _saw(explorer: Explorer, details: detail_mod.Details, run: int, metric: str, hyp: str, ref: str) -> Html:
    label = _metric_label(metric)
    try:
        if metric == detail_mod.BLEU:
            grams = detail_mod.bleu_ngrams(hyp, ref)
            parts = []
            for n, found in grams.items():
                parts.append(_items(f"{n}-grams of the report found in the reference (clipped)", found["matched"],
                                    "matched"))
                parts.append(_items(f"{n}-grams of the report not in the reference", found["unmatched"], "missed"))
            body = join(parts)
        elif metric == detail_mod.RADGRAPH:
            found = details.radgraph(run, hyp, ref)
            body = (el("p", found["note"], class_="note") if "note" in found else
                    join([_matched_lists(found["entities"], "Entities"),
                          _matched_lists(found["relations"], "Relations")]))
        elif metric == detail_mod.SEMB:
            found = details.chexbert(run, hyp, ref)
            if "note" in found:
                body = el("p", found["note"], class_="note")
            else:
                rows = [[c, _code(r), _code(p), "same" if _code(r) == _code(p) else "differs"]
                        for c, r, p in zip(found["conditions"], found["reference"], found["prediction"])]
                body = table(f"CheXbert labels: reference and {explorer.runs[run].name}",
                             ["Condition", "Reference", "Report", ""], rows, row_header=0, sticky=False)
        elif metric == detail_mod.RATESCORE:
            found = details.ratescore(run, hyp, ref)
            body = (el("p", found["note"], class_="note") if "note" in found
                    else _matched_lists(found["entities"], "Entities"))
        else:
            row = details.pair_row(metric, run, hyp, ref)
            if not row:
                body = el("p", "Nothing more is kept for this metric (its pair row is not in the score cache).",
                          class_="note")
            else:
                items = []
                for key, value in row.items():
                    if isinstance(value, str):
                        items.append(join([el("h5", key), el("pre", value, class_="judge")]))
                    else:
                        items.append(el("p", f"{key}: {value}"))
                body = join(items)
    except Exception as exc:  # noqa: BLE001 - one metric's view failing must not take the page down
        body = el("p", f"{label}: not available ({detail_mod._first_line(exc)})", class_="note")
    return el("section", el("h4", label), body, class_="saw-metric")


def study_page(explorer: Explorer, orders: Orders, details: detail_mod.Details, view: View, study: int,
               ignored: list[str]) -> Html:
    sid = explorer.study_ids[study]
    previous, following, position = orders.neighbours(view, study)
    list_query = view.query(page=1 + (position // view.per if position is not None else 0))
    back = el("a", "Back to the list", href=f"./?{list_query}" if list_query else "./")
    keep = view.query(page=1)

    def study_link(index: int | None, label: str, rel: str) -> Html:
        if index is None:
            return el("span", label, aria_disabled="true")
        query = "&".join(q for q in (f"id={_quote(explorer.study_ids[index])}", keep) if q)
        return el("a", label, href=f"study?{query}", rel=rel)

    where = (f"{position + 1} of {len(orders.order(view))} in this order ({sort_label(explorer, view.sort)})"
             if position is not None else "not in this view's subgroup")
    nav = el("nav", study_link(previous, "‹ Previous study", "prev"), " ", back, " ",
             study_link(following, "Next study ›", "next"), el("span", f" · {where}"), aria_label="Studies",
             class_="pager")
    reports = [el("section", el("h3", "Reference"), el("pre", explorer.refs[study], class_="report-text"),
                  class_="report")]
    for run in explorer.runs:
        text_of = run.hyps[study]
        reports.append(el("section", el("h3", words(run.name)),
                          el("pre", text_of if text_of is not None else "(this run did not score this study)",
                             class_="report-text"), class_="report"))
    headers: list[Any] = ["Metric"] + [words(r.name) for r in explorer.runs]
    two = len(explorer.runs) == 2
    if two:
        headers.append(f"{explorer.runs[0].name} − {explorer.runs[1].name}")
    rows = []
    for metric in explorer.metrics:
        values = [float(r.values[metric][study]) if metric in r.values else float("nan") for r in explorer.runs]
        row: list[Any] = [_metric_label(metric)] + [_num(v) for v in values]
        if two:
            row.append(_num(values[0] - values[1]))
        rows.append(row)
    groups = [el("li", f"{GROUP_LABELS[g]}: {explorer.groups[g][study] or 'unknown'}")
              for g in GROUPS if g in explorer.groups]
    saw = []
    for k, run in enumerate(explorer.runs):
        hyp = run.hyps[study]
        if hyp is None:
            continue
        sections = [_saw(explorer, details, k, metric, hyp, explorer.refs[study])
                    for metric in explorer.metrics if metric in run.values]
        saw.append(el("section", el("h3", join(["What each metric saw: ", words(run.name)])), *sections,
                      class_="saw"))
    body = join([el("h2", words(f"Study {sid}")), nav, el("div", *reports, class_="reports"),
                 table(f"Study {sid}: each metric's value", headers, rows, row_header=0, sticky=False,
                       id="study-values"),
                 el("h3", "Subgroups"), el("ul", *groups), *saw, nav])
    return frame(explorer, f"Study {sid}", body, "study", notice=ignored_notice(ignored))


# -- a run ---------------------------------------------------------------------------------------------------------

def run_page(explorer: Explorer, k: int) -> Html:
    run = explorer.runs[k]
    results = run.results
    rows = []
    for name, entry in (results.get("metrics") or {}).items():
        if not isinstance(entry, dict):
            continue
        rows.append([_metric_label(name), _num(entry.get("mean")),
                     f"[{_num(entry.get('ci_low'))}, {_num(entry.get('ci_high'))}]", str(entry.get("n", "–"))])
    sorts = [el("li", el("a", f"Studies by {_metric_label(m)}, lowest first",
                         href=f"./?sort={_quote(sort_value(m, k))}&dir=asc"))
             for m in explorer.metrics if m in run.values]
    body = join([el("h2", words(run.name)),
                 el("p", "Results folder: ", el("code", run.source), "; predictions read from ",
                    el("code", run.predictions_path), "."),
                 table(f"{run.name}: each metric's mean with its interval", ["Metric", "Mean", "95% CI", "Studies"],
                       rows, row_header=0, sticky=False),
                 el("ul", *sorts)])
    return frame(explorer, run.name, body, f"run/{k}", base="../")
