"""Synthetic local copies in each source's real layout: fake report text, tiny images.

For tests, benchmarks and demos without licensed data. Every study of the ReXrank manifests is written (ids,
image paths, which sections exist), so a synthetic copy exercises exactly the code path of a real one.
Images are one tiny file hard-linked to every path (falling back to copies), so a 4,000-image tree costs
milliseconds and a few kilobytes.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import zipfile
from pathlib import Path

from rexrank.data.builders.chexpert_plus import CSV_NAME as CHEXPERT_CSV
from rexrank.data.builders.chexpert_plus import SOURCE_SPLIT as CHEXPERT_SOURCE_SPLIT
from rexrank.data.builders.mimic_cxr import JPG_PROJECT as MIMIC_JPG_PROJECT
from rexrank.data.builders.mimic_cxr import LAYOUTS as MIMIC_LAYOUTS
from rexrank.data.builders.mimic_cxr import REPORTS_PROJECT as MIMIC_REPORTS_PROJECT
from rexrank.data.builders.mimic_cxr import REPORTS_ZIP as MIMIC_REPORTS_ZIP
from rexrank.data.manifests import read_manifest

_SENTENCES = (
    "The lungs are clear.", "No pleural effusion or pneumothorax.", "Heart size is normal.",
    "Mild cardiomegaly is unchanged.", "There is a small left basilar opacity.", "No focal consolidation.",
    "Mediastinal contours are within normal limits.", "Degenerative changes of the thoracic spine.",
    "Endotracheal tube terminates 4 cm above the carina.", "Low lung volumes with bibasilar atelectasis.",
)


def tiny_image_bytes(kind: str = "png") -> bytes:
    """A 4x4 grey image, encoded as PNG or JPEG."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("L", (4, 4), color=128).save(buffer, format="JPEG" if kind in ("jpg", "jpeg") else "PNG")
    return buffer.getvalue()


def _fake_text(rng: random.Random, n: int = 3) -> str:
    return " ".join(rng.sample(_SENTENCES, n))


class _ImageWriter:
    """Writes one real tiny image per format, then hard-links it to every other path."""

    def __init__(self, root: Path):
        self.root = root
        self.originals: dict[str, Path] = {}

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        kind = path.suffix.lstrip(".").lower()
        original = self.originals.get(kind)
        if original is None:
            path.write_bytes(tiny_image_bytes(kind))
            self.originals[kind] = path
            return
        if path.exists():
            return
        try:
            os.link(original, path)
        except OSError:
            path.write_bytes(original.read_bytes())


def write_iu_xray_images(root: str | os.PathLike, splits=("test", "validation")) -> Path:
    """DATA_DIR/<study_id>/0.png, 1.png for the ReXrank IU-Xray studies of `splits`."""
    root = Path(root)
    images = _ImageWriter(root)
    for split in splits:
        for row in read_manifest("iu_xray", split):
            for relative in row["image_path"]:
                images.write(root / relative)
    return root


def mimic_report(rng: random.Random, has_findings: bool, has_impression: bool) -> str:
    """A report in MIMIC-CXR's free-text layout (a title line, then ' HEADER:' sections)."""
    parts = ["                                 FINAL REPORT",
             " EXAMINATION:  CHEST (PA AND LAT)", " ",
             " INDICATION:  ___ year old with cough.", " ",
             " COMPARISON:  ___", " "]
    if has_findings:
        parts += [" FINDINGS: ", " ", " " + _fake_text(rng), " " + _fake_text(rng, 2), " "]
    if has_impression:
        parts += [" IMPRESSION: ", " ", " " + _fake_text(rng, 1), " "]
    return "\n".join(parts) + "\n"


def mimic_cxr_folders(root: str | os.PathLike, layout: str = "flat", *, version: str = "2.1.0",
                      reports_version: str = "2.0.0") -> tuple[Path, Path]:
    """(the MIMIC-CXR-JPG folder, the MIMIC-CXR reports folder) of a tree written with `layout`, one of the
    names of rexrank.data.builders.mimic_cxr.LAYOUTS ("flat", "side by side", "wget -r", ...)."""
    prefixes = {entry.name: entry.prefix for entry in MIMIC_LAYOUTS}
    if layout not in prefixes:
        raise ValueError(f"unknown MIMIC-CXR layout {layout!r}; one of {', '.join(prefixes)}")
    return tuple(Path(root) / prefixes[layout].replace("{project}", project).replace("{version}", v)
                 for project, v in ((MIMIC_JPG_PROJECT, version), (MIMIC_REPORTS_PROJECT, reports_version)))


