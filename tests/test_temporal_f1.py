"""Temporal entity F1: rexrank's implementation against radeval 2.2.1's own TemporalF1Metric and f1temporal module
(stanza 1.15, .venv-ref) on the same stand-in stanza resources (rexrank.testing.standin_temporal)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from parity import Pairs, ParityTester, iu_reports, shifted

from rexrank import metrics
from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics.temporal_f1 import (EPSILON, KEYWORDS, TemporalF1, clean_text, keyword_entities,
                                         keyword_matches, pair_f1)


@pytest.fixture(scope="module")
def folder(standins) -> str:
    return standins("temporal_f1")["temporal_f1"]


# One case per rule of clean_text and the keyword match, and texts where only stanza's entities find a keyword
# (the regex runs on clean_text, which glues "stable/unchanged" into one word; the stand-in's tokenizer splits it).
EDGE_TEXTS = [
    "Stable/unchanged cardiomegaly. Increased/decreased opacity.",
    "New-onset effusion; worsening__edema.",
    "Heart (___, __, __) is enlarged. ---, ---, --- Lungs (__, __, ___) clear.",
    "INCREASED right effusion.\n\nIMPROVED aeration\nunchanged",
    "Findings: no change*, resolution+ of edema; persistent? opacity!",
    "increasedly larger-than-before; newer nodule (new).",
    "Stably positioned tube, stability of the nodules, worsen?",
    "Ünchanged nodule, néw opacity, resolved\u00a0effusion.",
    "No acute cardiopulmonary process.",
    "",
    "   ",
    "\n",
]


# Pairs whose entity sets overlap in part (IU-Xray's reports seldom name a change over time).
OVERLAPS = [
    ("Stable cardiomegaly. New left effusion.", "Unchanged cardiomegaly, new left effusion."),
    ("Increased opacity, improved edema.", "Increased opacity. Edema has resolved."),
    ("Worsening consolidation.", "Worsened consolidation, larger effusion, new nodule."),
    ("Persistent atelectasis, smaller effusion, stable tube.", "Persistent atelectasis."),
]


class TestTemporalF1Parity(ParityTester):
    """Per-pair F1 equals radeval 2.2.1's TemporalF1Metric._compute_raw (1e-15); every report's entity set equals its
    extract_entities, stanza's (text, type) entities and clean_text are identical, the keyword list is radeval's
    (tests/reference/temporal_f1_radeval_ref.py, the same stanza resources stand-in)."""

    metric = "temporal_f1"
    reference_script = "temporal_f1_radeval_ref.py"
    versions = {"radeval": "2.2.1", "stanza": "1.15.0"}
    compared = (("temporal_f1", "temporal_f1"),)
    atol = 1e-15
    min_spread = 0.05

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test, n=100)
        edge_hyps = EDGE_TEXTS + EDGE_TEXTS[::-1] + ["", refs[0], "No acute process."]
        edge_refs = EDGE_TEXTS[::-1] + EDGE_TEXTS + ["", refs[0], ""]
        return Pairs.with_edges(shifted(refs), refs, [*zip(edge_hyps, edge_refs), *OVERLAPS])

    @pytest.fixture(scope="class")
    def options(self, folder):
        return {"model": folder, "device": "cpu", "batch_size": 16}

    @staticmethod
    def texts(pairs):
        return EDGE_TEXTS + pairs.refs[:30]

    def reference_payload(self, pairs, options):
        return {"resources": options["model"], "hyps": pairs.hyps, "refs": pairs.refs, "texts": self.texts(pairs)}

    def theirs(self, reference):
        return {"temporal_f1": reference["per_sample"]}

    def test_radeval_read_only_the_stand_in(self, reference):
        """radeval's code reached only the loopback resources file: every model file was the stand-in's."""
        assert reference["requests"] == ["/resources_1.15.0.json"]

    def test_mean_and_entity_sets_equal_radeval(self, scorer, ours, pairs, reference):
        assert float(np.mean(ours["temporal_f1"])) == pytest.approx(reference["aggregate"], abs=self.atol)
        texts = list(dict.fromkeys(pairs.hyps + pairs.refs))
        assert {t: sorted(e) for t, e in zip(texts, scorer.entities(texts))} == reference["entities"]

    def test_stanza_entities_and_clean_text_equal_radeval(self, scorer, pairs, reference):
        texts = self.texts(pairs)
        stanza_entities = scorer.stanza_entities(texts)
        assert [[list(e) for e in row] for row in stanza_entities] == reference["stanza_entities"]
        assert [clean_text(t) for t in texts] == reference["clean"]
        # The NER part matters: some keyword is found only by stanza, some only by the regex.
        assert any(keyword_entities(e) - keyword_matches(t) for t, e in zip(texts, stanza_entities))
        assert any(keyword_matches(t) - keyword_entities(e) for t, e in zip(texts, stanza_entities))

    def test_every_branch_of_the_rule_is_compared(self, reference):
        """Both empty (1), only the reference empty (epsilon) and partial overlaps are among the compared pairs."""
        values = np.asarray(reference["per_sample"])
        assert (values == 1.0).any() and (values == EPSILON).any() and ((values > 0.01) & (values < 0.99)).any()

    def test_keywords_are_radeval_s(self, reference):
        assert sorted(KEYWORDS) == reference["keywords"] and len(KEYWORDS) == 44


def test_f1_rule_and_keyword_matching():
    """The F1 rule's branches are radeval's (1, epsilon, epsilon-smoothed F1); the two ways of finding keywords."""
    assert pair_f1(set(), set()) == 1.0
    assert pair_f1({"new"}, set()) == EPSILON
    assert pair_f1(set(), {"new"}) == pytest.approx(0.0, abs=1e-9)
    p, r = (1 + EPSILON) / (2 + EPSILON), (1 + EPSILON) / (1 + EPSILON)  # hyp {new, stable}, ref {new}
    assert pair_f1({"new", "stable"}, {"new"}) == 2 * p * r / (p + r + EPSILON)
    assert keyword_matches("Stable/unchanged, NEW-onset") == {"new"}  # glued by clean_text; hyphen -> space
    assert keyword_entities([("Stable", "OBSERVATION"), ("new", "ANATOMY"), ("larger", "OBSERVATION_MODIFIER"),
                             ("new opacity", "OBSERVATION")]) == {"stable", "larger"}


def test_the_keywords_are_pinned():
    """radeval's 44 keywords (compared with radeval's own list by the parity class, refvenv), pinned so the fast
    tier sees a dropped or changed word."""
    import hashlib

    assert len(KEYWORDS) == 44
    assert hashlib.sha256(" ".join(sorted(KEYWORDS)).encode()).hexdigest() == \
        "347190ea8efcc09f12d0c92196503cb3266858f6178ea5bed7ca56ee2aa54154"


def test_batches_do_not_change_entities(folder, iu_xray_test):
    """stanza's bulk processing in batches of 1 and of 64 reports gives the same entities."""
    hyps = iu_reports(iu_xray_test, n=40)
    one = TemporalF1(model=folder, device="cpu", batch_size=1).stanza_entities(hyps[:40])
    many = TemporalF1(model=folder, device="cpu", batch_size=64).stanza_entities(hyps[:40])
    assert one == many and sum(map(len, one)) > 40


