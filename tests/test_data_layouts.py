"""Local copies as their downloads unpack them (issue 16): each source's layouts, found under the data directory or
named explicitly, give exactly the manifest's studies with the same text as the flat layout, despite decoys
(studies outside the manifest, a second release folder, an unrelated files/ folder); a copy that is not found
gets one error listing every layout looked in."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from rexrank import data
from rexrank.data import synthetic
from rexrank.data.builders import chexpert_plus, mimic_cxr, rexgradient
from rexrank.data.manifests import read_manifest
from rexrank.errors import DatasetNotAvailableError

MIMIC_IDS = [row["study_id"] for row in read_manifest("mimic_cxr", "test")]
DECOY_STUDY = "99999999"  # a study outside the manifest, written beside the real ones


def _comparable(records: list[dict], image_root: Path) -> list[tuple]:
    """What must not depend on the layout: ids, text, and image paths relative to the image folder."""
    return [(r["study_id"], r["findings"], r["impression"], r["context"],
             [str(Path(p).relative_to(image_root)) for p in r["image_paths"]]) for r in records]


@pytest.fixture(scope="module")
def flat_mimic(tmp_path_factory) -> tuple[Path, list[tuple]]:
    root = synthetic.write_mimic_cxr_tree(tmp_path_factory.mktemp("flat") / "mimic")
    return root, _comparable(mimic_cxr.build_records(root), root / "files")


def _add_mimic_decoys(root: Path, jpg_dir: Path, reports_dir: Path) -> None:
    """A study outside the manifest in both projects, an incomplete older release of each, and an unrelated files/
    tree at the top of the data directory."""
    decoy = f"files/p10/p10000001/s{DECOY_STUDY}"
    synthetic.write_mimic_reports(reports_dir, {f"{decoy}.txt": " FINDINGS: Decoy text.\n"},
                                  zipped=(reports_dir / mimic_cxr.REPORTS_ZIP).is_file())
    (jpg_dir / decoy).mkdir(parents=True, exist_ok=True)
    (jpg_dir / decoy / "decoy.jpg").write_bytes(synthetic.tiny_image_bytes("jpg"))
    # A newer release folder holding the CSVs but no images, and one holding a single report that reads otherwise:
    # newest first would pick them, the sampled manifest files do not.
    if jpg_dir.name == "2.1.0":
        newer = jpg_dir.parent / "2.2.0"
        newer.mkdir(parents=True, exist_ok=True)
        for csv in jpg_dir.glob("mimic-cxr-2.0.0-*.csv.gz"):
            shutil.copy(csv, newer / csv.name)
    if reports_dir.name == "2.0.0":
        row = read_manifest("mimic_cxr", "test")[0]
        subject = str(row["subject_id"])
        synthetic.write_mimic_reports(reports_dir.parent / "2.1.0", {
            f"files/p{subject[:2]}/p{subject}/s{row['study_id']}.txt": " FINDINGS: From the wrong release.\n"},
            zipped=False)
    unrelated = root / "files" / "p11" / "p11111111"
    unrelated.mkdir(parents=True, exist_ok=True)
    (unrelated / "s11111111.txt").write_text(" FINDINGS: Unrelated.\n")


@pytest.mark.parametrize("layout, reports", [("side by side", "files"), ("wget -r", "zip"), ("wget -r", "files"),
                                             ("flat", "zip")])
def test_mimic_physionet_layouts_give_the_flat_layouts_studies(flat_mimic, tmp_path, layout, reports):
    """Images and reports found apart, in release folders, unzipped or read from the zip: the same 2,347 studies,
    text and images as the flat layout, never a decoy."""
    flat_root, expected = flat_mimic
    root = synthetic.write_mimic_cxr_tree(tmp_path / "dl", layout=layout, reports=reports)
    jpg_dir, reports_dir = synthetic.mimic_cxr_folders(root, layout)
    _add_mimic_decoys(root, jpg_dir, reports_dir)
    copy = mimic_cxr.locate(root)
    assert copy.image_root == jpg_dir  # the complete 2.1.0, not the CSV-only 2.2.0 beside it
    assert isinstance(copy.reports, mimic_cxr.ReportZip if reports == "zip" else mimic_cxr.ReportFolder)
    copy.reports.close()
    records = mimic_cxr.build_records(root)
    assert [r["study_id"] for r in records] == MIMIC_IDS
    assert _comparable(records, jpg_dir / "files") == expected
    if reports == "zip":  # read in place: no report was unpacked
        assert not any((reports_dir / "files" / mimic_cxr.report_relative(str(r["subject_id"]), r["study_id"])).exists()
                       for r in read_manifest("mimic_cxr", "test"))


@pytest.mark.slow  # 2.2 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_mimic_wget_tree_through_data_load_equals_the_flat_copy(flat_mimic, tmp_path):
    """`rexrank.data.load` on the `wget -r` tree of both projects (reports as the zip) gives the flat copy's rows."""
    flat_root, _ = flat_mimic
    root = synthetic.write_mimic_cxr_tree(tmp_path / "dl", layout="wget -r", reports="zip", version="2.0.0")
    jpg_dir, _ = synthetic.mimic_cxr_folders(root, "wget -r", version="2.0.0")
    flat = data.load("mimic_cxr", flat_root, track="findings_impression", cache_dir=tmp_path / "c1")
    found = data.load("mimic_cxr", root, track="findings_impression", cache_dir=tmp_path / "c2")
    assert found["study_id"] == flat["study_id"] and found["reference"] == flat["reference"]
    assert found[0]["image_paths"][0].startswith(str(jpg_dir / "files"))


