"""The views as HTML: each page is a function of the store (through ``views.Views``) and a checked link.

A page is its navigation, the controls of its view (plain GET forms: they work without JavaScript) and its live
part (``live``): what a search as typed and a changed board replace, fetched alone from ``routes``. Every value
comes from the views as they give it to the gradio board (cells with their intervals, marks and ranks, captions,
empty-table messages, the model page's and About's Markdown, Compare's data); this module only lays it out, through
``html``'s escaping helpers. Markdown from the views is rendered with raw HTML off (``markdown``), so even text a
view failed to escape stays text.

Rendered HTML of a view without a visitor's search or filters is kept in the views' one memo (``Views.memoized``,
per store generation); a filtered table is rendered on each request.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rexrank.leaderboard import about, board, compare_view, links
from rexrank.leaderboard.pages import assets, studies
from rexrank.leaderboard.pages.html import Html, el, join, table, void, words
from rexrank.leaderboard.pages.params import view_defaults
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, SOURCES, TRACK_LABELS, TRACKS, search_key
from rexrank.leaderboard.views import (PRIMARY, TITLE, TRAINED_CHOICES, Views, md_link, overview_label, when)

# The tabs a link may name whose page is the gradio board's (a form and an Arena need gradio): linked, not rendered.
GRADIO_TABS = {links.SUBMIT_TAB: "Submit", links.ARENA_TAB: "Arena"}
VIEW_NAMES = {links.DEFAULT_TAB: "Overview", **{d: DATASET_LABELS[d] for d in DATASETS}, links.MODELS_TAB: "Models",
              links.COMPARE_TAB: "Compare", links.ABOUT_TAB: "About"}
LIVE_ID = "board-live"
CONTROLS_ID = "board-controls"
# Rows of the overview or a dataset table on one page: the published board's tables (31 rows at most) fit whole, and
# a grown board's page weighs what the published board's does (issue 48: bytes <= 1.2x at 1,000 results); the
# rest is a link away, and "page=all" shows every row.
PAGE_ROWS = 40


def href(link: links.Link, views: Views | None = None) -> str:
    """A relative URL of ``link`` (the pages live under one path: only the query changes)."""
    defaults = view_defaults(views, link) if views is not None and link.tab in DATASETS else None
    query = links.query(link._replace(ignored=()), defaults)
    return f"?{query}" if query else "./"


def canonical_query(views: Views, link: links.Link) -> str:
    """The query of ``link`` as the pages write it (defaults left out, lists repeated)."""
    return links.query(link._replace(ignored=()), view_defaults(views, link) if link.tab in DATASETS else None)


def plots_href(views: Views, link: links.Link) -> str:
    """The URL of ``link``'s plots (``figures``: its filters and sort carried over)."""
    query = canonical_query(views, link)
    return "plots" + (f"?{query}" if query else "")


# -- Markdown from the views -------------------------------------------------------------------------------------

_MARKDOWN: Any = None
# About's anchors (about.meta_anchor) are the one tag the views' Markdown holds; rendered with raw HTML off, they
# come out as text and are put back as what they are: an empty span with an id of that form.
_ANCHOR = re.compile(r"&lt;span id=&quot;(meta-[a-z0-9_.-]+)&quot;&gt;&lt;/span&gt;")


def markdown(source: str) -> Html:
    """A view's Markdown as HTML: raw HTML off (text stays text), links only to safe schemes (markdown-it's rule),
    its tables with column headers and in a sideways-scrolling box like every table here."""
    global _MARKDOWN
    if _MARKDOWN is None:
        from markdown_it import MarkdownIt  # the space extra's; imported when a page first renders Markdown

        _MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")
    out = _ANCHOR.sub(r'<span id="\1"></span>', _MARKDOWN.render(source))
    out = out.replace("<th>", '<th scope="col">').replace("<table>", '<div class="table-box" tabindex="0"><table>')
    return Html(out.replace("</table>", "</table></div>"))


# -- pieces ------------------------------------------------------------------------------------------------------

