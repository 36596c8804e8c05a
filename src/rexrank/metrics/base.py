"""The metric base class: a functional core behind a thin object (torchmetrics style).

Every metric takes two equally long lists of strings and returns one float per pair, in order.
Input checking lives here so every metric rejects bad input the same way, before any model runs.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from rexrank import parallel, progress
from rexrank.errors import InputError
from rexrank.metrics.registry import MetricSpec


def check_pairs(hyps: Sequence[Any], refs: Sequence[Any]) -> tuple[list[str], list[str]]:
    """Validate and copy the inputs. None/NaN/non-strings are errors naming the first bad index.

    Empty strings are allowed here: each metric documents what an empty report scores.
    """
    if isinstance(hyps, str) or isinstance(refs, str):
        raise InputError("hyps and refs must be lists of strings, not a single string")
    hyps, refs = list(hyps), list(refs)
    if len(hyps) != len(refs):
        raise InputError(f"hyps and refs differ in length: {len(hyps)} hypotheses vs {len(refs)} references")
    for side, values in (("hyps", hyps), ("refs", refs)):
        for i, value in enumerate(values):
            if value is None or (isinstance(value, float) and math.isnan(value)):
                raise InputError(f"{side}[{i}] is missing ({value!r}); every pair needs two report strings")
            if not isinstance(value, str):
                raise InputError(f"{side}[{i}] is a {type(value).__name__}, not a string: {value!r:.80}")
            if not value.isascii():
                _check_encodable(side, i, value)
    return hyps, refs


def _check_encodable(side: str, index: int, value: str) -> None:
    """A lone UTF-16 surrogate ("\\ud800" in JSON) encodes no character: every tokenizer fails on it later."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{side}[{index}] contains a lone UTF-16 surrogate (U+{ord(value[exc.start]):04X} at "
                         f"character {exc.start}), an escape that encodes no character: remove it") from None


