"""Bootstrap confidence intervals from the per-study table, vectorised.

Every metric is computed once per study; statistics never rescore. A resample of n studies with replacement is
represented by its count vector (how often each study was drawn), so the column sums of all metrics for a block of
resamples are one matrix product ``counts @ table``. The same counts are reused for every metric and for every
model of a comparison (that is what makes paired statistics paired).

A single run's CIs (``interval_tables``) take every metric as a ``rexrank.metrics.aggregation.SumRule`` of its
per-study table, per-report metrics the one-column case and corpus metrics (CE F1, NLG) their statistics: one path,
no branch on the kind of metric. ``confidence_intervals`` and ``corpus_intervals`` are entries into it.

The resample stream depends only on (n, resamples, seed): block sizes are a function of n, so a result is
reproducible whatever the caller asks for. Intervals are percentile intervals.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rexrank import progress
# The defaults are declared in rexrank.evaluation.defaults; callers of the bootstrap also read them from here.
from rexrank.evaluation.defaults import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, MAX_RESAMPLES  # noqa: F401
from rexrank.metrics.aggregation import MEAN, SumRule, sum_rule

# Count (and swap) matrices are built in blocks of about this many cells (32 MB of float64), so memory stays bounded
# for any n; the blocks evaluated from them (rexrank.evaluation.statistics) are as large.
_BLOCK_CELLS = 4_000_000


def block_rows(cells_per_row: int, cells: int | None = None) -> int:
    """Rows of a block of about ``cells`` cells (default ``_BLOCK_CELLS``) whose rows hold ``cells_per_row`` cells,
    at least one: the one blocking rule of the draws and of what is evaluated from them."""
    return max(1, (_BLOCK_CELLS if cells is None else cells) // max(cells_per_row, 1))


def rows_per_block(n: int) -> int:
    """Rows of each count (or swap) block for n studies: part of the streams' definition, a function of n only."""
    return block_rows(n)


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


def _products(tables: Mapping[str, np.ndarray]) -> list[list[str]]:
    """The tables multiplied together by each draw block: every one-column table side by side in one product, each
    wider table in its own. BLAS sums in an order that depends on a product's shape, and this is the grouping
    results.json's numbers have always come from, so they stay the same to the last bit."""
    ones = [name for name, table in tables.items() if table.shape[1] == 1]
    return ([ones] if ones else []) + [[name] for name, table in tables.items() if table.shape[1] != 1]


def _tables(tables: Mapping[str, np.ndarray], rules: Mapping[str, SumRule]) -> tuple[dict[str, np.ndarray], int]:
    """Every table as (n, len(columns)) float64, checked against its rule and a common n."""
    out = {}
    for name, table in tables.items():
        table = np.asarray(table, dtype=np.float64)
        out[name] = table = table[:, None] if table.ndim == 1 else table
        if table.ndim != 2 or table.shape[1] != len(rules[name].columns):
            raise ValueError(f"{name}: expected an (n, {len(rules[name].columns)}) table of per-study columns, "
                             f"got {table.shape}")
    sizes = {table.shape[0] for table in out.values()}
    if len(sizes) > 1:
        raise ValueError(f"per-study tables of different lengths: {sorted(sizes)}")
    return out, sizes.pop() if sizes else 0


