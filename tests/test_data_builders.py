"""The four builders on synthetic trees in each source's real layout: exact study sets, tracks, errors, cache."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from rexrank import data
from rexrank.data import synthetic
from rexrank.data.manifests import read_manifest
from rexrank.errors import DatasetNotAvailableError, UnknownNameError


@pytest.fixture
def mimic_tree(tmp_path) -> Path:
    return synthetic.write_mimic_cxr_tree(tmp_path / "mimic")


@pytest.fixture
def chexpert_tree(tmp_path) -> Path:
    return synthetic.write_chexpert_plus_tree(tmp_path / "chexpert")


def _report_path(root: Path, row: dict) -> Path:
    subject = str(row["subject_id"])
    return root / "files" / f"p{subject[:2]}" / f"p{subject}" / f"s{row['study_id']}.txt"


# ---- IU-Xray ---------------------------------------------------------------------------------------------------

def test_iu_xray_splits_and_references_without_images(tmp_path, iu_xray_test):
    """Scoring-only use: no images needed; the references are the official JSON's text, all 590 + 296 studies."""
    test = data.load("iu_xray", tmp_path / "none", split="test", track="findings_impression", cache_dir=tmp_path)
    assert len(test) == 590 and test["study_id"] == list(iu_xray_test)
    assert test["reference"] == [iu_xray_test[s]["report"] for s in test["study_id"]]
    assert data.track_info(test)["n_excluded"] == 0
    refs = data.references("iu_xray", tmp_path / "none", split="val", track="findings", cache_dir=tmp_path)
    assert len(refs) == 296 and all(refs.values())


def test_a_copy_removed_by_another_process_between_prepare_and_read_is_built_again(tmp_path, monkeypatch,
                                                                                     iu_xray_test):
    """Two rexrank installs sharing one cache each drop the other's copy as stale (``_drop_stale_copies``): one
    removed it between the other's prepare and read, which failed with datasets' FileNotFoundError (a fresh-clone
    test run beside another checkout's). ``load`` builds the copy again and reads that."""
    import shutil

    from rexrank.data import loading

    real_prepare, removed = loading.prepare, []

    def prepare_then_lose_the_copy(*args, **kwargs):
        builder = real_prepare(*args, **kwargs)
        if not removed:  # the other process, once
            shutil.rmtree(builder.cache_dir)
            removed.append(builder.cache_dir)
        return builder

    monkeypatch.setattr(loading, "prepare", prepare_then_lose_the_copy)
    test = data.load("iu_xray", tmp_path / "none", split="test", track="findings", cache_dir=tmp_path)
    assert removed and len(test) > 0 and set(test["study_id"]) <= set(iu_xray_test)


def test_iu_xray_requiring_images_names_the_missing_files(tmp_path):
    """With require_images, a missing image folder is one error listing the first missing files."""
    with pytest.raises(DatasetNotAvailableError) as err:
        data.load("iu_xray", tmp_path / "imgs", require_images=True, cache_dir=tmp_path)
    assert "CXR3030_IM-1405/0.png" in str(err.value) and "first missing (10 of 1180)" in str(err.value)
    synthetic.write_iu_xray_images(tmp_path / "imgs" / "images")  # R2Gen's images/ sub-folder is found too
    test = data.load("iu_xray", tmp_path / "imgs", require_images=True, cache_dir=tmp_path)
    assert all(os.path.isfile(p) for paths in test["image_paths"] for p in paths)
    assert test[0]["images"][0] == {"bytes": None, "path": test[0]["image_paths"][0]}  # paths, never bytes


# ---- MIMIC-CXR ---------------------------------------------------------------------------------------------------

@pytest.mark.slow  # 1.9 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_mimic_reproduces_the_rexrank_test_set(mimic_tree, tmp_path):
    """All 2,347 manifest studies in manifest order, their images, 723 without impression, all with findings."""
    manifest = read_manifest("mimic_cxr", "test")
    full = data.load("mimic_cxr", mimic_tree, track="findings_impression", cache_dir=tmp_path / "cache")
    assert full["study_id"] == [r["study_id"] for r in manifest]
    assert sum(x is None for x in full["impression"]) == 723
    assert sum(x is None for x in full["findings"]) == 0
    assert sum(r.endswith("Impression: None") for r in full["reference"]) == 723
    first, row = full[0], manifest[0]
    assert first["image_paths"] == [str(mimic_tree / "files" / p.lstrip("/")) for p in row["image_path"]]
    assert first["patient_id"] == str(row["subject_id"]) and first["key_image"].endswith(row["key_image_path"])
    findings = data.load("mimic_cxr", mimic_tree, track="findings", cache_dir=tmp_path / "cache")
    assert len(findings) == 2347 and data.track_info(findings)["n_excluded"] == 0


