"""The NLG metrics of the report-generation literature, as pycocoevalcap computes them: corpus BLEU-1..4, ROUGE-L, CIDEr.

How the field computes them (pycocoevalcap 1.2, PyPI, the COCO caption evaluation code most report-generation papers
call): every text goes through ``PTBTokenizer`` (Stanford CoreNLP 3.4.1, lower-cased, punctuation tokens dropped; here
the pure-Python copy ``rexrank.metrics.ptb``), then

- ``Bleu(4)`` (``bleu/bleu_scorer.py``): per study the hypothesis length, the closest reference length and, for
  n = 1..4, the n-gram "guesses" (hypothesis length - n + 1) and clipped matches; the corpus BLEU-n is the geometric
  mean of the summed match ratios with the corpus brevity penalty (``compute_score(option="closest")``). It is a
  corpus statistic, not the mean of sentence BLEUs;
- ``Rouge()`` (``rouge/rouge.py``): per study ROUGE-L F with beta = 1.2 on ``split(" ")`` tokens; the corpus value is
  the mean;
- ``Cider()`` (``cider/cider_scorer.py``, CIDEr-D: clipped tf-idf n-gram cosines, n = 1..4, Gaussian length
  penalty sigma = 6, x10): per study, with document frequencies counted over the references of the whole corpus
  (one document per study); the corpus value is the mean.

rexrank keeps them corpus-level like CE F1: each study's row holds its BLEU counts, ROUGE-L and CIDEr-D
(``STATISTICS``) and every output is a function of the column sums (``corpus_values``), so bootstrap CIs, paired tests
and rank CIs resample count vectors exactly as for CE F1 (rexrank.evaluation.bootstrap). For BLEU that is exact under
resampling (the resampled corpus BLEU is what pycocoevalcap gives on the resampled corpus). CIDEr-D's document
frequencies are those of the full test set (the corpus a run scores, given through ``use_corpus``): a resample
reweights studies but does not recount document frequencies, the usual reading of "CIDEr on this test set".

``tokenizer="none"`` skips the PTB step and scores the texts as given (for reports already tokenised the way R2Gen
and its successors clean them); ``"ptb"`` (default) is pycocoevalcap's pipeline.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from rexrank.errors import ConfigError
from rexrank.metrics import REGISTRY
from rexrank.metrics.base import CorpusMetric, check_pairs, text_key

ORDER = 4  # pycocoevalcap 1.2 Bleu(n=4) and Cider(n=4)
# bleu/bleu_scorer.py compute_score: added to every ratio "so that if guess is 0 still return 0" / "avoid zero division"
BLEU_TINY, BLEU_SMALL = 1e-15, 1e-9
ROUGE_BETA = 1.2  # rouge/rouge.py Rouge.__init__
CIDER_SIGMA = 6.0  # cider/cider.py Cider(sigma=6.0): the Gaussian length penalty's width
CIDER_SCALE = 10.0  # cider/cider_scorer.py compute_cider: score_avg *= 10.0

TOKENIZERS = ("ptb", "none")
DEFAULT_TOKENIZER = "ptb"

# Per-study statistics, in the order corpus_values reads their sums. The first is the spec's column.
STATISTICS = (("nlg_rouge_l", "nlg_cider", "nlg_test_len", "nlg_ref_len")
              + tuple(f"nlg_guess_{k}" for k in range(1, ORDER + 1))
              + tuple(f"nlg_correct_{k}" for k in range(1, ORDER + 1)))
# Reported values, in the order corpus_values returns them. The first is the headline (results' "mean" slot).
OUTPUTS = ("bleu_4", "bleu_1", "bleu_2", "bleu_3", "rouge_l", "cider")
SHOWN = ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider")
_LABELS = {"rouge_l": "ROUGE-L", "cider": "CIDEr"}


def output_label(output: str) -> str:
    """"bleu_4" -> "corpus BLEU-4" (not ReXrank's sentence BLEU-2 column); "rouge_l" -> "ROUGE-L"."""
    if output.startswith("bleu_"):
        return f"corpus BLEU-{output[5:]}"
    return _LABELS[output]


def check_tokenizer(tokenizer: str) -> str:
    if tokenizer not in TOKENIZERS:
        raise ConfigError(f"nlg: tokenizer={tokenizer!r} is not offered; use tokenizer=ptb (pycocoevalcap's PTB "
                          "tokenisation, the default) or tokenizer=none (score the texts as given)")
    return tokenizer


def tokenize(texts: Sequence[str], tokenizer: str = DEFAULT_TOKENIZER) -> list[str]:
    """The strings pycocoevalcap's scorers receive: PTB-tokenised (space-joined) or the texts unchanged.

    Each text is tokenised on its own, with its other line breaks made spaces: a report's tokens never depend on
    the reports next to it in a call (a chunk, a shard, a cached pair), and a Windows "\r\n" does not shift the
    tokens of every later report as it does in pycocoevalcap (there, a misalignment, not a convention)."""
    if check_tokenizer(tokenizer) == "none":
        return list(texts)
    from rexrank.metrics import ptb

    # Line breaks other than '\n' (which pycocoevalcap turns into a space itself) are spaces: in pycocoevalcap each
    # starts a new output line and hands every later caption the tokens of the one before (ptb.SHIFTING_BREAKS).
    spaces = str.maketrans({c: " " for c in ptb.SHIFTING_BREAKS})
    return [ptb.tokenize(str(text).translate(spaces)) for text in texts]


# -- counting, as pycocoevalcap's precook does -------------------------------------------------------------------------
def ngram_counts(text: str, n: int = ORDER) -> dict[tuple[str, ...], int]:
    """n-gram counts of ``text.split()`` for orders 1..n, in pycocoevalcap's insertion order (order by order)."""
    words = text.split()
    counts: dict[tuple[str, ...], int] = {}
    for k in range(1, n + 1):
        for i in range(len(words) - k + 1):
            gram = tuple(words[i:i + k])
            counts[gram] = counts.get(gram, 0) + 1
    return counts


def bleu_counts(hyp: str, ref: str) -> list[float]:
    """[test length, closest reference length, guess_1..4, correct_1..4] of one study with one reference."""
    hyp_counts, ref_counts = ngram_counts(hyp), ngram_counts(ref)
    test_len, ref_len = len(hyp.split()), len(ref.split())
    guess = [max(0, test_len - k + 1) for k in range(1, ORDER + 1)]
    correct = [0] * ORDER
    for gram, count in hyp_counts.items():
        correct[len(gram) - 1] += min(ref_counts.get(gram, 0), count)
    return [float(test_len), float(ref_len)] + [float(g) for g in guess] + [float(c) for c in correct]


def _lcs(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence (bit-parallel, Hyyro 2004): one big-int step per token of ``a``."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for j, token in enumerate(b):
        masks[token] = masks.get(token, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for token in a:
        u = v & masks.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - bin(v).count("1")


def rouge_l(hyp: str, ref: str) -> float:
    """pycocoevalcap's Rouge.calc_score with one reference: tokens are ``split(" ")`` (so "" is one empty token)."""
    tokens_h, tokens_r = hyp.split(" "), ref.split(" ")
    lcs = _lcs(tokens_r, tokens_h)
    prec, rec = lcs / float(len(tokens_h)), lcs / float(len(tokens_r))
    if prec != 0 and rec != 0:
        return ((1 + ROUGE_BETA ** 2) * prec * rec) / float(rec + ROUGE_BETA ** 2 * prec)
    return 0.0


class CiderCorpus:
    """CIDEr-D's document frequencies: each study's reference is one document (pycocoevalcap compute_doc_freq)."""

    def __init__(self, refs: Sequence[str]):
        self.size = len(refs)
        self.document_frequency: dict[tuple[str, ...], float] = {}
        for ref in refs:
            for gram in ngram_counts(ref):
                self.document_frequency[gram] = self.document_frequency.get(gram, 0.0) + 1.0
        self.log_size = np.log(float(self.size)) if self.size else 0.0
        # Order-free: the frequencies and the size depend on the multiset of references only.
        self.digest = hashlib.sha256("\n".join(sorted(text_key(r) for r in refs)).encode()).hexdigest()[:16]

    def _vector(self, counts):
        vec = [dict() for _ in range(ORDER)]
        norm = [0.0] * ORDER
        length = 0
        for gram, tf in counts.items():
            df = np.log(max(1.0, self.document_frequency.get(gram, 0.0)))
            k = len(gram) - 1
            vec[k][gram] = float(tf) * (self.log_size - df)
            norm[k] += pow(vec[k][gram], 2)
            if k == 1:  # pycocoevalcap counts the length in bigrams (its "n == 1" is the 2-gram slot)
                length += tf
        return vec, [np.sqrt(x) for x in norm], length

    def score(self, hyp: str, ref: str) -> float:
        """One study's CIDEr-D against its one reference, as pycocoevalcap's compute_cider computes it."""
        vec_h, norm_h, len_h = self._vector(ngram_counts(hyp))
        vec_r, norm_r, len_r = self._vector(ngram_counts(ref))
        delta = float(len_h - len_r)
        val = np.zeros(ORDER)
        for k in range(ORDER):
            for gram, weight in vec_h[k].items():
                ref_weight = vec_r[k].get(gram, 0.0)
                val[k] += min(weight, ref_weight) * ref_weight
            if norm_h[k] != 0 and norm_r[k] != 0:
                val[k] /= norm_h[k] * norm_r[k]
            val[k] *= np.e ** (-(delta ** 2) / (2 * CIDER_SIGMA ** 2))
        # pycocoevalcap sums the similarities over the references, averages the orders, divides by the number of
        # references (one here) and scales by 10.
        return float(np.mean(np.zeros(ORDER) + val) / 1.0 * CIDER_SCALE)


def study_statistics(hyps: Sequence[str], refs: Sequence[str], corpus: CiderCorpus) -> np.ndarray:
    """(n, len(STATISTICS)) from already tokenised texts; CIDEr-D's frequencies from ``corpus``."""
    rows = [[rouge_l(h, r), corpus.score(h, r)] + bleu_counts(h, r) for h, r in zip(hyps, refs)]
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(STATISTICS))


def corpus_values(sums: np.ndarray, n) -> np.ndarray:
    """Every output (OUTPUTS order) from summed statistics (STATISTICS order), vectorised over leading axes.

    BLEU follows BleuScorer.compute_score on the summed counts (the same operations in the same order); ROUGE-L and
    CIDEr-D are means. NaN where n is 0.
    """
    sums = np.asarray(sums, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    test_len, ref_len = sums[..., 2], sums[..., 3]
    guess, correct = sums[..., 4:4 + ORDER], sums[..., 4 + ORDER:4 + 2 * ORDER]
    running = np.cumprod((correct + BLEU_TINY) / (guess + BLEU_SMALL), axis=-1)
    bleus = running ** (1.0 / np.arange(1, ORDER + 1))
    ratio = (test_len + BLEU_TINY) / (ref_len + BLEU_SMALL)
    # ratio > 0 always (BLEU_TINY); an all-empty hypothesis side gets exp(1 - 1e15ish) = 0, as in pycocoevalcap.
    penalty = np.where(ratio < 1, np.exp(1 - 1 / ratio), 1.0)
    bleus = bleus * penalty[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        means = sums[..., :2] / n[..., None]
    values = np.concatenate([bleus[..., 3:4], bleus[..., 0:3], means], axis=-1)
    empty = np.broadcast_to(n, sums.shape[:-1]) == 0
    return np.where(empty[..., None], np.nan, values)


class NLG(CorpusMetric):
    """``get("nlg", tokenizer="ptb")``: corpus BLEU-1..4, ROUGE-L and CIDEr-D as pycocoevalcap computes them.

    ``score`` gives each study's ROUGE-L (the per-study column); the corpus numbers come from ``compute`` (or, in
    the harness, from the per-study statistics through rexrank.metrics.aggregation).
    """

    spec = REGISTRY.spec("nlg")
    STATISTICS = STATISTICS
    OUTPUTS = OUTPUTS
    SHOWN = SHOWN
    # The leaderboard's model pages (rexrank.leaderboard.board.corpus_display): section title, options shown.
    TITLE = "NLG metrics (pycocoevalcap: corpus BLEU, ROUGE-L, CIDEr-D)"
    SHOWN_OPTIONS = ("tokenizer",)

    def __init__(self, tokenizer: str = DEFAULT_TOKENIZER):
        self.tokenizer = check_tokenizer(str(tokenizer).strip().lower())
        self._corpus: CiderCorpus | None = None

    @staticmethod
    def corpus_values(sums: np.ndarray, n) -> np.ndarray:
        return corpus_values(sums, n)

    @staticmethod
    def output_label(output: str) -> str:
        return output_label(output)

    def use_corpus(self, refs: Sequence[str]) -> "NLG":
        """CIDEr-D counts document frequencies over the run's whole reference set, before it is scored in chunks."""
        self._corpus = CiderCorpus(tokenize(list(refs), self.tokenizer))
        return self

    def config(self) -> dict[str, Any]:
        config = {"tokenizer": self.tokenizer, "bleu": {"n": ORDER, "option": "closest"},
                  "rouge_l": {"beta": ROUGE_BETA}, "cider": {"n": ORDER, "sigma": CIDER_SIGMA}}
        if self.tokenizer == "ptb":
            from rexrank.metrics import ptb

            config["ptb"] = ptb.VERSION
        if self._corpus is not None:
            # CIDEr-D's values depend on the reference corpus: pair-cache entries never cross corpora.
            config["cider"]["corpus"] = {"studies": self._corpus.size, "digest": self._corpus.digest}
        return config

    def statistics(self, hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
        """(n, len(STATISTICS)) per-study statistics. CIDEr-D's corpus: the one ``use_corpus`` gave, else these refs."""
        hyps, refs = check_pairs(hyps, refs)
        if not hyps:
            return np.zeros((0, len(STATISTICS)))
        tokens = tokenize(hyps + refs, self.tokenizer)
        hyp_tokens, ref_tokens = tokens[:len(hyps)], tokens[len(hyps):]
        corpus = self._corpus if self._corpus is not None else CiderCorpus(ref_tokens)
        return study_statistics(hyp_tokens, ref_tokens, corpus)


__all__ = ["NLG", "OUTPUTS", "SHOWN", "STATISTICS", "CiderCorpus", "bleu_counts", "corpus_values", "ngram_counts",
           "output_label", "rouge_l", "tokenize"]