def write_mimic_cxr_tree(root: str | os.PathLike, *, images: bool = True, seed: int = 0,
                         compress_csv: bool = True, other_rows: int = 3, layout: str = "flat",
                         version: str = "2.1.0", reports_version: str = "2.0.0", reports: str = "files") -> Path:
    """The MIMIC-CXR-JPG + reports layout for the 2,347 ReXrank test studies; returns the data directory.

    layout: "flat" (one folder: CSVs, files/ with the JPGs and the reports), "side by side"
    (mimic-cxr-jpg/<version>/ and mimic-cxr/<reports_version>/), "wget -r" (the same under physionet.org/files/,
    as `wget -r` of PhysioNet leaves them) or another name of the builder's LAYOUTS. reports: "files" (unzipped, files/pXX/.../sNNN.txt) or "zip"
    (mimic-cxr-reports.zip holding files/pXX/..., as PhysioNet ships it). `other_rows` rows of other splits pad
    the CSVs (the real ones have 377,110 images in all: pass 373,252 for real-size CSVs).
    """
    if reports not in ("files", "zip"):
        raise ValueError(f"reports must be 'files' or 'zip', not {reports!r}")
    root = Path(root)
    jpg_dir, reports_dir = mimic_cxr_folders(root, layout, version=version, reports_version=reports_version)
    rng = random.Random(seed)
    writer = _ImageWriter(jpg_dir)
    split_rows = ["dicom_id,study_id,subject_id,split"]
    metadata_rows = ["dicom_id,subject_id,study_id,PerformedProcedureStepDescription,ViewPosition,Rows,Columns,"
                     "StudyDate,StudyTime,ProcedureCodeSequence_CodeMeaning,ViewCodeSequence_CodeMeaning,"
                     "PatientOrientationCodeSequence_CodeMeaning"]
    texts = {}
    for row in read_manifest("mimic_cxr", "test"):
        subject, study = str(row["subject_id"]), row["study_id"]
        texts[f"files/p{subject[:2]}/p{subject}/s{study}.txt"] = mimic_report(rng, row["has_findings"],
                                                                              row["has_impression"])
        for relative, view in zip(row["image_path"], row["frontal_lateral"] or [], strict=False):
            dicom_id = Path(relative).stem
            split_rows.append(f"{dicom_id},{study},{subject},test")
            metadata_rows.append(f"{dicom_id},{subject},{study},CHEST (PA AND LAT),,4,4,21800101,000000.000,"
                                 f"Chest PA and Lateral,{view or ''},Erect")
            if images:
                writer.write(jpg_dir / "files" / relative.lstrip("/"))
    write_mimic_reports(reports_dir, texts, zipped=reports == "zip")
    for i in range(other_rows):  # rows of other splits, as in the real CSVs
        split_rows.append(f"train{i:035d},5{i:07d},1{i:07d},train")
        metadata_rows.append(f"train{i:035d},1{i:07d},5{i:07d},CHEST,PA,4,4,21800101,0,Chest,postero-anterior,Erect")
    jpg_dir.mkdir(parents=True, exist_ok=True)
    _write_csv(jpg_dir / "mimic-cxr-2.0.0-split.csv", split_rows, compress_csv)
    _write_csv(jpg_dir / "mimic-cxr-2.0.0-metadata.csv", metadata_rows, compress_csv)
    return root


