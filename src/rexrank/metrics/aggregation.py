"""The leaderboard value of a metric, its NaN rule and its direction: the one place they are decided.

A metric's ``MetricSpec.leaderboard_aggregation`` says how per-report values become the published number:
``"mean"``, or ``"reciprocal_of_mean"`` (1/RadCliQ-v1, 1/FineRadScore: the reciprocal of the mean, never a mean
of reciprocals — per-report RadCliQ-v1 values can be negative).

The rule, applied by every caller (harness results, bootstrap CIs, ``rexrank.summarize``, the evaluate modules,
RadCliQ's helper, compare, the leaderboard board):

- NaN per-report values are left out of the mean and counted (``n_nan``), never dropped silently;
- the mean of zero valid values (all NaN, or no values) is NaN, flagged ``NAN_MEAN`` under either aggregation
  (JSON writes it as null, which alone does not say why);
- the reciprocal of a mean that is NaN, 0 or not finite is NaN (flagged ``ZERO_MEAN`` when the mean is 0);
- the reciprocal of a negative mean is returned, but flagged ``NEGATIVE_MEAN``: no ReXrank metric has a meaningful
  negative 1/mean (a negative mean RadCliQ is a very good score, its negative reciprocal ranks last), so every
  output (results.json, results.md, the terminal table, the evaluate modules) carries the flag for people to see.

A reciprocal metric has two figures with opposite directions: the mean (RadCliQ-v1, lower is better; named by
``mean_label``) and the leaderboard's 1/mean (1/RadCliQ-v1, higher is better; ``leaderboard_higher_is_better``).
Outputs show both, each with its own direction, never one under the other's.

This module lives in ``metrics`` (not ``evaluation``) because RadCliQ and the evaluate modules need it and the
metrics layer imports nothing from evaluation or leaderboard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from rexrank.metrics.registry import MetricSpec

MEAN = "mean"
RECIPROCAL_OF_MEAN = "reciprocal_of_mean"
AGGREGATIONS = (MEAN, RECIPROCAL_OF_MEAN)

NEGATIVE_MEAN = ("negative mean: its 1/mean is negative and not meaningful (it ranks below every positive value "
                 "although a lower mean is better); compare the mean itself")
ZERO_MEAN = "mean is 0: 1/mean is undefined"
NAN_MEAN = "no valid per-report value (every value NaN, or none): the mean is NaN and no value can be shown"


def aggregation_name(how: str | MetricSpec) -> str:
    """The aggregation name of a spec, or ``how`` itself after checking it is one we know."""
    name = getattr(how, "leaderboard_aggregation", how)
    if name not in AGGREGATIONS:
        raise ValueError(f"unknown leaderboard aggregation {name!r}; known: {', '.join(AGGREGATIONS)} "
                         "(pass a MetricSpec or one of these names, not a metric name)")
    return name


def nan_means(values, axis: int = 0) -> np.ndarray:
    """Means along ``axis`` with NaN values left out; NaN where nothing is left. Vectorised (a matrix of models).

    The mean half of the rule: ``aggregate`` uses it for one metric, compare for every model's column at once.
    """
    values = np.asarray(values, dtype=np.float64)
    valid = ~np.isnan(values)
    # What np.nanmean computes (sum with NaN as 0, over the count), without its warning on an all-NaN slice.
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(valid, values, 0.0).sum(axis=axis) / valid.sum(axis=axis), dtype=np.float64)


def leaderboard_values(means: np.ndarray | float, how: str | MetricSpec) -> np.ndarray:
    """Leaderboard value of each mean, vectorised: the mean itself, or its reciprocal.

    The bootstrap and compare call this on every resample's means, so it stays a couple of array operations.
    Scalars give a 0-d array (``float()`` it). The reciprocal of a NaN, 0 or non-finite mean is NaN.
    """
    means = np.asarray(means, dtype=np.float64)
    if aggregation_name(how) == MEAN:
        return means
    usable = np.isfinite(means) & (means != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(usable, 1.0 / np.where(usable, means, 1.0), np.nan)


def leaderboard_flags(mean: float | None, how: str | MetricSpec) -> tuple[str, ...]:
    """Why a leaderboard value is not to be trusted as shown, or is missing (empty when it is fine).

    ``mean`` None (how strict JSON stores NaN) counts as NaN.
    """
    name = aggregation_name(how)
    if mean is None or np.isnan(mean):
        return (NAN_MEAN,)
    if name == MEAN or not np.isfinite(mean):
        return ()
    if mean == 0:
        return (ZERO_MEAN,)
    if mean < 0:
        return (NEGATIVE_MEAN,)
    return ()


def leaderboard_interval(low: float, high: float, how: str | MetricSpec) -> tuple[float, float]:
    """The leaderboard value's interval from the mean's interval (for results that store only the latter).

    The reciprocal is monotone on each side of 0, so a percentile interval of the mean maps to the swapped
    reciprocals of its bounds. An interval that reaches 0 has an unbounded reciprocal: both bounds are NaN.
    """
    if aggregation_name(how) == MEAN:
        return float(low), float(high)
    if not (np.isfinite(low) and np.isfinite(high)) or low <= 0 <= high:
        return float("nan"), float("nan")
    recip_low, recip_high = leaderboard_values([high, low], how)
    return float(recip_low), float(recip_high)


@dataclass(frozen=True)
class Aggregate:
    """Mean and leaderboard value of one metric's per-report values, with what was left out and why."""

    aggregation: str
    mean: float
    n: int  # values in the mean
    n_nan: int  # NaN values left out of it
    leaderboard_value: float
    flags: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "n": self.n, "n_nan": self.n_nan, "leaderboard_value": self.leaderboard_value,
                "leaderboard_flags": list(self.flags)}