def test_mimic_missing_report_or_image_is_one_error_with_access_and_layout(mimic_tree, tmp_path):
    """An incomplete copy never yields a shorter dataset: the error says where to get access and what is missing."""
    rows = read_manifest("mimic_cxr", "test")
    _report_path(mimic_tree, rows[10]).unlink()
    (mimic_tree / "files" / rows[20]["image_path"][0].lstrip("/")).unlink()
    with pytest.raises(DatasetNotAvailableError) as err:
        data.load("mimic_cxr", mimic_tree, cache_dir=tmp_path / "cache")
    message = str(err.value)
    assert "physionet.org/content/mimic-cxr" in message and "expected layout" in message
    assert f"s{rows[10]['study_id']}.txt" in message and rows[20]["image_path"][0].lstrip("/") in message
    assert "2 missing" in message


@pytest.mark.slow  # 2.0 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_mimic_without_images_is_allowed_only_when_asked(mimic_tree, tmp_path):
    """Reports suffice for references; images are required by default (generation needs them)."""
    (mimic_tree / "files" / read_manifest("mimic_cxr", "test")[0]["image_path"][0].lstrip("/")).unlink()
    with pytest.raises(DatasetNotAvailableError):
        data.load("mimic_cxr", mimic_tree, cache_dir=tmp_path / "cache")
    refs = data.references("mimic_cxr", mimic_tree, cache_dir=tmp_path / "cache")
    assert len(refs) == 2347


def test_mimic_csv_problems_are_named(mimic_tree, tmp_path):
    """A split CSV missing a column, or an image outside the official test split, is a clear error."""
    split_csv = mimic_tree / "mimic-cxr-2.0.0-split.csv.gz"
    rows = gzip.open(split_csv, "rt").read().splitlines()
    gzip.open(split_csv, "wt").write("\n".join([rows[0]] + [r.replace(",test", ",validate", 1) if i == 0 else r
                                                            for i, r in enumerate(rows[1:])]) + "\n")
    with pytest.raises(DatasetNotAvailableError, match="split 'validate'"):
        data.load("mimic_cxr", mimic_tree, cache_dir=tmp_path / "cache")
    gzip.open(split_csv, "wt").write("\n".join(r.rsplit(",", 1)[0] for r in rows) + "\n")
    with pytest.raises(DatasetNotAvailableError, match="lacks the column.*split"):
        data.load("mimic_cxr", mimic_tree, cache_dir=tmp_path / "cache")


@pytest.mark.slow  # 2.0 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_mimic_empty_findings_section_is_excluded_and_counted(mimic_tree, tmp_path):
    """A report whose FINDINGS section is empty: the findings track excludes it and says so (never silently)."""
    row = read_manifest("mimic_cxr", "test")[5]
    _report_path(mimic_tree, row).write_text(" FINAL REPORT\n FINDINGS: \n \n IMPRESSION:  Stable.\n")
    ds = data.load("mimic_cxr", mimic_tree, track="findings", cache_dir=tmp_path / "cache")
    info = data.track_info(ds)
    assert len(ds) == 2346 and info["n_excluded"] == 1 and info["excluded_study_ids"] == [row["study_id"]]
    assert "1 excluded (no findings)" in ds.info.description
    assert data.track_info(ds.select(range(3)))["n_excluded"] == 1  # survives select


@pytest.mark.slow  # 2.4 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_second_prepare_hits_the_cache_and_an_edited_copy_is_rebuilt(mimic_tree, tmp_path, monkeypatch):
    """Same copy -> the Arrow cache is reused (no record is rebuilt); an edited report -> rebuilt with the new text."""
    from rexrank.data.builders import mimic_cxr

    cache = tmp_path / "cache"
    data.prepare("mimic_cxr", mimic_tree, cache_dir=cache)

    def fail(*args, **kwargs):
        raise AssertionError("records rebuilt although the cache is valid")

    monkeypatch.setattr(mimic_cxr, "build_records", fail)
    assert len(data.load("mimic_cxr", mimic_tree, cache_dir=cache)) == 2347
    monkeypatch.undo()
    row = read_manifest("mimic_cxr", "test")[0]
    path = _report_path(mimic_tree, row)
    path.write_text(path.read_text().replace(" FINDINGS: ", " FINDINGS:  Edited sentence.", 1))
    os.utime(path, ns=(1, 10**18))
    assert data.load("mimic_cxr", mimic_tree, cache_dir=cache)[0]["findings"].startswith("Edited sentence.")


# ---- CheXpert Plus ---------------------------------------------------------------------------------------------------