def write_mimic_reports(folder: Path, texts: dict[str, str], *, zipped: bool) -> None:
    """{"files/pXX/pSUBJECT/sSTUDY.txt": text} as files under `folder`, or as folder/mimic-cxr-reports.zip."""
    folder.mkdir(parents=True, exist_ok=True)
    if zipped:
        with zipfile.ZipFile(folder / MIMIC_REPORTS_ZIP, "a", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, text in texts.items():
                archive.writestr(name, text)
        return
    for name, text in texts.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _write_csv(path: Path, rows: list[str], compress: bool) -> None:
    text = "\n".join(rows) + "\n"
    if compress:
        with gzip.open(path.with_name(path.name + ".gz"), "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def write_chexpert_plus_tree(root: str | os.PathLike, *, images: bool = True, seed: int = 0,
                             image_folders: tuple[str, ...] = ("PNG",), csv_folder: str = "") -> Path:
    """df_chexpert_plus_240401.csv (one row per image, the real columns) + PNG/<split>/patient/study/view.png.

    image_folders: the folders under root holding <split>/..., studies dealt round-robin among them (several:
    one folder per unpacked chunk); csv_folder: where the CSV goes under root."""
    import pandas as pd

    root = Path(root)
    rng = random.Random(seed)
    writer = _ImageWriter(root)
    rows = []
    for n, row in enumerate(read_manifest("chexpert_plus", "validation")):
        findings = _fake_text(rng).upper() if row["has_findings"] else None  # CheXpert Plus text is all caps
        impression = _fake_text(rng, 1).upper() if row["has_impression"] else None
        for i, relative in enumerate(row["image_path"]):
            rows.append({
                "path_to_image": str(Path(relative).with_suffix(".jpg")), "path_to_dcm": "",
                "frontal_lateral": (row["frontal_lateral"] or [None])[min(i, len(row["frontal_lateral"] or [1]) - 1)],
                "ap_pa": (row.get("ap_pa") or [None])[0], "deid_patient_id": relative.split("/")[1],
                "patient_report_date_order": 1, "report": f"FINDINGS: {findings} IMPRESSION: {impression}",
                "section_narrative": None, "section_clinical_history": "COUGH.", "section_history": None,
                "section_comparison": "NONE.", "section_technique": None, "section_procedure_comments": None,
                "section_findings": findings, "section_impression": impression, "section_end_of_impression": None,
                "section_summary": None, "section_accession_number": None, "age": rng.randint(20, 90),
                "sex": rng.choice(["Male", "Female"]), "race": None, "ethnicity": None, "interpreter_needed": None,
                "insurance_type": None, "recent_bmi": None, "deceased": None, "split": CHEXPERT_SOURCE_SPLIT,
            })
            if images:
                writer.write(root / image_folders[n % len(image_folders)] / relative)
    rows.append(dict(rows[0], path_to_image="train/patient00001/study1/view1_frontal.jpg",
                     deid_patient_id="patient00001", split="train"))
    (root / csv_folder).mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(root / csv_folder / CHEXPERT_CSV)  # the real file starts with an unnamed index column
    return root


def write_rexgradient_tree(root: str | os.PathLike, n_studies: int = 20, *, images: bool = True, seed: int = 0,
                           split: str = "test", metadata_folder: str = "metadata", images_folder: str = "") -> Path:
    """metadata/<split>_metadata_view_position.json + deid_png/<PatientID>/<Accession>/studies/.../*.png
    (`metadata_folder` and `images_folder`, the folder holding deid_png/, are relative to root)."""
    root = Path(root)
    rng = random.Random(seed)
    writer = _ImageWriter(root)
    entries = {}
    for i in range(n_studies):
        patient, accession, study_uid = f"GRDN{i:012d}", f"GRDNA{i:011d}", f"1.2.3.{i}"
        paths = [f"../deid_png/{patient}/{accession}/studies/{study_uid}/series/1.{j}/instances/1.{j}.1.png"
                 for j in range(1 + i % 2)]
        entries[f"p{patient}_a{accession}_s{study_uid}"] = {
            "PatientID": patient, "AccessionNumber": accession, "StudyInstanceUid": study_uid,
            "StudyDate": "20200101", "PatientSex": rng.choice(["M", "F"]), "PatientAge": f"{rng.randint(20, 90):03d}Y",
            "SiteID": f"site{i % 3}", "Indication": "Cough.", "Comparison": "None.",
            "Findings": _fake_text(rng) if i % 5 else None, "Impression": _fake_text(rng, 1),
            "ImagePath": paths, "ImageViewPosition": ["PA", "LATERAL"][: len(paths)],
        }
        if images:
            for p in paths:
                writer.write(root / images_folder / p.replace("../", "", 1))
    (root / metadata_folder).mkdir(parents=True, exist_ok=True)
    (root / metadata_folder / f"{split}_metadata_view_position.json").write_text(json.dumps(entries, indent=1))
    return root
