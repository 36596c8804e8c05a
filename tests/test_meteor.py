"""METEOR (``meteor``): parity with pycocoevalcap 1.2's ``Meteor`` (its meteor-1.5.jar, run in .venv-ref), the corpus
score from summed statistics against the jar's own EVAL, exact bootstrap resamples (duplicates included), and the
errors for a missing java, jar or paraphrase table.

The main venv has no pycocoevalcap: our metric runs the jar of the .venv-ref copy (``jar=``). Our side scores the
texts pycocoevalcap's PTBTokenizer produced (``tokenizer="none"``), so the comparison is METEOR's alone.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from conftest import require_meteor
from rexrank import metrics
from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.evaluation.bootstrap import index_matrix, resample_corpus_values
from rexrank.metrics import meteor
from rexrank.metrics.aggregation import corpus_aggregate

N_PAIRS = 200  # IU-Xray test pairs (Meteor aligns ~60 pairs/s once the jar has loaded its paraphrase table)
N_IDENTICAL = 8  # of them, hypothesis = reference: Meteor's perfect-match chunk rule applies
BOOTSTRAP_SEED = 11

# (hypothesis, reference), scored untokenised by both sides (pycocoevalcap's PTBTokenizer drops empty captions).
EDGE_PAIRS = [
    ("", "heart size is normal ."),
    ("heart size is normal .", ""),
    ("", ""),
    ("the  heart ||| is   normal", "the heart is normal"),  # pycocoevalcap strips "|||" and one level of "  "
    ("heart normal", "lungs are clear ||| heart is normal"),  # a "|||" in a reference makes two references
    ("no acute disease", "no acute disease"),
    ("a", "a"),
    ("normal", "heart"),
]


@pytest.fixture(scope="module")
def jar(ref_python) -> Path:
    """The meteor-1.5.jar that pycocoevalcap ships, from the reference venv (it needs java, too)."""
    return require_meteor()


@pytest.fixture(scope="module")
def metric(jar):
    scorer = metrics.get("meteor", jar=str(jar), tokenizer="none")
    scorer.process  # noqa: B018 - start Java now: it loads its paraphrase table while the reference runs
    yield scorer
    scorer.close()


@pytest.fixture(scope="module")
def iu_pairs(iu_xray_test):
    refs = [study["report"] for study in iu_xray_test.values()][:N_PAIRS]
    shifted = N_PAIRS - N_IDENTICAL
    hyps = refs[1:shifted + 1] + refs[shifted:]  # another study's report, then the last few identical
    return hyps, refs


@pytest.fixture(scope="module")
def reference(run_reference, iu_pairs):
    hyps, refs = iu_pairs
    subsets = index_matrix(N_PAIRS, 2, BOOTSTRAP_SEED).tolist()
    return run_reference("meteor_ref.py", {"corpora": [
        {"hyps": hyps, "refs": refs, "tokenize": True, "subsets": subsets},
        {"hyps": [h for h, _ in EDGE_PAIRS], "refs": [r for _, r in EDGE_PAIRS], "tokenize": False}]})


@pytest.fixture(scope="module")
def iu_statistics(metric, reference):
    tokens = reference["corpora"][0]["tokens"]
    return metric.statistics(tokens["hyps"], tokens["refs"])


def _jar_eval(metric, statistics: np.ndarray) -> tuple[np.ndarray, float]:
    """The jar's own scores for stats lines: (per segment, corpus) from one EVAL line (pycocoevalcap's protocol)."""
    lines = [" ".join(repr(float(x)) for x in row) for row in statistics[:, 1:1 + len(meteor.RAW_STATISTICS)]]
    answers = metric.process.exchange(["EVAL ||| " + " ||| ".join(lines)], len(lines) + 1)
    return np.array([float(a) for a in answers[:-1]]), float(answers[-1])


def test_parity_with_pycocoevalcap_on_iu_xray(metric, reference, iu_statistics):
    """Corpus score (from summed statistics) and every segment score equal pycocoevalcap's on PTB-tokenised IU-Xray
    pairs. Java prints doubles with Double.toString (the shortest decimal that reads back as the same double), so
    1e-12 is tight."""
    expected = reference["corpora"][0]
    tokens = expected["tokens"]
    np.testing.assert_allclose(iu_statistics[:, 0], expected["scores"], rtol=0, atol=1e-12)
    assert metric.compute(tokens["hyps"], tokens["refs"])["meteor"] == pytest.approx(expected["score"], abs=1e-12)
    assert corpus_aggregate(iu_statistics, "meteor")["meteor"] == pytest.approx(expected["score"], abs=1e-12)
    # The corpus score is not the mean of segment scores (the reason METEOR is a corpus metric here).
    assert abs(expected["score"] - np.mean(expected["scores"])) > 1e-3
    assert len(set(np.round(iu_statistics[:, 0], 6))) > 100  # the pairs really vary
    assert np.all(iu_statistics[-N_IDENTICAL:, 0] > 0.9)
    assert metric.score(tokens["hyps"], tokens["refs"]).tolist() == iu_statistics[:, 0].tolist()


def test_ptb_pipeline_matches_pycocoevalcap_end_to_end(metric, reference, iu_pairs, jar):
    """The default pipeline (rexrank.metrics.ptb, then Meteor) on the raw reports gives pycocoevalcap's numbers."""
    piped = metrics.get("meteor", jar=str(jar))
    assert piped.config()["tokenizer"] == "ptb"
    piped._process = metric.process  # the same jar: borrow the running Java rather than load the table again
    hyps, refs = iu_pairs
    expected = reference["corpora"][0]
    np.testing.assert_allclose(piped.score(hyps, refs), expected["scores"], rtol=0, atol=1e-12)
    assert piped.compute(hyps, refs)["meteor"] == pytest.approx(expected["score"], abs=1e-12)


