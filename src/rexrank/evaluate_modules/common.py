"""What the evaluate modules in ``metrics/<slug>/`` share, so each module file stays a thin declaration.

A module (``metrics/bertscore/bertscore.py`` ...) subclasses ``evaluate.Metric`` itself and calls these helpers:
``init_kwargs`` keeps evaluate's own constructor options apart from ours (evaluate silently swallows unknown
keyword arguments; we refuse them), ``metric_config`` builds the ``rexrank.metrics.get`` config, and
``results`` turns per-report values into the dict every module returns.

Configuration convention (documented in docs/evaluate_modules.md): model-backed modules take ``model=``,
``device=``, ``batch_size=`` (and a few metric-specific options) as keyword arguments of ``evaluate.load``,
which evaluate passes to the module's constructor; the model loads once, in ``_download_and_prepare``.
``config_name`` selects a named variant where a metric has them (RadCliQ "v1"/"v0").
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

import numpy as np

from rexrank import parallel
from rexrank.errors import ConfigError
from rexrank.metrics.aggregation import MEAN, RECIPROCAL_OF_MEAN, aggregate

# The keyword arguments evaluate.EvaluationModule.__init__ itself understands (evaluate 0.4.x).
_EVALUATE_INIT = ("config_name", "keep_in_memory", "cache_dir", "num_process", "process_id", "seed",
                  "experiment_id", "hash", "max_concurrent_cache_files", "timeout")


def evaluate_init_names() -> tuple[str, ...]:
    """Names evaluate's module constructor accepts, read from the installed evaluate when possible."""
    try:
        import evaluate

        params = inspect.signature(evaluate.EvaluationModule.__init__).parameters
        names = tuple(n for n, p in params.items() if n != "self" and p.kind is not p.VAR_KEYWORD)
        return names or _EVALUATE_INIT
    except Exception:  # noqa: BLE001 - fall back to the 0.4.x list
        return _EVALUATE_INIT


def init_kwargs(module_name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Return ``kwargs`` if every key is an evaluate constructor option; otherwise a ConfigError naming the typo.

    evaluate.load(..., **init_kwargs) forwards everything to the module constructor, whose base class accepts and
    ignores unknown names: ``evaluate.load("rexrank/bertscore", modle="...")`` would silently use the default model.
    """
    allowed = evaluate_init_names()
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise ConfigError(f"{module_name}: unknown option(s) {', '.join(unknown)}. This module takes the options "
                          f"listed in its card, plus evaluate's own: {', '.join(allowed)}")
    return kwargs


def metric_config(**options: Any) -> dict[str, Any]:
    """The ``rexrank.metrics.get`` config: options left at None mean "the metric's default" and are omitted."""
    return {key: value for key, value in options.items() if value is not None}


def compute(metric, predictions, references, *, return_details: bool = False, reciprocal: bool = False,
            fingerprint: str | None = None, processes: int = 1) -> dict[str, Any]:
    """Score with a rexrank metric object and shape the module result (see ``results``).

    ``return_details`` adds ``"details"``: the metric's per-pair extra columns (``score_details``: RadCliQ's four
    components, GREEN's error counts, ...) as {column: list}, same order as the inputs.
    """
    name = metric.spec.name
    extra: dict[str, Any] = {}
    # evaluate's own multi-process mode (num_process > 1) gathers every process's inputs and computes on process 0
    # alone: there the metric must not wait for the other processes (rexrank.parallel).
    scope = parallel.local() if processes > 1 else contextlib.nullcontext()
    with scope:
        return _compute(metric, predictions, references, name, extra, return_details, reciprocal, fingerprint)


def _compute(metric, predictions, references, name, extra, return_details, reciprocal, fingerprint):
    if return_details:
        frame = metric.score_details(predictions, references)
        values = frame[name].to_numpy(dtype=np.float64) if name in frame else frame.iloc[:, 0].to_numpy(np.float64)
        extra["details"] = {str(col): _plain(frame[col].tolist()) for col in frame.columns if col != name}
    else:
        values = metric.score(predictions, references)
    if fingerprint:
        extra["fingerprint"] = fingerprint
    return results(name, values, reciprocal=reciprocal, extra=extra)


def _plain(values: list) -> list:
    """numpy scalars -> Python numbers, so results serialise as JSON."""
    return [v.item() if isinstance(v, np.generic) else v for v in values]


def results(name: str, values, *, reciprocal: bool = False, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The dict every module's ``compute`` returns.

    ``{name: mean over reports, "scores": per-report values (same order as the inputs), "n_nan": count}``.
    NaN per-report values (a GREEN parse failure, a NaN RadCliQ component) stay in ``scores`` as NaN, are left out
    of the mean and counted in ``n_nan`` — never dropped silently. ``reciprocal`` adds ``"inverse_<name>"`` =
    1 / mean, the leaderboard's aggregation for RadCliQ-v1 and FineRadScore (not a mean of reciprocals), and
    ``"leaderboard_flags"`` (e.g. a negative mean). Both come from ``rexrank.metrics.aggregation.aggregate``.
    """
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    summary = aggregate(values, RECIPROCAL_OF_MEAN if reciprocal else MEAN)
    out: dict[str, Any] = {name: summary.mean}
    if reciprocal:
        out[f"inverse_{name}"] = summary.leaderboard_value
        out["leaderboard_flags"] = list(summary.flags)
    out["scores"] = [float(v) for v in values]
    out["n_nan"] = summary.n_nan
    if extra:
        out.update(extra)
    return out
