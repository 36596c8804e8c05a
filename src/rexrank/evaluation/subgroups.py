"""Subgroups and analyses of one model's per-study table.

- normal vs abnormal: CheXbert "No Finding" on the reference (positive = normal), when SembScore ran;
- per site, where the studies carry a site;
- GREEN: the share of error-free reports (no clinically significant error), overall and on abnormal studies;
- metric agreement: Spearman correlation of the per-study values of every metric pair.
All from the per-study table, with the same seeded bootstrap as the headline numbers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rexrank.evaluation.aggregate import metric_columns, metric_summary
from rexrank.evaluation.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, confidence_intervals
from rexrank.evaluation.runner import LABEL_PREFIX

NO_FINDING_COLUMN = LABEL_PREFIX + "no_finding"
NORMAL_COLUMN = "ref_normal"
SITE_COLUMN = "site"
ERROR_FREE_COLUMN = "green_error_free"
# GREEN's six clinically significant error categories (a)-(f) (StanfordAIMI GREEN prompt, METRICS.md "GREEN").
_SIGNIFICANT = re.compile(r"^(green_)?(clinically_)?significant_error", re.IGNORECASE)


def add_normal_column(frame: pd.DataFrame) -> pd.DataFrame:
    """``ref_normal``: True where CheXbert labels the reference "No Finding" positive, False otherwise."""
    if NO_FINDING_COLUMN in frame.columns:
        values = pd.to_numeric(frame[NO_FINDING_COLUMN], errors="coerce")
        frame[NORMAL_COLUMN] = (values == 1).to_numpy()
    return frame


def significant_error_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if _SIGNIFICANT.match(str(c)) and "insignificant" not in str(c).lower()]


def add_error_free_column(frame: pd.DataFrame) -> pd.DataFrame:
    """``green_error_free``: 1.0 where GREEN found no clinically significant error, NaN where GREEN could not tell.

    Uses the metric's own error_free column when it provides one, else the sum of its significant-error counts.
    """
    own = [c for c in frame.columns if str(c).lower() in ("error_free", "green_error_free")]
    if own:
        column = frame[own[0]]
        if str(column.dtype) == "boolean":
            frame[ERROR_FREE_COLUMN] = column.astype("Float64").to_numpy(dtype=float, na_value=np.nan)
        else:
            frame[ERROR_FREE_COLUMN] = pd.to_numeric(column, errors="coerce").astype(float)
        return frame
    columns = significant_error_columns(frame)
    if not columns:
        return frame
    counts = frame[columns].apply(pd.to_numeric, errors="coerce")
    if counts.shape[1] == 1 and counts.iloc[:, 0].map(lambda v: isinstance(v, (list, tuple))).any():
        counts = pd.DataFrame({"total": frame[columns[0]].map(lambda v: sum(v) if v is not None else np.nan)})
    total = counts.sum(axis=1, min_count=counts.shape[1])
    frame[ERROR_FREE_COLUMN] = np.where(total.isna(), np.nan, (total == 0).astype(float))
    return frame


def normal_mask(frame: pd.DataFrame) -> np.ndarray | None:
    """True for studies whose reference is normal (see ``add_normal_column``); None without the column."""
    if NORMAL_COLUMN not in frame.columns:
        return None
    return frame[NORMAL_COLUMN].to_numpy(dtype=bool)


def site_masks(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """One boolean mask per site, sites sorted; studies without a site form "(unknown)". Empty without the column."""
    if SITE_COLUMN not in frame.columns:
        return {}
    sites = frame[SITE_COLUMN].astype("string").fillna("(unknown)").to_numpy()
    return {str(site): sites == site for site in sorted(set(sites))}


def _group(frame: pd.DataFrame, mask, names, **boot) -> dict[str, Any]:
    part = frame.loc[np.asarray(mask, dtype=bool)]
    if len(part) == 0:
        return {"n": 0, "metrics": {}}
    summary = metric_summary(part, names, **boot)
    fields = ("mean", "ci_low", "ci_high", "leaderboard_value", "leaderboard_ci_low", "leaderboard_ci_high",
              "values")  # values: a corpus metric's every output with its CI, from the group's summed statistics
    return {"n": int(len(part)), "metrics": {k: {f: v[f] for f in fields if f in v} for k, v in summary.items()}}


def subgroup_summary(frame: pd.DataFrame, names: Sequence[str] | None = None, *, resamples: int = DEFAULT_RESAMPLES,
                     seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    boot = {"resamples": resamples, "seed": seed, "confidence": confidence}
    out: dict[str, Any] = {}
    normal = normal_mask(frame)
    if normal is not None:
        out["normal_vs_abnormal"] = {
            "definition": 'CheXbert "No Finding" positive on the reference = normal',
            "normal": _group(frame, normal, names, **boot),
            "abnormal": _group(frame, ~normal, names, **boot),
        }
    # A site column with no site at all is not a breakdown (it would be one "(unknown)" group).
    if SITE_COLUMN in frame.columns and frame[SITE_COLUMN].notna().any():
        out["sites"] = {site: _group(frame, mask, names, **boot) for site, mask in site_masks(frame).items()}
    if ERROR_FREE_COLUMN in frame.columns:
        green: dict[str, Any] = {}
        column = frame[ERROR_FREE_COLUMN].to_numpy(dtype=np.float64)
        green["error_free_rate"] = confidence_intervals({"x": column}, **boot)["x"]
        if normal is not None:
            abnormal = ~normal
            if abnormal.any():
                green["error_free_rate_abnormal"] = confidence_intervals({"x": column[abnormal]}, **boot)["x"]
        for entry in green.values():
            for key in [k for k in entry if k.startswith("leaderboard")]:
                del entry[key]
        out["green"] = green
    return out


def metric_agreement(frame: pd.DataFrame, names: Sequence[str] | None = None) -> dict[str, Any]:
    """Per-study Spearman correlation between every pair of metric columns (pairwise complete studies)."""
    columns = metric_columns(frame)
    names = [n for n in (names or columns) if n in columns]
    if len(names) < 2:
        return {}
    table = frame[[columns[n] for n in names]].astype(float)
    table.columns = names
    rho = table.corr(method="spearman")
    return {"spearman_per_study": {a: {b: _num(rho.loc[a, b]) for b in names} for a in names}}


def _num(value) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value