def test_chexpert_plus_validation_set_and_findings_exclusions(chexpert_tree, tmp_path):
    """200 studies; the findings track keeps 62 and records the 138 without findings."""
    full = data.load("chexpert_plus", chexpert_tree, cache_dir=tmp_path / "cache")
    assert len(full) == 200 and full[0]["split"] == "validation"
    assert sum(x is None for x in full["findings"]) == 138
    assert isinstance(full[0]["age"], int) and full[0]["sex"] in ("Male", "Female")
    assert full[0]["context"] == "Indication: COUGH. Comparison: NONE."
    findings = data.load("chexpert_plus", chexpert_tree, track="findings", cache_dir=tmp_path / "cache")
    info = data.track_info(findings)
    assert len(findings) == 62 and info["n_excluded"] == 138 and len(info["excluded_study_ids"]) == 138
    assert findings["reference"] == findings["gt_findings"]


def test_chexpert_plus_missing_column_or_studies(chexpert_tree, tmp_path):
    """A CSV without section_findings, or without some ReXrank studies, is an error naming the problem."""
    import pandas as pd

    csv = chexpert_tree / "df_chexpert_plus_240401.csv"
    frame = pd.read_csv(csv, index_col=0)
    frame.drop(columns=["section_findings"]).to_csv(csv)
    with pytest.raises(DatasetNotAvailableError, match="lacks the column.*section_findings"):
        data.load("chexpert_plus", chexpert_tree, cache_dir=tmp_path / "c1")
    frame[~frame["path_to_image"].str.contains("patient64620/")].to_csv(csv)
    with pytest.raises(DatasetNotAvailableError, match="1 ReXrank validation studies are not in"):
        data.load("chexpert_plus", chexpert_tree, cache_dir=tmp_path / "c2")


# ---- ReXGradient ---------------------------------------------------------------------------------------------------

def test_rexgradient_private_test_directory(tmp_path):
    """The host's local copy in the ReXGradient-160K layout: site ids, DICOM ages, ../deid_png paths resolved."""
    root = synthetic.write_rexgradient_tree(tmp_path / "rg", n_studies=10)
    ds = data.load("rexgradient", root, cache_dir=tmp_path / "cache", track="findings")
    assert len(ds) == 8 and data.track_info(ds)["n_excluded"] == 2
    assert set(ds["site"]) == {"site0", "site1", "site2"} and all(isinstance(a, int) for a in ds["age"])
    assert all(p.startswith(str(root / "deid_png")) and os.path.isfile(p) for ps in ds["image_paths"] for p in ps)


def test_rexgradient_missing_metadata_says_where_access_is(tmp_path):
    """Without the metadata file: the error names the gated Hub repo, the file and the layout."""
    with pytest.raises(DatasetNotAvailableError) as err:
        data.load("rexgradient", tmp_path / "empty", cache_dir=tmp_path / "cache")
    assert "rajpurkarlab/ReXGradient-160K" in str(err.value)
    assert "metadata/test_metadata_view_position.json" in str(err.value)


def _edit_rexgradient(root: Path, edit) -> Path:
    path = root / "metadata" / "test_metadata_view_position.json"
    entries = json.loads(path.read_text())
    edit(entries)
    path.write_text(json.dumps(entries))
    return path


def test_rexgradient_refuses_studies_without_an_image_or_a_report(tmp_path):
    """A study with no ImagePath, or with neither Findings nor Impression (it would enter Findings + Impression as
    "Findings: None Impression: None"), is refused like every builder's missing part, never dropped silently: one
    line naming the file, the count of each kind and the ids (issue 26, point 6)."""
    root = synthetic.write_rexgradient_tree(tmp_path / "rg", n_studies=10)
    ids = []

    def edit(entries):
        ids.extend(entries)
        entries[ids[1]]["ImagePath"] = []
        entries[ids[2]].pop("ImagePath")
        entries[ids[3]]["Findings"], entries[ids[3]]["Impression"] = None, "  "
        entries[ids[5]]["Findings"] = None  # impression only: a Findings + Impression study, excluded from findings

    path = _edit_rexgradient(root, edit)
    for require_images in (True, False):
        with pytest.raises(DatasetNotAvailableError) as err:
            data.load("rexgradient", root, cache_dir=tmp_path / f"c{require_images}", require_images=require_images)
        message = str(err.value)
        assert "\n" not in message and str(path) in message
        assert f"2 with no image ({ids[1]}, {ids[2]})" in message
        assert f"1 with neither Findings nor Impression ({ids[3]})" in message and ids[5] not in message
    from rexrank.data.verification import verify

    report = verify("rexgradient", root, open_images=False)  # verify names the same studies, by the same rule
    assert not report.ok and {f"{ids[1]}: no image", f"{ids[2]}: no image",
                              f"{ids[3]}: neither Findings nor Impression"} <= set(report.problems)
    assert not any(p.startswith(ids[5]) for p in report.problems)


