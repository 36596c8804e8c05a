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
from pathlib import Path

from rexrank.data.builders.chexpert_plus import CSV_NAME as CHEXPERT_CSV
from rexrank.data.builders.chexpert_plus import SOURCE_SPLIT as CHEXPERT_SOURCE_SPLIT
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


def write_mimic_cxr_tree(root: str | os.PathLike, *, images: bool = True, seed: int = 0,
                         compress_csv: bool = True, other_rows: int = 3) -> Path:
    """The MIMIC-CXR-JPG + reports layout for the 2,347 ReXrank test studies.

    `other_rows` rows of other splits pad the CSVs (the real ones have 377,110 images in all: pass 373,252 for
    real-size CSVs).
    """
    root = Path(root)
    rng = random.Random(seed)
    writer = _ImageWriter(root)
    split_rows = ["dicom_id,study_id,subject_id,split"]
    metadata_rows = ["dicom_id,subject_id,study_id,PerformedProcedureStepDescription,ViewPosition,Rows,Columns,"
                     "StudyDate,StudyTime,ProcedureCodeSequence_CodeMeaning,ViewCodeSequence_CodeMeaning,"
                     "PatientOrientationCodeSequence_CodeMeaning"]
    for row in read_manifest("mimic_cxr", "test"):
        subject, study = str(row["subject_id"]), row["study_id"]
        report = root / "files" / f"p{subject[:2]}" / f"p{subject}" / f"s{study}.txt"
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(mimic_report(rng, row["has_findings"], row["has_impression"]), encoding="utf-8")
        for relative, view in zip(row["image_path"], row["frontal_lateral"] or [], strict=False):
            dicom_id = Path(relative).stem
            split_rows.append(f"{dicom_id},{study},{subject},test")
            metadata_rows.append(f"{dicom_id},{subject},{study},CHEST (PA AND LAT),,4,4,21800101,000000.000,"
                                 f"Chest PA and Lateral,{view or ''},Erect")
            if images:
                writer.write(root / "files" / relative.lstrip("/"))
    for i in range(other_rows):  # rows of other splits, as in the real CSVs
        split_rows.append(f"train{i:035d},5{i:07d},1{i:07d},train")
        metadata_rows.append(f"train{i:035d},1{i:07d},5{i:07d},CHEST,PA,4,4,21800101,0,Chest,postero-anterior,Erect")
    _write_csv(root / "mimic-cxr-2.0.0-split.csv", split_rows, compress_csv)
    _write_csv(root / "mimic-cxr-2.0.0-metadata.csv", metadata_rows, compress_csv)
    return root


def _write_csv(path: Path, rows: list[str], compress: bool) -> None:
    text = "\n".join(rows) + "\n"
    if compress:
        with gzip.open(path.with_name(path.name + ".gz"), "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def write_chexpert_plus_tree(root: str | os.PathLike, *, images: bool = True, seed: int = 0) -> Path:
    """df_chexpert_plus_240401.csv (one row per image, the real columns) + PNG/<split>/patient/study/view.png."""
    import pandas as pd

    root = Path(root)
    rng = random.Random(seed)
    writer = _ImageWriter(root)
    rows = []
    for row in read_manifest("chexpert_plus", "validation"):
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
                writer.write(root / "PNG" / relative)
    rows.append(dict(rows[0], path_to_image="train/patient00001/study1/view1_frontal.jpg",
                     deid_patient_id="patient00001", split="train"))
    pd.DataFrame(rows).to_csv(root / CHEXPERT_CSV)  # the real file starts with an unnamed index column
    return root


def write_rexgradient_tree(root: str | os.PathLike, n_studies: int = 20, *, images: bool = True, seed: int = 0,
                           split: str = "test") -> Path:
    """metadata/<split>_metadata_view_position.json + deid_png/<PatientID>/<Accession>/studies/.../*.png."""
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
                writer.write(root / p.replace("../", "", 1))
    (root / "metadata").mkdir(parents=True, exist_ok=True)
    (root / "metadata" / f"{split}_metadata_view_position.json").write_text(json.dumps(entries, indent=1))
    return root