@pytest.mark.slow  # 1.8 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_mimic_explicit_roots_win_over_the_search(flat_mimic, tmp_path):
    """--image-root / --reports-root name the parts wherever they are, even when the data directory holds another
    copy; a root that holds nothing usable is named in the error."""
    flat_root, expected = flat_mimic
    other = synthetic.write_mimic_cxr_tree(tmp_path / "other", layout="side by side", reports="zip", seed=1)
    jpg_dir, reports_dir = synthetic.mimic_cxr_folders(other, "side by side")
    zip_path = reports_dir / mimic_cxr.REPORTS_ZIP
    records = mimic_cxr.build_records(flat_root, image_root=jpg_dir, reports_root=zip_path)
    seed1 = _comparable(records, jpg_dir / "files")
    assert [r[0] for r in seed1] == MIMIC_IDS and [r[1:3] for r in seed1] != [r[1:3] for r in expected]
    assert [r[4] for r in seed1] == [r[4] for r in expected]  # same images, other text: the named zip's
    assert _comparable(mimic_cxr.build_records(None, image_root=flat_root, reports_root=flat_root),
                       flat_root / "files") == expected
    with pytest.raises(DatasetNotAvailableError) as err:
        mimic_cxr.build_records(flat_root, reports_root=tmp_path / "nowhere")
    assert "--reports-root: " in str(err.value) and "nowhere - absent" in str(err.value)


def test_mimic_missing_copy_lists_every_layout(tmp_path):
    """The error names each layout with the folder probed, for the images and for the reports, and the options."""
    (tmp_path / "dl" / "physionet.org" / "files" / "mimic-cxr-jpg" / "2.1.0").mkdir(parents=True)
    with pytest.raises(DatasetNotAvailableError) as err:
        data.load("mimic_cxr", tmp_path / "dl", cache_dir=tmp_path / "cache")
    message = str(err.value)
    for entry in mimic_cxr.LAYOUTS:
        assert message.count(f"    {entry.name}: ") == 2, entry.name
    assert "wget -r: physionet.org/files/mimic-cxr-jpg/2.1.0 - lacks mimic-cxr-2.0.0-metadata.csv.gz" in message
    assert "side by side: mimic-cxr/<version> - no release folder (2.1.0, 2.0.0)" in message
    assert "--image-root" in message and "--reports-root" in message and "request access" in message
    with pytest.raises(DatasetNotAvailableError, match=r"the data directory .*nothing does not exist"):
        mimic_cxr.locate(tmp_path / "nothing")


# ---- CheXpert Plus -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("image_folders, csv_folder", [
    (("PNG/PNG",), ""),  # one merged tree, unpacked inside PNG/
    (("PNG/chunk_0", "PNG/chunk_1", "PNG/chunk_2"), "chexpertplus"),  # one folder per chunk; the CSV a folder down
    (("chunk_0/PNG", "chunk_1/PNG"), ""),
])
def test_chexpert_plus_layouts(tmp_path, image_folders, csv_folder):
    """Merged tree or chunk folders, the CSV in DATA_DIR or one folder down: the 200 manifest studies, every image
    found, never the decoy valid/ folder or the CSV's rows outside the manifest."""
    import pandas as pd

    root = synthetic.write_chexpert_plus_tree(tmp_path / "c", image_folders=image_folders, csv_folder=csv_folder)
    csv = root / csv_folder / chexpert_plus.CSV_NAME
    frame = pd.read_csv(csv, index_col=0)
    decoy = dict(frame.iloc[0], path_to_image=f"{chexpert_plus.SOURCE_SPLIT}/patient99999/study1/view1_frontal.jpg")
    pd.concat([frame, pd.DataFrame([decoy])]).to_csv(csv)
    stray = root / "PNGs" / chexpert_plus.SOURCE_SPLIT / "patient99999" / "study1"
    stray.mkdir(parents=True)
    (stray / "view1_frontal.png").write_bytes(synthetic.tiny_image_bytes())
    records = chexpert_plus.build_records(root)
    assert [r["study_id"] for r in records] == [r["study_id"] for r in read_manifest("chexpert_plus", "validation")]
    paths = [Path(p) for r in records for p in r["image_paths"]]
    assert all(p.is_file() for p in paths)
    assert {next(f for f in image_folders if str(p).startswith(str(root / f))) for p in paths} == set(image_folders)


