"""Clinical-efficacy (CE) F1 from CheXbert labels: a corpus-level metric (column ``ce_exact_match_5`` per study).

How the field computes it (f1chexbert 0.0.2, PyPI, ``F1CheXbert.forward``; the package RadEval and most report-
generation papers call): label every hypothesis and reference with CheXbert, map each of the 14 conditions to binary
with ``get_label(mode="rrg")`` (blank -> 0, negative -> 0, positive -> 1, **uncertain -> 1**), then read
scikit-learn's ``classification_report`` over the 14 conditions and over the 5 most reported (``target_names_5``:
Cardiomegaly, Edema, Consolidation, Atelectasis, Pleural Effusion, taken in head order): per-condition precision,
recall and F1, their micro and macro averages, and ``accuracy_score`` on the 5 (every one of the 5 right).

rexrank keeps it corpus-level without a second pass: each study's row holds its TP/FP/FN per condition (and whether
its 5 labels all match); every number is a function of the column sums (``corpus_values``), so a bootstrap resample,
a paired test or a rank CI is one matrix product of count vectors with these columns (rexrank.evaluation.bootstrap).
sklearn's zero_division default is reproduced: a precision, recall or F1 with a zero denominator is 0, and a macro
average includes those zeros.

``uncertain="positive"`` is f1chexbert's convention (CheXpert's "U-Ones" policy); ``uncertain="negative"`` is the
strict positive-vs-rest reading (CheXpert's "U-Zeros"): only a confident positive counts.

The labels come from SembScore's CheXbert pass (``shares=("semb",)``): the same per-text cache entries, so scoring
CE F1 after (or with) SembScore runs no CheXbert forward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rexrank.errors import ConfigError
from rexrank.metrics import REGISTRY
from rexrank.metrics.base import CorpusMetric, check_pairs
from rexrank.metrics.chexbert import CLASS_NAMES, CONDITIONS

UNCERTAIN_POSITIVE = "positive"  # f1chexbert 0.0.2 get_label(mode="rrg"): class 3 (uncertain) -> 1
UNCERTAIN_NEGATIVE = "negative"  # only class 1 (positive) counts
UNCERTAIN_CONVENTIONS = (UNCERTAIN_POSITIVE, UNCERTAIN_NEGATIVE)
DEFAULT_UNCERTAIN = UNCERTAIN_POSITIVE

# f1chexbert 0.0.2 target_names_5; selected with np.isin, so in CheXbert head order.
TOP5 = ("Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Pleural Effusion")
TOP5_INDEX = np.array([i for i, name in enumerate(CONDITIONS) if name in TOP5])
_POSITIVE = CLASS_NAMES.index("Positive")
_UNCERTAIN = CLASS_NAMES.index("Uncertain")


def slug(condition: str) -> str:
    return condition.lower().replace(" ", "_")


# Per-study statistics, in the order corpus_values reads their sums. The first is the spec's column.
EXACT_MATCH_5 = "ce_exact_match_5"
COUNT_KINDS = ("tp", "fp", "fn")
STATISTICS = (EXACT_MATCH_5,) + tuple(f"ce_{kind}_{slug(c)}" for kind in COUNT_KINDS for c in CONDITIONS)

# Reported values, in the order corpus_values returns them. The first is the headline (results' "mean" slot).
_AVERAGED = tuple(f"{avg}_{what}_{k}" for k in ("14", "5") for what in ("f1", "precision", "recall")
                  for avg in ("micro", "macro"))
OUTPUTS = _AVERAGED + ("accuracy_5",) + tuple(f"f1_{slug(c)}" for c in CONDITIONS)
# What the terminal and Markdown tables show (results.json carries every output).
SHOWN = ("micro_f1_14", "macro_f1_14", "micro_f1_5", "macro_f1_5")


def output_label(output: str) -> str:
    """"micro_f1_14" -> "CE micro F1 (14)"; "f1_edema" -> "CE F1 edema"."""
    parts = output.split("_")
    if parts[0] in ("micro", "macro"):
        return f"CE {parts[0]} {parts[1] if parts[1] != 'f1' else 'F1'} ({parts[2]})"
    if output == "accuracy_5":
        return "CE exact-match accuracy (5)"
    return f"CE F1 {' '.join(parts[1:])}"


def binary_labels(classes: np.ndarray, uncertain: str = DEFAULT_UNCERTAIN) -> np.ndarray:
    """(n, 14) CheXbert head classes (0 blank, 1 positive, 2 negative, 3 uncertain) -> (n, 14) 0/1 positives."""
    check_uncertain(uncertain)
    classes = np.asarray(classes)
    positive = classes == _POSITIVE
    if uncertain == UNCERTAIN_POSITIVE:
        positive |= classes == _UNCERTAIN
    return positive.astype(np.int64)


def study_statistics(hyp_binary: np.ndarray, ref_binary: np.ndarray) -> np.ndarray:
    """(n, len(STATISTICS)) per-study statistics from (n, 14) binary labels of hypotheses and references."""
    hyp, ref = np.asarray(hyp_binary, dtype=np.int64), np.asarray(ref_binary, dtype=np.int64)
    match5 = (hyp[:, TOP5_INDEX] == ref[:, TOP5_INDEX]).all(axis=1)
    tp, fp, fn = hyp & ref, hyp & (1 - ref), (1 - hyp) & ref
    return np.column_stack([match5[:, None], tp, fp, fn]).astype(np.float64)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    # sklearn's zero_division default: 0 where the denominator is 0.
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def corpus_values(sums: np.ndarray, n: np.ndarray | float) -> np.ndarray:
    """Every output (OUTPUTS order) from summed statistics (STATISTICS order), vectorised over leading axes.

    ``sums`` (..., len(STATISTICS)); ``n`` the studies behind each row of sums (broadcast). NaN where n is 0.
    """
    sums = np.asarray(sums, dtype=np.float64)
    k = len(CONDITIONS)
    match5, tp, fp, fn = sums[..., 0], sums[..., 1:1 + k], sums[..., 1 + k:1 + 2 * k], sums[..., 1 + 2 * k:]
    out = []
    for index in (slice(None), TOP5_INDEX):
        t, p, f = tp[..., index], fp[..., index], fn[..., index]
        micro_f1 = _ratio(2 * t.sum(-1), 2 * t.sum(-1) + p.sum(-1) + f.sum(-1))
        micro_p, micro_r = _ratio(t.sum(-1), t.sum(-1) + p.sum(-1)), _ratio(t.sum(-1), t.sum(-1) + f.sum(-1))
        macro_f1 = _ratio(2 * t, 2 * t + p + f).mean(-1)
        macro_p, macro_r = _ratio(t, t + p).mean(-1), _ratio(t, t + f).mean(-1)
        out += [micro_f1, macro_f1, micro_p, macro_p, micro_r, macro_r]
    n = np.asarray(n, dtype=np.float64)
    values = np.stack(out + [_ratio(match5, np.broadcast_to(n, match5.shape))], axis=-1)
    values = np.concatenate([values, _ratio(2 * tp, 2 * tp + fp + fn)], axis=-1)
    empty = np.broadcast_to(n, sums.shape[:-1]) == 0
    return np.where(empty[..., None], np.nan, values)


def check_uncertain(uncertain: str) -> str:
    if uncertain not in UNCERTAIN_CONVENTIONS:
        raise ConfigError(f"ce_f1: uncertain={uncertain!r} is not a convention; use uncertain=positive "
                          "(f1chexbert's, the field's default) or uncertain=negative (only confident positives)")
    return uncertain


class CEF1(CorpusMetric):
    """``get("ce_f1", uncertain="positive", semb={model=..., backbone=...}, device=, batch_size=)``.

    ``score`` gives each study's 5-condition exact match (the per-study column); the corpus numbers come from
    ``compute`` (or, in the harness, from the per-study statistics through rexrank.metrics.aggregation).
    """

    spec = REGISTRY.spec("ce_f1")
    STATISTICS = STATISTICS
    OUTPUTS = OUTPUTS
    SHOWN = SHOWN
    # The leaderboard's model pages (rexrank.leaderboard.board.corpus_display): section title, options shown.
    TITLE = "Clinical efficacy (CheXbert labels)"
    SHOWN_OPTIONS = ("uncertain",)

    def __init__(self, uncertain: str = DEFAULT_UNCERTAIN, semb: Mapping[str, Any] | None = None,
                 device: str | None = None, batch_size: int | None = None):
        self.uncertain = check_uncertain(str(uncertain).strip().lower())
        if semb is not None and not isinstance(semb, Mapping):
            raise ConfigError(f"ce_f1: semb= takes a dict of SembScore's options (e.g. {{'model': PATH}}), "
                              f"not {type(semb).__name__}")
        self.semb_config = dict(semb or {})
        for key, shared in (("device", device), ("batch_size", batch_size)):
            if shared is not None:
                self.semb_config.setdefault(key, shared)
        self._labeller = None

    @staticmethod
    def corpus_values(sums: np.ndarray, n) -> np.ndarray:
        return corpus_values(sums, n)

    @staticmethod
    def output_label(output: str) -> str:
        return output_label(output)

    @property
    def labeller(self):
        """The SembScore whose CheXbert labels (and per-text cache entries) this metric reads."""
        if self._labeller is None:
            from rexrank.metrics import get

            self._labeller = get("semb", **self.semb_config)
            if self.text_cache is not None:
                self._labeller.use_text_cache(self.text_cache)
        return self._labeller

    def use_text_cache(self, cache):
        super().use_text_cache(cache)
        if self._labeller is not None:
            self._labeller.use_text_cache(cache)
        return self

    def locate_weights(self) -> None:
        self.labeller.locate_weights()

    def config(self) -> dict[str, Any]:
        # semb_config: the labeller's weight digests, which the official-weights check reads (metrics.official).
        return {"uncertain": self.uncertain, "labels": "CheXbert 14 (SembScore's pass)",
                "semb": self.labeller.fingerprint, "semb_config": self.labeller.config(), "top5": list(TOP5),
                "zero_division": 0}

    def statistics(self, hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
        """(n, len(STATISTICS)) per-study statistics; one labeller call, so shared texts are labelled once."""
        hyps, refs = check_pairs(hyps, refs)
        if not hyps:
            return np.zeros((0, len(STATISTICS)))
        classes = self.labeller.labels(refs + hyps, codes=False).to_numpy()
        n = len(refs)
        return study_statistics(binary_labels(classes[n:], self.uncertain), binary_labels(classes[:n], self.uncertain))