def test_rexgradient_study_with_impression_only_is_kept(tmp_path):
    root = synthetic.write_rexgradient_tree(tmp_path / "rg", n_studies=10)
    ds = data.load("rexgradient", root, cache_dir=tmp_path / "cache", track="findings_impression")
    assert len(ds) == 10 and sum(f is None for f in ds["findings"]) == 2


def test_rexgradient_metadata_that_is_not_utf8_is_one_line(tmp_path, cli):
    """Latin-1 bytes in the metadata: the file, the byte offset, the study and field holding it, and the fix."""
    root = synthetic.write_rexgradient_tree(tmp_path / "rg", n_studies=10)
    path = root / "metadata" / "test_metadata_view_position.json"
    raw = path.read_bytes()
    study = json.loads(raw)
    target = list(study)[4]
    text = study[target]["Impression"]
    raw = raw.replace(json.dumps(text).encode(), json.dumps(text).encode().replace(b'"', b'"Pl\xe8vre ', 1), 1)
    path.write_bytes(raw)
    offset = raw.index(b"\xe8")
    with pytest.raises(DatasetNotAvailableError) as err:
        data.load("rexgradient", root, cache_dir=tmp_path / "cache")
    message = str(err.value)
    assert "\n" not in message and str(path) in message and f"byte {offset:,}" in message and "0xe8" in message
    assert target in message and "Impression" in message and "UTF-8" in message and "iconv" in message
    code, text = cli("data", "prepare", "rexgradient", "--data-dir", str(root), "--cache-dir", str(tmp_path / "c2"))
    assert code == 2 and "Traceback" not in text and len(text.strip().splitlines()) == 1, text


# ---- names ---------------------------------------------------------------------------------------------------------

def test_unknown_names_list_what_exists(tmp_path):
    """Typos in dataset, split or track names list the valid choices."""
    with pytest.raises(UnknownNameError, match="Unknown dataset 'mimik'. Available: iu_xray, mimic_cxr"):
        data.load("mimik")  # "mimic" itself is an alias of mimic_cxr (tests/test_catalog.py)
    with pytest.raises(UnknownNameError, match="Unknown split 'train' for dataset 'mimic_cxr'. Available: test"):
        data.load("mimic_cxr", tmp_path, split="train")
    with pytest.raises(UnknownNameError, match="Unknown track"):
        data.load("iu_xray", tmp_path, track="impression")


def test_builder_class_is_usable_directly(tmp_path):
    """The GeneratorBasedBuilder works without rexrank.data.load (download_and_prepare + as_dataset)."""
    from rexrank.data.builders.iu_xray import IUXray

    builder = IUXray(data_dir=str(tmp_path / "imgs"), cache_dir=str(tmp_path / "cache"))
    builder.download_and_prepare()
    assert builder.as_dataset(split="validation").num_rows == 296
    assert json.loads(json.dumps(builder.info.features.to_dict()))["images"]  # features serialise


def test_iu_xray_validation_references_equal_the_official_report(tmp_path, shared_dir):
    """The 296 validation studies too: our findings+impression text is the official JSON's `report`."""
    official = json.loads((shared_dir / "data" / "iu_xray" / "ReXRank_IUXray_valid.json").read_text())
    refs = data.references("iu_xray", tmp_path, split="validation", track="findings_impression", cache_dir=tmp_path)
    assert refs == {sid: entry["report"] for sid, entry in official.items()}


@pytest.mark.slow  # 2.5 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_alternative_unpack_layouts_are_found(mimic_tree, chexpert_tree, tmp_path):
    """Reports unzipped apart (reports/files/...) and CheXpert PNGs under PNG/PNG/ are both common layouts."""
    for report in list((mimic_tree / "files").glob("p*/p*/s*.txt")):
        target = mimic_tree / "reports" / report.relative_to(mimic_tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        report.rename(target)
    assert len(data.load("mimic_cxr", mimic_tree, cache_dir=tmp_path / "c1")) == 2347
    (chexpert_tree / "PNG").rename(chexpert_tree / "inner")
    (chexpert_tree / "PNG").mkdir()
    (chexpert_tree / "inner").rename(chexpert_tree / "PNG" / "PNG")
    ds = data.load("chexpert_plus", chexpert_tree, cache_dir=tmp_path / "c2")
    assert ds[0]["image_paths"][0].startswith(str(chexpert_tree / "PNG" / "PNG" / "valid"))