def _nav(link: links.Link) -> Html:
    items = []
    for tab, name in VIEW_NAMES.items():
        current = "page" if tab == link.tab else None
        # data-ahead: a table's view, read ahead by the page's script once idle (board.js; not the others' pages)
        items.append(el("li", el("a", name, href=href(links.Link(tab=tab)), aria_current=current,
                                 data_ahead=tab == links.DEFAULT_TAB or tab in DATASETS)))
    for tab, name in GRADIO_TABS.items():
        # data-elsewhere: a gradio page, never fetched into this one by the script (board.js: viewLink)
        items.append(el("li", el("a", f"{name} ↗", href=f"../?{links.TAB}={tab}", data_elsewhere=True)))
    return el("nav", el("ul", *items), aria_label="Board views", class_="views")


def _tracks(link: links.Link) -> Html:
    items = [el("li", el("a", TRACK_LABELS[track], href=href(links.Link(tab=link.tab, track=track)),
                         aria_current="page" if track == link.track else None, data_ahead=True)) for track in TRACKS]
    return el("nav", el("ul", *items), aria_label="Tracks", class_="tracks")


def model_href(name: str) -> str:
    return href(links.Link(tab=links.MODELS_TAB, model=name))


# Compare from a table's rows: each row's model cell holds a checkbox of this form (``form=``: the boxes sit in
# the table, the form beside it), which opens Compare on the models ticked (``?tab=compare&compare=A&compare=B``).
PICK_FORM = "compare-pick"


def _model_cell(name: str, suffix: str = "", url: str = "", pick: bool = False) -> Html:
    """A model's name linking to its page, the marks the view put after it, and its own site when it has one;
    ``pick``: a checkbox that adds the model to a comparison (``pick_form``)."""
    site = el("a", "↗", href=url, rel="nofollow noopener ugc", class_="site",
              aria_label=f"{name}: the model's site") if url else ""
    cell = join([el("a", words(name), href=model_href(name)), words(suffix), " " if site else "", site])
    if not pick:
        return cell
    box = void("input", type="checkbox", name=links.COMPARE, value=name, form=PICK_FORM, class_="pick",
               aria_label=f"Compare {name}")
    # Side by side (board.css .pick-row): the box never sits on a line of its own above a long name.
    return el("span", box, el("span", cell), class_="pick-row")


def pick_form() -> Html:
    """The form the rows' checkboxes belong to: Compare on the models ticked (2 to 4; compare_view says why not)."""
    return el("form", void("input", type="hidden", name=links.TAB, value=links.COMPARE_TAB),
              el("button", "Compare the ticked models", type="submit"),
              f" (tick {compare_view.MIN_MODELS} to {compare_view.MAX_MODELS} rows)",
              id=PICK_FORM, method="get", action="./", class_="pick-form")


# -- overview ----------------------------------------------------------------------------------------------------

def overview_live(views: Views, link: links.Link) -> Html:
    def compute() -> Html:
        frame = views.overview_view(link.track)
        if frame.empty:
            return el("p", "No ranked results on this track yet.", class_="empty")
        columns = list(frame.columns)
        start, stop, pager = _pages(views, link, len(frame))
        rows = ([_model_cell(cell, pick=True) if column == "Model" else cell for column, cell in zip(columns, values)]
                for values in frame.iloc[start:stop].itertuples(index=False))
        return join([pick_form(), table(overview_label(link.track), columns, rows, row_header=columns.index("Model"),
                                        id="overview"), pager,
                     el("p", el("a", "Plots: ranks across datasets, metric agreement", href=plots_href(views, link)),
                        class_="downloads")])
    return views.memoized(("page-overview", link.track, link.page), compute)


