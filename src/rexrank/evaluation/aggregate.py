"""Per-study table -> results.json (the contract in docs/harness.md, "Outputs"): means, CIs, leaderboard values,
provenance."""

from __future__ import annotations

import datetime as _dt
import math
import platform
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np
import pandas as pd

from rexrank.evaluation.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    confidence_intervals,
    corpus_intervals,
)
from rexrank.metrics import REGISTRY
from rexrank.metrics.aggregation import CORPUS, corpus_statistics, is_corpus, leaderboard_higher_is_better

FORMAT = "rexrank.results"
FORMAT_VERSION = 1
_PACKAGES = ("rexrank", "numpy", "pandas", "scipy", "torch", "transformers", "tokenizers", "datasets", "evaluate",
             "accelerate", "huggingface-hub")


def metric_columns(frame: pd.DataFrame) -> dict[str, str]:
    """Registry name -> column, for every per-report metric whose column is in the per-study table.

    Corpus-level metrics (CE F1) are not means of a column: ``corpus_metrics`` finds them."""
    found = {}
    for name in REGISTRY.names():
        spec = REGISTRY.spec(name)
        if not is_corpus(spec) and spec.column in frame.columns:
            found[name] = spec.column
    return found


def corpus_metrics(frame: pd.DataFrame) -> dict[str, list[str]]:
    """Registry name -> statistic columns, for every corpus-level metric whose statistics are all in the table."""
    found = {}
    for name in REGISTRY.names():
        spec = REGISTRY.spec(name)
        if is_corpus(spec) and spec.column in frame.columns:
            columns = list(corpus_statistics(spec))
            if all(c in frame.columns for c in columns):
                found[name] = columns
    return found


def corpus_summary(frame: pd.DataFrame, name: str, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                   confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    """A corpus metric's results.json entry: every output with its CI under ``values``; the headline output (the
    first) also in the fields every metric has (mean, ci_low, ..., leaderboard_value), so every reader of a
    metric entry shows it. It has no leaderboard column: it never enters the ReXrank ranking."""
    spec = REGISTRY.spec(name)
    values = corpus_intervals(frame[list(corpus_statistics(spec))].to_numpy(dtype=np.float64), spec, resamples=resamples,
                              seed=seed, confidence=confidence)
    head = next(iter(values))
    first = values[head]
    cls = REGISTRY.cls(name)
    shown = {output: cls.output_label(output) for output in cls.SHOWN}  # what tables show, by label
    return {"column": spec.column, "level": CORPUS, "headline": head, "mean": first["value"],
            "ci_low": first["ci_low"], "ci_high": first["ci_high"], "n": int(len(frame)), "n_nan": 0,
            "leaderboard_value": first["value"], "leaderboard_ci_low": first["ci_low"],
            "leaderboard_ci_high": first["ci_high"], "leaderboard_flags": [], "values": values, "shown": shown,
            "higher_is_better": spec.higher_is_better, "leaderboard_column": None, "aggregation": CORPUS,
            "leaderboard_higher_is_better": spec.higher_is_better}


def metric_summary(frame: pd.DataFrame, names: Sequence[str] | None = None, *, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> dict[str, dict[str, Any]]:
    """Every metric's mean and CI (and leaderboard value with CI), from one shared set of resamples.

    Each figure carries its own direction: ``higher_is_better`` is the per-report mean's (RadCliQ-v1: false),
    ``leaderboard_higher_is_better`` the leaderboard value's (1/RadCliQ-v1: true); ``leaderboard_flags`` says
    why a value is missing or not meaningful (a NaN or negative mean: ``rexrank.metrics.aggregation``).
    """
    columns = metric_columns(frame)
    corpus = corpus_metrics(frame)
    wanted = list(names or list(columns) + list(corpus))
    names = [n for n in wanted if n in columns]
    specs = {n: REGISTRY.spec(n) for n in names}
    stats = confidence_intervals({n: frame[columns[n]].to_numpy(dtype=np.float64) for n in names},
                                 aggregations={n: specs[n].leaderboard_aggregation for n in names},
                                 resamples=resamples, seed=seed, confidence=confidence)
    out = {}
    for name in names:
        spec = specs[name]
        out[name] = {"column": spec.column, **stats[name], "higher_is_better": spec.higher_is_better,
                     "leaderboard_column": spec.leaderboard_column, "aggregation": spec.leaderboard_aggregation,
                     "leaderboard_higher_is_better": leaderboard_higher_is_better(spec)}
    for name in (n for n in wanted if n in corpus):
        out[name] = corpus_summary(frame, name, resamples=resamples, seed=seed, confidence=confidence)
    return {n: out[n] for n in wanted if n in out}


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
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    return json_safe(results)


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
