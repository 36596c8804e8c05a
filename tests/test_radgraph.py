"""RadGraph metrics without the reference package: pre-tokenisation facts, archive reading, score semantics,
batching invariance, bad input, caching and options. Parity with radgraph 0.1.18: test_radgraph_parity.py."""

from __future__ import annotations

import json
import shutil
import tarfile

import numpy as np
import pytest

from rexrank.errors import ConfigError, InputError, ModelNotAvailableError
from rexrank.metrics import get, spec

# Reports that must give a defined result: empty, blank, only zero-width characters (words without any
# wordpiece), only punctuation, non-ASCII, "/." (one word under the XL rules, normalised by dygie), a single
# 300-character word (one [UNK]) and a bare word.
ODD_REPORTS = ["", "   \n\t ", "\u200b \u200b \u200b", "(((( ))))", "Café — naïve “quotes” 10% ±2 mm; 日本語 ☃",
               "Heart size normal/. Lungs clear/? ok", "x" * 300, "effusion"]


@pytest.fixture(scope="module")
def archive(standins):
    return standins("radgraph")["radgraph"]


@pytest.fixture(scope="module")
def annotator(archive):
    from rexrank.metrics.radgraph.inference import Annotator

    return Annotator(archive, device="cpu")


@pytest.fixture(scope="module")
def iu_reports(iu_xray_test):
    return [study["report"] for study in iu_xray_test.values()]


def _entity(tokens, label, relations=()):
    return {"tokens": tokens, "label": label, "start_ix": 0, "end_ix": 0, "relations": [list(r) for r in relations]}


def test_official_pretokenisation_splits_punctuation_but_not_hyphens():
    """The CXR-Report-Metric / radgraph regex pads / , : . ! ? ( ) but its class `,-,` is a range equal to ",",
    so hyphens stay inside words; the XL pre-tokenisation (wordpunct) splits them."""
    from rexrank.metrics.radgraph.tokenize import radgraph_words, xl_words

    assert radgraph_words("Left-sided effusion, 3mm/2cm:stable!(x)") == [
        "Left-sided", "effusion", ",", "3mm", "/", "2cm", ":", "stable", "!", "(", "x", ")"]
    assert radgraph_words("1.5 cm") == ["1", ".", "5", "cm"]
    assert radgraph_words("  \n ") == []
    assert xl_words("Left-sided 10%. \"a\"") == ["Left", "-", "sided", "10", "%", ".", "\"", "a", "\""]


def test_archive_reader_checks_null_label_and_files(archive, tmp_path):
    """The NER null label must be index 0 (DyGIE never scores it); a broken archive names the missing file."""
    from rexrank.metrics.radgraph.archive import read_archive

    cfg = read_archive(archive).config
    assert cfg.ner_labels[0] == "" and cfg.ner_labels[1:] == ("ANAT-DP", "OBS-DP", "OBS-U", "OBS-DA")
    assert cfg.relation_labels == ("modify", "located_at", "suggestive_of")
    assert (cfg.model_type, cfg.max_length, cfg.reader_max_span_width, cfg.relation_spans_per_word) == \
        ("radgraph", 512, 8, 0.5)
    broken = tmp_path / "broken"
    shutil.copytree(archive, broken, ignore=shutil.ignore_patterns("weights.th"))
    with pytest.raises(ModelNotAvailableError, match="weights.th"):
        read_archive(broken)
    (broken / "vocabulary" / "radgraph__ner_labels.txt").write_text("ANAT-DP\n\nOBS-DP\n")
    (broken / "weights.th").write_bytes(b"")
    with pytest.raises(ModelNotAvailableError, match="first NER label"):
        read_archive(broken)


def test_combined_f1_uses_sets_and_gives_zero_for_two_empty_reports():
    """ReXrank radgraph_combined: set F1s, zero denominators -> 0 (two empty annotations score 0, not 1)."""
    from rexrank.metrics.radgraph.scores import combined_scores, set_f1

    empty = {"entities": {}}
    assert combined_scores(empty, empty) == (0.0, 0.0, 0.0)
    a = {"entities": {"1": _entity("heart", "ANAT-DP", [("modify", "2")]), "2": _entity("normal", "OBS-DP"),
                      "3": _entity("heart", "ANAT-DP")}}  # a duplicate (tokens, label) counts once
    b = {"entities": {"1": _entity("heart", "ANAT-DP"), "2": _entity("effusion", "OBS-DA")}}
    assert combined_scores(a, a) == (1.0, 1.0, 1.0)
    entity_f1, relation_f1, combined = combined_scores(a, b)
    assert entity_f1 == pytest.approx(0.5) and relation_f1 == 0.0 and combined == pytest.approx(0.25)
    assert set_f1({1, 2}, set()) == 0 and set_f1(set(), {1}) == 0