@pytest.mark.slow  # 14.1 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_two_launched_processes_equal_one(folder, tmp_path):
    """The spec shards a launched job's distinct pairs (torchrun, 2 gloo processes): every rank gets the
    single-process values and entity sets."""
    from test_parallel import assert_two_processes_equal_one

    assert_two_processes_equal_one(tmp_path, "temporal_f1", {"model": folder, "device": "cpu", "batch_size": 2})


def test_bad_options_and_missing_files_are_clear_errors(folder, tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="batch_size"):
        TemporalF1(model=folder, batch_size=0)
    with pytest.raises(ModelNotAvailableError, match="resources.json.*stanza.download"):
        TemporalF1(model=tmp_path)
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ModelNotAvailableError, match="nowhere"):  # the default is stanza's own folder
        TemporalF1()
    config = TemporalF1(model=folder).config()
    assert set(config["weight_digests"]["temporal_f1"]) == {"radiology.pt"}
    assert set(config["files"]) == {"en/tokenize/combined.pt", "en/mwt/combined.pt", "en/ner/radiology.pt",
                                    "en/pretrain/mimic.pt", "en/forward_charlm/mimic.pt", "en/backward_charlm/mimic.pt"}


def test_score_without_stanza_names_the_extra(cli, folder, tmp_path, monkeypatch):
    """`rexrank score -m temporal_f1` without stanza installed: one line naming the extra, no traceback."""
    monkeypatch.setitem(sys.modules, "stanza", None)  # `import stanza` now raises ImportError, as when missing
    refs = {"s1": {"report": "Stable effusion.", "section_findings": "Stable effusion."}}
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    (tmp_path / "preds.json").write_text(json.dumps({"s1": "New effusion."}))
    code, text = cli("score", "-p", str(tmp_path / "preds.json"), "-r", str(tmp_path / "refs.json"),
                     "-m", "temporal_f1", "--model-path", f"temporal_f1={folder}", "--no-cache",
                     "-o", str(tmp_path / "out"), "-q", "--resamples", "10")
    assert code != 0 and "rexrank[temporal]" in text and "Traceback" not in text


def test_is_a_grpo_reward(folder):
    """rexrank.rewards takes it like any per-report metric: one value per completion, equal to score()."""
    from rexrank.rewards import reward

    fn = reward("temporal_f1", model=folder, device="cpu")
    completions = ["Stable cardiomegaly. New effusion.", "No change."]
    refs = ["Unchanged cardiomegaly, new effusion.", "Increased opacity."]
    values = fn(prompts=["", ""], completions=completions, reference=refs)
    expected = metrics.get("temporal_f1", model=folder, device="cpu").score(completions, refs)
    np.testing.assert_allclose(values, expected, rtol=0, atol=0)
    assert fn.__name__ == "rexrank_temporal_f1"
