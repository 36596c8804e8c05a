"""Per-study table -> results.json (the DESIGN.md contract): means, CIs, leaderboard values, provenance."""

from __future__ import annotations

import datetime as _dt
import math
import platform
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np
import pandas as pd

from rexrank.evaluation.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, confidence_intervals
from rexrank.metrics import REGISTRY
from rexrank.metrics.aggregation import leaderboard_higher_is_better

FORMAT = "rexrank.results"
FORMAT_VERSION = 1
_PACKAGES = ("rexrank", "numpy", "pandas", "scipy", "torch", "transformers", "tokenizers", "datasets", "evaluate",
             "accelerate", "huggingface-hub")


def metric_columns(frame: pd.DataFrame) -> dict[str, str]:
    """Registry name -> column, for every registered metric whose column is in the per-study table."""
    found = {}
    for name in REGISTRY.names():
        column = REGISTRY.spec(name).column
        if column in frame.columns:
            found[name] = column
    return found


def metric_summary(frame: pd.DataFrame, names: Sequence[str] | None = None, *, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> dict[str, dict[str, Any]]:
    """Every metric's mean and CI (and leaderboard value with CI), from one shared set of resamples.

    Each figure carries its own direction: ``higher_is_better`` is the per-report mean's (RadCliQ-v1: false),
    ``leaderboard_higher_is_better`` the leaderboard value's (1/RadCliQ-v1: true); ``leaderboard_flags`` says
    why a value is missing or not meaningful (a NaN or negative mean: ``rexrank.metrics.aggregation``).
    """
    columns = metric_columns(frame)
    names = [n for n in (names or columns) if n in columns]
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
    return out


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
