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

from rexrank import progress
from rexrank.metrics.aggregation import MEAN, aggregate, corpus_aggregate, corpus_outputs, corpus_values, leaderboard_values

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
# The most resamples (and permutations) a run may ask for: 100,000 already pins a 95% percentile interval and a
# p-value to ~1e-5, and costs seconds on 10,000 studies; far more only burns minutes (rexrank.evaluation.harness).
MAX_RESAMPLES = 100_000
# Count (and swap) matrices are built in blocks of about this many cells, so memory stays bounded for any n.
_BLOCK_CELLS = 4_000_000


def rows_per_block(n: int) -> int:
    """Rows of each count (or swap) block for n studies: part of the streams' definition, a function of n only."""
    return max(1, _BLOCK_CELLS // max(n, 1))


def count_blocks(n: int, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Iterator[np.ndarray]:
    """Yield (rows, n) float64 count matrices; all blocks together are ``resamples`` bootstrap resamples."""
    if n <= 0:
        raise ValueError("bootstrap needs at least one study")
    rng = np.random.default_rng(seed)
    rows = rows_per_block(n)
    dtype = np.int32 if n < 2**31 // max(rows, 1) else np.int64
    done = 0
    while done < resamples:
        size = min(rows, resamples - done)
        # Draw indices, then count them per row: bincount on row-offset indices is one pass for the whole block.
        idx = rng.integers(0, n, size=(size, n), dtype=dtype)
        idx += (np.arange(size, dtype=dtype) * n)[:, None]
        counts = np.bincount(idx.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)
        del idx  # only the float block stays alive while the caller uses it
        yield counts
        done += size


def swap_blocks(n: int, permutations: int, seed: int = DEFAULT_SEED) -> Iterator[np.ndarray]:
    """Yield (rows, n) float64 0/1 matrices; all blocks together are ``permutations`` approximate-randomization
    draws (1: swap the two models' values of that study). Their own stream (``[seed, 1]``), independent of the
    resamples', and like them a function of (n, permutations, seed) only: every pair of models sees the same swaps."""
    if n <= 0:
        raise ValueError("a randomization test needs at least one study")
    rng = np.random.default_rng([seed, 1])
    rows = rows_per_block(n)
    done = 0
    while done < permutations:
        size = min(rows, permutations - done)
        yield rng.integers(0, 2, size=(size, n), dtype=np.int8).astype(np.float64)
        done += size


def index_matrix(n: int, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """The (resamples, n) study indices behind ``count_blocks`` (same stream): for inspection and tests."""
    rng = np.random.default_rng(seed)
    rows = rows_per_block(n)
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
    # Usually well under a second (silent then, rexrank.progress); very large sets or resample counts show progress.
    with progress.task(resamples, "bootstrap", unit="resample") as task:
        for counts in count_blocks(values.shape[0], resamples, seed):
            sums = counts @ filled
            if has_nan:
                with np.errstate(invalid="ignore", divide="ignore"):
                    out.append(sums / (counts @ valid.astype(np.float64)))
            else:
                out.append(sums / values.shape[0])
            task.update(counts.shape[0])
    return np.concatenate(out, axis=0)


def percentile_interval(samples: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column; NaN resamples are ignored."""
    alpha = (1.0 - confidence) / 2.0
    samples = np.asarray(samples, dtype=np.float64)
    if not samples.size:  # no resample (no study): NaN per column, same shape as with resamples
        nan = np.full(samples.shape[1:], np.nan)
        return nan, nan
    if not np.isnan(samples).any():
        # The same numbers as nanquantile without NaNs, but one vectorised call: nanquantile of a matrix runs its
        # 1-d routine column by column (0.2 ms each: most of a 24-model comparison's time for its ~4,000 columns).
        return np.quantile(samples, alpha, axis=0), np.quantile(samples, 1.0 - alpha, axis=0)
    with np.errstate(invalid="ignore"):
        low = np.nanquantile(samples, alpha, axis=0)
        high = np.nanquantile(samples, 1.0 - alpha, axis=0)
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

    Mean, counts, leaderboard value and its flags come from ``rexrank.metrics.aggregation.aggregate``
    (``aggregations[name]``, default "mean"). The leaderboard value's CI is the percentile interval of each
    resample's leaderboard value — for a reciprocal, of each resample's 1/mean (never a mean of reciprocals).
    """
    names = list(columns)
    if not names:
        return {}
    matrix = np.column_stack([np.asarray(columns[c], dtype=np.float64) for c in names])
    n = matrix.shape[0]
    means_b = resample_means(matrix, resamples, seed) if n else np.full((0, len(names)), np.nan)
    low, high = percentile_interval(means_b, confidence)
    aggregations = aggregations or {}
    return {name: _entry(matrix[:, j], means_b[:, j], float(low[j]), float(high[j]), aggregations.get(name, "mean"),
                         confidence) for j, name in enumerate(names)}


def _entry(column: np.ndarray, resampled_means: np.ndarray, ci_low: float, ci_high: float, how: str,
           confidence: float) -> dict[str, Any]:
    summary = aggregate(column, how)
    entry = {"mean": summary.mean, "ci_low": ci_low, "ci_high": ci_high, "n": summary.n, "n_nan": summary.n_nan,
             "leaderboard_value": summary.leaderboard_value, "leaderboard_flags": list(summary.flags)}
    if summary.aggregation == MEAN:
        entry.update(leaderboard_ci_low=ci_low, leaderboard_ci_high=ci_high)
    else:
        lb_low, lb_high = percentile_interval(leaderboard_values(resampled_means, how), confidence)
        entry.update(leaderboard_ci_low=float(lb_low), leaderboard_ci_high=float(lb_high))
    return entry


def resample_corpus_values(statistics: np.ndarray, metric, resamples: int = DEFAULT_RESAMPLES,
                           seed: int = DEFAULT_SEED) -> np.ndarray:
    """(resamples, outputs) values of a corpus metric (CE F1) over the same resamples as ``resample_means``.

    A resample's column sums are ``counts @ statistics``, one matrix product per block like the means; the values are
    ``rexrank.metrics.aggregation.corpus_values`` of those sums (every resample holds n studies).
    """
    statistics = np.asarray(statistics, dtype=np.float64)
    n = statistics.shape[0]
    out = []
    with progress.task(resamples, "bootstrap", unit="resample") as task:
        for counts in count_blocks(n, resamples, seed):
            out.append(corpus_values(counts @ statistics, n, metric))
            task.update(counts.shape[0])
    return np.concatenate(out, axis=0)


def corpus_intervals(statistics: np.ndarray, metric, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                     confidence: float = DEFAULT_CONFIDENCE) -> dict[str, dict[str, float]]:
    """{output: {"value", "ci_low", "ci_high"}} of a corpus metric: point values over every study, percentile CIs
    over the resamples."""
    statistics = np.asarray(statistics, dtype=np.float64)
    point = corpus_aggregate(statistics, metric)
    names = corpus_outputs(metric)
    if statistics.shape[0]:
        low, high = percentile_interval(resample_corpus_values(statistics, metric, resamples, seed), confidence)
    else:
        low = high = np.full(len(names), np.nan)
    return {name: {"value": point[name], "ci_low": float(low[j]), "ci_high": float(high[j])}
            for j, name in enumerate(names)}
