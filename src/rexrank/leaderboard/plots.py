"""Plotly figures for the Space: metric bars with CI error bars, metric agreement heatmap, ranks across datasets."""

from __future__ import annotations

import math

import pandas as pd


def metric_bars(df: pd.DataFrame, metric: str, label: str, top: int = 25):
    import plotly.graph_objects as go

    fig = go.Figure()
    if df.empty or metric not in df:
        fig.update_layout(title=f"{label}: no results")
        return fig
    data = df.dropna(subset=[metric]).head(top)
    low = (data[metric] - data[f"{metric}_low"]).where(data[f"{metric}_low"].notna(), 0)
    high = (data[f"{metric}_high"] - data[metric]).where(data[f"{metric}_high"].notna(), 0)
    fig.add_bar(x=data["model"], y=data[metric],
                error_y=dict(type="data", symmetric=False, array=high.tolist(), arrayminus=low.tolist()),
                marker_color=["#1f77b4" if s != "published" else "#9ab" for s in data["source"]],
                hovertext=[f"{s}" for s in data["source"]])
    fig.update_layout(title=f"{label} (95% CI where scored by rexrank; grey = published point estimate)",
                      xaxis_tickangle=-45, height=420, margin=dict(b=140))
    return fig


def agreement_heatmap(matrix: pd.DataFrame, title: str):
    import plotly.graph_objects as go

    values = [[None if (isinstance(v, float) and math.isnan(v)) else round(v, 2) for v in row]
              for row in matrix.to_numpy().tolist()]
    fig = go.Figure(go.Heatmap(z=values, x=list(matrix.columns), y=list(matrix.index), zmin=-1, zmax=1,
                               colorscale="RdBu", text=values, texttemplate="%{text}"))
    fig.update_layout(title=title, height=480)
    return fig


def rank_lines(long: pd.DataFrame, title: str):
    import plotly.graph_objects as go

    fig = go.Figure()
    for model, group in long.groupby("model", sort=False):
        fig.add_scatter(x=group["dataset"], y=group["rank"], mode="lines+markers", name=str(model))
    fig.update_layout(title=title, yaxis=dict(autorange="reversed", title="rank (1 = best)"), height=480)
    return fig