def test_edge_cases_match_pycocoevalcap(metric, reference):
    """Empty hypothesis or reference (Meteor's statistics are all 0: the segment scores 0 and adds nothing to the
    corpus), "|||" and double spaces in a hypothesis, "|||" in a reference: as pycocoevalcap sends them."""
    expected = reference["corpora"][1]
    hyps, refs = [h for h, _ in EDGE_PAIRS], [r for _, r in EDGE_PAIRS]
    stats = metric.statistics(hyps, refs)
    np.testing.assert_allclose(stats[:, 0], expected["scores"], rtol=0, atol=1e-12)
    assert metric.compute(hyps, refs)["meteor"] == pytest.approx(expected["score"], abs=1e-12)
    assert stats[:3, 0].tolist() == [0.0, 0.0, 0.0] and not stats[2, 1:].any()


def test_line_breaks_do_not_break_the_protocol(metric):
    """A line break would end Meteor's input line early: it scores as a space (PTBTokenizer's reading)."""
    broken = metric.statistics(["heart is\nnormal", "lungs\r\nclear"], ["heart\ris normal", "lungs are clear"])
    spaced = metric.statistics(["heart is normal", "lungs  clear"], ["heart is normal", "lungs are clear"])
    assert broken.tolist() == spaced.tolist()


def test_corpus_score_equals_the_jars_eval(metric, iu_statistics):
    """``corpus_values`` of summed statistics is Meteor's own EVAL corpus score (here bit for bit; 1e-12 leaves room
    for Java's Math.pow intrinsic, which need not round like C's pow), on the corpus and on a resample with repeated
    studies; without the perfect-match chunk rule it would not be."""
    segments, corpus = _jar_eval(metric, iu_statistics)
    np.testing.assert_allclose(iu_statistics[:, 0], segments, rtol=0, atol=1e-12)
    assert meteor.corpus_values(iu_statistics.sum(axis=0), N_PAIRS)[0] == pytest.approx(corpus, abs=1e-12)
    resample = np.r_[np.arange(N_PAIRS - N_IDENTICAL - 20, N_PAIRS), np.arange(N_PAIRS - N_IDENTICAL, N_PAIRS)]
    _, resampled = _jar_eval(metric, iu_statistics[resample])
    sums = iu_statistics[resample].sum(axis=0)
    assert meteor.corpus_values(sums, len(resample))[0] == pytest.approx(resampled, abs=1e-12)
    sums[-1] = 0  # every segment's chunks summed, the perfect ones too
    assert abs(meteor.corpus_values(sums, len(resample))[0] - resampled) > 1e-4


