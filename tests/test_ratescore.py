"""RaTEScore without the reference package: decoding rules, constants, options, bad input, caching, stand-ins.

Parity with the official package (0.5.0 / 0.6.0) is in tests/test_ratescore_parity.py.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import NEEDS_MEDSPACY

import rexrank.metrics as M
from rexrank.errors import ConfigError, InputError, ModelNotAvailableError, RexrankError

pytestmark = NEEDS_MEDSPACY


@pytest.fixture(scope="module")
def paths(standins):
    return standins("ratescore")


@pytest.fixture(scope="module")
def metric(paths):
    return M.get("ratescore", ner_model=paths["ratescore_ner"], embed_model=paths["ratescore_embed"], device="cpu")


REPORTS = [
    "The heart is normal in size. The mediastinum is unremarkable. The lungs are clear.",
    "Mild cardiomegaly. Small bilateral pleural effusions. No pneumothorax.",
    "Right lower lobe opacity may reflect atelectasis or pneumonia. No acute osseous abnormality.",
    "Endotracheal tube terminates 4 cm above the carina. Stable appearance of the mediastinal contours.",
]


# --- decoding: the official post_process state machine, cases worked out by hand ----------------------------------
@pytest.mark.parametrize("labels, expected", [
    # B- I- O: one span over both tokens
    (["O", "B-X", "I-X", "O", "O"], [(1, 2, "X")]),
    # B- B- O: two single-token spans
    (["O", "B-X", "B-Y", "O", "O"], [(1, 1, "X"), (2, 2, "Y")]),
    # I- followed by B- with nothing open: nothing emitted (the I- restarts a span that B- O then replaces)
    (["O", "I-X", "B-Y", "O", "O"], [(2, 2, "Y")]),
    # B- I- I- B- O: the span closes at the I- before the B-, the B- then stands alone
    (["O", "B-X", "I-X", "I-Y", "B-Z", "O", "O"], [(1, 3, "X"), (4, 4, "Z")]),
    # a span still open at [SEP] closes at the token before [SEP]
    (["O", "O", "B-X", "I-X", "I-X"], [(2, 3, "X")]),
    # ...unless an earlier B- B- left `end` set: then the open span is dropped (official quirk)
    (["O", "B-X", "B-Y", "I-Y", "I-Y"], [(1, 1, "X")]),
    # labels on [CLS]/[SEP] positions are ignored
    (["B-X", "O", "O", "O", "B-Y"], []),
])
def test_decode_spans_follows_the_official_state_machine(labels, expected):
    """Span decoding decides which entities exist; these cases pin each branch of RaTEScore's post_process."""
    from rexrank.metrics.ratescore.entities import decode_spans

    tokens = ["[CLS]"] + [f"t{i}" for i in range(1, len(labels) - 1)] + ["[SEP]"]
    assert decode_spans(tokens, labels) == expected


def test_decode_spans_reads_the_label_after_the_last_token_only():
    """Labels may be longer than tokens (official: padded rows); only the label at [SEP] is ever looked at."""
    from rexrank.metrics.ratescore.entities import decode_spans

    tokens = ["[CLS]", "a", "b", "[SEP]"]
    assert decode_spans(tokens, ["O", "B-X", "B-Y", "O", "B-Z", "B-Z"]) == [(1, 1, "X"), (2, 2, "Y")]


# --- constants ---------------------------------------------------------------------------------------------------
def test_matrices_cover_every_type_pair_and_variants_are_distinct():
    """Each matrix has the 25 type pairs; the three variants differ in matrix or negation weight as documented."""
    from rexrank.metrics.ratescore import constants

    for matrix in (constants.LONG_MATRIX, constants.SHORT_MATRIX):
        assert len(matrix) == 25 and all(0 <= v <= 1 for v in matrix.values())
    assert len(constants.NEGATION_PAIRS) == 8
    v05, long6, short6 = (constants.variant(n) for n in ("v0.5", "v0.6-long", "v0.6-short"))
    assert v05.matrix is long6.matrix and v05.neg_weight == 0.3612 and long6.neg_weight == pytest.approx(0.8717, abs=1e-4)
    assert short6.matrix is constants.SHORT_MATRIX and short6.neg_weight == pytest.approx(0.3612, abs=1e-4)
    assert constants.variant(None) is v05 and constants.variant("0.6.0") is long6


