"""BERTScore: our transformers-5 implementation against bert-score 0.3.13 on transformers 4.57, same stand-in files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

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
def pairs(iu_xray_test):
    refs = [study["report"] for study in iu_xray_test.values()]
    hyps = refs[1:] + refs[:1]
    long_report = " ".join(refs[:15])
    edge = _edge_pairs(long_report)
    return hyps + [h for h, _ in edge], refs + [r for _, r in edge], len(edge)


IDF_PAIRS = 150  # idf parity on a subset (plus the edge cases) keeps the reference run short


def _idf_subset(pairs):
    hyps, refs, n_edge = pairs
    return hyps[:IDF_PAIRS] + hyps[-n_edge:], refs[:IDF_PAIRS] + refs[-n_edge:]


@pytest.fixture(scope="module")
def reference(run_reference, model_dir, pairs):
    hyps, refs, _ = pairs
    idf_hyps, idf_refs = _idf_subset(pairs)
    return {False: run_reference("bertscore_ref.py", {"model": model_dir, "hyps": hyps, "refs": refs, "idf": False}),
            True: run_reference("bertscore_ref.py", {"model": model_dir, "hyps": idf_hyps, "refs": idf_refs,
                                                     "idf": True})}


def test_parity_with_bert_score(model_dir, pairs, reference):
    """All 590 IU-Xray pairs + edge cases: rescaled F1 within 1e-5 of bert-score 0.3.13 (transformers 4.57)."""
    hyps, refs, n_edge = pairs
    metric = metrics.get("bertscore", model=model_dir, device="cpu")
    ours = metric.score(hyps, refs)
    assert reference[False]["versions"]["transformers"].startswith("4.")
    np.testing.assert_allclose(ours, reference[False]["F"], rtol=0, atol=1e-5)
    assert np.std(ours[:-n_edge]) > 0.01  # the stand-in separates reports: a meaningful comparison
    details = metric.score_details(hyps, refs)
    np.testing.assert_allclose(details["bertscore_precision"], reference[False]["P"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(details["bertscore_recall"], reference[False]["R"], rtol=0, atol=1e-5)


def test_parity_with_bert_score_idf(model_dir, pairs, reference):
    """idf=True: weights from the references (bert-score's idf_sents=refs, as ReXrank passes), within 1e-5."""
    hyps, refs = _idf_subset(pairs)
    metric = metrics.get("bertscore", model=model_dir, device="cpu", idf=True)
    ours = metric.score(hyps, refs)
    np.testing.assert_allclose(ours, reference[True]["F"], rtol=0, atol=1e-5)
    assert metric.config()["idf_source"] == "references of each call"
    without_idf = metrics.get("bertscore", model=model_dir, device="cpu").score(hyps, refs)
    assert np.abs(ours - without_idf).max() > 1e-3  # idf really changes the weights


def test_empty_side_scores_rescaled_zero(model_dir):
    """Documented rule (bert-score): an empty or whitespace-only side has raw F1 0, rescaled to -b/(1-b)."""
    from rexrank.metrics.bertscore import DISTILROBERTA_BASELINES, BertScore

    metric = BertScore(model=model_dir, device="cpu")
    values = metric.score(["", "  \n ", "Heart normal."], ["Heart normal.", "Heart normal.", ""])
    b_f = DISTILROBERTA_BASELINES[5][2]
    empty_score = (0.0 - b_f) / (1.0 - b_f)
    np.testing.assert_allclose(values, [empty_score] * 3, rtol=0, atol=1e-12)
    assert empty_score == pytest.approx(-5.55016, abs=1e-5)


def test_long_reports_truncate_to_512_tokens(model_dir, pairs):
    """A report is cut at 512 tokens (specials included): text after the cut never changes its score."""
    from rexrank.metrics.bertscore import BertScore

    metric = BertScore(model=model_dir, device="cpu")
    long_report = pairs[0][-5]
    assert len(metric.encode([long_report])[0]) == 512
    extended = long_report + " Large right pleural effusion. " * 50
    a, b = metric.score([long_report, extended], ["The heart is normal.", "The heart is normal."])
    assert a == b


def test_raw_scores_and_local_weights_baseline_equal_bert_score(model_dir, pairs, run_reference):
    """Without rescaling, P/R/F equal bert-score's raw values; with it, the baseline rexrank applies to weights from a
    local folder is the row bert-score reads from its own distilroberta-base table for layer 5."""
    from rexrank.metrics.bertscore import DISTILROBERTA_BASELINES, BertScore

    hyps, refs, _ = pairs
    hyps, refs = hyps[:40], refs[:40]
    raw = run_reference("bertscore_ref.py", {"model": model_dir, "hyps": hyps, "refs": refs, "rescale": False})
    details = BertScore(model=model_dir, device="cpu", rescale_with_baseline=False).score_details(hyps, refs)
    for column, key in (("bertscore_precision", "P"), ("bertscore_recall", "R"), ("bertscore", "F")):
        np.testing.assert_allclose(details[column], raw[key], rtol=0, atol=1e-5)
    rescaled = run_reference("bertscore_ref.py", {"model": model_dir, "hyps": hyps[:2], "refs": refs[:2]})
    np.testing.assert_allclose(DISTILROBERTA_BASELINES[5], rescaled["baseline"], rtol=0, atol=1e-7)
    config = BertScore(model=model_dir, device="cpu").config()
    assert config["baseline"]["F"] == DISTILROBERTA_BASELINES[5][2] and config["num_layers"] == 5
    assert config["weights"].startswith("sha256:")


# Few idf sentences, so that the weight of a token the references never use (bert-score: ln(N + 1), N sentences)
# differs visibly from any other rule (ln N, or the weight of a token seen once).
UNSEEN_IDF_PAIRS = (["Right pneumothorax with mediastinal shift.", "Bilateral hilar lymphadenopathy.",
                     "Heart size is normal."],
                    ["Heart size is normal.", "No effusion.", "Heart size is normal."])


def test_idf_weight_of_tokens_unseen_in_the_references_equals_bert_score(model_dir, run_reference):
    """idf=True with 3 references: the hypotheses' tokens that no reference holds get bert-score 0.3.13's weight
    (get_idf_dict's default, ln(N + 1)); precision, which those tokens weigh, within 1e-5."""
    hyps, refs = UNSEEN_IDF_PAIRS
    theirs = run_reference("bertscore_ref.py", {"model": model_dir, "hyps": hyps, "refs": refs, "idf": True})
    details = metrics.get("bertscore", model=model_dir, device="cpu", idf=True).score_details(hyps, refs)
    for column, key in (("bertscore_precision", "P"), ("bertscore_recall", "R"), ("bertscore", "F")):
        np.testing.assert_allclose(details[column], theirs[key], rtol=0, atol=1e-5)


def test_scores_do_not_depend_on_neighbours_and_refs_are_cached(model_dir, monkeypatch):
    """A pair's value is the same alone or in any batch order; a second call on the same references reuses the
    cached reference embeddings and runs the encoder on hypotheses only."""
    from rexrank.metrics.bertscore import BertScore

    hyps = ["The heart is normal.", "Small left effusion.", "No pneumothorax.", ""]
    refs = ["Heart size normal.", "No effusion.", "Heart size normal.", "Lungs clear."]
    metric = BertScore(model=model_dir, device="cpu", batch_size=2)
    together = metric.score(hyps, refs)
    alone = np.array([BertScore(model=model_dir, device="cpu").score([h], [r])[0] for h, r in zip(hyps, refs)])
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-6)
    order = [3, 1, 0, 2]
    shuffled = metric.score([hyps[i] for i in order], [refs[i] for i in order])
    np.testing.assert_allclose(shuffled, together[order], rtol=0, atol=1e-6)

    embedded: list[str] = []
    original = metric._embed
    monkeypatch.setattr(metric, "_embed", lambda texts: embedded.extend(texts) or original(texts))
    again = metric.score([hyps[1], "Pleural effusion on the right."], [refs[1], refs[0]])
    assert embedded == [hyps[1], "Pleural effusion on the right."]  # hypotheses only
    np.testing.assert_allclose(again[0], together[1], rtol=0, atol=1e-6)


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
