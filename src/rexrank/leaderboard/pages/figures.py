"""The board's plots as inline SVG drawn on the server (issue 48 point 4): no plotting script reaches a browser.

``/plots?<a page's query>`` (the pages' own query language, ``params.page_link``): for a dataset/track table, the
bars of its rows by the table's sort metric (the filters carry over) with their 95% CIs, and the metric agreement
heatmap of that dataset; for the overview, the ranks across datasets of the best models and every dataset's
agreement heatmap. The data is the views' (``bars_view``, ``agreement_view``, ``ranks_view``); this module only
draws it. Each figure has a ``<title>``/``<desc>`` and its numbers in a table under a ``<details>``; colours are
the stylesheet's variables (light and dark) through classes; bars are horizontal with labels left, so a 390 px
screen reads them (the SVG scales to the width, at most ``MAX_WIDTH_PX``).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from rexrank.leaderboard import board, links
from rexrank.leaderboard.pages.html import Html, el, join, table, text
from rexrank.leaderboard.pages.params import page_link
from rexrank.leaderboard.pages.render import href, plots_href, table_filters
from rexrank.leaderboard.pages.render import canonical_query as canonical
from rexrank.leaderboard.pages.studies import frame
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, TRACK_LABELS
from rexrank.leaderboard.views import PRIMARY, Views

PATH = "/plots"
WIDTH = 420  # the SVGs' coordinate width (viewBox units: 1 unit is 1 px at 420 px of screen)
MAX_WIDTH_PX = 640  # wider, the type would grow past the page's
LABEL_W = 150  # the bars' model-name column
NAME_CHARS = 20  # a longer name is cut with "…" in the figure (whole in its <title> and in the table)
ROW_H = 20
SERIES = 10  # rank lines' colours (classes s0..s9)
# The figures' colours: the stylesheet's variables, plus a second hue for negative taus and the lines' palette,
# each with a dark-theme value (on this page only: the other pages' bytes do not carry them).
STYLE = """
.fig{width:100%;max-width:%dpx;height:auto;display:block;font:12px system-ui,sans-serif}
.fig text{fill:var(--fg)}.fig .muted{fill:var(--muted)}.fig .grid{stroke:var(--line)}
.fig .scored{fill:var(--accent)}.fig .published{fill:var(--muted);fill-opacity:.55}
.fig .ci{stroke:var(--fg);stroke-width:1.5}.fig .pos{fill:var(--accent)}.fig .neg{fill:var(--neg)}
.fig .none{fill:var(--head)}.fig .line{fill:none;stroke-width:2}
:root{--neg:#bc4c00;--s0:#1f77b4;--s1:#d62728;--s2:#2ca02c;--s3:#9467bd;--s4:#e377c2;--s5:#8c564b;--s6:#17becf;
--s7:#bcbd22;--s8:#ff7f0e;--s9:#7f7f7f}
@media (prefers-color-scheme:dark){:root{--neg:#f0883e;--s0:#58a6ff;--s1:#ff7b72;--s2:#56d364;--s3:#d2a8ff;
--s4:#f778ba;--s5:#d29e72;--s6:#39d3e0;--s7:#e3e33a;--s8:#ffa657;--s9:#b1bac4}}
""".replace("%d", str(MAX_WIDTH_PX)) + "".join(
    f".fig .s{k}{{stroke:var(--s{k});fill:var(--s{k})}}.fig .line.s{k}{{fill:none}}" for k in range(SERIES))
SWATCH = "display:inline-block;width:.8em;height:.8em;margin-right:.3em;vertical-align:middle"


def _n(value: Any, digits: int = 3) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{float(value):.{digits}f}"


def _short(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"


def _svg(title: str, desc: str, height: float, *parts: str, width: int = WIDTH, **attrs: Any) -> Html:
    """An accessible SVG: role img, named by its <title>, described by its <desc>."""
    body = join([el("title", title), el("desc", desc), Html("".join(parts))])
    return Html(f'<svg xmlns="http://www.w3.org/2000/svg" class="fig" role="img" viewBox="0 0 {width} '
                f'{height:.0f}" width="{width}" height="{height:.0f}"{_attrs(attrs)}>{body}</svg>')


def _attrs(attrs: dict[str, Any]) -> str:
    return "".join(f' {k.replace("_", "-")}="{text(v)}"' for k, v in attrs.items())


def _numbers(summary: str, caption: str, headers: list[str], rows: list[list[Any]]) -> Html:
    """The figure's numbers as text: a table in a <details>."""
    return el("details", el("summary", summary), table(caption, headers, rows, row_header=0, sticky=False))


# -- metric bars ---------------------------------------------------------------------------------------------------

def bars(data: pd.DataFrame, metric: str, caption: str) -> Html:
    """Horizontal bars of ``data`` (``Views.bars_view``: best first), one row a model, the best at the top; rows
    scored by rexrank carry their 95% CI as an error bar, published rows are point estimates (no bar of a CI)."""
    label = board.column_label(metric)
    if data.empty:
        return el("p", f"No model in this table has a value of {label}: no bars to draw.", class_="empty")
    values = data[metric].astype(float)
    low, high = data.get(f"{metric}_low"), data.get(f"{metric}_high")
    bounds = [v for v in [*values, *(low if low is not None else []), *(high if high is not None else [])]
              if not math.isnan(float(v))]
    lo, hi = min(0.0, *bounds), max(0.0, *bounds)
    hi = hi if hi > lo else lo + 1
    x0, x1, top = LABEL_W + 6, WIDTH - 50, 8
    scale = (x1 - x0) / (hi - lo)

    def x(v: float) -> float:
        return x0 + (v - lo) * scale
    parts = []
    for tick in (lo, (lo + hi) / 2, hi):
        parts.append(f'<line class="grid" x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top}" '
                     f'y2="{top + ROW_H * len(data)}"/>'
                     f'<text class="muted" x="{x(tick):.1f}" y="{top + ROW_H * len(data) + 14}" '
                     f'text-anchor="middle">{text(_n(tick, 2))}</text>')
    table_rows = []
    for k, row in data.iterrows():
        y = top + ROW_H * k
        name, value = str(row["model"]), float(row[metric])
        scored = row.get("source") != "published"
        ci = (float(row[f"{metric}_low"]), float(row[f"{metric}_high"])) if (
            scored and low is not None and high is not None
            and not pd.isna(row[f"{metric}_low"]) and not pd.isna(row[f"{metric}_high"])) else None
        said = f"{name}: {_n(value)}" + (f" (95% CI {_n(ci[0])} to {_n(ci[1])})" if ci else "")
        start, end = sorted((x(0.0 if lo <= 0 <= hi else lo), x(value)))
        bar = (f'<rect class="bar {"scored" if scored else "published"}" x="{start:.1f}" y="{y + 3}" '
               f'width="{max(end - start, 0.5):.1f}" height="{ROW_H - 6}" data-value="{value:.6g}"/>')
        whisker = ""
        if ci:
            a, b, mid = x(ci[0]), x(ci[1]), y + ROW_H / 2
            whisker = (f'<path class="ci" d="M{a:.1f} {mid}H{b:.1f}M{a:.1f} {mid - 4}v8M{b:.1f} {mid - 4}v8" '
                       f'data-low="{ci[0]:.6g}" data-high="{ci[1]:.6g}"/>')
        parts.append(f'<g class="row">{el("title", said)}'
                     f'<text x="{LABEL_W}" y="{y + 14}" text-anchor="end">{text(_short(name))}</text>{bar}{whisker}'
                     f'<text class="muted" x="{x1 + 4}" y="{y + 14}">{text(_n(value))}</text></g>')
        table_rows.append([name, _n(value), _n(ci[0]) if ci else "–", _n(ci[1]) if ci else "–",
                           "scored by rexrank" if scored else "published"])
    title = f"{caption}: {label}, top {len(data)} of the table"
    desc = (f"Horizontal bars, best first; rows scored by rexrank with their 95% CI as error bars, published rows "
            f"as point estimates in grey. Best: {table_rows[0][0]} at {table_rows[0][1]}.")
    svg = _svg(title, desc, top + ROW_H * len(data) + 22, *parts, id="bars")
    return join([el("h3", title), svg, _numbers(f"The {len(data)} values as a table", title,
                                                ["Model", label, "95% CI low", "95% CI high", "Source"],
                                                table_rows)])


# -- metric agreement ----------------------------------------------------------------------------------------------

def agreement(matrix: pd.DataFrame, caption: str) -> Html:
    """Kendall tau between the metrics' rankings: a grid, rows labelled by metric, columns numbered (the same
    order), each cell's tau written in it; positive in the accent colour, negative in a second hue, the strength
    as the fill's opacity."""
    names = [str(c) for c in matrix.columns]
    values = matrix.to_numpy(dtype=float)
    if not names or all(math.isnan(v) for v in values.flatten()):
        return el("p", f"{caption}: too few models with values to compare the metrics' rankings.", class_="empty")
    cell, left, top = 30, 130, 18
    n = len(names)
    parts = [f'<text class="muted" x="{left + cell * j + cell / 2}" y="{top - 5}" text-anchor="middle">{j + 1}'
             f'</text>' for j in range(n)]
    rows = []
    for i, name in enumerate(names):
        y = top + cell * i
        parts.append(f'<text x="{left - 4}" y="{y + cell / 2 + 4}" text-anchor="end">{text(f"{i + 1} {name}")}'
                     f'</text>')
        for j in range(n):
            v = values[i, j]
            kind = "none" if math.isnan(v) else "pos" if v >= 0 else "neg"
            # At most about half the colour: the cell's number (the text colour) stays readable on it, both themes.
            opacity = "" if math.isnan(v) else f' style="fill-opacity:{0.08 + 0.47 * min(abs(v), 1):.2f}"'
            parts.append(f'<g>{el("title", f"{name} vs {names[j]}: tau {_n(v, 2)}")}'
                         f'<rect class="{kind}" x="{left + cell * j}" y="{y}" width="{cell - 1}" '
                         f'height="{cell - 1}"{opacity} data-tau="{_n(v, 2)}"/>'
                         f'<text x="{left + cell * j + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle" '
                         f'font-size="10">{_n(v, 2)}</text></g>')
        rows.append([f"{i + 1} {name}", *(_n(v, 2) for v in values[i])])
    title = f"Kendall tau between metric rankings, {caption}"
    desc = ("A grid of Kendall's tau between the model rankings that each pair of metrics gives; columns are "
            "numbered as the rows. Darker is stronger agreement; the second hue is disagreement.")
    svg = _svg(title, desc, top + cell * n + 4, *parts, width=max(WIDTH, left + cell * n + 4))
    return join([el("h3", title), svg, _numbers("The taus as a table", title,
                                                ["Metric", *(str(j + 1) for j in range(n))], rows)])


# -- ranks across datasets -----------------------------------------------------------------------------------------

def ranks(top: list[str], long: pd.DataFrame, caption: str) -> Html:
    """Each of ``top``'s models as a line of its rank (1 at the top) on each dataset, left to right; a legend and
    a table of the ranks below."""
    if not top or long.empty:
        return el("p", "No ranked results on this track yet: no ranks to draw.", class_="empty")
    datasets = [DATASET_LABELS[d] for d in DATASETS]
    worst = int(long["rank"].max())
    left, right, top_y, step = 62, 52, 28, 20  # room for the first and last datasets' names, centred
    gap = (WIDTH - left - right) / max(len(datasets) - 1, 1)
    xs = {d: left + gap * k for k, d in enumerate(datasets)}

    def y(rank: int) -> float:
        return top_y + step * (rank - 1)
    parts = [f'<text x="{xs[d]:.1f}" y="14" text-anchor="middle">{text(d)}</text>'
             f'<line class="grid" x1="{xs[d]:.1f}" x2="{xs[d]:.1f}" y1="{top_y - 6}" y2="{y(worst) + 6}"/>'
             for d in datasets]
    parts += [f'<text class="muted" x="4" y="{y(r) + 4}">{r}</text>' for r in range(1, worst + 1)]
    legend, rows = [], []
    for k, model in enumerate(top):
        mine = long[long["model"] == model]
        by = {str(d): int(r) for d, r in zip(mine["dataset"], mine["rank"])}
        points = [(xs[d], y(by[d])) for d in datasets if d in by]
        said = f"{model}: " + ", ".join(f"{d} {by[d]}" for d in datasets if d in by)
        path = "M" + "L".join(f"{px:.1f} {py:.1f}" for px, py in points)
        dots = "".join(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5"/>' for px, py in points)
        parts.append(f'<g class="s{k % SERIES}" data-model="{text(model)}">{el("title", said)}'
                     f'<path class="line s{k % SERIES}" d="{path}"/>{dots}</g>')
        legend.append(el("li", el("span", style=f"{SWATCH};background:var(--s{k % SERIES})"), model))
        rows.append([model, *(str(by.get(d, "–")) for d in datasets)])
    title = f"Rank by {board.column_label(PRIMARY)} across datasets, {caption} (top {len(top)} by mean rank)"
    desc = "Each model a line through its rank on each dataset, 1 (best) at the top; a dataset it lacks is skipped."
    svg = _svg(title, desc, y(worst) + 10, *parts, id="ranks")
    return join([el("h3", title), svg, el("ol", *legend, class_="legend"),
                 _numbers("The ranks as a table", title, ["Model", *datasets], rows)])


# -- the view ------------------------------------------------------------------------------------------------------

def _checked(views: Views, query: str) -> links.Link | tuple[int, str]:
    """The link of the plots ``query`` shows, else (status, the one line saying why)."""
    link = page_link(views, query)
    if link.ignored:
        return 400, (f"Not understood in this link: {', '.join(link.ignored)}. Open the plots from a table's "
                     "\"Plots of this table\" link.")
    if link.tab not in DATASETS and link.tab != links.DEFAULT_TAB:
        return 404, "Plots are of the overview and of each test set's table: open them from one of those pages."
    return link


def canonical_query(views: Views, query: str) -> str | None:
    """The query of the plots ``query`` shows as the pages write it (``render.canonical_query``), what their ETag
    and memo key on; None where it shows none (``page`` answers why in one line)."""
    link = _checked(views, query)
    return canonical(views, link) if isinstance(link, links.Link) else None


def page(views: Views, query: str) -> tuple[int, str]:
    """(status, HTML or one plain line) for a request's query."""
    link = _checked(views, query)
    if not isinstance(link, links.Link):
        return link
    track = TRACK_LABELS[link.track]
    if link.tab in DATASETS:
        dataset = link.tab
        metric = link.view.sort or PRIMARY
        rows = views.page_table(dataset, link.track, **table_filters(link)).shown
        caption = f"{DATASET_LABELS[dataset]} · {track}"
        choose = [el("a", label, href=plots_href(views, link._replace(view=link.view._replace(sort=m))),
                     aria_current="true" if m == metric else None) for label, m in views.metric_choices(link.track)]
        body = [el("h2", f"Plots of {caption}"),
                el("p", el("a", "Back to the table", href=href(link, views)), class_="count"),
                el("nav", "Bars by: ", join(choose, " · "), aria_label="Bars by metric"),
                bars(views.bars_view(rows, metric), metric, caption),
                agreement(views.agreement_view(dataset, link.track), f"{DATASET_LABELS[dataset]} · {track}")]
    else:
        caption = track
        top, long = views.ranks_view(link.track)
        body = [el("h2", f"Plots of the overview · {track}"),
                el("p", el("a", "Back to the overview", href=href(link, views)), class_="count"),
                ranks(top, long, track),
                *(agreement(views.agreement_view(d, link.track), f"{DATASET_LABELS[d]} · {track}")
                  for d in DATASETS)]
    return 200, frame(f"Plots · {caption}", join([el("style", Html(STYLE)), *body]))