def test_reward_levels_follow_the_package_definitions():
    """simple = entities; partial = entity + has-relations flag; complete = entity with each relation, lower-cased
    (only there); any side without entities -> 0."""
    from rexrank.metrics.radgraph.scores import reward

    hyp = {"entities": {"1": _entity("Heart", "ANAT-DP", [("modify", "2")]), "2": _entity("normal", "OBS-DP")}}
    ref_no_rel = {"entities": {"1": _entity("Heart", "ANAT-DP"), "2": _entity("normal", "OBS-DP")}}
    ref_lower = {"entities": {"1": _entity("heart", "ANAT-DP", [("modify", "2")]), "2": _entity("normal", "OBS-DP")}}
    assert reward(hyp, ref_no_rel, "simple") == 1.0
    assert reward(hyp, ref_no_rel, "partial") == pytest.approx(0.5)
    assert reward(hyp, ref_no_rel, "complete") == pytest.approx(0.5)
    assert reward(hyp, ref_lower, "simple") == pytest.approx(0.5)  # case matters for entities...
    assert reward(hyp, ref_lower, "complete") == 1.0  # ...but complete lower-cases related entities
    assert reward(hyp, {"entities": {}}, "simple") == 0.0
    with pytest.raises(ValueError):
        reward(hyp, hyp, "all")


@pytest.mark.slow  # 12 s CPU since issue 52: 32-row passes filled with copies for a call of 48 reports
def test_batch_size_does_not_change_any_annotation(annotator, iu_reports):
    """Fixed-shape passes of 32 or 7 rows give exactly the batch-1 annotations (incl. a report folded into 3 encoder
    segments and reports without wordpieces sharing a batch with normal ones)."""
    reports = iu_reports[:40] + ODD_REPORTS + [" ".join(iu_reports[:20])]
    one = annotator.annotate(reports, batch_size=1)
    assert annotator.annotate(reports, batch_size=32) == one
    assert annotator.annotate(reports, batch_size=7) == one
    assert sum(len(a["entities"]) for a in one[:40]) / 40 > 5  # the stand-in does find entities


@pytest.mark.slow  # 2.2 s CPU since issue 52 (heads per report)
def test_odd_reports_give_defined_annotations(annotator, iu_reports):
    """No crash, no wordpiece-less mix-up: blank reports have no entities; zero-width words still form spans;
    a report over 510 wordpieces keeps entities past the first encoder segment (folded, not truncated)."""
    out = annotator.annotate(ODD_REPORTS)
    assert out[0] == {"text": "", "entities": {}} and out[1] == {"text": "", "entities": {}}
    assert out[2]["text"] == "\u200b \u200b \u200b"
    assert out[5]["text"] == "Heart size normal / . Lungs clear / ? ok"
    for annotation in out:
        for entity in annotation["entities"].values():
            words = annotation["text"].split(" ")
            assert entity["tokens"] == " ".join(words[entity["start_ix"]:entity["end_ix"] + 1])
            assert entity["end_ix"] - entity["start_ix"] < 8
    long_report = " ".join(iu_reports[:20])
    _, docs = annotator.prepare([long_report])
    assert docs[0].n_pieces > 2 * annotator.segment_length
    (long_annotation,) = annotator.annotate([long_report])
    last_word = len(long_annotation["text"].split(" ")) - 1
    assert max(e["end_ix"] for e in long_annotation["entities"].values()) > last_word * 0.8


@pytest.mark.slow  # 3.0 s CPU since issue 52 (32-row passes for single pairs)
def test_scores_stay_aligned_with_their_pairs(archive, iu_reports):
    """Sorting by length inside the metric never reorders results: permuted pairs give permuted scores, and
    each equals the pair scored alone."""
    from rexrank.metrics.radgraph import RadGraphCombined

    hyps = iu_reports[:12] + ["", "   "]
    refs = iu_reports[1:13] + ["No acute disease.", ""]
    metric = RadGraphCombined(model=archive, device="cpu", batch_size=4)
    scores = metric.score(hyps, refs)
    order = np.random.default_rng(0).permutation(len(hyps))
    fresh = RadGraphCombined(model=archive, device="cpu", batch_size=32)
    np.testing.assert_array_equal(fresh.score([hyps[i] for i in order], [refs[i] for i in order]), scores[order])
    for i in (0, 5, 12, 13):
        assert fresh.score([hyps[i]], [refs[i]])[0] == scores[i]
    assert (fresh.score_details(hyps[:3], hyps[:3])["radgraph_entity_f1"] == 1.0).all()  # a report vs itself
    assert scores[12] == 0.0 and scores[13] == 0.0  # empty / blank side -> 0