def _pages(views: Views, link: links.Link, total: int) -> tuple[int, int, Html]:
    """The rows ``link``'s page shows of ``total`` (start, stop) and the links to the others ("" on one page). A
    page past the last shows the last."""
    if total <= PAGE_ROWS:
        return 0, total, ""
    count = -(-total // PAGE_ROWS)
    if link.page == links.ALL_PAGES:
        return 0, total, el("nav", el("a", f"Show {PAGE_ROWS} rows a page", href=href(link._replace(page=1), views)),
                            aria_label="Pages of this table", class_="pager")
    page = min(link.page, count)
    start, stop = (page - 1) * PAGE_ROWS, min(page * PAGE_ROWS, total)

    def to(number: int, text: str, rel: str | None = None) -> Html:
        return el("a", text, href=href(link._replace(page=number), views), rel=rel)
    return start, stop, el("nav", to(page - 1, "← Previous", "prev") if page > 1 else "",
                           f" Rows {start + 1}–{stop} of {total} ",
                           to(page + 1, "Next →", "next") if page < count else "",
                           " · ", to(links.ALL_PAGES, f"All {total} rows"), aria_label="Pages of this table",
                           class_="pager")


def overview_controls(views: Views, link: links.Link) -> Html:
    return join([el("h2", "Overview"), _tracks(link)])


# -- a dataset and track -----------------------------------------------------------------------------------------

def table_filters(link: links.Link) -> dict[str, Any]:
    view = link.view
    return {"search": view.search, "institutions": list(view.institutions), "years": list(view.years),
            "model_types": list(view.model_types), "trained": view.trained, "sources": list(view.sources),
            "columns": list(view.columns) if view.columns is not None else None, "sort_by": view.sort or PRIMARY}


def dataset_live(views: Views, link: links.Link) -> Html:
    plain = link.view == links.ViewLink()
    if plain:
        return views.memoized(("page-table", link.tab, link.track, link.page), lambda: _dataset_live(views, link))
    return _dataset_live(views, link)


def _dataset_live(views: Views, link: links.Link) -> Html:
    dataset, track = link.tab, link.track
    page = views.page_table(dataset, track, **table_filters(link))
    labels = dict(views.metric_choices(track))  # shown label -> metric
    sort = link.view.sort or PRIMARY
    headers = []
    for column in page.frame.columns:
        metric = labels.get(column)
        if metric is None:
            headers.append(column)
        else:  # a column header sorts by its metric (the link keeps the rest of the view)
            target = link._replace(view=link.view._replace(sort=metric), page=1)
            headers.append(el("a", words(column), href=href(target, views),
                              aria_current="true" if metric == sort else None))
    rows = []
    start, stop, pager = _pages(views, link, len(page.frame))
    shown = page.shown.iloc[start:stop]
    at = list(page.frame.columns).index("Model")
    for k, values in enumerate(page.frame.iloc[start:stop].itertuples(index=False)):
        cells = list(values)
        name, url = str(shown["model"].iloc[k]), str(shown["url"].iloc[k] or "")
        prefix = md_link(name, url)  # what the view's Model cell starts with; the rest are its marks
        marks = cells[at][len(prefix):] if cells[at].startswith(prefix) else ""
        # md_link makes a link only of a URL it accepts (an escaped name never starts with "[")
        cells[at] = _model_cell(name, marks, url if prefix.startswith("[") else "", pick=True)
        rows.append(cells)
    total = len(page.full)
    # Search as typed in the browser (board.js), where it gives the server's rows: ranked by the board's metric, a
    # row's cells do not depend on the rows beside it (by another metric its rank is its position among the rows
    # shown: board.view_ranks), so hiding the rows a search leaves out is the server's answer. "complete": every
    # row the other filters keep is here, each with its search key (board's, computed here); "partial": the page
    # was rendered for a search, and the script asks once for the rows without it. A table in pages is searched
    # by the server: the rows a search finds may be on another page.
    local: dict[str, Any] = {}
    keys: list[dict[str, Any]] | None = None
    if sort == PRIMARY and not pager and (not link.view.search or total <= PAGE_ROWS):
        complete = not link.view.search and not page.frame.empty
        local = {"data_local": "complete" if complete else "partial", "data_total": total,
                 "data_all": _count(total, total), "data_some": _count("{n}", total)}
        if complete:
            keys = [{"data_key": key} for key in shown["search_key"]]
            if len(shown) < total:  # the terms are read against every row's key (board.search_terms)
                local["data_every"] = board.SEARCH_SEPARATOR.join(page.full["search_key"])
    # The pick form even without rows: models ticked before a search that hides them stay in it (board.js).
    parts = [el("p", _count(len(page.frame), total), class_="count", role="status", **local), pick_form()]
    if page.empty:
        parts.append(el("div", markdown(page.empty), class_="empty"))
    else:
        parts.append(table(page.label, headers, rows, row_header=list(page.frame.columns).index("Model"),
                           id=f"table-{dataset}-{track}", row_attrs=keys))
        parts.append(pager)
    csv = f"csv/{dataset}/{track}"
    parts.append(el("p", el("a", "CSV", href=csv, download=True), " · ",
                    el("a", "JSON", href=f"json/{dataset}/{track}"), " of every row of this table · ",
                    el("a", "Plots of this table", href=plots_href(views, link)), class_="downloads"))
    return join(parts)


def _count(shown: Any, total: int) -> str:
    return f"{total} rows" if shown == total else f"{shown} of {total} rows"


_FOLD: str | None = None


def search_fold() -> str:
    """What the page's script needs to read a search the way ``board.search_terms`` does, generated from that rule
    (JSON): every ASCII character's ``search_key`` (for ASCII text the key is its characters' keys joined, a test
    holds this), the characters that separate alternatives (``board.ALTERNATIVES``) and words (``str.split``: the
    ones ``isspace``), what joins two rows' keys (``board.SEARCH_SEPARATOR``), how many characters are read
    (``board.SEARCH_CHARS``) and the longest search a link keeps (``links.MAX_VALUE``). A search holding any other
    character, or longer, is answered by the server."""
    global _FOLD
    if _FOLD is None:
        ascii_chars = [chr(c) for c in range(128)]
        _FOLD = json.dumps({"keys": [search_key(c) for c in ascii_chars],
                            "alternatives": "".join(c for c in ascii_chars if board.ALTERNATIVES.fullmatch(c)),
                            "spaces": "".join(c for c in ascii_chars if c.isspace()),
                            "separator": board.SEARCH_SEPARATOR,
                            "chars": board.SEARCH_CHARS, "max": links.MAX_VALUE}, separators=(",", ":"))
    return _FOLD


def _checks(name: str, legend: str, choices: list[tuple[str, Any]], chosen: list[Any]) -> Html:
    boxes = [el("label", void("input", type="checkbox", name=name, value=value, checked=value in chosen), " ", label)
             for label, value in choices]
    return el("fieldset", el("legend", legend), *boxes)


def dataset_controls(views: Views, link: links.Link) -> Html:
    dataset, track = link.tab, link.track
    view = link.view
    choices = views.filter_choices(dataset, track)
    metrics = views.metric_choices(track)
    shown_columns = list(view.columns) if view.columns is not None else [m for _, m in metrics]
    fields = [void("input", type="hidden", name=links.TAB, value=dataset),
              void("input", type="hidden", name=links.TRACK, value=track)]
    search = el("label", "Search models and institutions",
                void("input", type="search", name=links.PARAMS["search"], value=view.search, autocomplete="off",
                     placeholder="e.g. maira 2 | medgemma", id="board-search", data_fold=search_fold(),
                     data_page=links.PAGE,  # a new search starts at the first page of its rows
                     data_script=assets.url("search.js")),
                class_="search")
    groups = []
    if len(choices.institutions) > 1:
        groups.append(_checks(links.PARAMS["institutions"], "Institution",
                              [(i, i) for i in choices.institutions], list(view.institutions)))
    if len(choices.years) > 1:
        groups.append(_checks(links.PARAMS["years"], "Year", [(str(y), y) for y in choices.years], list(view.years)))
    if len(choices.model_types) > 1:
        groups.append(_checks(links.PARAMS["model_types"], "Model type", [(t, t) for t in choices.model_types],
                              list(view.model_types)))
    groups.append(_checks(links.PARAMS["sources"], "Source", [(s, s) for s in SOURCES], list(view.sources)))
    if choices.show_trained:
        radios = [el("label", void("input", type="radio", name=links.PARAMS["trained"], value=value,
                                   checked=value == view.trained), " ", label) for label, value in TRAINED_CHOICES]
        groups.append(el("fieldset", el("legend", "Trained on this dataset"), *radios))
    groups.append(_checks(links.PARAMS["columns"], "Columns", metrics, shown_columns))
    options = [el("option", label, value=metric, selected=metric == (view.sort or PRIMARY)) for label, metric in metrics]
    groups.append(el("label", "Rank and sort by ", el("select", *options, name=links.PARAMS["sort"])))
    filtered = view._replace(search="") != links.ViewLink()
    details = el("details", el("summary", "Filters, columns and sorting"), *groups, open=filtered)
    reset = el("a", "Clear all", href=href(links.Link(tab=dataset, track=track)))
    form = el("form", *fields, search, details, el("button", "Apply", type="submit"), " ", reset,
              method="get", action="./", class_="controls", role="search")
    return join([el("h2", DATASET_LABELS[dataset]), _tracks(link), form])


# -- a model -----------------------------------------------------------------------------------------------------

def model_controls(views: Views, link: links.Link, model: str | None) -> Html:
    names = views.models_list()
    options = [el("option", name, value=name, selected=name == model) for name in names]
    form = el("form", void("input", type="hidden", name=links.TAB, value=links.MODELS_TAB),
              el("label", "Model ", el("select", *options, name=links.MODEL)), " ", el("button", "Show", type="submit"),
              method="get", action="./", class_="controls")
    return join([el("h2", "Models"), form])


def model_live(views: Views, model: str | None) -> Html:
    if not model:
        return el("p", "No model on this board yet.", class_="empty")
    return views.memoized(("page-model", model), lambda: _model_live(views, model))


def _model_live(views: Views, model: str) -> Html:
    frame, details = views.model_view(model)
    parts = [el("h3", model)]
    if not frame.empty:
        columns = list(frame.columns)
        parts.append(table(f"{model}: every result on this board", columns,
                           (list(values) for values in frame.itertuples(index=False)), row_header=0))
    parts.append(el("div", markdown(details), class_="model-details"))
    parts.append(studies.model_links(views, model))  # its per-study view on open sets (issue 53)
    return join(parts)


# -- compare -----------------------------------------------------------------------------------------------------

PICK_NOTE = (f"Choose {compare_view.MIN_MODELS} to {compare_view.MAX_MODELS} models to compare them on every "
             "board.")


def compare_controls(views: Views, link: links.Link) -> Html:
    names = views.models_list()
    picked = list(link.compare)
    selects = []
    for k in range(compare_view.MAX_MODELS):
        current = picked[k] if k < len(picked) else ""
        options = [el("option", "—", value="")] + [el("option", name, value=name, selected=name == current)
                                                   for name in names]
        selects.append(el("label", f"Model {k + 1} ", el("select", *options, name=links.COMPARE)))
    form = el("form", void("input", type="hidden", name=links.TAB, value=links.COMPARE_TAB), *selects,
              el("button", "Compare", type="submit"), method="get", action="./", class_="controls")
    return join([el("h2", "Compare"), form])


def _num(value: Any, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def compare_live(views: Views, link: links.Link) -> Html:
    picked = list(link.compare)
    if not picked:
        return el("p", PICK_NOTE, class_="empty")
    result = compare_view.compare(views, picked)
    if "error" in result:
        return el("p", result["error"], class_="empty")
    if not result["boards"]:
        return el("p", "None of these models has a result on a board yet.", class_="empty")
    parts = []
    for entry in result["boards"]:
        columns = entry["columns"]  # in the order picked (compare_view's)
        labels = {m["metric"]: m["label"] for m in entry["metrics"]}
        heads = ["Metric"] + [join([el("a", words(c["model"]), href=model_href(c["model"])),
                                    " (published)" if c["source"] == "published" else ""]) for c in columns]
        rows = [[f"Rank ({board.metric_name(PRIMARY)})"] + ["–" if c["rank"] is None else str(c["rank"])
                                                           for c in columns]]
        for metric in entry["metrics"]:
            name = metric["metric"]
            if all(c["values"][name] == "–" for c in columns):
                continue
            rows.append([metric["label"]] + [c["values"][name] + ("" if c["ranks"][name] is None
                                                                   else f" · #{c['ranks'][name]}") for c in columns])
        parts.append(el("h3", entry["label"]))
        parts.append(table(f"{entry['label']}: values [95% CI] · rank", heads, rows, row_header=0))
        parts.append(_paired(entry["paired"], labels, entry["label"]))
    return join(parts)


def _paired(paired: dict[str, Any], labels: dict[str, str], board_label: str) -> Html:
    if not paired.get("pairwise"):
        return el("p", paired.get("note") or "", class_="note")
    rows = [[f"{pair['a']} − {pair['b']}", labels.get(metric, metric), _num(test.get("difference")),
             f"[{_num(test.get('ci_low'))}, {_num(test.get('ci_high'))}]", test.get("p_bootstrap_text", "–"),
             test.get("p_randomization_text", "–"), test.get("verdict", "")]
            for pair in paired["pairwise"] for metric, test in pair["tests"].items()]
    ranks = [[model, labels.get(metric, metric), _num(r["rank"], 0),
              f"[{_num(r['rank_ci_low'], 0)}, {_num(r['rank_ci_high'], 0)}]"]
             for metric, ranking in paired["ranking"].items() for model, r in ranking["models"].items()]
    return join([el("p", f"Paired tests on {paired['n_studies']} shared studies (per-study values kept by the "
                         "board)."),
                 el("p", paired["note"], class_="note") if paired.get("note") else "",
                 el("p", paired["multiple_comparisons"], class_="note multiple")
                 if paired.get("multiple_comparisons") else "",
                 table(f"{board_label}: paired tests", list(compare_view.PAIRED_HEADERS), rows, row_header=0),
                 table(f"{board_label}: rank intervals", ["Model", "Metric", "Rank", "Rank interval"], ranks,
                       row_header=0)])


# -- about -------------------------------------------------------------------------------------------------------

def about_live(views: Views) -> Html:
    def compute() -> Html:
        cite = el("section", el("h3", "Cite ReXrank (BibTeX)"),
                  el("pre", el("code", about.CITATION_BIBTEX.strip()), tabindex="0"), id="cite")
        return join([el("div", markdown(views.about_markdown()), class_="about"), cite])
    return views.memoized(("page-about",), compute)


# -- the page ----------------------------------------------------------------------------------------------------

def _gradio_only(tab: str) -> Html:
    return el("p", f"{GRADIO_TABS[tab]} is on the ", el("a", "gradio page", href=f"../?{links.TAB}={tab}"), ".")


def heading(views: Views, link: links.Link) -> tuple[str, Html]:
    """(the page's title, its view's controls) for a checked link: what a changed board may change above the live
    part (the filter choices, the models to pick), fetched alone by the page's script (``routes``' ``/controls``)."""
    tab = link.tab
    if tab == links.DEFAULT_TAB:
        return "Overview", overview_controls(views, link)
    if tab in DATASETS:
        return f"{DATASET_LABELS[tab]} · {TRACK_LABELS[link.track]}", dataset_controls(views, link)
    if tab == links.MODELS_TAB:
        model = link.model or views.default_model()
        return model or "Models", model_controls(views, link, model)
    if tab == links.COMPARE_TAB:
        return "Compare", compare_controls(views, link)
    if tab == links.ABOUT_TAB:
        return "About", el("h2", "About")
    return GRADIO_TABS[tab], el("h2", GRADIO_TABS[tab])


def updated(views: Views) -> str:
    """When the board last changed, as the page's header says it."""
    return when(views.updated())


def live(views: Views, link: links.Link) -> Html:
    """The part of a page that a search as typed and a changed board replace (its controls are not rendered)."""
    tab = link.tab
    if tab == links.DEFAULT_TAB:
        return overview_live(views, link)
    if tab in DATASETS:
        return dataset_live(views, link)
    if tab == links.MODELS_TAB:
        return model_live(views, link.model or views.default_model())
    if tab == links.COMPARE_TAB:
        return compare_live(views, link)
    if tab == links.ABOUT_TAB:
        return about_live(views)
    return _gradio_only(tab)


def page(views: Views, link: links.Link, generation: str, poll_s: int) -> Html:
    """The whole page of a checked link; ``generation``: the store's, which the page's script asks after every
    ``poll_s`` seconds (``routes``' ``/version``)."""
    title, controls = heading(views, link)
    notice = el("p", links.notice(link), class_="notice", role="alert") if link.ignored else ""
    header = el("header", el("h1", el("a", TITLE, href="./")),
                el("p", "AI-written chest X-ray reports ranked by the ReXrank metrics (by 1/RadCliQ-v1), with 95% "
                        "confidence intervals for results scored by rexrank. ",
                   el("a", "Paper", href=about.PAPER_URL), " · ", el("a", "rexrank.ai", href=about.SITE_URL),
                   " · Last updated: ", el("span", updated(views), id="board-updated", class_="nowrap")))
    main = el("main", notice, el("div", controls, id=CONTROLS_ID), el("div", live(views, link), id=LIVE_ID,
                                                                       aria_live="polite"), id="board",
              data_generation=generation, data_poll_s=str(poll_s))
    # search.js first where there is a search box: board.js starts it
    scripts = el("script", Html(assets.loader(["search.js", "board.js"] if link.tab in DATASETS else ["board.js"])))
    return Html("<!doctype html>\n" + el("html", el("head", assets.head(title)),
                                         el("body", header, _nav(link), main, scripts), lang="en"))