@pytest.mark.parametrize("official", [False, True])
def test_pair_score_formula_on_hand_made_vectors(official):
    """The formula itself, on both paths: with orthogonal/identical vectors the score is computable by hand."""
    from rexrank.metrics.ratescore import constants
    from rexrank.metrics.ratescore.score import pair_score

    e = np.eye(3, dtype=np.float32)
    m, neg = constants.LONG_MATRIX, 0.3612
    # identical single entity of the same type: cos 1, both directions 1 -> F1 1
    score, r2h, h2r = pair_score(e[:1], ["DISEASE"], e[:1], ["DISEASE"], m, neg, official)[:3]
    assert score == pytest.approx(1.0) and r2h == pytest.approx(1.0)
    # same vector, contradicting polarity (DISEASE vs NON-DISEASE): each direction = neg weight
    score, r2h, h2r = pair_score(e[:1], ["DISEASE"], e[:1], ["NON-DISEASE"], m, neg, official)[:3]
    assert r2h == pytest.approx(neg) and h2r == pytest.approx(neg) and score == pytest.approx(neg)
    # ref has two entities, one matched exactly, one orthogonal to everything: weighted by W[(type, matched type)]
    score, r2h, h2r = pair_score(e[:2], ["DISEASE", "ANATOMY"], e[:1], ["DISEASE"], m, neg, official)[:3]
    w1, w2 = m[("DISEASE", "DISEASE")], m[("ANATOMY", "DISEASE")]
    assert r2h == pytest.approx(w1 / (w1 + w2)) and h2r == pytest.approx(1.0)
    assert score == pytest.approx(2 * r2h * h2r / (r2h + h2r))
    # a side without entities scores 0.5
    assert pair_score(e[:0], [], e[:1], ["DISEASE"], m, neg, official)[0] == 0.5


def test_fast_path_hands_near_ties_between_types_to_the_official_path():
    """Copies of one vector with different types are a tie the fast path must not decide; same type is decided,
    and where the fast path decides, both paths give the same score."""
    from rexrank.metrics.ratescore import constants
    from rexrank.metrics.ratescore.score import pair_score

    rng = np.random.default_rng(0)
    m, neg = constants.LONG_MATRIX, 0.3612
    a, other = rng.normal(size=(2, 8)).astype(np.float32)
    tie = np.stack([a, other, a])
    assert not pair_score(a[None], ["DISEASE"], tie, ["DISEASE", "ANATOMY", "NON-DISEASE"], m, neg).decided
    assert pair_score(a[None], ["DISEASE"], tie, ["DISEASE", "ANATOMY", "DISEASE"], m, neg).decided
    # cosines 1 and 1 - 2e-5 (inside the margin, as batching noise could swap them) vs 1 and 1 - 1e-3 (outside)
    e = np.eye(3, dtype=np.float32)
    for gap, decided in ((2e-5, False), (1e-3, True)):
        c = 1 - gap
        near = np.stack([e[0], np.array([c, np.sqrt(1 - c * c), 0], np.float32), e[2]])
        assert pair_score(e[:1], ["DISEASE"], near, ["DISEASE", "ABNORMALITY", "ANATOMY"], m, neg).decided is decided
    for _ in range(20):
        ref, hyp = rng.normal(size=(5, 8)).astype(np.float32), rng.normal(size=(4, 8)).astype(np.float32)
        ref_types, hyp_types = list(rng.choice(constants.TYPES, 5)), list(rng.choice(constants.TYPES, 4))
        fast = pair_score(ref, ref_types, hyp, hyp_types, m, neg)
        assert fast.decided
        assert fast.score == pytest.approx(pair_score(ref, ref_types, hyp, hyp_types, m, neg, True).score, abs=1e-6)


# --- options and errors ------------------------------------------------------------------------------------------
def test_config_and_fingerprint_record_the_variant(paths):
    """The variant changes numbers, so it must change the fingerprint; model identity is the weights' hash."""
    from rexrank.metrics.ratescore import constants

    prints = {}
    for name in ("v0.5", "v0.6-long", "v0.6-short"):
        m = M.get("ratescore", model=paths, variant=name)
        cfg = m.config()
        assert cfg["variant"] == name and cfg["ner_model"].startswith("sha256:")
        assert cfg["neg_weight"] == constants.variant(name).neg_weight
        prints[name] = m.fingerprint
    assert len(set(prints.values())) == 3
    assert M.get("ratescore", model=paths).fingerprint == prints["v0.5"]  # default = 0.5.0 behaviour


def test_model_forms_are_equivalent(paths):
    """ner_model/embed_model, model={...} and model=<folder with ner/ and embed/> name the same models."""
    folder = Path(paths["ratescore_ner"]).parent
    a = M.get("ratescore", ner_model=paths["ratescore_ner"], embed_model=paths["ratescore_embed"])
    b = M.get("ratescore", model={"ner": paths["ratescore_ner"], "embed": paths["ratescore_embed"]})
    c = M.get("ratescore", model=str(folder))
    assert a.fingerprint == b.fingerprint == c.fingerprint


