"""What each metric saw of one study, recomputed on demand (docs/explore.md, "Stored or recomputed").

Nothing here is stored at score time. Each piece comes from the metric's public functions:

- BLEU-2: ``bleu.tokenize`` of both reports and their clipped 1- and 2-gram matches (pure Python, microseconds);
- RadGraph: ``annotate`` of both reports (``radgraph.scores.entity_set`` / ``relation_set``), matched and missed;
- SembScore: ``labels`` (CheXbert's 14 conditions) of both reports;
- RaTEScore: ``entities`` of both reports;
- any other metric (GREEN's and CRIMSON's error counts and judge text): the run's own pair row in the score cache,
  looked up by the run's fingerprint and the two texts' digests.

The model-backed metrics are built with the settings the user gives (``--model-path``/``--option``, as for
`rexrank score`) and must have the run's fingerprint (otherwise they would show another model's view); their
per-text results are read from the score cache, which the run filled, and computed only when missing. The cache is
only read: what is computed here stays in memory, so the explorer writes no file.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rexrank.errors import RexrankError
from rexrank.explore.data import Explorer

# Metrics with a view of their own below; every other metric shows its pair row from the cache.
RADGRAPH, SEMB, RATESCORE, BLEU = "radgraph", "semb", "ratescore", "bleu2"
MODEL_VIEWS = (RADGRAPH, SEMB, RATESCORE)


class _ReadOnlyCache:
    """The score cache as a metric's ``text_cache``: entries are read from it; what a metric computes here is kept
    in memory only (never written back)."""

    def __init__(self, cache) -> None:
        self._cache = cache
        self._memory: dict[str, dict[str, Any]] = {}

    def get_many(self, namespace: str, keys: list[str]) -> dict[str, Any]:
        own = self._memory.get(namespace, {})
        found = {k: own[k] for k in keys if k in own}
        rest = [k for k in keys if k not in found]
        if rest and self._cache is not None:
            found.update(self._cache.get_many(namespace, rest))
        return found

    def put_many(self, namespace: str, items: dict[str, Any]) -> None:
        self._memory.setdefault(namespace, {}).update(items)


def bleu_ngrams(hyp: str, ref: str, orders: tuple[int, ...] = (1, 2)) -> dict[int, dict[str, list[str]]]:
    """Per n: the report's n-grams found in the reference (clipped counts, as BLEU counts them) and those not."""
    from rexrank.metrics.bleu import tokenize

    hyp_tokens, ref_tokens = tokenize(hyp), tokenize(ref)
    out: dict[int, dict[str, list[str]]] = {}
    for n in orders:
        hyp_grams = Counter(tuple(hyp_tokens[i:i + n]) for i in range(len(hyp_tokens) - n + 1))
        ref_grams = Counter(tuple(ref_tokens[i:i + n]) for i in range(len(ref_tokens) - n + 1))
        matched, unmatched = [], []
        for gram, count in hyp_grams.items():
            hit = min(count, ref_grams[gram])
            matched += [" ".join(gram)] * hit
            unmatched += [" ".join(gram)] * (count - hit)
        out[n] = {"matched": matched, "unmatched": unmatched, "total": [str(sum(hyp_grams.values()))]}
    return out


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class Details:
    """The study page's per-metric views for one explorer; metrics are built once, on first use."""

    def __init__(self, explorer: Explorer, *, model_paths: Mapping[str, Any] | None = None,
                 metric_configs: Mapping[str, Mapping[str, Any]] | None = None,
                 cache_dir: str | os.PathLike | None = None, batch_size: int | None = None) -> None:
        self.explorer = explorer
        self.batch_size = batch_size  # part of an encoder metric's config (its fingerprint): as the run had it
        self.model_paths = dict(model_paths or {})
        self.metric_configs = {k: dict(v) for k, v in (metric_configs or {}).items()}
        self.cache_dir = cache_dir
        self._metrics: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._cache: Any = None
        self._cache_opened = False

    # -- the score cache (read only) ---------------------------------------------------------------------------
    def cache(self):
        """The score cache the runs filled, or None where there is none (nothing is created)."""
        if not self._cache_opened:
            self._cache_opened = True
            from rexrank.evaluation.cache import FILENAME, ScoreCache, default_cache_dir

            folder = Path(self.cache_dir).expanduser() if self.cache_dir is not None else default_cache_dir()
            if (folder / FILENAME).is_file():
                self._cache = ScoreCache(folder)
        return self._cache

    def metric(self, name: str, run: int) -> tuple[Any, str | None]:
        """(the metric built as the run's, None) or (None, why not: one line)."""
        wanted = (self.explorer.runs[run].results.get("fingerprints") or {}).get(name)
        with self._lock:
            if name not in self._metrics:
                try:
                    from rexrank.evaluation.runner import build_metrics

                    built = build_metrics([name], model_paths=self.model_paths, metric_configs=self.metric_configs,
                                          device="cpu", batch_size=self.batch_size)[name]
                    built.use_text_cache(_ReadOnlyCache(self.cache()))
                    self._metrics[name] = (built, built.fingerprint)
                except (RexrankError, OSError, ImportError, KeyError) as exc:
                    self._metrics[name] = (None, _first_line(exc))
            built, found = self._metrics[name]
        if built is None:
            return None, (f"{name} cannot be built here ({found}); pass the --model-path/--option the run was "
                          "scored with")
        if wanted and found != wanted:
            return None, (f"the {name} built here (fingerprint {found}) is not the run's ({wanted}): pass the "
                          "--model-path/--option/--batch-size the run was scored with")
        return built, None

    # -- each metric's view ------------------------------------------------------------------------------------
    def radgraph(self, run: int, hyp: str, ref: str) -> dict[str, Any]:
        metric, why = self.metric(RADGRAPH, run)
        if metric is None:
            return {"note": why}
        from rexrank.metrics.radgraph.scores import entity_set, relation_set

        hyp_ann, ref_ann = metric.annotate([hyp, ref])
        hyp_e, ref_e = entity_set(hyp_ann), entity_set(ref_ann)
        hyp_r, ref_r = relation_set(hyp_ann), relation_set(ref_ann)

        def entity(e):
            return f"{e[0]} ({e[1]})"

        def relation(r):
            return f"{entity(r[0])} —{r[2]}→ {entity(r[1])}"

        return {"entities": {"matched": sorted(map(entity, hyp_e & ref_e)),
                             "missed": sorted(map(entity, ref_e - hyp_e)),
                             "extra": sorted(map(entity, hyp_e - ref_e))},
                "relations": {"matched": sorted(map(relation, hyp_r & ref_r)),
                              "missed": sorted(map(relation, ref_r - hyp_r)),
                              "extra": sorted(map(relation, hyp_r - ref_r))}}

    def chexbert(self, run: int, hyp: str, ref: str) -> dict[str, Any]:
        metric, why = self.metric(SEMB, run)
        if metric is None:
            return {"note": why}
        frame = metric.labels([ref, hyp])
        return {"conditions": list(frame.columns), "reference": frame.iloc[0].tolist(),
                "prediction": frame.iloc[1].tolist()}

    def ratescore(self, run: int, hyp: str, ref: str) -> dict[str, Any]:
        metric, why = self.metric(RATESCORE, run)
        if metric is None:
            return {"note": why}
        hyp_ents, ref_ents = metric.entities([hyp, ref])
        hyp_set = {(str(n), str(t)) for n, t in hyp_ents}
        ref_set = {(str(n), str(t)) for n, t in ref_ents}

        def show(items):
            return sorted(f"{n} ({t})" for n, t in items)

        return {"entities": {"matched": show(hyp_set & ref_set), "missed": show(ref_set - hyp_set),
                             "extra": show(hyp_set - ref_set)}}

    def pair_row(self, name: str, run: int, hyp: str, ref: str) -> dict[str, Any] | None:
        """The run's pair row of ``name`` in the score cache (every column the metric returned, its judge text
        included), or None where the cache has none."""
        fingerprint = (self.explorer.runs[run].results.get("fingerprints") or {}).get(name)
        cache = self.cache()
        if not fingerprint or cache is None:
            return None
        from rexrank.metrics.base import text_key

        key = (text_key(hyp), text_key(ref))
        try:
            return cache.get_pairs(fingerprint, [key]).get(key)
        except RexrankError:
            return None

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