def fingerprint_of(payload: dict[str, Any]) -> str:
    """Stable short hash of a JSON-able config (sorted keys)."""
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def file_digest(path, chunk: int = 1 << 20) -> str:
    """sha256 of a file (used to fingerprint local weights)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def text_key(text: str) -> str:
    """Cache key of one report text (sha256 of its UTF-8 bytes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def text_keys(texts: Sequence[str]) -> list[str]:
    """``text_key`` of each text, each distinct text hashed once: a run's texts repeat (one reference for several
    studies, a model's stock "no acute findings" report) and a dict lookup costs far less than a sha256."""
    seen: dict[str, str] = {}
    out = []
    for text in texts:
        key = seen.get(text)
        if key is None:
            key = seen[text] = text_key(text)
        out.append(key)
    return out


class TextCache(Protocol):
    """Per-text artefacts (CheXbert embeddings and labels, RadGraph annotations, ...), keyed by text hash.

    ``namespace`` always includes the metric fingerprint, so a change of weights or options never reuses stale
    values. The harness supplies a persistent implementation (evaluation/cache), which stores plain values only
    (the types ``rexrank.evaluation.cache.encode_value`` takes; no class instances): what a metric may put here.
    """

    def get_many(self, namespace: str, keys: list[str]) -> dict[str, Any]: ...

    def put_many(self, namespace: str, items: dict[str, Any]) -> None: ...


class MemoryTextCache:
    """In-process TextCache: what a metric uses when the harness gives it none."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}

    def get_many(self, namespace: str, keys: list[str]) -> dict[str, Any]:
        store = self._data.get(namespace, {})
        return {k: store[k] for k in keys if k in store}

    def put_many(self, namespace: str, items: dict[str, Any]) -> None:
        self._data.setdefault(namespace, {}).update(items)


class Metric:
    """Subclasses set ``spec`` and implement ``_score(hyps, refs) -> np.ndarray``.

    ``config()`` returns everything that can change the numbers (model id or weight hash, layer,
    baseline, tokenisation...); it goes into ``fingerprint`` and into every result file.
    """

    spec: MetricSpec
    text_cache: TextCache | None = None
    # Set by the harness while a call runs (rexrank.progress); display only, so never part of config().
    progress_hook: Callable[[float, float], None] | None = None

    def config(self) -> dict[str, Any]:
        return {}

    def use_text_cache(self, cache: TextCache | None) -> "Metric":
        """Share per-text work across calls and runs (the harness passes its persistent cache)."""
        self.text_cache = cache
        return self

    def use_corpus(self, refs: Sequence[str]) -> "Metric":
        """The run's whole reference list (one entry per study), given before its pairs are scored in chunks.

        Most metrics score a pair from the pair alone and ignore it. One whose per-pair values depend on the corpus
        (CIDEr-D's document frequencies, rexrank.metrics.nlg) keeps what it needs and puts a digest of it into
        ``config()``, so the pair cache never mixes values computed against different corpora."""
        return self

    def locate_weights(self) -> None:
        """Find (download if needed) every weight file this metric reads, without loading any. Most metrics do it
        in their constructor; one that resolves lazily overrides this."""

    def per_text(self, artifact: str, texts: Sequence[str], compute: Callable[[list[str]], Sequence[Any]]) -> list[Any]:
        """Compute ``artifact`` once per unique text: look up the cache, compute only what is missing, store it.

        ``compute(unique_texts)`` returns one value per text, in order. Returns values aligned with ``texts``.
        """
        if self.text_cache is None:
            self.text_cache = MemoryTextCache()
        namespace = f"{self.spec.name}:{artifact}:{self.fingerprint}"
        keys = text_keys(texts)
        unique = dict(zip(keys, texts))
        found = self.text_cache.get_many(namespace, list(unique))
        missing = [k for k in unique if k not in found]
        if missing:
            values = list(compute([unique[k] for k in missing]))
            if len(values) != len(missing):
                raise RuntimeError(f"{self.spec.name}: {artifact} computed {len(values)} values for {len(missing)} texts")
            new = dict(zip(missing, values))
            self.text_cache.put_many(namespace, new)
            found.update(new)
        return [found[k] for k in keys]

    def _announce_load(self, weights: Any) -> None:
        """Model-backed metrics call this right before a model load starts (the imports included): one line naming
        the metric and ``weights`` (rexrank.progress.loading), shown when progress is on and, in a launched job,
        by the main process only (rank 0). Display only."""
        if parallel.context().is_main:
            progress.loading(self.spec.name, weights)

    def _report_progress(self, done: float, total: float) -> None:
        """Model-backed metrics call this from their batch loops: ``done`` of ``total`` units (any unit) of the
        current call are finished. Display only: it must never change what is computed."""
        if self.progress_hook is not None and total > 0:
            self.progress_hook(done, total)

    @property
    def fingerprint(self) -> str:
        return fingerprint_of({"metric": self.spec.name, "version": self.spec.version, **self.config()})

    def score(self, hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
        """One float per pair, in order. Inside a launched multi-process job see ``rexrank.parallel``: a
        model-backed metric shares one call's distinct pairs across the processes (every rank passes the same
        pairs and gets every value); inside ``rexrank.parallel.local()`` it computes exactly what it is given."""
        hyps, refs = check_pairs(hyps, refs)
        if not hyps:
            return np.zeros(0, dtype=np.float64)
        return self._across_processes(self._checked_score, _merge_arrays, hyps, refs)

    def score_details(self, hyps: Sequence[str], refs: Sequence[str]):
        """Per-pair extra columns (e.g. GREEN error counts) as a DataFrame, the score first; shared across
        processes like ``score``."""
        hyps, refs = check_pairs(hyps, refs)
        if not hyps:
            return self._score_details(hyps, refs)
        return self._across_processes(self._score_details, _merge_frames, hyps, refs)

    def _across_processes(self, compute, merge, hyps: list[str], refs: list[str]):
        """``compute(hyps, refs)`` here, or over this process's share of the distinct pairs (rexrank.parallel)."""
        if not parallel.would_shard(self.spec.across_processes):
            return compute(hyps, refs)
        distinct_hyps, distinct_refs, keys, inverse = _distinct_pairs(hyps, refs)
        result = parallel.map_distinct(
            self.spec.name, self.spec.across_processes, keys,
            lambda pos: compute([distinct_hyps[i] for i in pos], [distinct_refs[i] for i in pos]), merge)
        return result[inverse] if isinstance(result, np.ndarray) else result.iloc[inverse].reset_index(drop=True)

    def _checked_score(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        values = np.asarray(self._score(hyps, refs), dtype=np.float64)
        if values.shape != (len(hyps),):
            raise RuntimeError(f"{self.spec.name} returned shape {values.shape} for {len(hyps)} pairs")
        return values

    def _score_details(self, hyps: list[str], refs: list[str]):
        """Subclasses with detail columns override this; by default just the score."""
        import pandas as pd

        values = self._checked_score(hyps, refs) if hyps else np.zeros(0, dtype=np.float64)
        return pd.DataFrame({self.spec.name: values})

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config()})"