@pytest.mark.parametrize("kwargs, error, text", [
    ({"variant": "v0.7"}, ConfigError, "Available: v0.5"),
    ({"batch_size": 0}, ConfigError, "positive integer"),
    ({"model": {"ner": "x"}}, ConfigError, "'ner' and 'embed'"),
    ({"model": "/nonexistent/ratescore"}, ConfigError, "ner/ and embed/"),
    ({"ner_model": "/nonexistent/ner", "embed_model": "/nonexistent/embed"}, ModelNotAvailableError, "does not exist"),
])
def test_bad_options_raise_clear_errors(kwargs, error, text):
    """User mistakes are RexrankErrors that name the problem, raised before any model loads."""
    with pytest.raises(error, match=text):
        M.get("ratescore", **kwargs)


def test_model_and_ner_model_together_is_an_error(paths):
    with pytest.raises(ConfigError, match="either model="):
        M.get("ratescore", model=paths, ner_model=paths["ratescore_ner"])


def test_wrong_model_folder_is_reported(paths):
    """An encoder folder given as the NER model is not an IOB token classifier: say so, no deep trace."""
    m = M.get("ratescore", ner_model=paths["ratescore_embed"], embed_model=paths["ratescore_embed"])
    with pytest.raises(RexrankError):
        m.score(["No effusion."], ["No effusion."])


def test_folder_without_a_model_is_reported(tmp_path):
    """model= pointing at empty ner/ and embed/ folders fails with ModelNotAvailableError naming the folder."""
    (tmp_path / "ner").mkdir()
    (tmp_path / "embed").mkdir()
    m = M.get("ratescore", model=tmp_path)
    with pytest.raises(ModelNotAvailableError, match="cannot load the NER model"):
        m.score(["No effusion."], ["No effusion."])