def resample_figures(tables: Mapping[str, np.ndarray], rules: Mapping[str, SumRule],
                     resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> dict[str, np.ndarray]:
    """{name: (resamples, width) ``rules[name].means``} of every per-study table over one shared set of resamples.

    ``tables[name]``: (n, len(columns)) rows of the same n studies. A resample with count vector c sums ``c @ table``
    over its usable rows (a row with a NaN is left out, so a resample's study count is ``c @ usable``); the figures
    are the rule's of those sums. Every metric goes this one way: a per-report metric is a one-column table (its
    figure: the resample's mean of the values it holds), a corpus metric a table of its statistics.
    """
    tables, n = _tables(tables, rules)
    if not n:
        return {name: np.full((0, rules[name].width), np.nan) for name in tables}
    prepared = []
    for group in _products(tables):
        widths = [tables[name].shape[1] for name in group]
        matrix = np.column_stack([tables[name][:, 0] for name in group]) if widths[0] == 1 else tables[group[0]]
        usable = np.column_stack([~np.isnan(tables[name]).any(axis=1) for name in group])
        weights = None
        if not usable.all():
            matrix = np.where(np.repeat(usable, widths, axis=1), matrix, 0.0)
            weights = usable.astype(np.float64)
        prepared.append((group, matrix, weights, np.cumsum([0] + widths)[:-1].tolist()))
    parts: dict[str, list[np.ndarray]] = {name: [] for name in tables}
    # Usually well under a second (silent then, rexrank.progress); very large sets or resample counts show progress.
    with progress.task(resamples, "bootstrap", unit="resample") as task:
        for counts in count_blocks(n, resamples, seed):
            for group, matrix, weights, offsets in prepared:
                sums = counts @ matrix
                used = None if weights is None else counts @ weights
                for i, (name, offset) in enumerate(zip(group, offsets)):
                    block = sums[:, offset:offset + tables[name].shape[1]]
                    parts[name].append(rules[name].means(block, n if used is None else used[:, i]))
            task.update(counts.shape[0])
    return {name: np.concatenate(part, axis=0) for name, part in parts.items()}


@dataclass(frozen=True)
class Figures:
    """One metric's point figures and percentile CIs over a table's studies: ``SumRule.means`` (a per-report metric's
    mean, a corpus metric's values) and the leaderboard values ``SumRule.values``, each (width,)."""

    n: int  # usable studies (no NaN in the row)
    n_nan: int  # studies left out for a NaN
    mean: np.ndarray
    mean_low: np.ndarray
    mean_high: np.ndarray
    value: np.ndarray
    value_low: np.ndarray
    value_high: np.ndarray
    flags: tuple[str, ...]


def interval_tables(tables: Mapping[str, np.ndarray], rules: Mapping[str, SumRule], *,
                    resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                    confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Figures]:
    """Every metric's figures with their bootstrap CIs, from one shared set of resamples (``resample_figures``).

    Point figures are the rule's of the column sums over the usable studies; a leaderboard value's CI is the
    percentile interval of each resample's leaderboard value (a reciprocal: of each resample's 1/mean, never a mean
    of reciprocals). The one single-run path for per-report and corpus metrics alike.
    """
    tables, _ = _tables(tables, rules)
    resampled = resample_figures(tables, rules, resamples, seed)
    out = {}
    for name, table in tables.items():
        rule = rules[name]
        sums, used, left_out = rule.point(table)
        mean = rule.means(sums, used)
        mean_low, mean_high = percentile_interval(resampled[name], confidence)
        value_low, value_high = percentile_interval(rule.leaderboard(resampled[name]), confidence)
        out[name] = Figures(used, left_out, mean, mean_low, mean_high, rule.leaderboard(mean),
                            value_low, value_high, rule.flags(sums, used))
    return out


def resample_means(values: np.ndarray, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """(resamples, m) means of the m columns of ``values`` (n, m) over the same resamples (``resample_figures`` of
    m one-column tables): NaN entries are left out of each resample's mean; NaN where a resample has none usable."""
    values = np.asarray(values, dtype=np.float64)
    values = values[:, None] if values.ndim == 1 else values
    names = [str(j) for j in range(values.shape[1])]
    rule = SumRule.of_aggregation(MEAN)
    figures = resample_figures({j: values[:, [k]] for k, j in enumerate(names)}, dict.fromkeys(names, rule),
                               resamples, seed)
    return np.concatenate([figures[j] for j in names], axis=1) if names else np.empty((resamples, 0))


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
    """Mean and bootstrap CI of every column (``interval_tables`` of one-column tables), from one set of resamples.

    Mean, counts, leaderboard value and its flags follow ``rexrank.metrics.aggregation``'s rule for
    ``aggregations[name]`` (default "mean"). The leaderboard value's CI is the percentile interval of each
    resample's leaderboard value — for a reciprocal, of each resample's 1/mean (never a mean of reciprocals).
    """
    aggregations = aggregations or {}
    rules = {name: SumRule.of_aggregation(aggregations.get(name, MEAN), column=name) for name in columns}
    figures = interval_tables({name: np.asarray(columns[name], dtype=np.float64).reshape(-1, 1) for name in columns},
                              rules, resamples=resamples, seed=seed, confidence=confidence)
    return {name: {"mean": float(f.mean[0]), "ci_low": float(f.mean_low[0]), "ci_high": float(f.mean_high[0]),
                   "n": f.n, "n_nan": f.n_nan, "leaderboard_value": float(f.value[0]),
                   "leaderboard_flags": list(f.flags), "leaderboard_ci_low": float(f.value_low[0]),
                   "leaderboard_ci_high": float(f.value_high[0])} for name, f in figures.items()}


def resample_corpus_values(statistics: np.ndarray, metric, resamples: int = DEFAULT_RESAMPLES,
                           seed: int = DEFAULT_SEED) -> np.ndarray:
    """(resamples, outputs) values of a corpus metric (CE F1) over the same resamples as ``resample_means``
    (``resample_figures`` of its statistics table)."""
    rule = sum_rule(metric)
    return resample_figures({rule.name: statistics}, {rule.name: rule}, resamples, seed)[rule.name]


def corpus_intervals(statistics: np.ndarray, metric, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                     confidence: float = DEFAULT_CONFIDENCE) -> dict[str, dict[str, float]]:
    """{output: {"value", "ci_low", "ci_high"}} of a corpus metric (``interval_tables`` of its statistics)."""
    rule = sum_rule(metric)
    f = interval_tables({rule.name: statistics}, {rule.name: rule}, resamples=resamples, seed=seed,
                        confidence=confidence)[rule.name]
    return {name: {"value": float(f.value[j]), "ci_low": float(f.value_low[j]), "ci_high": float(f.value_high[j])}
            for j, name in enumerate(rule.outputs)}
