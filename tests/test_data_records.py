"""The Study record, the tracks, ReXrank JSON and MIMIC-CXR section extraction (no builders)."""

from __future__ import annotations

import json

import pytest

from rexrank.data import read_rexrank_json
from rexrank.data.catalog import package_file
from rexrank.data.sections import extract_sections, normalise_header
from rexrank.data.study import STUDY_FEATURES, findings_impression_text, make_study
from rexrank.data.tracks import TRACKS, get_track
from rexrank.errors import InputError, UnknownNameError


def test_findings_impression_text_writes_literal_none():
    """The official findings+impression ground truth prints a missing section as the word None."""
    assert findings_impression_text("Clear.", None) == "Findings: Clear. Impression: None"
    assert findings_impression_text(None, "Normal.") == "Findings: None Impression: Normal."


def test_make_study_treats_blank_and_nan_sections_as_missing():
    """An empty CSV cell (NaN) or a blank section must not become a findings ground truth of ''."""
    record = make_study(study_id=1, dataset="x", split="test", image_paths=["/a.png"], findings="  ",
                        impression=float("nan"), age="45", view_positions=["PA", float("nan")])
    assert record["findings"] is None and record["gt_findings"] is None
    assert record["gt_findings_impression"] == "Findings: None Impression: None"
    assert record["age"] == 45 and record["view_positions"] == ["PA", None] and record["study_id"] == "1"
    assert set(record) == set(STUDY_FEATURES)
    STUDY_FEATURES.encode_example(record)  # the record fits the declared features


def test_tracks_are_declared_once_and_unknown_names_list_the_choices():
    """Scoring and datasets read tracks from one table; a typo names the available tracks."""
    assert get_track("findings").reference_column == "gt_findings"
    assert get_track("findings").requires == ("findings",)
    assert get_track("findings_impression").requires == ()
    with pytest.raises(UnknownNameError, match="Unknown track 'impression'. Available: findings, findings_impression"):
        get_track("impression")
    assert set(TRACKS) == {"findings", "findings_impression"}


def test_real_iu_xray_json_reads_into_records_matching_the_official_report(iu_xray_test, shared_dir, tmp_path):
    """The official IU-Xray split JSON: 590 studies, and our findings+impression text equals its `report` field."""
    records = read_rexrank_json(shared_dir / "data" / "iu_xray" / "ReXRank_IUXray_test.json", tmp_path,
                                dataset="iu_xray")
    assert len(records) == 590
    assert [r["study_id"] for r in records] == list(iu_xray_test)
    for record in records:
        entry = iu_xray_test[record["study_id"]]
        assert record["gt_findings_impression"] == entry["report"]
        assert record["gt_findings"] == entry["section_findings"]
        assert record["image_paths"] == [str(tmp_path / p) for p in entry["image_path"]]
        assert record["split"] == "test"


def test_packaged_split_files_and_manifests_are_the_shared_ones(shared_dir):
    """The package's own copy of the ReXrank split must not drift from ../shared."""
    pairs = [("splits/ReXRank_IUXray_test.json", "iu_xray/ReXRank_IUXray_test.json"),
             ("splits/ReXRank_IUXray_valid.json", "iu_xray/ReXRank_IUXray_valid.json"),
             ("manifests/mimic_cxr_test.jsonl", "manifests/mimic_cxr_test.jsonl"),
             ("manifests/chexpert_plus_valid.jsonl", "manifests/chexpert_plus_valid.jsonl")]
    for ours, theirs in pairs:
        assert package_file(ours).read_bytes() == (shared_dir / "data" / theirs).read_bytes(), ours


def test_rexrank_json_normalises_val_split_and_rejects_bad_files(tmp_path):
    """'val' in upstream JSON is our 'validation'; a list or a missing file is a clear InputError."""
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"s1": {"image_path": ["s1/0.png"], "section_findings": "A.", "split": "val"}}))
    (record,) = read_rexrank_json(path)
    assert record["split"] == "validation" and record["key_image"] == str(tmp_path / "s1/0.png")
    path.write_text("[1, 2]")
    with pytest.raises(InputError, match="expected a JSON object"):
        read_rexrank_json(path)
    with pytest.raises(InputError, match="not found"):
        read_rexrank_json(tmp_path / "missing.json")


REPORT = """                                 FINAL REPORT
 EXAMINATION:  CHEST (PA AND LAT)
 
 INDICATION:  ___ with cough
 
 COMPARISON:  ___
 
 FINDINGS: 
 
 The lungs are clear.
 No effusion.
 
 IMPRESSION: 
 
 No acute process.
"""


def test_sections_of_a_typical_mimic_report():
    """FINDINGS/IMPRESSION headers, lines joined, whitespace collapsed, context in the IU-Xray style."""
    sections = extract_sections(REPORT)
    assert sections.findings == "The lungs are clear. No effusion."
    assert sections.impression == "No acute process."
    assert sections.context == "Indication: ___ with cough Comparison: ___"


@pytest.mark.parametrize("header, expected", [
    ("CONCLUSION", "impression"), ("FINDINGS AND IMPRESSION", "impression"), ("FINDING", "findings"),
    ("IMPRESSON", "impression"), ("PA AND LATERAL VIEWS OF THE CHEST", "findings"), ("REASON FOR EXAM", "indication"),
    ("PROVISIONAL FINDINGS IMPRESSION", "impression"), ("NOTIFICATION", "notification"),
])
def test_section_header_variants(header, expected):
    """The MIMIC-CXR parser's header conventions: synonyms, typos, study-description headers."""
    assert normalise_header(header) == expected


def test_empty_or_absent_sections_are_none_and_the_last_section_wins():
    """An empty FINDINGS header is dropped (not an empty ground truth); a later section of a name wins."""
    empty = " FINAL REPORT\n FINDINGS: \n \n IMPRESSION:  No change.\n"
    assert extract_sections(empty).findings is None
    assert extract_sections(empty).impression == "No change."
    twice = "\n FINDINGS:  first.\n more\n FINDINGS:  second.\n"
    assert extract_sections(twice).findings == "second."
    assert extract_sections("No headers at all.").findings is None
