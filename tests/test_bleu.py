"""BLEU-2 (column bleu_score): parity with fast_bleu (what ReXrank runs) and NLTK method1 (what it equals)."""

from __future__ import annotations

import numpy as np
import pytest
from parity import Pairs, ParityTester, iu_reports, shifted

from rexrank import metrics
from rexrank.metrics.bleu import bleu2, tokenize

# Edge cases: (hypothesis, reference).
EDGE_PAIRS = [
    ("", "heart size normal"),
    ("heart size normal", ""),
    ("", ""),
    ("   ", "heart"),
    ("heart", "heart"),  # one token: no bigram at all
    ("heart", "lungs"),
    ("The heart.\nIs normal.", "The heart.\nis normal."),  # newlines stay inside tokens
    ("The heart.\nIs normal.", "The heart. Is normal."),
    ("...", "..."),  # punctuation only
    ("!!! ,,, ;", "!!! ,,,"),
    ("Héart nörmal ✓ 心脏. Pleural effusion.", "Héart nörmal ✓ 心脏."),  # non-ASCII
    ("the the the the", "the cat"),  # clipped counts
    ("normal heart", "heart normal"),
    ("no  effusion", "No effusion ."),  # repeated spaces
    ("a\tb c", "a b c"),  # a tab is not a separator upstream
]


def test_tokenisation_matches_cxr_report_metric():
    """Upstream splits on the space character only and detaches periods; newlines stay inside tokens."""
    assert tokenize("Artifact.\nThe heart  is OK.") == ["artifact", ".\nthe", "heart", "is", "ok", "."]
    assert tokenize("") == []
    assert tokenize("   ") == []


def test_empty_reports_score_zero():
    """Documented rule (NLTK/fast_bleu behaviour): an empty hypothesis or reference scores 0.0."""
    assert bleu2(["", "heart", ""], ["heart", "", ""]).tolist() == [0.0, 0.0, 0.0]


def test_brevity_penalty_of_a_short_hypothesis():
    """Both precisions 1 (2 of 2 unigrams, 1 of 1 bigram), 2 tokens against 4: the value is NLTK's brevity penalty
    alone, exp(1 - 4/2) (the parity class checks the rest, refvenv)."""
    assert bleu2(["heart normal"], ["heart normal lungs clear"])[0] == pytest.approx(np.exp(-1.0), abs=1e-12)


def test_registry_object_and_config():
    metric = metrics.get("bleu")
    assert metric.spec.column == "bleu_score"
    assert metric.score(["the heart is normal"], ["the heart is normal"]).tolist() == [1.0]
    assert metric.config()["smoothing"] == "nltk-method1"
    with pytest.raises(TypeError, match="unexpected keyword argument 'model'"):
        metrics.get("bleu2", model="x")


class TestBleu2Parity(ParityTester):
    """All 590 IU-Xray pairs (another study's report as the hypothesis) plus edge cases: identical (1e-12) to
    fast_bleu (what ReXrank runs) and to NLTK's method1 smoothing (what it equals) in .venv-ref."""

    metric = "bleu2"
    reference_script = "bleu_ref.py"
    compared = (("score", "fast_bleu"), ("score", "nltk"))
    atol = 1e-12

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test)
        return Pairs.with_edges(shifted(refs), refs, EDGE_PAIRS)

    def test_inputs_make_the_comparison_meaningful(self, ours, pairs):
        assert len(set(np.round(ours["score"][pairs.natural], 6))) > 100  # the IU pairs really vary (not all 0 or 1)