def test_missing_medspacy_says_how_to_install(monkeypatch, paths):
    """medspacy is an optional extra: without it the error names the install command."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "medspacy" else real(name, *a))
    with pytest.raises(ImportError, match=r"rexrank\[ratescore\]") as info:
        M.get("ratescore", model=paths)
    assert isinstance(info.value, RexrankError)


def test_non_string_input_is_rejected(metric):
    with pytest.raises(InputError, match=r"hyps\[1\]"):
        metric.score(["a", None], ["a", "b"])


# --- behaviour on real-looking and bad input ---------------------------------------------------------------------
def test_identical_reports_score_one_and_others_less(metric):
    """Sanity of the whole pipeline: a report against itself scores 1 (up to float noise), others below.

    Exceptions, as in the official code: no entities -> 0.5; and when one entity text occurs with two types, its
    nearest neighbour may be the copy of the other type, so even a self-match scores below 1.
    """
    same = metric.score(REPORTS, REPORTS)
    checked = 0
    for entities, value in zip(metric.entities(REPORTS), same):
        types_of = {}
        for text, kind in entities:
            types_of.setdefault(text, set()).add(kind)
        if not entities:
            assert value == 0.5
        elif all(len(kinds) == 1 for kinds in types_of.values()):
            assert value == pytest.approx(1.0, abs=1e-6)
            checked += 1
        else:
            assert value <= 1 + 1e-6
    assert checked >= 2
    other = metric.score(REPORTS, REPORTS[1:] + REPORTS[:1])
    assert np.all(other < 1 - 1e-3) and np.all(other > 0)


def test_bad_input_gives_defined_results_in_place(metric):
    """Empty, whitespace, < 3-char, Unicode, huge and >512-token inputs never crash or shift other pairs.

    A side without entities (including a report with no sentence) scores 0.5, as the official code defines it;
    every other pair scores exactly what it scores alone.
    """
    long_report = " ".join(REPORTS * 40)  # ~160 sentences
    one_long_sentence = " ".join(["bilateral pleural effusion with atelectasis"] * 150)  # > 512 NER tokens
    hyps = ["", "   \n\t", "ok", "Ünïcödé 肺 😀 résumé — ½ °C.", long_report, one_long_sentence, REPORTS[0], "[CLS] [SEP] [PAD]"]
    refs = [REPORTS[1], REPORTS[2], REPORTS[3], REPORTS[0], REPORTS[1], REPORTS[2], REPORTS[3], REPORTS[0]]
    scores = metric.score(hyps, refs)
    assert scores.shape == (len(hyps),) and np.all(np.isfinite(scores))
    assert scores[0] == scores[1] == scores[2] == 0.5
    alone = [metric.score([h], [r])[0] for h, r in zip(hyps[3:], refs[3:])]
    np.testing.assert_allclose(scores[3:], alone, atol=1e-6)
    details = metric.score_details(hyps, refs)
    assert list(details.columns[:1]) == ["ratescore"] and details["ratescore_n_entities_hyp"].iloc[0] == 0
    assert math.isnan(details["ratescore_ref_to_hyp"].iloc[0])
    assert details["ratescore_n_entities_hyp"].iloc[4] > 100  # the long report keeps all its sentences


def test_official_paths_give_the_same_numbers(paths, monkeypatch):
    """Forcing every sentence through the one-by-one NER run and every pair through the official scoring path
    changes nothing beyond float noise: they only matter where a near tie must be decided as officially."""
    from rexrank.metrics.ratescore import entities as entities_module
    from rexrank.metrics.ratescore.sentences import split_reports

    hyps, refs = REPORTS + REPORTS[:2], REPORTS[::-1] + REPORTS[2:]
    default = M.get("ratescore", model=paths)
    expected, expected_entities = default.score(hyps, refs), default.entities(hyps)
    monkeypatch.setattr(entities_module, "NER_TIE_MARGIN", float("inf"))
    forced = M.get("ratescore", model=paths)
    forced._all_official = True
    assert forced.entities(hyps) == expected_entities
    assert forced._ner.sentences_rerun == len({s for report in split_reports(hyps) for s in report})
    details = forced._details(hyps, refs)
    assert details["official_path"].all()
    np.testing.assert_allclose(details["score"], expected, atol=1e-6)


@pytest.mark.slow  # 2.5 s CPU since issue 52: 512-row entity passes, filled with copies
def test_empty_input_and_batch_sizes(paths):
    """No pairs -> empty array; batch sizes change batching only, never the numbers."""
    m1 = M.get("ratescore", model=paths, batch_size=1, embed_batch_size=1)
    m64 = M.get("ratescore", model=paths, batch_size=64, embed_batch_size=512)
    assert m1.score([], []).shape == (0,)
    hyps, refs = REPORTS * 2, REPORTS[::-1] * 2
    np.testing.assert_allclose(m1.score(hyps, refs), m64.score(hyps, refs), atol=1e-6)


def test_per_text_work_is_done_once_per_unique_text(paths):
    """Entities are cached per report text: re-scoring costs no NER, and a new text costs only itself."""
    m = M.get("ratescore", model=paths)
    seen: list[str] = []
    original = m._extract

    def counting(texts):
        seen.extend(texts)
        return original(texts)

    m._extract = counting
    m.score(REPORTS, REPORTS[::-1])
    assert sorted(seen) == sorted(set(REPORTS))
    seen.clear()
    m.score(REPORTS[::-1], REPORTS)
    assert seen == []
    m.score(["A new report. With pleural effusion."], [REPORTS[0]])
    assert seen == ["A new report. With pleural effusion."]


def test_registry_alias_and_scoring_entry_point(paths):
    """rexrank.score runs ratescore through the registry with model paths, column named as the leaderboard's."""
    import rexrank.evaluation.in_memory as scoring

    df = scoring.score(REPORTS[:2], REPORTS[1:3], ["ratescore"], model_paths={"ratescore": paths})
    assert "ratescore" in df.columns and len(df) == 2
    assert M.get("rate_score", model=paths).spec.name == "ratescore"


def test_standin_is_deterministic_and_in_the_real_layout(tmp_path):
    """Same (size, seed) -> same files (goldens stay valid); the NER folder has the real labels and layout."""
    import json

    from rexrank.testing.standin_ratescore import NER_LABELS, build

    a, b = build(tmp_path / "a", "small", 0), build(tmp_path / "b", "small", 0)

    def digest(folder):
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(Path(folder).rglob("*")) if p.is_file()}

    assert digest(a["ratescore_ner"]) == digest(b["ratescore_ner"])
    assert digest(a["ratescore_embed"]) == digest(b["ratescore_embed"])
    config = json.loads((Path(a["ratescore_ner"]) / "config.json").read_text())
    assert config["model_type"] == "deberta-v2" and sorted(config["id2label"].values()) == sorted(NER_LABELS)
    assert {"tokenizer.json", "tokenizer_config.json", "model.safetensors"} <= set(digest(a["ratescore_ner"]))
    assert json.loads((Path(a["ratescore_embed"]) / "config.json").read_text())["model_type"] == "mpnet"