def aggregate(values, how: str | MetricSpec) -> Aggregate:
    """Aggregate per-report values (NaN allowed) into the mean and the leaderboard value, by the module's rule."""
    name = aggregation_name(how)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    n = int((~np.isnan(values)).sum())
    mean = float(nan_means(values))
    return Aggregate(aggregation=name, mean=mean, n=n, n_nan=int(values.size - n),
                     leaderboard_value=float(leaderboard_values(mean, name)), flags=leaderboard_flags(mean, name))


def leaderboard_higher_is_better(metric: str | MetricSpec) -> bool:
    """Direction of the leaderboard value: a reciprocal (1/RadCliQ-v1) flips the metric's own direction."""
    spec = metric if hasattr(metric, "higher_is_better") else _spec(metric)
    return spec.higher_is_better != (aggregation_name(spec) == RECIPROCAL_OF_MEAN)


def mean_label(metric: str | MetricSpec) -> str:
    """The name of a metric's per-report mean as outputs print it.

    The leaderboard column for a plain mean ("BLEU"); for a reciprocal, the column without its "1/"
    ("RadCliQ-v1" for "1/RadCliQ-v1"), so the mean is never printed under the reciprocal's name.
    """
    spec = metric if hasattr(metric, "leaderboard_aggregation") else _spec(metric)
    column = spec.leaderboard_column or spec.name
    if aggregation_name(spec) == RECIPROCAL_OF_MEAN:
        return column.removeprefix("1/") if column.startswith("1/") else f"mean {column}"
    return column


# -- corpus-level metrics (CE F1): values from summed per-study statistics --------------------------------------------
CORPUS = "corpus"


def is_corpus(metric: str | MetricSpec) -> bool:
    spec = metric if hasattr(metric, "level") else _spec(metric)
    return spec.level == CORPUS


def _corpus_class(metric: str | MetricSpec):
    from rexrank.metrics import REGISTRY

    return REGISTRY.cls(getattr(metric, "name", metric))


def corpus_statistics(metric: str | MetricSpec) -> tuple[str, ...]:
    """The per-study statistic columns of a corpus metric (the first is its ``column``)."""
    return tuple(_corpus_class(metric).STATISTICS)


def corpus_outputs(metric: str | MetricSpec) -> tuple[str, ...]:
    """The named values of a corpus metric (the first is its headline)."""
    return tuple(_corpus_class(metric).OUTPUTS)


def corpus_values(sums, n, metric: str | MetricSpec) -> np.ndarray:
    """A corpus metric's values (..., len(outputs)) from column sums (..., len(statistics)) over ``n`` studies.

    The one rule for every caller: the point values sum the whole table; a bootstrap resample with count vector c
    sums ``c @ statistics`` (the same matrix product as a resampled mean), so CIs, paired tests and rank CIs of a
    corpus metric recompute exactly this function per resample. NaN where n is 0 (no study).
    """
    return np.asarray(_corpus_class(metric).corpus_values(np.asarray(sums, dtype=np.float64), n), dtype=np.float64)


def corpus_aggregate(statistics, metric: str | MetricSpec) -> dict[str, float]:
    """{output: value} over every study of an (n, len(statistics)) table (a study with a NaN statistic is an error:
    counts are never missing)."""
    statistics = np.asarray(statistics, dtype=np.float64)
    if np.isnan(statistics).any():
        raise ValueError(f"{getattr(metric, 'name', metric)}: per-study statistics contain NaN")
    values = corpus_values(statistics.sum(axis=0), statistics.shape[0], metric)
    return dict(zip(corpus_outputs(metric), map(float, values)))


