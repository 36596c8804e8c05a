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
from parity import Pairs, ParityTester, iu_reports

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


def _jar_eval(metric, statistics: np.ndarray) -> tuple[np.ndarray, float]:
    """The jar's own scores for stats lines: (per segment, corpus) from one EVAL line (pycocoevalcap's protocol)."""
    lines = [" ".join(repr(float(x)) for x in row) for row in statistics[:, 1:1 + len(meteor.RAW_STATISTICS)]]
    answers = metric.process.exchange(["EVAL ||| " + " ||| ".join(lines)], len(lines) + 1)
    return np.array([float(a) for a in answers[:-1]]), float(answers[-1])


class TestMeteorParity(ParityTester):
    """Segment scores, the corpus score (from summed statistics) and bootstrap resamples equal pycocoevalcap 1.2's
    Meteor on PTB-tokenised IU-Xray pairs (tests/reference/meteor_ref.py, the same meteor-1.5.jar). Java prints doubles
    with Double.toString (the shortest decimal that reads back as the same double), so 1e-12 is tight. Ours scores
    the tokens pycocoevalcap's PTBTokenizer produced (tokenizer none): the comparison is METEOR's alone; the default
    pipeline (rexrank.metrics.ptb, then Meteor) on the raw reports is checked too."""

    metric = "meteor"
    reference_script = "meteor_ref.py"
    versions = {"pycocoevalcap": "1.2"}
    compared = (("scores", "scores"), ("score", "score"), ("aggregate", "score"))
    atol = 1e-12

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test, n=N_PAIRS)
        shifted_n = N_PAIRS - N_IDENTICAL
        return Pairs(refs[1:shifted_n + 1] + refs[shifted_n:], refs)  # another study's report, then a few identical

    def reference_payload(self, pairs, options):
        subsets = index_matrix(N_PAIRS, 2, BOOTSTRAP_SEED).tolist()
        return {"corpora": [{"hyps": pairs.hyps, "refs": pairs.refs, "tokenize": True, "subsets": subsets},
                            {"hyps": [h for h, _ in EDGE_PAIRS], "refs": [r for _, r in EDGE_PAIRS], "tokenize": False}]}

    @pytest.fixture(scope="class")
    def scorer(self, metric):
        return metric  # the module's running Java (it loads its paraphrase table once)

    @pytest.fixture(scope="class")
    def ours(self, scorer, reference):
        tokens = reference["corpora"][0]["tokens"]
        statistics = scorer.statistics(tokens["hyps"], tokens["refs"])
        return {"statistics": statistics, "scores": statistics[:, 0],
                "score": scorer.compute(tokens["hyps"], tokens["refs"])["meteor"],
                "aggregate": corpus_aggregate(statistics, "meteor")["meteor"]}

    def theirs(self, reference):
        return reference["corpora"][0]

    def test_inputs_make_the_comparison_meaningful(self, scorer, ours, reference):
        expected = self.theirs(reference)
        statistics = ours["statistics"]
        # The corpus score is not the mean of segment scores (the reason METEOR is a corpus metric here).
        assert abs(expected["score"] - np.mean(expected["scores"])) > 1e-3
        assert len(set(np.round(statistics[:, 0], 6))) > 100  # the pairs really vary
        assert np.all(statistics[-N_IDENTICAL:, 0] > 0.9)
        tokens = expected["tokens"]
        assert scorer.score(tokens["hyps"], tokens["refs"]).tolist() == statistics[:, 0].tolist()

    def test_ptb_pipeline_matches_pycocoevalcap_end_to_end(self, scorer, reference, pairs, jar):
        """The default pipeline (rexrank.metrics.ptb, then Meteor) on the raw reports gives pycocoevalcap's
        numbers."""
        piped = metrics.get("meteor", jar=str(jar))
        assert piped.config()["tokenizer"] == "ptb"
        piped._process = scorer.process  # the same jar: borrow the running Java rather than load the table again
        expected = self.theirs(reference)
        self.assert_close(piped.score(pairs.hyps, pairs.refs), expected["scores"], "PTB pipeline segment scores")
        self.assert_close(piped.compute(pairs.hyps, pairs.refs)["meteor"], expected["score"], "PTB pipeline corpus")

    def test_edge_cases_match_pycocoevalcap(self, scorer, reference):
        """Empty hypothesis or reference (Meteor's statistics are all 0: the segment scores 0 and adds nothing to the
        corpus), "|||" and double spaces in a hypothesis, "|||" in a reference: as pycocoevalcap sends them."""
        expected = reference["corpora"][1]
        hyps, refs = [h for h, _ in EDGE_PAIRS], [r for _, r in EDGE_PAIRS]
        stats = scorer.statistics(hyps, refs)
        self.assert_close(stats[:, 0], expected["scores"], "edge segment scores")
        self.assert_close(scorer.compute(hyps, refs)["meteor"], expected["score"], "edge corpus score")
        assert stats[:3, 0].tolist() == [0.0, 0.0, 0.0] and not stats[2, 1:].any()

    def test_bootstrap_resamples_are_exact(self, ours, reference):
        """A bootstrap resample (count vector @ statistics, the harness's route) scores exactly what pycocoevalcap
        gives the resampled corpus, each repeated study counted as often as drawn."""
        resampled = resample_corpus_values(ours["statistics"], "meteor", resamples=2, seed=BOOTSTRAP_SEED)[:, 0]
        expected = [subset["score"] for subset in reference["corpora"][0]["subsets"]]
        assert any(len(set(row)) < N_PAIRS for row in index_matrix(N_PAIRS, 2, BOOTSTRAP_SEED).tolist())
        self.assert_close(resampled, expected, "resampled corpus scores")
        assert np.all(np.abs(resampled - reference["corpora"][0]["score"]) > 1e-6)  # really other corpora

    def test_corpus_score_equals_the_jars_eval(self, scorer, ours):
        """``corpus_values`` of summed statistics is Meteor's own EVAL corpus score (here bit for bit; 1e-12 leaves
        room for Java's Math.pow intrinsic, which need not round like C's pow), on the corpus and on a resample with
        repeated studies; without the perfect-match chunk rule it would not be."""
        statistics = ours["statistics"]
        segments, corpus = _jar_eval(scorer, statistics)
        self.assert_close(statistics[:, 0], segments, "segment scores / the jar's EVAL")
        self.assert_close(meteor.corpus_values(statistics.sum(axis=0), N_PAIRS)[0], corpus, "corpus / EVAL")
        resample = np.r_[np.arange(N_PAIRS - N_IDENTICAL - 20, N_PAIRS), np.arange(N_PAIRS - N_IDENTICAL, N_PAIRS)]
        _, resampled = _jar_eval(scorer, statistics[resample])
        sums = statistics[resample].sum(axis=0)
        self.assert_close(meteor.corpus_values(sums, len(resample))[0], resampled, "resample / EVAL")
        sums[-1] = 0  # every segment's chunks summed, the perfect ones too
        assert abs(meteor.corpus_values(sums, len(resample))[0] - resampled) > 1e-4


def test_line_breaks_do_not_break_the_protocol(metric):
    """A line break would end Meteor's input line early: it scores as a space (PTBTokenizer's reading)."""
    broken = metric.statistics(["heart is\nnormal", "lungs\r\nclear"], ["heart\ris normal", "lungs are clear"])
    spaced = metric.statistics(["heart is normal", "lungs  clear"], ["heart is normal", "lungs are clear"])
    assert broken.tolist() == spaced.tolist()


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
