"""Plotly figures for the Space: metric bars with CI error bars, metric agreement heatmap, ranks across datasets.

Legends sit below the plot area, so a phone's width goes to the plot rather than to a column of model names. Every
figure goes through ``_themed``: transparent backgrounds and a mid-grey text and grid colour that read on gradio's
light and dark themes alike (the server does not know which one a reader uses), the title left-aligned and broken
over two lines where long (a 390 px phone cut it), and plotly's toolbar upright at the right edge, clear of it.
The bars are horizontal, one labelled row per model (vertical bars' category axis dropped every other label).
"""

from __future__ import annotations

import math

import pandas as pd

TOP_BARS = 25  # bars drawn: the best rows of the filtered table by the chosen metric
RANK_LINES = 10  # models in the rank-across-datasets plot: the best by mean rank
SCORED, PUBLISHED = "#1f77b4", "#9aabbb"
_LEGEND_BELOW = dict(orientation="h", yanchor="top", y=-0.32, xanchor="left", x=0)
_TEXT, _GRID = "#8b8b8b", "rgba(139, 139, 139, 0.3)"
TITLE_MARGIN = 70  # px above the plot area: a two-line title of 14 px type and its padding


def _themed(fig, title: str, height: int, **layout):
    """The layout every figure shares (see the module docstring)."""
    axis = dict(gridcolor=_GRID, zerolinecolor=_GRID, linecolor=_GRID, automargin=True)
    # The title hangs from the figure's top inside the top margin (``TITLE_MARGIN``: room for two lines). Anchored
    # by its bottom to the plot area instead, plotly placed a two-line title by its first line and the second fell
    # on the first bar (seen in the dark theme's screenshot).
    fig.update_layout(title=dict(text=title, x=0, xref="paper", xanchor="left", y=1, yref="container", yanchor="top",
                                 pad=dict(t=10), font=dict(size=14)),
                      height=height, paper_bgcolor="rgba(0,0,0,0)", plot_bgcolor="rgba(0,0,0,0)",
                      font=dict(color=_TEXT), modebar=dict(orientation="v", bgcolor="rgba(0,0,0,0)"), **layout)
    fig.update_xaxes(**axis)
    fig.update_yaxes(**axis)
    return fig


def metric_bars(df: pd.DataFrame, metric: str, label: str, top: int = TOP_BARS):
    """Horizontal bars of the first ``top`` rows with a value, in the order given (the caller sorts best first),
    the best at the top, every model's name labelled.

    Rows scored by rexrank (and submissions) carry their 95% CI as error bars; published rows are point estimates,
    drawn as a separate trace without error bars (no zero-width caps that would read as a CI).
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    if df.empty or metric not in df:
        return _themed(fig, f"{label}: no results", 260)
    data = df.dropna(subset=[metric]).head(top)
    if data.empty:
        return _themed(fig, f"{label}: no model here<br>has this metric", 260)
    order = list(data["model"])
    published = data[data["source"] == "published"]
    scored = data[data["source"] != "published"]
    if not scored.empty:
        low = (scored[metric] - scored[f"{metric}_low"]).clip(lower=0)
        high = (scored[f"{metric}_high"] - scored[metric]).clip(lower=0)
        has_ci = scored[f"{metric}_low"].notna() & scored[f"{metric}_high"].notna()
        fig.add_bar(y=scored["model"], x=scored[metric], orientation="h", name="scored by rexrank (95% CI)",
                    marker_color=SCORED, hovertext=list(scored["source"]),
                    error_x=dict(type="data", symmetric=False, array=high.where(has_ci).tolist(),
                                 arrayminus=low.where(has_ci).tolist()))
    if not published.empty:
        fig.add_bar(y=published["model"], x=published[metric], orientation="h", name="published (point estimate)",
                    marker_color=PUBLISHED, hovertext=list(published["source"]))
    # Every category gets its tick (plotly drops labels on a crowded axis); the best at the top.
    yaxis = dict(categoryorder="array", categoryarray=order[::-1], tickmode="array", tickvals=order,
                 ticktext=order, tickfont=dict(size=11))
    plot_height = 22 * len(data) + 40
    return _themed(fig, f"{label}:<br>top {len(data)} of the table", plot_height + TITLE_MARGIN + 70, yaxis=yaxis,
                   margin=dict(l=10, r=40, t=TITLE_MARGIN, b=70), barmode="overlay",
                   legend=dict(orientation="h", yanchor="top", y=-40 / plot_height, xanchor="left", x=0))


def agreement_heatmap(matrix: pd.DataFrame, title: str):
    import plotly.graph_objects as go

    values = [[None if (isinstance(v, float) and math.isnan(v)) else round(v, 2) for v in row]
              for row in matrix.to_numpy().tolist()]
    fig = go.Figure(go.Heatmap(z=values, x=list(matrix.columns), y=list(matrix.index), zmin=-1, zmax=1,
                               colorscale="RdBu", text=values, texttemplate="%{text}", showscale=False))
    return _themed(fig, title, 480, margin=dict(l=10, r=40, t=TITLE_MARGIN, b=10))


def rank_lines(long: pd.DataFrame, title: str):
    import plotly.graph_objects as go

    fig = go.Figure()
    for model, group in long.groupby("model", sort=False):
        fig.add_scatter(x=group["dataset"], y=group["rank"], mode="lines+markers", name=str(model))
    return _themed(fig, title, 560, yaxis=dict(autorange="reversed", title="rank (1 = best)"),
                   margin=dict(l=40, r=40, t=TITLE_MARGIN, b=10), legend=_LEGEND_BELOW)
