"""BLEU-2 as CXR-Report-Metric computes it (column ``bleu_score``).

Official code (rajpurkarlab/CXR-Report-Metric @9c9ecad, CXRMetric/run_eval.py) scores each pair with
fast_bleu ``BLEU([ref_tokens], {"bigram": (1/2, 1/2)})``, which equals NLTK's ``sentence_bleu`` with weights
(0.5, 0.5) and ``SmoothingFunction().method1`` (epsilon 0.1). We compute that closed form directly: no
dependency, and identical values (tests/test_bleu.py checks both references).

Empty hypothesis -> 0.0 (no unigram matches, as NLTK returns). Empty reference -> 0.0 likewise.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from rexrank.metrics import REGISTRY
from rexrank.metrics.base import Metric

# NLTK SmoothingFunction.method1 epsilon (nltk/translate/bleu_score.py): added to zero n-gram match counts.
METHOD1_EPSILON = 0.1
WEIGHTS = (0.5, 0.5)


def tokenize(report: str) -> list[str]:
    """CXR-Report-Metric tokenisation: lower-case, detach periods, split on the space character only.

    Newlines and tabs stay inside tokens ("artifact.\\nThe" -> ["artifact", ".\\nthe"]), as upstream does.
    """
    return [t for t in str(report).lower().replace(".", " .").split(" ") if t != ""]


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def sentence_bleu(hyp_tokens: list[str], ref_tokens: list[str], weights: tuple[float, ...] = WEIGHTS) -> float:
    """Single-reference sentence BLEU with NLTK method1 smoothing."""
    hyp_len, ref_len = len(hyp_tokens), len(ref_tokens)
    log_sum = 0.0
    for n, weight in enumerate(weights, start=1):
        hyp_counts = _ngrams(hyp_tokens, n)
        ref_counts = _ngrams(ref_tokens, n)
        matches = sum(min(count, ref_counts[gram]) for gram, count in hyp_counts.items())
        total = max(1, hyp_len - n + 1)  # NLTK: Fraction(numerator, max(1, denominator))
        if n == 1 and matches == 0:
            return 0.0  # NLTK returns 0 when no unigram matches, before smoothing
        precision = (matches if matches else METHOD1_EPSILON) / total
        log_sum += weight * math.log(precision)
    if hyp_len == 0:
        return 0.0
    brevity = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return brevity * math.exp(log_sum)


def bleu2(hyps: list[str], refs: list[str]) -> np.ndarray:
    """Functional form: per-pair BLEU-2 with the official tokenisation."""
    return np.array([sentence_bleu(tokenize(h), tokenize(r)) for h, r in zip(hyps, refs)], dtype=np.float64)


class Bleu2(Metric):
    spec = REGISTRY.spec("bleu2")

    def __init__(self) -> None:  # no options: REGISTRY.options reads this signature to refuse --option bleu2.*
        pass

    def config(self):
        return {"tokenizer": "lower+detach-periods+split-on-space", "weights": list(WEIGHTS), "smoothing": "nltk-method1"}

    def _score(self, hyps, refs):
        return bleu2(hyps, refs)