def test_annotations_computed_once_per_text_and_shared_by_all_levels(archive, iu_reports, monkeypatch):
    """Each distinct text is annotated once; the reward metrics reuse the same cache entries."""
    from rexrank.metrics.radgraph.inference import Annotator

    seen: list[str] = []
    original = Annotator.annotate

    def counting(self, texts, batch_size=32):
        seen.extend(texts)
        return original(self, texts, batch_size)

    monkeypatch.setattr(Annotator, "annotate", counting)
    combined = get("radgraph", model=archive, device="cpu")
    hyps, refs = [iu_reports[0], iu_reports[0], iu_reports[1]], [iu_reports[1], iu_reports[2], iu_reports[2]]
    combined.score(hyps, refs)
    assert sorted(seen) == sorted({*hyps, *refs})
    partial = get("radgraph_partial", model=archive, device="cpu").use_text_cache(combined.text_cache)
    partial.score(hyps, refs)
    assert len(seen) == 3
    details = combined.score_details(hyps, refs)
    assert list(details.columns) == ["radgraph", "radgraph_entity_f1", "radgraph_relation_f1"]
    np.testing.assert_allclose(details["radgraph"], (details.radgraph_entity_f1 + details.radgraph_relation_f1) / 2)


def test_annotate_returns_json_in_the_package_shape(archive, iu_reports):
    """annotate() gives radgraph-style dicts that survive a JSON round trip, and copies (callers cannot
    corrupt the cache)."""
    from rexrank.metrics.radgraph import RadGraphRewardComplete

    metric = RadGraphRewardComplete(model=archive, device="cpu")
    first = metric.annotate([iu_reports[3]])
    assert json.loads(json.dumps(first)) == first
    entity = next(iter(first[0]["entities"].values()))
    assert set(entity) == {"tokens", "label", "start_ix", "end_ix", "relations"}
    first[0]["entities"].clear()
    assert metric.annotate([iu_reports[3]])[0]["entities"]
    with pytest.raises(InputError):
        metric.annotate(iu_reports[3])


def test_model_accepts_a_tar_gz_archive(archive, tmp_path, monkeypatch, iu_reports):
    """model= may be the radgraph.tar.gz file itself (extracted once into rexrank's cache)."""
    from rexrank.metrics.radgraph import RadGraphRewardPartial

    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache"))
    packed = tmp_path / "radgraph.tar.gz"
    with tarfile.open(packed, "w:gz") as tar:
        for name in ("config.json", "vocabulary", "weights.th"):
            tar.add(f"{archive}/{name}", arcname=name)
    from_tar = RadGraphRewardPartial(model=packed, device="cpu")
    from_dir = RadGraphRewardPartial(model=archive, device="cpu")
    assert from_tar.annotate(iu_reports[:3]) == from_dir.annotate(iu_reports[:3])
    assert from_tar.fingerprint == from_dir.fingerprint  # same weights, same cache entries


def test_options_and_missing_models_fail_clearly(archive, tmp_path):
    """Bad options and absent weights raise rexrank errors naming the problem."""
    from rexrank.metrics.radgraph import RadGraphCombined

    with pytest.raises(ConfigError, match="batch_size"):
        RadGraphCombined(model=archive, batch_size=0)
    with pytest.raises(ConfigError):
        RadGraphCombined(model=archive, device="not-a-device")
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        RadGraphCombined(model=tmp_path / "nowhere").score(["a"], ["b"])
    assert RadGraphCombined(model=archive, device="cpu")._annotator().device.type == "cpu"


def test_registry_names_keep_the_two_score_families_apart():
    """`radgraph` is ReXrank's column; the package's reward levels have their own names and columns."""
    assert spec("radgraph").column == "radgraph_combined" and spec("radgraph").leaderboard_column == "RadGraph"
    assert [spec(f"radgraph_{lv}").column for lv in ("simple", "partial", "complete")] == \
        ["radgraph_simple", "radgraph_partial", "radgraph_complete"]
    assert spec("radgraph_partial").leaderboard_column is None
