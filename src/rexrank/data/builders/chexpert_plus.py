"""CheXpert Plus, the 200-study ReXrank validation set, from a user's Stanford AIMI download.

The report CSV (df_chexpert_plus_240401.csv) has one row per image; its columns, as released:
path_to_image, path_to_dcm, frontal_lateral, ap_pa, deid_patient_id, patient_report_date_order, report,
section_narrative, section_clinical_history, section_history, section_comparison, section_technique,
section_procedure_comments, section_findings, section_impression, section_end_of_impression, section_summary,
section_accession_number, age, sex, race, ethnicity, interpreter_needed, insurance_type, recent_bmi, deceased,
split (train/valid). path_to_image names .jpg files; the PNG release keeps the same tree with .png.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rexrank.data.builders.base import RexrankBuilder, log
from rexrank.data.catalog import default_data_dir, get_dataset_spec, leaderboard_split
from rexrank.data.csvfiles import read_csv_columns
from rexrank.data.gating import not_available
from rexrank.data.manifests import read_manifest
from rexrank.data.study import clean_section, make_study

NAME = "chexpert_plus"
CSV_NAME = "df_chexpert_plus_240401.csv"
REQUIRED_COLUMNS = ("path_to_image", "section_findings", "section_impression", "split")
OPTIONAL_COLUMNS = ("frontal_lateral", "ap_pa", "deid_patient_id", "section_clinical_history", "section_history",
                    "section_comparison", "age", "sex")
# What the CheXpert Plus CSV (and its image folders) call the split ReXrank scores: declared by the catalog.
SOURCE_SPLIT = get_dataset_spec(NAME).split(leaderboard_split(NAME)).source_split
# Where people unpack the PNG archive; the first that holds the split folder wins.
IMAGE_ROOTS = ("PNG/PNG", "PNG", "PNGs", "png", ".")


def study_id_of(path_to_image: str) -> str:
    """'valid/patient64620/study1/view1_frontal.jpg' -> 'patient64620_study1' (the ReXrank study id)."""
    parts = Path(path_to_image).parts
    if len(parts) < 4:
        raise ValueError(f"unexpected CheXpert path {path_to_image!r}")
    return f"{parts[-3]}_{parts[-2]}"


@dataclass(frozen=True)
class CheXpertCopy:
    root: Path
    csv: Path
    image_dir: Path


def locate(data_dir: str | Path | None, split_folder: str = SOURCE_SPLIT) -> CheXpertCopy:
    root = Path(data_dir) if data_dir is not None else default_data_dir(NAME)
    csv = root / CSV_NAME
    if not csv.is_file():
        others = sorted(root.glob("df_chexpert_plus*.csv")) if root.is_dir() else []
        if not others:
            raise not_available(NAME, root, [CSV_NAME])
        csv = others[-1]
    image_dir = next((root / r for r in IMAGE_ROOTS if (root / r / split_folder).is_dir()), root / "PNG")
    return CheXpertCopy(root, csv, image_dir)


def _context(row: dict) -> str | None:
    indication = clean_section(row.get("section_clinical_history")) or clean_section(row.get("section_history"))
    comparison = clean_section(row.get("section_comparison"))
    text = " ".join(p for p in (f"Indication: {indication}" if indication else None,
                                f"Comparison: {comparison}" if comparison else None) if p)
    return text or None


def read_reports(copy: CheXpertCopy) -> dict[str, dict]:
    """{study_id: first CSV row of that study} for the validation split."""
    frame = read_csv_columns(copy.csv, REQUIRED_COLUMNS, OPTIONAL_COLUMNS, what="CheXpert Plus report CSV")
    frame = frame[frame["split"] == SOURCE_SPLIT]
    by_study: dict[str, dict] = {}
    for row in frame.to_dict("records"):
        try:
            by_study.setdefault(study_id_of(row["path_to_image"]), row)
        except ValueError:
            continue
    return by_study


def build_records(data_dir: str | Path | None, split: str = "validation", *, require_images: bool = True) -> list[dict]:
    copy = locate(data_dir)
    manifest = read_manifest(NAME, split)
    missing = []
    if require_images:
        missing += [str((copy.image_dir / p).relative_to(copy.root)) for r in manifest for p in r["image_path"]
                    if not (copy.image_dir / p).is_file()]
    reports = read_reports(copy)
    absent = [r["study_id"] for r in manifest if r["study_id"] not in reports]
    if absent:
        raise not_available(NAME, copy.root, [f"{copy.csv.name}: no '{SOURCE_SPLIT}' row for study {s}" for s in absent]
                            + missing, problem=f"CheXpert Plus: {len(absent)} ReXrank validation studies are not in "
                            f"{copy.csv} (split '{SOURCE_SPLIT}').")
    if missing:
        raise not_available(NAME, copy.root, missing)
    records, disagreements = [], 0
    for entry in manifest:
        row = reports[entry["study_id"]]
        findings, impression = clean_section(row["section_findings"]), clean_section(row["section_impression"])
        disagreements += (findings is not None) != bool(entry.get("has_findings"))
        disagreements += (impression is not None) != bool(entry.get("has_impression"))
        records.append(make_study(
            study_id=entry["study_id"], dataset=NAME, split=split,
            image_paths=[str(copy.image_dir / p) for p in entry["image_path"]],
            key_image=str(copy.image_dir / entry["key_image_path"]) if entry.get("key_image_path") else None,
            view_positions=entry.get("frontal_lateral") or [], findings=findings, impression=impression,
            context=_context(row), patient_id=row.get("deid_patient_id"), age=row.get("age"), sex=row.get("sex"),
        ))
    if disagreements:
        log.warning("chexpert_plus %s: %d section(s) found/absent differently from the ReXrank manifest", split,
                    disagreements)
    return records


class CheXpertPlus(RexrankBuilder):
    DATASET = NAME

    @classmethod
    def source_files(cls, data_dir):
        if data_dir is None:
            return []
        try:
            return [locate(data_dir).csv]
        except Exception:
            return []

    def studies(self, split: str) -> Iterator[dict]:
        yield from build_records(self.config.data_dir, split, require_images=self.require_images)
