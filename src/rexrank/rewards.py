"""Any per-report rexrank metric as a reward function for TRL's ``GRPOTrainer`` (RL fine-tuning of report models).

``reward("radgraph", model=...)`` and ``mix({"radgraph": 0.5, "bertscore": 0.5})`` return a callable with the
signature TRL's ``reward_funcs`` takes: ``fn(prompts=..., completions=..., completion_ids=..., **columns)`` where
every other dataset column arrives as a keyword list, so the references come from the ``reference`` column (any
name: ``reference_column=``). It returns one float per completion, or None where the row has no reference.

Facts read from their owners, never restated here:

- direction: a metric's ``MetricSpec.higher_is_better``. A reward must grow with quality, so a lower-is-better
  metric (RadCliQ, FineRadScore) is *negated*, never inverted: a per-report RadCliQ-v1 is negative for good
  reports (a perfect one scores -1.44), so 1/RadCliQ per report is not even monotone (it jumps from -inf to +inf
  at 0), while -RadCliQ is an affine map of bounded components, hence bounded, and GRPO's per-group normalisation
  makes the offset irrelevant. The leaderboard's 1/RadCliQ-v1 is 1 / mean over a corpus (metrics/aggregation.py):
  a corpus aggregate, not a per-report value.
- composites: a spec's ``components``; the per-report composite is the composite class's ``combine`` over
  component arrays, and each component is scored once however many terms need it.
- which process scores what: ``rexrank.parallel``. In a multi-process TRL run every process scores its own
  completions (TRL gathers the rewards), so scoring runs inside ``parallel.local()``.

Reference-side work (RadGraph annotations of the references, their BERTScore token embeddings, CheXbert
embeddings) is computed once per distinct reference text for the whole run: one per-text cache
(``RewardTextCache``) is shared by every metric of the function and keeps the references' artefacts, while
completion-side artefacts (new text at every step) live in a bounded least-recently-used store.

Latency: ``fn.stats`` counts calls, pairs and seconds (``last_latency_s``); each call is logged at debug level
(logger ``rexrank.rewards``) and, under TRL, reported through its ``log_metric`` hook as
``rewards/<name>/latency_s`` beside TRL's own ``rewards/<name>/mean``. docs/rewards.md has a worked example.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rexrank import parallel
from rexrank.errors import ConfigError, InputError
from rexrank.metrics import REGISTRY, get
from rexrank.metrics.base import Metric, TextCache, text_key

log = logging.getLogger("rexrank.rewards")

# Completion-side per-text artefacts kept between calls (least recently used dropped first). One entry is a few KB
# (a CheXbert embedding, a RadGraph annotation, a RaTEScore entity vector); completions rarely recur, so this only
# needs to cover what one call and its near neighbours reuse.
DEFAULT_MAX_COMPLETION_ENTRIES = 20_000


class RewardTextCache:
    """A ``TextCache`` (rexrank.metrics.base) for a reward function: reference artefacts kept, the rest bounded.

    Keys of texts passed to ``keep`` (the references) are stored without limit, unless ``max_reference_entries``
    is set; every other entry (completions, RaTEScore entity strings, GREEN pair analyses) goes to one LRU store
    of at most ``max_completion_entries``. An evicted entry is only recomputed, never wrong: namespaces carry the
    metric fingerprint.
    """

    def __init__(self, max_completion_entries: int = DEFAULT_MAX_COMPLETION_ENTRIES,
                 max_reference_entries: int | None = None):
        for label, value in (("max_completion_entries", max_completion_entries),
                             ("max_reference_entries", max_reference_entries)):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ConfigError(f"RewardTextCache: {label} must be a whole number >= 0, not {value!r}")
        self.max_completion_entries = max_completion_entries
        self.max_reference_entries = max_reference_entries
        self._references: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._others: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._kept_keys: set[str] = set()

    def keep(self, texts: Sequence[str]) -> None:
        """Mark these texts (a call's references) as reference side: their artefacts stay for the run."""
        self._kept_keys.update(text_key(t) for t in texts)

    def get_many(self, namespace: str, keys: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key in keys:
            slot = (namespace, key)
            for store in (self._references, self._others):
                if slot in store:
                    store.move_to_end(slot)
                    found[key] = store[slot]
                    break
        return found

    def put_many(self, namespace: str, items: dict[str, Any]) -> None:
        for key, value in items.items():
            store = self._references if key in self._kept_keys else self._others
            store[(namespace, key)] = value
            store.move_to_end((namespace, key))
        _trim(self._references, self.max_reference_entries)
        _trim(self._others, self.max_completion_entries)

    def __len__(self) -> int:
        return len(self._references) + len(self._others)

    @property
    def sizes(self) -> dict[str, int]:
        """Entries held: {"reference": ..., "completion": ...}."""
        return {"reference": len(self._references), "completion": len(self._others)}


def _trim(store: OrderedDict, limit: int | None) -> None:
    if limit is None:
        return
    while len(store) > limit:
        store.popitem(last=False)


@dataclass
class RewardStats:
    """What a reward function has cost so far (``fn.stats``)."""

    calls: int = 0
    pairs: int = 0  # completions scored (rows without a reference are not counted)
    seconds: float = 0.0
    last_latency_s: float = 0.0
    last_pairs: int = 0
    metric_seconds: dict[str, float] = field(default_factory=dict)  # base metric name -> seconds, all calls

    @property
    def mean_latency_s(self) -> float:
        return self.seconds / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class _Term:
    """One weighted term of a reward: a registry metric, its direction, and the base metrics it reads."""

    name: str
    weight: float
    sign: float  # +1 higher-is-better, -1 lower-is-better (negated, see the module docstring)
    parts: Mapping[str, str]  # component registry name -> key of the built base metric (itself for a plain metric)
    combine: Any = None  # the composite class's combine, None for a plain metric


class RewardFunction:
    """A TRL reward function over rexrank metrics. Build it with ``reward`` or ``mix``.

    ``fn(prompts=..., completions=..., **columns)`` for TRL; ``fn.score(completions, references)`` for direct use.
    ``fn.metrics`` holds the built base metric objects (scoring with them directly gives the same values),
    ``fn.stats`` the latency counters, ``fn.cache`` the per-text cache they share.
    """

    def __init__(self, terms: list[_Term], metrics: dict[str, Metric], *, name: str, reference_column: str,
                 cache: TextCache):
        self.terms = terms
        self.metrics = metrics
        self.__name__ = name  # TRL logs each reward function under its __name__ (rewards/<name>/mean)
        self.reference_column = reference_column
        self.cache = cache
        self.stats = RewardStats()
        for metric in metrics.values():
            metric.use_text_cache(cache)

    def __repr__(self) -> str:
        terms = " + ".join(f"{t.weight:g}*{'-' if t.sign < 0 else ''}{t.name}" for t in self.terms)
        return f"RewardFunction({self.__name__}: {terms}, references from {self.reference_column!r})"

    def __call__(self, prompts=None, completions=None, completion_ids=None, **kwargs) -> list[float | None]:
        if completions is None:
            raise InputError(f"{self.__name__}: called without completions=; TRL passes prompts=, completions= and "
                             "every dataset column as keyword lists")
        if self.reference_column not in kwargs:
            columns = sorted(k for k in kwargs if k not in _TRL_EXTRAS)
            raise ConfigError(
                f"{self.__name__}: no {self.reference_column!r} column reached the reward function (dataset columns "
                f"passed: {', '.join(columns) or 'none'}); add a column of reference reports to the dataset, or "
                "name the one you have with reward(..., reference_column=NAME)")
        references = kwargs[self.reference_column]
        values = self.score(completions, references)
        latency = self.stats.last_latency_s
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):  # TRL's hook: averaged per logging step beside rewards/<name>/mean
            log_metric(f"rewards/{self.__name__}/latency_s", latency)
        return [None if math.isnan(v) else float(v) for v in values]

    def score(self, completions: Sequence[Any], references: Sequence[Any]) -> np.ndarray:
        """One reward per completion (NaN where the reference is None or a metric gave NaN), timed into ``stats``."""
        texts = [_completion_text(c, i, self.__name__) for i, c in enumerate(_as_list(completions, "completions"))]
        references = _as_list(references, self.reference_column)
        if len(references) != len(texts):
            raise InputError(f"{self.__name__}: {len(texts)} completions but {len(references)} values in the "
                             f"{self.reference_column!r} column; TRL passes one per completion")
        rows = [i for i, ref in enumerate(references) if ref is not None]
        for i in rows:
            if not isinstance(references[i], str):
                raise InputError(f"{self.__name__}: {self.reference_column}[{i}] is a {type(references[i]).__name__}, "
                                 f"not a report string: {references[i]!r:.80}")
        hyps, refs = [texts[i] for i in rows], [references[i] for i in rows]
        out = np.full(len(texts), np.nan, dtype=np.float64)
        started = time.perf_counter()
        if rows:
            if isinstance(self.cache, RewardTextCache):
                self.cache.keep(refs)
            out[rows] = self._score_pairs(hyps, refs)
        latency = time.perf_counter() - started
        stats = self.stats
        stats.calls += 1
        stats.pairs += len(rows)
        stats.seconds += latency
        stats.last_latency_s, stats.last_pairs = latency, len(rows)
        log.debug("%s: %d completions scored in %.3f s (%d calls, mean %.3f s)", self.__name__, len(rows), latency,
                  stats.calls, stats.mean_latency_s)
        return out

    def _score_pairs(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        arrays: dict[str, np.ndarray] = {}
        # Each process scores its own completions; TRL gathers the rewards itself.
        with parallel.local():
            for key, metric in self.metrics.items():
                started = time.perf_counter()
                arrays[key] = metric.score(hyps, refs)
                seconds = self.stats.metric_seconds
                seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - started
        total = np.zeros(len(hyps), dtype=np.float64)
        for term in self.terms:
            if term.combine is None:
                values = arrays[term.parts[term.name]]
            else:
                values = term.combine({part: arrays[key] for part, key in term.parts.items()})
            # A NaN in any term leaves the reward NaN (None to TRL: "not applicable"), never a partial sum.
            total += term.weight * term.sign * np.asarray(values, dtype=np.float64)
        return total


# Keyword arguments TRL adds to every reward call besides the dataset columns (left out of error messages).
_TRL_EXTRAS = ("trainer_state", "log_extra", "log_metric", "environments")


def _as_list(values: Any, what: str) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise InputError(f"{what} must be a list (one item per completion), not a {type(values).__name__}")
    return list(values)


def _completion_text(completion: Any, index: int, name: str) -> str:
    """A plain completion is the text; a conversational one (a list of message dicts, as TRL passes for chat
    datasets) is the content of its last assistant message, whose content may also be a list of text parts."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and all(isinstance(m, Mapping) for m in completion):
        replies = [m for m in completion if m.get("role", "assistant") == "assistant"]
        if replies:
            content = replies[-1].get("content")
            if content is None:
                return ""
            if isinstance(content, str):
                return content
            if isinstance(content, Sequence) and all(isinstance(p, Mapping) for p in content):
                return "".join(str(p.get("text", "")) for p in content if p.get("type", "text") == "text")
    raise InputError(f"{name}: completions[{index}] is neither a report string nor a list of chat messages with an "
                     f"assistant reply: {completion!r:.120}")


def _shared_options(name: str, device: str | None, batch_size: int | None) -> dict[str, Any]:
    """device/batch_size for the metrics that run a model; a bare "cuda" becomes this process's GPU."""
    if not REGISTRY.spec(name).needs_model:
        return {}
    shared = {"device": parallel.device_for(device, parallel.context()), "batch_size": batch_size}
    return {k: v for k, v in shared.items() if v is not None}


def _build(weights: Mapping[str, float], configs: Mapping[str, Mapping[str, Any]], *, device: str | None,
           batch_size: int | None, what: str) -> tuple[list[_Term], dict[str, Metric]]:
    """Terms and the base metrics they read, each base metric built once (a component shared by two terms with the
    same configuration, e.g. bertscore alone and inside radcliq_v1, is one object and one scoring pass)."""
    if not weights:
        raise ConfigError(f"{what}: give at least one metric, e.g. {{'radgraph': 0.5, 'bertscore': 0.5}}")
    canonical_configs: dict[str, dict[str, Any]] = {}
    for key, config in configs.items():
        if not isinstance(config, Mapping):
            raise ConfigError(f"{what}: the options of {key!r} must be a dict (e.g. {{'model': PATH}}), "
                              f"not {type(config).__name__}")
        canonical_configs[REGISTRY.canonical(key)] = dict(config)
    unused = [k for k in canonical_configs if k not in {REGISTRY.canonical(n) for n in weights}]
    if unused:
        raise ConfigError(f"{what}: options given for {', '.join(unused)}, which is not among the metrics "
                          f"({', '.join(weights)}); for a composite's component pass them inside the composite's "
                          "options, e.g. {'radcliq_v1': {'bertscore': {'model': PATH}}}")
    built: dict[str, Metric] = {}
    by_fingerprint: dict[tuple[str, str], str] = {}

    def adopt(metric: Metric) -> str:
        identity = (metric.spec.name, metric.fingerprint)
        if identity not in by_fingerprint:
            key = metric.spec.name if metric.spec.name not in built else f"{metric.spec.name}#{len(built)}"
            built[key] = metric
            by_fingerprint[identity] = key
        return by_fingerprint[identity]

    terms: list[_Term] = []
    seen: set[str] = set()
    for raw_name, weight in weights.items():
        name = REGISTRY.canonical(raw_name)
        if name in seen:
            raise ConfigError(f"{what}: {raw_name!r} names {name}, which is already a term; give each metric once")
        seen.add(name)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
            raise ConfigError(f"{what}: the weight of {name} must be a finite number, not {weight!r}")
        spec = REGISTRY.spec(name)
        if spec.level != "report":
            # CE F1, the NLG metrics, METEOR: their numbers are corpus statistics, not a value per completion.
            per_report = [n for n in REGISTRY.names() if REGISTRY.spec(n).level == "report"]
            raise ConfigError(f"{what}: {name} is a corpus-level metric (its values come from counts summed over a "
                              "test set), so it gives no reward per completion; use a per-report metric: "
                              + ", ".join(per_report))
        config = canonical_configs.get(name, {})
        REGISTRY.check_options(name, config, flag=what)
        options = {**_shared_options(name, device, batch_size), **config}
        metric = get(name, **options)
        sign = 1.0 if spec.higher_is_better else -1.0
        if spec.components:
            parts = {part: adopt(component) for part, component in metric.components.items()}
            terms.append(_Term(name, float(weight), sign, parts, type(metric).combine))
        else:
            terms.append(_Term(name, float(weight), sign, {name: adopt(metric)}))
    return terms, built


def reward(metric: str = "radgraph", *, reference_column: str = "reference", name: str | None = None,
           device: str | None = None, batch_size: int | None = None, cache: TextCache | None = None,
           **metric_config: Any) -> RewardFunction:
    """One rexrank metric as a TRL reward function.

    ``metric``: any registry name (``rexrank.metrics.available()``): ``radgraph``, ``radgraph_partial``,
    ``bertscore``, ``semb``, ``ratescore``, ``green``, ``radcliq_v1`` ... ``metric_config``: that metric's own
    options (``model=PATH``; for a composite, one dict per component: ``radgraph={"model": ...}``).
    ``device``/``batch_size``: for the model-backed metrics. A lower-is-better metric is negated (module
    docstring). ``cache``: any ``TextCache`` (default: a new ``RewardTextCache``). ``name``: the ``__name__``
    TRL logs under (default ``rexrank_<metric>``, ``rexrank_neg_<metric>`` when negated).
    """
    canonical = REGISTRY.canonical(metric)
    what = f"rexrank.rewards.reward({canonical!r})"
    terms, built = _build({canonical: 1.0}, {canonical: metric_config}, device=device, batch_size=batch_size,
                          what=what)
    default = f"rexrank_{canonical}" if terms[0].sign > 0 else f"rexrank_neg_{canonical}"
    return RewardFunction(terms, built, name=_check_name(name or default, what),
                          reference_column=_check_column(reference_column, what), cache=cache or RewardTextCache())


def mix(weights: Mapping[str, float], *, configs: Mapping[str, Mapping[str, Any]] | None = None,
        reference_column: str = "reference", name: str | None = None, device: str | None = None,
        batch_size: int | None = None, cache: TextCache | None = None) -> RewardFunction:
    """A weighted sum of rexrank metrics as one TRL reward function: sum of weight * (+/-) metric per completion.

    ``weights``: {registry name: weight}, e.g. ``{"radgraph": 0.5, "bertscore": 0.5}``; lower-is-better metrics
    enter negated. ``configs``: {registry name: that metric's options}. Separate reward functions weighted by
    ``GRPOConfig(reward_weights=...)`` do the same sum; ``mix`` logs one reward and scores shared components once.
    """
    what = "rexrank.rewards.mix"
    if not isinstance(weights, Mapping):
        raise ConfigError(f"{what}: weights must be a dict {{metric: weight}}, not {type(weights).__name__}")
    terms, built = _build(weights, configs or {}, device=device, batch_size=batch_size, what=what)
    default = "rexrank_mix_" + "_".join(t.name for t in terms)
    return RewardFunction(terms, built, name=_check_name(name or default, what),
                          reference_column=_check_column(reference_column, what), cache=cache or RewardTextCache())


def _check_name(name: Any, what: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{what}: name must be a non-empty string (TRL logs rewards/<name>/mean), not {name!r}")
    return name


def _check_column(column: Any, what: str) -> str:
    if not isinstance(column, str) or not column or column in ("prompts", "completions", "completion_ids"):
        raise ConfigError(f"{what}: reference_column must name a dataset column holding the reference reports "
                          f"(e.g. 'reference'), not {column!r}")
    return column


__all__ = ["DEFAULT_MAX_COMPLETION_ENTRIES", "RewardFunction", "RewardStats", "RewardTextCache", "mix", "reward"]