class CorpusMetric(Metric):
    """A corpus-level metric (``MetricSpec.level == "corpus"``: CE F1, the NLG metrics, METEOR).

    ``statistics(hyps, refs)`` gives each pair's row of ``STATISTICS`` (the first is the spec's per-study column,
    what ``score`` returns); every named output (``OUTPUTS``, the first the headline) is ``corpus_values`` of their
    column sums, which rexrank.metrics.aggregation reads for point values, bootstrap resamples and subgroups alike.
    ``SHOWN``: the outputs tables show, labelled by ``output_label``; ``TITLE`` and ``SHOWN_OPTIONS``: the
    leaderboard's model-page section.
    """

    STATISTICS: tuple[str, ...] = ()
    OUTPUTS: tuple[str, ...] = ()
    SHOWN: tuple[str, ...] = ()
    TITLE: str = ""
    SHOWN_OPTIONS: tuple[str, ...] = ()

    @staticmethod
    def corpus_values(sums: np.ndarray, n) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def output_label(output: str) -> str:
        return output

    def statistics(self, hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def compute(self, hyps: Sequence[str], refs: Sequence[str]) -> dict[str, float]:
        """Every output over the whole corpus (no CI): {output name: value}."""
        stats = self.statistics(hyps, refs)
        return dict(zip(self.OUTPUTS, map(float, self.corpus_values(stats.sum(axis=0), len(stats)))))

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        return self.statistics(hyps, refs)[:, 0]

    def _score_details(self, hyps: list[str], refs: list[str]):
        import pandas as pd

        stats = self.statistics(hyps, refs) if hyps else np.zeros((0, len(self.STATISTICS)))
        return pd.DataFrame(stats, columns=list(self.STATISTICS))


def _distinct_pairs(hyps: list[str], refs: list[str]):
    """(distinct hyps, distinct refs, their keys, index of each input pair among them), first occurrence order."""
    keys = [h + r for h, r in zip(text_keys(hyps), text_keys(refs))]
    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    order = list(first.values())
    slot = {key: n for n, key in enumerate(first)}
    inverse = np.array([slot[k] for k in keys], dtype=np.int64)
    return [hyps[i] for i in order], [refs[i] for i in order], list(first), inverse


def _merge_arrays(parts, n: int) -> np.ndarray:
    out = np.full(n, np.nan, dtype=np.float64)
    for positions, values in parts:
        out[np.asarray(positions, dtype=np.int64)] = np.asarray(values, dtype=np.float64)
    return out


def _merge_frames(parts, n: int):
    import pandas as pd

    frames = []
    for positions, frame in parts:
        frame = frame.copy()
        frame.index = list(positions)
        frames.append(frame)
    merged = pd.concat(frames).sort_index()
    if list(merged.index) != list(range(n)):
        raise RuntimeError(f"per-pair detail rows from the processes do not cover the {n} pairs exactly once")
    return merged.reset_index(drop=True)
