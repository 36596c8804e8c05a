"""BLEU-2 (column bleu_score): parity with fast_bleu (what ReXrank runs) and NLTK method1 (what it equals)."""

from __future__ import annotations

import numpy as np
import pytest

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


def _iu_pairs(iu_xray_test):
    refs = [study["report"] for study in iu_xray_test.values()]
    hyps = refs[1:] + refs[:1]  # hypothesis = another study's reference
    return hyps, refs


def test_tokenisation_matches_cxr_report_metric():
    """Upstream splits on the space character only and detaches periods; newlines stay inside tokens."""
    assert tokenize("Artifact.\nThe heart  is OK.") == ["artifact", ".\nthe", "heart", "is", "ok", "."]
    assert tokenize("") == []
    assert tokenize("   ") == []


def test_empty_reports_score_zero():
    """Documented rule (NLTK/fast_bleu behaviour): an empty hypothesis or reference scores 0.0."""
    assert bleu2(["", "heart", ""], ["heart", "", ""]).tolist() == [0.0, 0.0, 0.0]


def test_registry_object_and_config():
    metric = metrics.get("bleu")
    assert metric.spec.column == "bleu_score"
    assert metric.score(["the heart is normal"], ["the heart is normal"]).tolist() == [1.0]
    assert metric.config()["smoothing"] == "nltk-method1"
    with pytest.raises(TypeError, match="unexpected keyword argument 'model'"):
        metrics.get("bleu2", model="x")


def test_parity_with_fast_bleu_and_nltk(run_reference, iu_xray_test):
    """All 590 IU-Xray pairs plus edge cases: identical (1e-12) to fast_bleu and to NLTK method1 in .venv-ref."""
    hyps, refs = _iu_pairs(iu_xray_test)
    hyps += [h for h, _ in EDGE_PAIRS]
    refs += [r for _, r in EDGE_PAIRS]
    expected = run_reference("bleu_ref.py", {"hyps": hyps, "refs": refs})
    ours = metrics.get("bleu2").score(hyps, refs)
    np.testing.assert_allclose(ours, expected["fast_bleu"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours, expected["nltk"], rtol=0, atol=1e-12)
    assert len(set(np.round(ours[:590], 6))) > 100  # the IU pairs really vary (not all 0 or 1)
