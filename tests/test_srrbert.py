"""SRR-BERT: rexrank's implementation against radeval 2.2.1's own SRRBertMetric (transformers 4.57, .venv-ref) on the
same stand-ins (rexrank.testing.standin_srrbert: classifier, CXR-BERT tokenizer, Punkt parameters)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from parity import Pairs, ParityTester, iu_reports, shifted

from rexrank import metrics
from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics.srrbert import SRRBert, sample_prf, weighted_scores


@pytest.fixture(scope="module")
def paths(standins) -> dict[str, str]:
    return standins("srrbert")


def _options(paths) -> dict:
    return {"model": paths["srrbert"], "tokenizer": paths["srrbert_tokenizer"], "punkt": paths["srrbert_punkt"]}


# One case per sentence rule of srr_bert_parse_sentences, plus empty and abbreviation cases.
EDGE_TEXTS = [
    "1. No pleural effusion. 2. Heart size is normal. 3. Lungs are clear",  # list numbers, no final period
    "Mild cardiomegaly.2. Small left effusion.",  # a number after a period
    "Stable nodule2. No pneumothorax.",  # a number glued to a word
    "Right lower lobe opacity 3. Atelectasis likely.",  # a number after a space
    "No acute process! 4. Degenerative spine.",  # a number after ! / ?
    "Nodule measures 3.5 cm.The heart is normal.",  # a decimal kept; a capital glued to a period
    "Tube approx. 4 cm above the carina. No effusion.",  # a stand-in Punkt abbreviation
    "",
    "   ",
    "no final punctuation here",
]


class TestSRRBertParity(ParityTester):
    """Per-sample F1/P/R and the weighted aggregates equal radeval 2.2.1's SRRBertMetric._compute_raw (1e-12); the
    sentences of srr_bert_parse_sentences and every sentence's labels are identical
    (tests/reference/srrbert_radeval_ref.py, the same classifier, tokenizer and Punkt stand-ins)."""

    metric = "srrbert"
    reference_script = "srrbert_radeval_ref.py"
    versions = {"radeval": "2.2.1", "transformers": "4."}
    compared = (("srrbert", "srrbert_weighted_f1"), ("srrbert_precision", "srrbert_weighted_precision"),
                ("srrbert_recall", "srrbert_weighted_recall"))
    atol = 1e-12
    min_spread = 0.05

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test, n=100)
        # Hypotheses shorter than their reference (its first sentence): label sets differ in size, so the weighted
        # precision and recall differ (with a shifted copy of the references they coincide).
        short = [r.split(". ")[0] for r in refs[:30]]
        edge_hyps = EDGE_TEXTS + EDGE_TEXTS[::-1] + ["", refs[0]]
        edge_refs = EDGE_TEXTS[::-1] + EDGE_TEXTS + ["", refs[0]]
        return Pairs.with_edges(shifted(refs) + short, refs + refs[:30], zip(edge_hyps, edge_refs))

    @pytest.fixture(scope="class")
    def options(self, paths):
        return {**_options(paths), "device": "cpu"}

    def reference_payload(self, pairs, options):
        return {"root": str(Path(options["model"]).parent), "model": options["model"], "nltk_data": options["punkt"],
                "hyps": pairs.hyps, "refs": pairs.refs, "texts": self.sentence_texts(pairs)}

    @staticmethod
    def sentence_texts(pairs):
        return EDGE_TEXTS + pairs.refs[:20]

    def theirs(self, reference):
        return reference["per_sample"]

    def test_weighted_aggregates_equal_radeval(self, scorer, pairs, reference):
        weighted = scorer.weighted(pairs.hyps, pairs.refs)
        for key, value in reference["aggregate"].items():
            self.assert_close(weighted[key], value, key)
            assert reference["formatted"][key] == round(value, 4)  # radeval's display rounding, documented
        assert weighted["srrbert_weighted_precision"] != pytest.approx(weighted["srrbert_weighted_recall"], abs=1e-3)

    def test_sentences_and_labels_equal_radeval(self, scorer, pairs, reference):
        split = scorer.splitter()
        ours = [split(t) for t in self.sentence_texts(pairs)]
        assert ours == reference["sentences"]
        flat = [s for group in ours for s in group]
        assert [[scorer.labels[k] for k in row] for row in scorer.classify(flat)] == reference["labels"]
        assert sum(map(len, reference["labels"])) > len(flat)  # labels do fire, and not for nothing


def test_sample_prf_and_weighted_rules():
    """The documented formulas: union-mean with eps, 1 for two empty sets; sklearn's weighted average."""
    assert sample_prf(set(), set()) == (1.0, 1.0, 1.0)
    p, r, f = sample_prf({1, 2}, {2, 3})  # union {1,2,3}, one true positive
    assert p == r == pytest.approx(1 / 3 / (1 + 1e-8), abs=1e-15) and f == pytest.approx(1 / 3 / (1 + 5e-9), abs=1e-15)
    assert sample_prf({1}, set()) == (0.0, 0.0, 0.0)
    # Label 0: tp 1, fn 1 (support 2); label 1: fp 1 (support 0); label 2: tp 1 (support 1).
    w = weighted_scores([{0, 1}, {2}], [{0}, {0, 2}], 3)
    assert w["srrbert_weighted_recall"] == pytest.approx((2 * 0.5 + 1 * 1.0) / 3)
    assert w["srrbert_weighted_precision"] == pytest.approx((2 * 1.0 + 1 * 1.0) / 3)
    assert w["srrbert_weighted_f1"] == pytest.approx((2 * (2 / 3) + 1 * 1.0) / 3)
    assert weighted_scores([{1}], [set()], 3) == {k: 0.0 for k in w}  # no reference label: zero_division 0


@pytest.mark.slow  # 17.7 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_two_launched_processes_equal_one(paths, tmp_path):
    """The spec shards a launched job's distinct pairs (torchrun, 2 gloo processes): every rank gets the
    single-process values and label sets."""
    from test_parallel import assert_two_processes_equal_one

    assert_two_processes_equal_one(tmp_path, "srrbert", {**_options(paths), "device": "cpu", "batch_size": 2})


def test_bad_options_and_missing_files_are_clear_errors(paths, tmp_path):
    with pytest.raises(ConfigError, match="variant"):
        SRRBert(variant="leafs", **_options(paths))
    with pytest.raises(ConfigError, match="batch_size"):
        SRRBert(batch_size=0, **_options(paths))
    with pytest.raises(ModelNotAvailableError, match="Punkt"):
        SRRBert(**{**_options(paths), "punkt": tmp_path}, device="cpu").score(["a"], ["b"])
    with pytest.raises(ModelNotAvailableError, match="srrbert"):
        SRRBert(**{**_options(paths), "model": tmp_path / "missing"})
    config = SRRBert(device="cpu", **_options(paths)).config()
    assert config["labels"] == 163 and set(config["weight_digests"]) == {"srrbert", "srrbert_tokenizer"}


def test_is_a_grpo_reward(paths):
    """rexrank.rewards takes it like any per-report metric: one value per completion, equal to score()."""
    from rexrank.rewards import reward

    fn = reward("srrbert", device="cpu", **_options(paths))
    completions = ["No pleural effusion. Heart size is normal.", "Small left effusion."]
    refs = ["Heart size is normal.", "Moderate cardiomegaly."]
    values = fn(prompts=["", ""], completions=completions, reference=refs)
    expected = metrics.get("srrbert", device="cpu", **_options(paths)).score(completions, refs)
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12)
    assert fn.__name__ == "rexrank_srrbert"
