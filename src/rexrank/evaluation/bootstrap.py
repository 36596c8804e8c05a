"""Bootstrap confidence intervals from the per-study table, vectorised.

Every metric is computed once per study; statistics never rescore. A resample of n studies with replacement is
represented by its count vector (how often each study was drawn), so the means of all metrics for a block of
resamples are one matrix product ``counts @ values``. The same counts are reused for every metric and for every
model of a comparison (that is what makes paired statistics paired).

The resample stream depends only on (n, resamples, seed): block sizes are a function of n, so a result is
reproducible whatever the caller asks for. Intervals are percentile intervals.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
# Count matrices are built in blocks of about this many cells, so memory stays bounded for any n.
_BLOCK_CELLS = 4_000_000


def _rows_per_block(n: int) -> int:
    return max(1, _BLOCK_CELLS // max(n, 1))


def count_blocks(n: int, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Iterator[np.ndarray]:
    """Yield (rows, n) float64 count matrices; all blocks together are ``resamples`` bootstrap resamples."""
    if n <= 0:
        raise ValueError("bootstrap needs at least one study")
    rng = np.random.default_rng(seed)
    rows = _rows_per_block(n)
    dtype = np.int32 if n < 2**31 // max(rows, 1) else np.int64
    done = 0
    while done < resamples:
        size = min(rows, resamples - done)
        # Draw indices, then count them per row: bincount on row-offset indices is one pass for the whole block.
        idx = rng.integers(0, n, size=(size, n), dtype=dtype)
        idx += (np.arange(size, dtype=dtype) * n)[:, None]
        counts = np.bincount(idx.ravel(), minlength=size * n).reshape(size, n)
        yield counts.astype(np.float64)
        done += size


def index_matrix(n: int, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """The (resamples, n) study indices behind ``count_blocks`` (same stream): for inspection and tests."""
    rng = np.random.default_rng(seed)
    rows = _rows_per_block(n)
    dtype = np.int32 if n < 2**31 // max(rows, 1) else np.int64
    out, done = [], 0
    while done < resamples:
        size = min(rows, resamples - done)
        out.append(rng.integers(0, n, size=(size, n), dtype=dtype))
        done += size
    return np.concatenate(out).astype(np.int64)


def resample_means(values: np.ndarray, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """(resamples, m) means of the m columns of ``values`` (n, m) over the same resamples.

    NaN entries are left out of each resample's mean (the count of usable studies varies per column); a resample
    without any usable study for a column gives NaN there.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    valid = ~np.isnan(values)
    filled = np.where(valid, values, 0.0)
    has_nan = not valid.all()
    out = []
    for counts in count_blocks(values.shape[0], resamples, seed):
        sums = counts @ filled
        if has_nan:
            with np.errstate(invalid="ignore", divide="ignore"):
                out.append(sums / (counts @ valid.astype(np.float64)))
        else:
            out.append(sums / values.shape[0])
    return np.concatenate(out, axis=0)


def aggregate(mean: np.ndarray | float, how: str) -> np.ndarray | float:
    """Leaderboard aggregation of a mean: itself, or its reciprocal (1/RadCliQ-v1, 1/FineRadScore)."""
    if how == "mean":
        return mean
    if how == "reciprocal_of_mean":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(np.asarray(mean) == 0, np.nan, 1.0 / np.asarray(mean))
    raise ValueError(f"unknown aggregation {how!r}")


def percentile_interval(samples: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column; NaN resamples are ignored."""
    alpha = (1.0 - confidence) / 2.0
    samples = np.asarray(samples, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        low = np.nanquantile(samples, alpha, axis=0) if samples.size else np.nan
        high = np.nanquantile(samples, 1.0 - alpha, axis=0) if samples.size else np.nan
    return low, high


@dataclass(frozen=True)
class Interval:
    mean: float
    ci_low: float
    ci_high: float
    n: int

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n}


def confidence_intervals(columns: Mapping[str, np.ndarray], *, aggregations: Mapping[str, str] | None = None,
                         resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                         confidence: float = DEFAULT_CONFIDENCE) -> dict[str, dict[str, Any]]:
    """Mean and bootstrap CI of every column, from one shared set of resamples.

    ``aggregations[name] == "reciprocal_of_mean"`` adds ``leaderboard_value`` with its own CI computed as the
    reciprocal of each resample's mean (never a mean of reciprocals); otherwise the leaderboard value is the mean.
    """
    names = list(columns)
    if not names:
        return {}
    matrix = np.column_stack([np.asarray(columns[c], dtype=np.float64) for c in names])
    n = matrix.shape[0]
    means_b = resample_means(matrix, resamples, seed) if n else np.full((0, len(names)), np.nan)
    low, high = percentile_interval(means_b, confidence)
    out: dict[str, dict[str, Any]] = {}
    aggregations = aggregations or {}
    for j, name in enumerate(names):
        column = matrix[:, j]
        usable = int((~np.isnan(column)).sum())
        mean = float(np.nanmean(column)) if usable else float("nan")
        entry = {"mean": mean, "ci_low": float(low[j]), "ci_high": float(high[j]), "n": usable,
                 "n_nan": int(n - usable)}
        how = aggregations.get(name, "mean")
        if how == "reciprocal_of_mean":
            recip = aggregate(means_b[:, j], how)
            r_low, r_high = percentile_interval(recip, confidence)
            entry.update(leaderboard_value=float(aggregate(mean, how)), leaderboard_ci_low=float(r_low),
                         leaderboard_ci_high=float(r_high))
        else:
            entry.update(leaderboard_value=mean, leaderboard_ci_low=entry["ci_low"],
                         leaderboard_ci_high=entry["ci_high"])
        out[name] = entry
    return out
