"""BERTScore: our transformers-5 implementation against bert-score 0.3.13 on transformers 4.57, same stand-in files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from parity import FPRParityTester, Pairs, iu_reports, shifted

from rexrank import metrics
from rexrank.errors import ConfigError, ModelNotAvailableError


def _edge_pairs(long_report: str) -> list[tuple[str, str]]:
    return [
        ("", "The heart size is normal."),
        ("The heart size is normal.", ""),
        ("", ""),
        ("   ", "No pleural effusion."),  # whitespace only = empty after preprocessing
        ("\n", "No pleural effusion."),
        (long_report, long_report[: len(long_report) // 2]),  # > 512 tokens: truncated like bert-score
        ("Héart size nörmal — no effusion ✓ 心脏 ", "Heart size normal, no effusion."),  # non-ASCII
        ("No  effusion.\n\nLungs   clear.", "No effusion. Lungs clear."),  # repeated spaces, newlines
        ("a\tb", "a b"),
        (".", ".."),
    ]


@pytest.fixture(scope="module")
def model_dir(standins) -> str:
    return standins("bertscore")["bertscore"]


@pytest.fixture(scope="module")
def long_report(iu_xray_test) -> str:
    """Fifteen IU-Xray reports in one: past the encoder's 512 positions."""
    return " ".join(iu_reports(iu_xray_test, n=15))


class _BertScore(FPRParityTester):
    """bert-score 0.3.13 (transformers 4.57) on the same stand-in folder, called as ReXrank calls it
    (tests/reference/bertscore_ref.py); each configuration below is a subclass."""

    metric = "bertscore"
    reference_script = "bertscore_ref.py"
    versions = {"bert_score": "0.3.13", "transformers": "4."}

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test)
        return Pairs.with_edges(shifted(refs), refs, _edge_pairs(" ".join(refs[:15])))

    @pytest.fixture(scope="class")
    def options(self, model_dir):
        return {"model": model_dir, "device": "cpu"}

    def reference_payload(self, pairs, options):
        return {"model": options["model"], "hyps": pairs.hyps, "refs": pairs.refs, "idf": options.get("idf", False),
                "rescale": options.get("rescale_with_baseline", True)}


class TestBertScoreParity(_BertScore):
    """All 590 IU-Xray pairs + edge cases: rescaled F1, P and R within 1e-5."""

    def test_local_weights_get_bert_scores_own_baseline(self, reference, scorer):
        """Weights from a local folder are rescaled with the row bert-score reads from its own distilroberta-base
        table for layer 5 (the baseline the package applied in this reference run)."""
        from rexrank.metrics.bertscore import DISTILROBERTA_BASELINES

        self.assert_close(DISTILROBERTA_BASELINES[5], reference["baseline"], "layer-5 baseline", atol=1e-7)
        config = scorer.config()
        assert config["baseline"]["F"] == DISTILROBERTA_BASELINES[5][2] and config["num_layers"] == 5
        assert config["weights"].startswith("sha256:")


class TestBertScoreIdfParity(_BertScore):
    """idf=True: weights from the references (bert-score's idf_sents=refs, as ReXrank passes); F1 within 1e-5 on
    the first 150 pairs and the edge cases (a subset keeps the reference run short)."""

    compared = (("score", "F"),)

    def make_pairs(self, iu_xray_test):
        return super().make_pairs(iu_xray_test).head(150)

    @pytest.fixture(scope="class")
    def options(self, model_dir):
        return {"model": model_dir, "device": "cpu", "idf": True}

    @pytest.mark.slow  # 5.7 s CPU since issue 52: a call of few texts fills its buckets' passes with copies
    def test_idf_comes_from_the_references_and_changes_the_weights(self, scorer, ours, pairs, model_dir):
        assert scorer.config()["idf_source"] == "references of each call"
        without_idf = metrics.get("bertscore", model=model_dir, device="cpu").score(pairs.hyps, pairs.refs)
        assert np.abs(ours["score"] - without_idf).max() > 1e-3  # idf really changes the weights


class TestBertScoreRawParity(_BertScore):
    """Without rescaling (rescale_with_baseline=False): raw P, R and F of 40 IU-Xray pairs equal bert-score's raw
    values within 1e-5."""

    f1_column = "bertscore"

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test)
        return Pairs(shifted(refs)[:40], refs[:40])

    @pytest.fixture(scope="class")
    def options(self, model_dir):
        return {"model": model_dir, "device": "cpu", "rescale_with_baseline": False}

