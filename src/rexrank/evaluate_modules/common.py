"""What the evaluate modules in ``metrics/<slug>/`` share, so each module file stays a thin declaration.

A module (``metrics/bertscore/bertscore.py`` ...) subclasses ``rexrank.evaluate_modules.metric.RexrankMetric``,
which calls these helpers:
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
from collections.abc import Callable
from typing import Any

import numpy as np

from rexrank import parallel
from rexrank.errors import ConfigError
from rexrank.metrics.aggregation import MEAN, RECIPROCAL_OF_MEAN, Aggregate, aggregate

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


def init_kwargs(module_name: str, kwargs: dict[str, Any], owner: type | None = None,
                hints: dict[str, str] | None = None) -> dict[str, Any]:
    """Return ``kwargs`` if every key is an evaluate constructor option; otherwise a ConfigError naming the typo.

    evaluate.load(..., **init_kwargs) forwards everything to the module constructor, whose base class accepts and
    ignores unknown names: ``evaluate.load("rexrank/bertscore", modle="...")`` would silently use the default model.
    ``owner`` (the module class) lets the message list the module's own options, read from its signature so the
    list cannot drift; ``hints`` maps a tempting wrong name to what to pass instead.
    """
    allowed = evaluate_init_names()
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        own = module_options(owner) if owner is not None else ()
        offered = f"its own options: {', '.join(own) or 'none'}; " if owner is not None else \
            "the options listed in its card, plus "
        advice = "".join(f" {hints[name]}" for name in unknown if hints and name in hints)
        raise ConfigError(f"{module_name}: unknown option(s) {', '.join(unknown)}. This module takes {offered}"
                          f"evaluate's own: {', '.join(allowed)}.{advice}")
    return kwargs


def module_options(owner: type) -> tuple[str, ...]:
    """The keyword options a module class declares (``RexrankMetric.own_options``; evaluate's own are apart)."""
    return tuple(owner.own_options)


def metric_config(**options: Any) -> dict[str, Any]:
    """The ``rexrank.metrics.get`` config: options left at None mean "the metric's default" and are omitted."""
    return {key: value for key, value in options.items() if value is not None}


def compute(metric, predictions, references, *, return_details: bool = False, reciprocal: bool = False,
            fingerprint: str | None = None, processes: int = 1,
            field_keys: Callable[..., dict[str, Any]] | None = None) -> dict[str, Any]:
    """Score with a rexrank metric object and shape the module result (see ``results``).

    ``return_details`` adds ``"details"``: the metric's per-pair extra columns (``score_details``: RadCliQ's four
    components, GREEN's error counts, ...) as {column: list}, same order as the inputs. ``field_keys`` (one of
    ``rexrank.evaluate_modules.conventions``) adds the keys the field's usual module for that metric returns
    (BERTScore's precision/recall/f1 lists, ...); it reads the same per-pair table, so nothing is scored twice.
    """
    # evaluate's own multi-process mode (num_process > 1) gathers every process's inputs and computes on process 0
    # alone: there the metric must not wait for the other processes (rexrank.parallel).
    scope = parallel.local() if processes > 1 else contextlib.nullcontext()
    with scope:
        return _compute(metric, predictions, references, return_details, reciprocal, fingerprint, field_keys)


def _compute(metric, predictions, references, return_details, reciprocal, fingerprint, field_keys):
    name = metric.spec.name
    extra: dict[str, Any] = {}
    if return_details or field_keys is not None:
        frame = metric.score_details(predictions, references)
        values = frame[name].to_numpy(dtype=np.float64) if name in frame else frame.iloc[:, 0].to_numpy(np.float64)
    else:
        frame, values = None, metric.score(predictions, references)
    if fingerprint:
        extra["fingerprint"] = fingerprint
    if field_keys is not None:
        extra.update(field_keys(metric, list(predictions), list(references), frame))
    if return_details:
        extra["details"] = {str(col): _plain(frame[col].tolist()) for col in frame.columns if col != name}
    return results(name, values, reciprocal=reciprocal, extra=extra)


def _plain(values: list) -> list:
    """numpy scalars -> Python numbers and pandas' missing value -> None, so results serialise as JSON."""
    import pandas as pd

    return [None if v is pd.NA else v.item() if isinstance(v, np.generic) else v for v in values]


def results(name: str, values, *, reciprocal: bool = False, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The dict every module's ``compute`` returns.

    ``{name: mean over reports, "leaderboard_flags": [...], "warning": None or text, "scores": per-report values
    (same order as the inputs), "n_nan": count}``. NaN per-report values (a GREEN parse failure, a NaN RadCliQ
    component) stay in ``scores`` as NaN, are left out of the mean and counted in ``n_nan`` — never dropped
    silently. ``reciprocal`` adds ``"inverse_<name>"`` = 1 / mean, the leaderboard's aggregation for RadCliQ-v1 and
    FineRadScore (not a mean of reciprocals). The mean, 1/mean and the flags (a NaN or negative mean, ...) all come
    from ``rexrank.metrics.aggregation.aggregate``; ``warning`` says in words what the flags and ``n_nan`` mean
    for these numbers, so a caller who prints the result sees it.
    """
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    summary = aggregate(values, RECIPROCAL_OF_MEAN if reciprocal else MEAN)
    out: dict[str, Any] = {name: summary.mean}
    if reciprocal:
        out[f"inverse_{name}"] = summary.leaderboard_value
    out["leaderboard_flags"] = list(summary.flags)
    out["warning"] = warning_text(name, summary, reciprocal)
    out["scores"] = [float(v) for v in values]
    out["n_nan"] = summary.n_nan
    if extra:
        out.update(extra)
    return out


def warning_text(name: str, summary: Aggregate, reciprocal: bool = False) -> str | None:
    """One human-readable sentence per problem with a module's numbers (None when there is none)."""
    notes = []
    if summary.flags:
        shown = f"{name} = {summary.mean:.4g}"
        if reciprocal:
            shown += f", inverse_{name} = {summary.leaderboard_value:.4g}"
        notes.append(f"{shown}: {'; '.join(summary.flags)}")
    if summary.n_nan and summary.n:  # all-NaN is already a flag
        notes.append(f"{summary.n_nan} of {summary.n + summary.n_nan} pairs have no score (NaN in scores) and are "
                     f"left out of {name}")
    return ". ".join(notes) or None
