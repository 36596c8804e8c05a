"""Small fake metrics for the evaluation harness tests: fast, deterministic, and observable.

Registered into the real registry, so the harness treats them exactly like the real metrics: for a block by
``registered()`` (the ``fake_metrics`` fixture of tests/conftest.py), for a whole process by ``register()``
(subprocess drivers import this module and call it first).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import numpy as np
import pandas as pd

from rexrank.metrics import REGISTRY
from rexrank.metrics.base import Metric
from rexrank.metrics.registry import MetricSpec

# Environment switches read at call time, so subprocesses can be steered without arguments.
LOG_ENV = "REXRANK_FAKE_LOG"  # file: one line per pair computed by fake_slow, one per text by fake_len refs
SLEEP_ENV = "REXRANK_FAKE_SLEEP"  # seconds per pair for fake_slow


def _log(lines: list[str]) -> None:
    path = os.environ.get(LOG_ENV)
    if path and lines:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))
            fh.flush()
            os.fsync(fh.fileno())


class FakeLength(Metric):
    """Word overlap of hypothesis and reference, using per-text artefacts (word sets) on both sides.

    Counts per-text computations in ``computed_texts`` and exposes a CheXbert-like ``labels`` API: "No Finding" is
    positive when the text contains "normal".
    """

    spec = MetricSpec("fake_len", "fake_len", True, "1", "test metric: word overlap", needs_model=True,
                      leaderboard_column="FakeLen")
    computed_texts: list[str] = []

    def __init__(self, model=None, device=None, batch_size=None):
        self.model = model

    def config(self):
        return {"model": self.model}

    def _words(self, texts):
        FakeLength.computed_texts.extend(texts)
        return [frozenset(t.lower().replace(".", " ").split()) for t in texts]

    def _score(self, hyps, refs):
        h = self.per_text("words", hyps, self._words)
        r = self.per_text("words", refs, self._words)
        return np.array([len(a & b) / max(1, len(a | b)) for a, b in zip(h, r)])

    def labels(self, texts):
        return pd.DataFrame({"Cardiomegaly": [1.0 if "cardiomegaly" in t.lower() else np.nan for t in texts],
                             "No Finding": [1.0 if "normal" in t.lower() else np.nan for t in texts]})


class FakeSlow(Metric):
    """Character-length ratio; sleeps per pair and logs every pair it computes (for interrupt tests)."""

    spec = MetricSpec("fake_slow", "fake_slow", True, "1", "test metric: slow length ratio",
                      leaderboard_column="FakeSlow")

    def __init__(self, **_):
        pass

    def _score(self, hyps, refs):
        sleep = float(os.environ.get(SLEEP_ENV, "0"))
        out = []
        for h, r in zip(hyps, refs):
            if sleep:
                time.sleep(sleep)
            out.append(min(len(h), len(r)) / max(len(h), len(r)))
        _log([f"{h}\t{r}" for h, r in zip(hyps, refs)])
        return np.array(out)


class FakeBatched(Metric):
    """Character-length ratio in batches of ``batch_size`` pairs, sleeping SLEEP_ENV seconds per batch and reporting
    progress after each batch, as the model-backed metrics do (for the progress tests)."""

    spec = MetricSpec("fake_batched", "fake_batched", True, "1", "test metric: batched length ratio",
                      needs_model=True, leaderboard_column="FakeBatched")

    def __init__(self, batch_size=None, **_):
        self.batch_size = batch_size or 32

    def _score(self, hyps, refs):
        sleep = float(os.environ.get(SLEEP_ENV, "0"))
        out = []
        for start in range(0, len(hyps), self.batch_size):
            if sleep:
                time.sleep(sleep)
            out.extend(min(len(h), len(r)) / max(len(h), len(r), 1)
                       for h, r in zip(hyps[start:start + self.batch_size], refs[start:start + self.batch_size]))
            self._report_progress(len(out), len(hyps))
        return np.array(out)


class FakeJudge(Metric):
    """A GREEN-like judge: a score plus per-pair error counts, and NaN when the hypothesis says "unparseable"."""

    spec = MetricSpec("fake_judge", "fake_judge", True, "1", "test metric: judge with error counts",
                      leaderboard_column="FakeJudge")

    def __init__(self, **_):
        pass

    def _details(self, hyps, refs):
        rows = []
        for h, r in zip(hyps, refs):
            if "unparseable" in h:
                rows.append((np.nan, None, None))
                continue
            errors = sum(1 for w in set(h.lower().split()) if w not in r.lower())
            rows.append((1.0 / (1 + errors), errors, 0))
        return rows

    def _score(self, hyps, refs):
        return np.array([row[0] for row in self._details(hyps, refs)], dtype=float)

    def score_details(self, hyps, refs):
        rows = self._details(hyps, refs)
        return pd.DataFrame({"fake_judge": [r[0] for r in rows],
                             "green_significant_errors": [r[1] for r in rows],
                             "green_insignificant_errors": [r[2] for r in rows]})


class FakeLower(Metric):
    """Lower-is-better, reported as 1/mean on the leaderboard (like RadCliQ-v1): exercises reciprocal CIs."""

    spec = MetricSpec("fake_lower", "fake_lower", False, "1", "test metric: 1 + length difference",
                      leaderboard_aggregation="reciprocal_of_mean", leaderboard_column="1/FakeLower")

    def __init__(self, **_):
        pass

    def _score(self, hyps, refs):
        return np.array([1.0 + abs(len(h.split()) - len(r.split())) / 10 for h, r in zip(hyps, refs)])


FAKES = (FakeLength, FakeSlow, FakeJudge, FakeLower, FakeBatched)


def register() -> None:
    """Register the fakes for the rest of the process (a subprocess driver's whole run)."""
    for cls in FAKES:
        if cls.spec.name not in REGISTRY.names(plugins=False):
            REGISTRY.register(cls.spec, cls)


@contextlib.contextmanager
def registered() -> Iterator[None]:
    """The fakes registered within the block only (``Registry.scoped``: the registry is restored on leaving it),
    with FakeLength's record of computed texts emptied. The ``fake_metrics`` fixture of tests/conftest.py."""
    with REGISTRY.scoped():
        register()
        FakeLength.computed_texts = []
        yield