class TestBertScoreUnseenIdfParity(_BertScore):
    """idf=True with 3 references: the hypotheses' tokens that no reference holds get bert-score 0.3.13's weight
    (get_idf_dict's default, ln(N + 1)); P, R and F (precision weighs those tokens) within 1e-5. Few idf sentences,
    so that the rule differs visibly from any other (ln N, or the weight of a token seen once)."""

    f1_column = "bertscore"

    def make_pairs(self, iu_xray_test):
        return Pairs(["Right pneumothorax with mediastinal shift.", "Bilateral hilar lymphadenopathy.",
                      "Heart size is normal."],
                     ["Heart size is normal.", "No effusion.", "Heart size is normal."])

    @pytest.fixture(scope="class")
    def options(self, model_dir):
        return {"model": model_dir, "device": "cpu", "idf": True}

    def test_inputs_make_the_comparison_meaningful(self, scorer, pairs):
        """Some hypothesis tokens occur in no reference: the unseen-token weight decides their precision."""
        seen = {token for ids in scorer.encode(pairs.refs) for token in ids}
        assert any(set(ids) - seen for ids in scorer.encode(pairs.hyps))


def test_empty_side_scores_rescaled_zero(model_dir):
    """Documented rule (bert-score): an empty or whitespace-only side has raw F1 0, rescaled to -b/(1-b)."""
    from rexrank.metrics.bertscore import DISTILROBERTA_BASELINES, BertScore

    metric = BertScore(model=model_dir, device="cpu")
    values = metric.score(["", "  \n ", "Heart normal."], ["Heart normal.", "Heart normal.", ""])
    b_f = DISTILROBERTA_BASELINES[5][2]
    empty_score = (0.0 - b_f) / (1.0 - b_f)
    np.testing.assert_allclose(values, [empty_score] * 3, rtol=0, atol=1e-12)
    assert empty_score == pytest.approx(-5.55016, abs=1e-5)


def test_long_reports_truncate_to_512_tokens(model_dir, long_report):
    """A report is cut at 512 tokens (specials included): text after the cut never changes its score."""
    from rexrank.metrics.bertscore import BertScore

    metric = BertScore(model=model_dir, device="cpu")
    assert len(metric.encode([long_report])[0]) == 512
    extended = long_report + " Large right pleural effusion. " * 50
    a, b = metric.score([long_report, extended], ["The heart is normal.", "The heart is normal."])
    assert a == b


def test_scores_do_not_depend_on_neighbours_and_refs_are_cached(model_dir, monkeypatch):
    """A pair's value is the same, bit for bit, alone or in any batch order (fixed-shape passes,
    rexrank.metrics.batching; here with 2 rows against the CPU's default 8: the shape's rows do not move this
    stand-in's bytes, the width does, tests/test_batch_invariance.py); a second
    call on the same references reuses the cached reference embeddings and runs the encoder on hypotheses only."""
    from rexrank.metrics.bertscore import BertScore

    hyps = ["The heart is normal.", "Small left effusion.", "No pneumothorax.", ""]
    refs = ["Heart size normal.", "No effusion.", "Heart size normal.", "Lungs clear."]
    metric = BertScore(model=model_dir, device="cpu", batch_size=2)
    together = metric.score(hyps, refs)
    alone = np.array([BertScore(model=model_dir, device="cpu").score([h], [r])[0] for h, r in zip(hyps, refs)])
    assert together.tobytes() == alone.tobytes()
    order = [3, 1, 0, 2]
    shuffled = metric.score([hyps[i] for i in order], [refs[i] for i in order])
    assert shuffled.tobytes() == together[order].tobytes()

    embedded: list[str] = []
    original = metric._embed
    monkeypatch.setattr(metric, "_embed", lambda texts: embedded.extend(texts) or original(texts))
    again = metric.score([hyps[1], "Pleural effusion on the right."], [refs[1], refs[0]])
    assert embedded == [hyps[1], "Pleural effusion on the right."]  # hypotheses only
    assert again[0] == together[1]


def test_missing_weights_is_one_clear_error(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="bertscore"):
        metrics.get("bertscore", model=tmp_path / "no-such-model")
    empty = tmp_path / "empty"
    empty.mkdir()
    metric = metrics.get("bertscore", model=empty, device="cpu")
    with pytest.raises(ModelNotAvailableError, match="bertscore"):
        metric.score(["a"], ["b"])


def test_bad_options_are_config_errors(model_dir):
    from rexrank.metrics.bertscore import BertScore

    with pytest.raises(ConfigError, match="num_layers"):
        BertScore(model=model_dir, num_layers=9)
    with pytest.raises(ConfigError, match="idf=True"):
        BertScore(model=model_dir, idf_sents=["a"])
    with pytest.raises(ConfigError, match="batch_size"):
        BertScore(model=model_dir, batch_size=0)


def test_standin_is_deterministic_and_in_the_distilroberta_layout(tmp_path):
    """Same (size, seed) -> byte-identical files, so goldens stay valid; the folder has the real file names."""
    from rexrank.testing.standin_text import build_bertscore

    a = Path(build_bertscore(tmp_path / "a", "small", 0)["bertscore"])
    b = Path(build_bertscore(tmp_path / "b", "small", 0)["bertscore"])
    names = sorted(p.name for p in a.iterdir())
    assert names == ["config.json", "merges.txt", "model.safetensors", "tokenizer_config.json", "vocab.json"]
    for name in names:
        assert hashlib.sha256((a / name).read_bytes()).digest() == hashlib.sha256((b / name).read_bytes()).digest()
