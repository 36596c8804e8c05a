"""One typed registry: metric name -> MetricSpec (+ the class that computes it).

Entries are lazy ("module:Class" strings) so listing metrics never imports torch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from rexrank.errors import UnknownNameError


@dataclass(frozen=True)
class MetricSpec:
    """What a metric is, as data.

    name: registry key (``bleu2``). column: the ReXrank leaderboard / CXR-Report-Metric column name
    (``bleu_score``). version: bump when a change could alter any number the metric returns.
    components: for composites (RadCliQ), the registry names whose per-report arrays it combines.
    """

    name: str
    column: str
    higher_is_better: bool
    version: str
    description: str
    needs_model: bool = False
    components: tuple[str, ...] = ()
    # How the leaderboard turns per-report values into the published number ("mean" or "reciprocal_of_mean").
    leaderboard_aggregation: str = "mean"
    leaderboard_column: str | None = None
    # How a direct call behaves inside a launched multi-process job (rexrank.parallel): "shard" splits one call's
    # distinct pairs across the processes (model-backed metrics); "replicate" computes them all in every process.
    across_processes: str = "replicate"
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class _Entry:
    spec: MetricSpec
    target: str | Callable[..., Any]  # "module:Class" or the class itself

    def load(self):
        if callable(self.target):
            return self.target
        module_name, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module_name), attr)


class Registry:
    """Name -> entry, with helpful errors. Generic over what it holds (metrics here)."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, _Entry] = {}
        self._aliases: dict[str, str] = {}

    def register(self, spec: MetricSpec, target: str | Callable[..., Any], aliases: tuple[str, ...] = ()):
        if spec.name in self._entries:
            raise ValueError(f"{self.kind} {spec.name!r} is already registered")
        self._entries[spec.name] = _Entry(spec, target)
        for alias in aliases:
            self._aliases[alias] = spec.name
        return target

    def canonical(self, name: str) -> str:
        key = str(name).strip().lower()
        key = self._aliases.get(key, key)
        if key not in self._entries:
            raise UnknownNameError(f"Unknown {self.kind} {name!r}. Available: {', '.join(self.names())}")
        return key

    def spec(self, name: str) -> MetricSpec:
        return self._entries[self.canonical(name)].spec

    def cls(self, name: str):
        return self._entries[self.canonical(name)].load()

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        try:
            self.canonical(str(name))
        except UnknownNameError:
            return False
        return True