# -- every metric as a function of column sums: what the bootstrap, paired tests and rank CIs are written against ----
@dataclass(frozen=True)
class SumRule:
    """A metric's leaderboard values as a function of the column sums of its per-study table.

    Each study contributes one row of ``columns`` (a per-report metric: its one value; a corpus metric: its
    statistics, e.g. CE F1's TP/FP/FN). Every value the leaderboard shows is ``values(sums, n)`` of the column sums
    over the n studies used, so a bootstrap resample (count vector c: sums ``c @ table``), a permuted pair of models
    and a subgroup all go through this one function: the statistics of rexrank.evaluation.statistics are written
    once against it, with per-report metrics the one-column case (``values`` = ``leaderboard_values(sum / n)``).

    ``outputs``: the named values, the first the headline (a corpus metric's ``OUTPUTS``); empty for a per-report
    metric, whose one value is its leaderboard value. ``higher_is_better``: the headline's leaderboard direction.
    A study with a NaN in any column is not usable (callers leave it out and count it).
    """

    name: str
    columns: tuple[str, ...]
    outputs: tuple[str, ...]
    higher_is_better: bool
    aggregation: str | None  # a per-report metric's MEAN / RECIPROCAL_OF_MEAN; None: the corpus class's values

    @classmethod
    def of_aggregation(cls, how: str | MetricSpec, higher_is_better: bool = True, column: str = "value") -> "SumRule":
        """The rule of one per-report column aggregated by ``how`` (for callers that hold values, not a metric)."""
        return cls(getattr(how, "name", column), (getattr(how, "column", column),), (), higher_is_better,
                   aggregation_name(how))

    @property
    def width(self) -> int:
        """How many values ``values`` gives per row of sums."""
        return max(1, len(self.outputs))

    @property
    def per_study_values(self) -> bool:
        """Whether a single study has a value of the metric (its one column), e.g. for per-study correlations."""
        return self.aggregation is not None

    def point(self, table) -> tuple[np.ndarray, int, int]:
        """Column sums of an (n, len(columns)) per-study table over its usable rows (a row with a NaN is left out,
        whatever the kind of metric), the number of usable rows and the number left out: ``means``' arguments."""
        table = np.asarray(table, dtype=np.float64)
        usable = ~np.isnan(table).any(axis=1)
        used = int(usable.sum())
        kept = table if used == len(table) else np.where(usable[:, None], table, 0.0)
        return kept.sum(axis=0), used, int(len(table) - used)

    def means(self, sums, n) -> np.ndarray:
        """(..., width) figures before the leaderboard's transform, from (..., len(columns)) column sums over ``n``
        studies (broadcast; NaN where n is 0): a per-report metric's mean, a corpus metric's values (whose
        leaderboard value is its headline itself). A results entry's ``mean`` and its CI are these."""
        sums = np.asarray(sums, dtype=np.float64)
        if self.aggregation is None:
            return corpus_values(sums, n, self.name)
        with np.errstate(divide="ignore", invalid="ignore"):
            return sums / np.asarray(n, dtype=np.float64)[..., None] if np.ndim(n) else sums / n

    def leaderboard(self, means) -> np.ndarray:
        """Leaderboard values of ``means``' figures: ``leaderboard_values`` (a reciprocal: 1/mean), else themselves."""
        return means if self.aggregation is None else leaderboard_values(means, self.aggregation)

    def values(self, sums, n) -> np.ndarray:
        """(..., width) leaderboard values from (..., len(columns)) column sums over ``n`` studies (broadcast); NaN
        where n is 0."""
        return self.leaderboard(self.means(sums, n))

    def flags(self, sums, n) -> tuple[str, ...]:
        """``leaderboard_flags`` of one set of sums (a corpus metric's values carry none)."""
        if self.aggregation is None:
            return ()
        with np.errstate(divide="ignore", invalid="ignore"):
            return leaderboard_flags(float(np.asarray(sums, dtype=np.float64)[0] / n), self.aggregation)


def sum_rule(metric: str | MetricSpec) -> SumRule:
    """The ``SumRule`` of a registered metric: its per-study columns and how their sums become its values."""
    spec = metric if hasattr(metric, "level") else _spec(metric)
    if is_corpus(spec):
        return SumRule(spec.name, corpus_statistics(spec), corpus_outputs(spec), spec.higher_is_better, None)
    return SumRule(spec.name, (spec.column,), (), leaderboard_higher_is_better(spec), aggregation_name(spec))


def _spec(name: str) -> MetricSpec:
    from rexrank.metrics import REGISTRY  # here, not at the top: rexrank.metrics may come to import this module

    return REGISTRY.spec(name)


__all__ = ["AGGREGATIONS", "Aggregate", "CORPUS", "MEAN", "NAN_MEAN", "NEGATIVE_MEAN", "RECIPROCAL_OF_MEAN", "SumRule",
           "ZERO_MEAN", "aggregate", "aggregation_name", "corpus_aggregate", "corpus_outputs", "corpus_statistics",
           "corpus_values", "is_corpus", "leaderboard_flags", "leaderboard_higher_is_better",
           "leaderboard_interval", "leaderboard_values", "mean_label", "nan_means", "sum_rule"]