def test_bootstrap_resamples_are_exact(reference, iu_statistics):
    """A bootstrap resample (count vector @ statistics, the harness's route) scores exactly what pycocoevalcap gives
    the resampled corpus, each repeated study counted as often as drawn."""
    resampled = resample_corpus_values(iu_statistics, "meteor", resamples=2, seed=BOOTSTRAP_SEED)[:, 0]
    expected = [subset["score"] for subset in reference["corpora"][0]["subsets"]]
    assert any(len(set(row)) < N_PAIRS for row in index_matrix(N_PAIRS, 2, BOOTSTRAP_SEED).tolist())
    np.testing.assert_allclose(resampled, expected, rtol=0, atol=1e-12)
    assert np.all(np.abs(resampled - reference["corpora"][0]["score"]) > 1e-6)  # really other corpora


def test_corpus_values_shape_and_empty():
    sums = np.zeros((3, 2, len(meteor.STATISTICS)))
    values = meteor.corpus_values(sums, np.array([[0, 1]] * 3))
    assert values.shape == (3, 2, 1)
    assert np.isnan(values[:, 0]).all() and (values[:, 1] == 0).all()


def test_details_columns_and_config(metric, jar):
    frame = metric.score_details(["heart is normal"], ["heart is normal"])
    assert list(frame.columns) == list(meteor.STATISTICS) and frame.iloc[0, 0] > 0.9
    config = metric.config()
    assert config["jar_sha256"] == meteor._digest(jar) and config["tokenizer"] == "none"
    assert config["language"] == "en" and config["norm"] is True


def test_missing_java_is_a_clear_error(jar, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    scorer = metrics.get("meteor", jar=str(jar), tokenizer="none")
    with pytest.raises(ConfigError, match="METEOR needs Java 8\\+.*apt-get install default-jre-headless"):
        scorer.locate_weights()
    with pytest.raises(ConfigError, match="METEOR needs Java 8\\+"):
        scorer.score(["a"], ["a"])


def test_missing_jar_or_paraphrase_table_is_a_clear_error(jar, tmp_path, monkeypatch):
    with pytest.raises(ModelNotAvailableError, match="is not a file; pip install pycocoevalcap .*meteor.jar=PATH"):
        metrics.get("meteor", jar=str(tmp_path / "meteor-1.5.jar")).locate_weights()
    lone = tmp_path / "lone" / "meteor-1.5.jar"
    lone.parent.mkdir()
    os.symlink(jar, lone)
    with pytest.raises(ModelNotAvailableError, match="data/paraphrase-en.gz is missing"):
        metrics.get("meteor", jar=str(lone)).config()
    # No jar option and no pycocoevalcap installed (as in the main venv): name the fix.
    monkeypatch.setattr(meteor, "default_jar", lambda: None)
    with pytest.raises(ModelNotAvailableError, match="not installed here; pip install pycocoevalcap"):
        metrics.get("meteor").locate_weights()


def test_bad_tokenizer_option():
    with pytest.raises(ConfigError, match="tokenizer='spacy' is not offered"):
        metrics.get("meteor", tokenizer="spacy")


def test_process_closes(jar):
    """The Java process stops with close() (and, through weakref.finalize, when the object goes or at exit)."""
    scorer = metrics.get("meteor", jar=str(jar), tokenizer="none")
    proc = scorer.process.proc
    scorer.close()
    assert proc.poll() is not None
