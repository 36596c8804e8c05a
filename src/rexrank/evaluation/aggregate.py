"""Per-study table -> results.json (the contract in docs/harness.md, "Outputs"): means, CIs, leaderboard values,
provenance."""

from __future__ import annotations

import datetime as _dt
import math
import platform
from collections.abc import Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any

import numpy as np

from rexrank.evaluation.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, Figures, interval_tables
from rexrank.metrics import REGISTRY
from rexrank.metrics.aggregation import CORPUS, SumRule, leaderboard_higher_is_better, sum_rule

if TYPE_CHECKING:  # tables are passed in, never built here: a run served from the cache needs no pandas
    import pandas as pd

FORMAT = "rexrank.results"
FORMAT_VERSION = 1
_PACKAGES = ("rexrank", "numpy", "pandas", "scipy", "torch", "transformers", "tokenizers", "datasets", "evaluate",
             "accelerate", "huggingface-hub")


def metric_rules(frame: pd.DataFrame) -> dict[str, SumRule]:
    """Registry name -> ``SumRule``, for every metric whose per-study columns are all in the table (per-report
    metrics first, then corpus metrics, each in registry order: the order of results.json's metrics)."""
    # A rule's first column is the spec's own column: checking it first keeps a corpus metric's class (CE F1's imports
    # torch) unloaded when the table cannot hold it.
    found = {name: sum_rule(name) for name in REGISTRY.names() if REGISTRY.spec(name).column in frame.columns}
    found = {name: rule for name, rule in found.items() if all(c in frame.columns for c in rule.columns)}
    return {**{n: r for n, r in found.items() if r.per_study_values},
            **{n: r for n, r in found.items() if not r.per_study_values}}


def metric_columns(frame: pd.DataFrame) -> dict[str, str]:
    """Registry name -> column, for every metric in the table with a value per study (a per-report metric): what
    per-study views (correlations, per-study tables) can show. Corpus metrics (CE F1) are ``corpus_metrics``."""
    return {name: rule.columns[0] for name, rule in metric_rules(frame).items() if rule.per_study_values}


def corpus_metrics(frame: pd.DataFrame) -> dict[str, list[str]]:
    """Registry name -> statistic columns, for every corpus-level metric whose statistics are all in the table."""
    return {name: list(rule.columns) for name, rule in metric_rules(frame).items() if not rule.per_study_values}


def _entry(name: str, rule: SumRule, f: Figures) -> dict[str, Any]:
    """A metric's results.json entry from its figures. Every entry has mean, ci_low, ..., leaderboard_value; a
    corpus metric's (named outputs) gives its headline there and every output with its CI under ``values``, and it
    has no leaderboard column: it never enters the ReXrank ranking."""
    spec = REGISTRY.spec(name)
    mean = {"mean": float(f.mean[0]), "ci_low": float(f.mean_low[0]), "ci_high": float(f.mean_high[0]), "n": f.n,
            "n_nan": f.n_nan, "leaderboard_value": float(f.value[0])}
    board = {"leaderboard_ci_low": float(f.value_low[0]), "leaderboard_ci_high": float(f.value_high[0])}
    if not rule.outputs:
        return {"column": spec.column, **mean, "leaderboard_flags": list(f.flags), **board,
                "higher_is_better": spec.higher_is_better, "leaderboard_column": spec.leaderboard_column,
                "aggregation": spec.leaderboard_aggregation,
                "leaderboard_higher_is_better": leaderboard_higher_is_better(spec)}
    cls = REGISTRY.cls(name)
    values = {output: {"value": float(f.value[j]), "ci_low": float(f.value_low[j]), "ci_high": float(f.value_high[j])}
              for j, output in enumerate(rule.outputs)}
    shown = {output: cls.output_label(output) for output in cls.SHOWN}  # what tables show, by label
    return {"column": spec.column, "level": CORPUS, "headline": rule.outputs[0], **mean, **board,
            "leaderboard_flags": list(f.flags), "values": values, "shown": shown,
            "higher_is_better": spec.higher_is_better, "leaderboard_column": None, "aggregation": CORPUS,
            "leaderboard_higher_is_better": spec.higher_is_better}


def metric_summary(frame: pd.DataFrame, names: Sequence[str] | None = None, *, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> dict[str, dict[str, Any]]:
    """Every metric's mean and CI (and leaderboard value with CI), from one shared set of resamples: the one path
    ``bootstrap.interval_tables`` for per-report and corpus metrics alike (each a ``SumRule`` of its columns).

    Each figure carries its own direction: ``higher_is_better`` is the per-report mean's (RadCliQ-v1: false),
    ``leaderboard_higher_is_better`` the leaderboard value's (1/RadCliQ-v1: true); ``leaderboard_flags`` says
    why a value is missing or not meaningful (a NaN or negative mean: ``rexrank.metrics.aggregation``).
    """
    rules = metric_rules(frame)
    names = [n for n in (names or rules) if n in rules]
    figures = interval_tables({n: frame[list(rules[n].columns)].to_numpy(dtype=np.float64) for n in names},
                              {n: rules[n] for n in names}, resamples=resamples, seed=seed, confidence=confidence)
    return {name: _entry(name, rules[name], figures[name]) for name in names}


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def build_results(frame: pd.DataFrame, info: dict[str, dict[str, Any]], *, model: str, dataset: str | None,
                  split: str | None, track: str, order: Sequence[str], dropped: dict[str, int] | None = None,
                  subgroups: dict[str, Any] | None = None, analyses: dict[str, Any] | None = None,
                  inputs: dict[str, Any] | None = None, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                  confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    metrics = metric_summary(frame, order, resamples=resamples, seed=seed, confidence=confidence)
    leaderboard = {entry["leaderboard_column"]: entry["leaderboard_value"] for entry in metrics.values()
                   if entry["leaderboard_column"]}
    results = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model": model,
        "dataset": dataset,
        "split": split,
        "track": track,
        "n_studies": int(len(frame)),
        "n_dropped": dict(dropped or {}),
        "metrics": metrics,
        "leaderboard": leaderboard,
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": confidence,
                      "method": "percentile; studies resampled with replacement; reciprocal metrics from each "
                                "resample's mean"},
        "configs": {name: info[name]["config"] for name in order if name in info},
        "fingerprints": {name: info[name]["fingerprint"] for name in order if name in info},
        "versions": package_versions(),
        "subgroups": subgroups or {},
        "analyses": analyses or {},
        "inputs": inputs or {},
        "created_at": created_at(),
    }
    return json_safe(results)


def created_at() -> str:
    """results.json's ``created_at``: now, UTC, to the second."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def json_safe(value: Any) -> Any:
    """NaN/inf -> None and numpy scalars -> Python, so results.json is strict JSON."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
