"""What a scoring run computes: requested names -> base metrics and composites, and each metric's config.

Composite metrics (RadCliQ) declare their components in the registry; the components are scored once and
shared, so asking for ``["radcliq_v1", "bertscore"]`` runs BERTScore a single time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rexrank.errors import ConfigError
from rexrank.metrics import REGISTRY


def plan(metrics: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split requested names into (base metrics to compute, composites to combine), canonical and de-duplicated."""
    requested = [REGISTRY.canonical(m) for m in metrics]
    base: list[str] = []
    composites: list[str] = []
    for name in requested:
        spec = REGISTRY.spec(name)
        if spec.components:
            if name not in composites:
                composites.append(name)
            for comp in spec.components:
                if comp not in base:
                    base.append(comp)
        elif name not in base:
            base.append(name)
    return base, composites


def metric_config(name: str, *, model_paths: Mapping[str, Any] | None, metric_configs: Mapping[str, Mapping] | None,
                  shared: Mapping[str, Any]) -> dict[str, Any]:
    spec = REGISTRY.spec(name)
    config: dict[str, Any] = {}
    if spec.needs_model:
        config.update({k: v for k, v in shared.items() if v is not None})
    if model_paths:
        for key, value in model_paths.items():
            if REGISTRY.canonical(key) == name:
                config["model"] = value
    if metric_configs:
        for key, value in metric_configs.items():
            if REGISTRY.canonical(key) == name:
                config.update(value)
    for other in spec.shares:
        # CE F1's labeller is built exactly as the run's SembScore (same weights, so the same cache entries).
        config.setdefault(other, metric_config(other, model_paths=model_paths, metric_configs=metric_configs,
                                               shared=shared))
    return config


def settings_readers(metrics: Sequence[str]) -> set[str]:
    """The metrics whose ``--model-path`` / ``--option`` settings a run of ``metrics`` reads: its base metrics and
    those they share settings with (``MetricSpec.shares``: CE F1 builds SembScore's labeller from semb's)."""
    readers: set[str] = set()
    pending = list(plan(metrics)[0])
    while pending:
        name = pending.pop()
        if name not in readers:
            readers.add(name)
            pending.extend(REGISTRY.spec(name).shares)
    return readers


def check_settings_read(metrics: Sequence[str], settings: Mapping[str, str]) -> None:
    """Refuse a setting no metric of the run reads (``settings``: metric -> the option that gave it), so that
    ``--model-path bertscore=DIR -m bleu2`` is not silently ignored."""
    readers = settings_readers(metrics)
    unread = {name: flag for name, flag in settings.items() if REGISTRY.canonical(name) not in readers}
    if unread:
        given = ", ".join(f"{flag} {name}" for name, flag in unread.items())
        raise ConfigError(f"{given}: no metric of this run reads it (computed: {', '.join(sorted(readers))}); "
                          "add the metric to --metrics or drop the setting")
