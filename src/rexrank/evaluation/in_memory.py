"""``rexrank.score``: several metrics over the same pairs in memory, each component computed once.

The same core as the ``rexrank score`` harness (``evaluation.runner``), with a throwaway in-memory cache, no
chunking and no files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rexrank.evaluation.plan import plan
from rexrank.evaluation.runner import build_metrics, combine_composites, score_pairs, to_frame
from rexrank.metrics import REGISTRY
from rexrank.metrics.aggregation import CORPUS, sum_rule
from rexrank.metrics.base import check_pairs

# The classic CXR-Report-Metric set: what `rexrank.score` runs when no metric is named.
DEFAULT_METRICS = ("bleu2", "bertscore", "semb", "radgraph", "radcliq_v1")


def score(
    hyps: Sequence[str],
    refs: Sequence[str],
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    model_paths: Mapping[str, Any] | None = None,
    metric_configs: Mapping[str, Mapping[str, Any]] | None = None,
    device: str | None = None,
    batch_size: int | None = None,
) -> pd.DataFrame:
    """Score every (hypothesis, reference) pair with every metric.

    Returns a DataFrame with one row per pair (same order) and one column per metric, named as the
    CXR-Report-Metric output columns (``bleu_score``, ``bertscore``, ``semb_score``, ``radgraph_combined``,
    ``radcliq_v1``...), plus any per-pair detail columns a metric provides (GREEN error counts...).
    ``df.attrs["summary"]`` holds the leaderboard aggregation (see ``summarize``) and
    ``df.attrs["metrics"]`` each metric's spec, config and fingerprint.
    """
    hyps, refs = check_pairs(hyps, refs)
    base, composites = plan(metrics)
    # The same core as the `rexrank score` harness, here with a throwaway in-memory cache and no chunking.
    built = build_metrics(base, model_paths=model_paths, metric_configs=metric_configs, device=device,
                          batch_size=batch_size)
    scored = score_pairs(hyps, refs, built)
    combine_composites(composites, scored)
    df = to_frame(scored, base + composites)
    info = scored.info
    requested = [REGISTRY.canonical(m) for m in metrics]
    df.attrs["metrics"] = {name: info[name] for name in dict.fromkeys(requested)}
    df.attrs["summary"] = summarize(df, requested)
    return df


def summarize(df: pd.DataFrame, metrics: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Leaderboard aggregation per metric: the mean, and for RadCliQ-v1/FineRadScore the reciprocal of the mean.

    1/RadCliQ-v1 is 1 / mean(per-report RadCliQ-v1) as the leaderboard computes it, never a mean of reciprocals
    (per-report values can be negative). A study with a NaN (a per-report value, or a corpus metric's statistic) is
    left out and counted in ``n_nan``; the values and ``leaderboard_flags`` are the metric's
    ``rexrank.metrics.aggregation.SumRule``'s, the one rule of results.json and compare.
    """
    names = [REGISTRY.canonical(m) for m in metrics] if metrics else [
        n for n in REGISTRY.names() if REGISTRY.spec(n).column in df.columns]
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        spec, rule = REGISTRY.spec(name), sum_rule(name)
        if not all(c in df.columns for c in rule.columns):
            continue
        # Every metric the one way: column sums of its per-study table (rexrank.metrics.aggregation.SumRule).
        sums, used, left_out = rule.point(df[list(rule.columns)].to_numpy(dtype=np.float64))
        means = rule.means(sums, used)
        values = rule.leaderboard(means)
        head = {"column": spec.column}
        if rule.outputs:  # a corpus metric (CE F1): its headline, every output, and no leaderboard column
            head.update(level=CORPUS, headline=rule.outputs[0])
        entry = {**head, "mean": float(means[0]), "n": used, "n_nan": left_out}
        if rule.outputs:
            entry["values"] = dict(zip(rule.outputs, map(float, values)))
        out[name] = {**entry, "higher_is_better": spec.higher_is_better,
                     "leaderboard_column": None if rule.outputs else spec.leaderboard_column,
                     "leaderboard_value": float(values[0]), "leaderboard_flags": list(rule.flags(sums, used))}
    return out