def test_chexpert_plus_explicit_roots_and_missing_csv(tmp_path):
    """--reports-root (the CSV) and --image-root (the folder holding valid/) work from anywhere; without a CSV the
    error lists where it looked."""
    root = synthetic.write_chexpert_plus_tree(tmp_path / "c", image_folders=("images",), csv_folder="text")
    records = chexpert_plus.build_records(tmp_path, image_root=root / "images",
                                          reports_root=root / "text" / chexpert_plus.CSV_NAME)
    assert len(records) == 200 and records[0]["image_paths"][0].startswith(str(root / "images"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetNotAvailableError) as err:
        chexpert_plus.build_records(tmp_path / "empty")
    assert "flat: DATA_DIR - no df_chexpert_plus*.csv" in str(err.value)
    assert "one folder down" in str(err.value) and "--reports-root" in str(err.value)


# ---- ReXGradient ---------------------------------------------------------------------------------------------------

def test_rexgradient_hub_cache_snapshot_and_images_unpacked_in_data_dir(tmp_path):
    """The metadata in a Hugging Face cache snapshot, deid_png/ unpacked in DATA_DIR: every study, every image."""
    snapshot = f"{rexgradient.cache_folder()}/snapshots/0123abcd"
    synthetic.write_rexgradient_tree(tmp_path / "hf", n_studies=6, metadata_folder=f"{snapshot}/metadata",
                                     images=False)
    synthetic.write_rexgradient_tree(tmp_path / "hf", n_studies=6)  # deid_png/ at the top (and a metadata/ copy)
    shutil.rmtree(tmp_path / "hf" / "metadata")
    records = rexgradient.build_records(tmp_path / "hf")
    assert len(records) == 6 and all(Path(p).is_file() and p.startswith(str(tmp_path / "hf" / "deid_png"))
                                     for r in records for p in r["image_paths"])


def test_rexgradient_explicit_roots_and_missing_metadata(tmp_path):
    root = synthetic.write_rexgradient_tree(tmp_path / "rg", n_studies=4, metadata_folder="meta",
                                            images_folder="pixels")
    metadata = root / "meta" / rexgradient.metadata_name()
    records = rexgradient.build_records(tmp_path, reports_root=metadata, image_root=root / "pixels" / "deid_png")
    assert len(records) == 4 and all(Path(p).is_file() for r in records for p in r["image_paths"])
    assert json.loads(metadata.read_text()).keys() == {r["study_id"] for r in records}
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetNotAvailableError) as err:
        rexgradient.build_records(tmp_path / "empty")
    for layout in ("hf download --local-dir: metadata - absent", "a clone of the repo", rexgradient.CACHE_LAYOUT):
        assert layout in str(err.value)


# ---- the CLI -------------------------------------------------------------------------------------------------------

@pytest.mark.slow  # 1.6 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_cli_prepare_and_verify_take_the_explicit_roots(flat_mimic, tmp_path, cli):
    """`rexrank data verify/prepare --image-root --reports-root`; a root that does not apply is exit 2, one line."""
    root = synthetic.write_mimic_cxr_tree(tmp_path / "dl", layout="wget -r", reports="zip")
    jpg_dir, reports_dir = synthetic.mimic_cxr_folders(root, "wget -r")
    code, out = cli("data", "verify", "mimic_cxr", "--data-dir", str(tmp_path / "elsewhere"), "--image-root",
                    str(jpg_dir), "--reports-root", str(reports_dir / mimic_cxr.REPORTS_ZIP), "--no-open-images")
    assert code == 0 and "2347 found of 2347" in out, out
    code, out = cli("data", "prepare", "mimic_cxr", "--data-dir", str(root), "--cache-dir", str(tmp_path / "cache"))
    assert code == 0 and "mimic_cxr test: 2347 studies" in out, out
    code, out = cli("data", "prepare", "iu_xray", "--reports-root", str(tmp_path), "--cache-dir",
                    str(tmp_path / "cache"))
    assert code == 2 and "--reports-root/reports_root does not apply" in out
    assert zipfile.is_zipfile(reports_dir / mimic_cxr.REPORTS_ZIP)
