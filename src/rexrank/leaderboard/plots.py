"""Plotly figures for the Space: metric bars with CI error bars, metric agreement heatmap, ranks across datasets.

Legends sit below the plot area, so a phone's width goes to the plot rather than to a column of model names.
"""

from __future__ import annotations

import math

import pandas as pd

TOP_BARS = 25  # bars drawn: the best rows of the filtered table by the chosen metric
RANK_LINES = 10  # models in the rank-across-datasets plot: the best by mean rank
SCORED, PUBLISHED = "#1f77b4", "#9aabbb"
_LEGEND_BELOW = dict(orientation="h", yanchor="top", y=-0.32, xanchor="left", x=0)


def metric_bars(df: pd.DataFrame, metric: str, label: str, top: int = TOP_BARS):
    """Bars of the first ``top`` rows with a value, in the order given (the caller sorts best first).

    Rows scored by rexrank (and submissions) carry their 95% CI as error bars; published rows are point estimates,
    drawn as a separate trace without error bars (no zero-width caps that would read as a CI).
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    if df.empty or metric not in df:
        fig.update_layout(title=f"{label}: no results", height=260)
        return fig
    data = df.dropna(subset=[metric]).head(top)
    if data.empty:
        fig.update_layout(title=f"{label}: no model here has this metric", height=260)
        return fig
    order = list(data["model"])
    published = data[data["source"] == "published"]
    scored = data[data["source"] != "published"]
    if not scored.empty:
        low = (scored[metric] - scored[f"{metric}_low"]).clip(lower=0)
        high = (scored[f"{metric}_high"] - scored[metric]).clip(lower=0)
        has_ci = scored[f"{metric}_low"].notna() & scored[f"{metric}_high"].notna()
        fig.add_bar(x=scored["model"], y=scored[metric], name="scored by rexrank (95% CI)", marker_color=SCORED,
                    error_y=dict(type="data", symmetric=False, array=high.where(has_ci).tolist(),
                                 arrayminus=low.where(has_ci).tolist()),
                    hovertext=list(scored["source"]))
    if not published.empty:
        fig.add_bar(x=published["model"], y=published[metric], name="published (point estimate)",
                    marker_color=PUBLISHED, hovertext=list(published["source"]))
    fig.update_layout(title=f"{label}: top {len(data)} of the table", xaxis=dict(categoryorder="array",
                      categoryarray=order, tickangle=-45), height=460, margin=dict(l=40, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0), barmode="overlay")
    return fig


def agreement_heatmap(matrix: pd.DataFrame, title: str):
    import plotly.graph_objects as go

    values = [[None if (isinstance(v, float) and math.isnan(v)) else round(v, 2) for v in row]
              for row in matrix.to_numpy().tolist()]
    fig = go.Figure(go.Heatmap(z=values, x=list(matrix.columns), y=list(matrix.index), zmin=-1, zmax=1,
                               colorscale="RdBu", text=values, texttemplate="%{text}", showscale=False))
    fig.update_layout(title=title, height=480, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def rank_lines(long: pd.DataFrame, title: str):
    import plotly.graph_objects as go

    fig = go.Figure()
    for model, group in long.groupby("model", sort=False):
        fig.add_scatter(x=group["dataset"], y=group["rank"], mode="lines+markers", name=str(model))
    fig.update_layout(title=title, yaxis=dict(autorange="reversed", title="rank (1 = best)"), height=560,
                      margin=dict(l=40, r=10, t=50, b=10), legend=_LEGEND_BELOW)
    return fig
