"""One typed registry: metric name -> MetricSpec (+ the class that computes it).

Entries are lazy ("module:Class" strings) so listing metrics never imports torch.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Callable

from rexrank.errors import ConfigError, UnknownNameError


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
    # "report": one value per report, aggregated by leaderboard_aggregation. "corpus": the metric's class owns
    # STATISTICS (per-study columns, the first being ``column``), OUTPUTS (named values, the first the headline) and
    # corpus_values(sums, n); every value is a function of the column sums (rexrank.metrics.aggregation). Read from
    # the class, not declared here, so listing metrics imports no model code.
    level: str = "report"
    # Registry names whose configuration this metric takes as a keyword dict (``semb={...}``) and whose per-text
    # cache entries it reads: CE F1 reuses SembScore's CheXbert labels (rexrank.evaluation.plan.metric_config).
    shares: tuple[str, ...] = ()
    # The interval every value the metric reports lies in, a mean and its CI bounds included (None: no bound on
    # that side). The leaderboard store refuses a result outside it (rexrank.leaderboard.records.check_numbers);
    # for a corpus-level metric it bounds the headline value (results' "mean" slot).
    value_range: tuple[float | None, float | None] = (None, None)
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

    def options(self, name: str) -> tuple[list[str], bool]:
        """(the keyword options ``name``'s class takes, whether it also takes any other key), read from its
        constructor, so the class is the one owner of what it accepts. "Any other key": a ``**kwargs`` it forwards
        (GREEN's backend options, FineRadScore's HTTP options). Imports the class's module; loads no model."""
        signature = inspect.signature(self.cls(name))
        named = [p.name for p in signature.parameters.values()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        open_ended = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        return named, open_ended

    def check_options(self, name: str, keys: Iterable[str], *, flag: str = "--option") -> None:
        """Raise ConfigError naming every key ``name`` does not take, and the keys it does take."""
        accepted, open_ended = self.options(name)
        unknown = [key for key in keys if key not in accepted]
        if not unknown or open_ended:
            return
        canonical = self.canonical(name)
        takes = f"it takes: {', '.join(accepted)}" if accepted else "it takes no options"
        raise ConfigError(f"{flag}: {self.kind} {canonical} has no option {', '.join(map(repr, unknown))}; {takes}")

    def __contains__(self, name: object) -> bool:
        try:
            self.canonical(str(name))
        except UnknownNameError:
            return False
        return True
