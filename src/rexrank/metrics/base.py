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
    return hyps, refs


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


class TextCache(Protocol):
    """Per-text artefacts (CheXbert embeddings and labels, RadGraph annotations, ...), keyed by text hash.

    ``namespace`` always includes the metric fingerprint, so a change of weights or options never reuses stale
    values. The harness supplies a persistent implementation (evaluation/cache); values must be picklable.
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

    def config(self) -> dict[str, Any]:
        return {}

    def use_text_cache(self, cache: TextCache | None) -> "Metric":
        """Share per-text work across calls and runs (the harness passes its persistent cache)."""
        self.text_cache = cache
        return self

    def per_text(self, artifact: str, texts: Sequence[str], compute: Callable[[list[str]], Sequence[Any]]) -> list[Any]:
        """Compute ``artifact`` once per unique text: look up the cache, compute only what is missing, store it.

        ``compute(unique_texts)`` returns one value per text, in order. Returns values aligned with ``texts``.
        """
        if self.text_cache is None:
            self.text_cache = MemoryTextCache()
        namespace = f"{self.spec.name}:{artifact}:{self.fingerprint}"
        keys = [text_key(t) for t in texts]
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

    @property
    def fingerprint(self) -> str:
        return fingerprint_of({"metric": self.spec.name, "version": self.spec.version, **self.config()})

    def score(self, hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
        hyps, refs = check_pairs(hyps, refs)
        if not hyps:
            return np.zeros(0, dtype=np.float64)
        values = np.asarray(self._score(hyps, refs), dtype=np.float64)
        if values.shape != (len(hyps),):
            raise RuntimeError(f"{self.spec.name} returned shape {values.shape} for {len(hyps)} pairs")
        return values

    def score_details(self, hyps: Sequence[str], refs: Sequence[str]):
        """Per-pair extra columns (e.g. GREEN error counts) as a DataFrame; by default just the score."""
        import pandas as pd

        return pd.DataFrame({self.spec.name: self.score(hyps, refs)})

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config()})"
