"""MIMIC-CXR, the 2,347-study ReXrank test set, from a user's PhysioNet download.

Study ids and image lists come from the ReXrank manifest shipped with rexrank; report text comes from the user's
MIMIC-CXR free-text reports (sections extracted by rexrank.data.sections); the MIMIC-CXR-JPG split CSV confirms
every image belongs to the official test split and the metadata CSV that every image is a known DICOM.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rexrank.data.builders.base import RexrankBuilder, log
from rexrank.data.catalog import default_data_dir
from rexrank.data.csvfiles import find_file, read_csv_columns
from rexrank.data.gating import not_available
from rexrank.data.manifests import read_manifest
from rexrank.data.sections import extract_sections
from rexrank.data.study import make_study

NAME = "mimic_cxr"
METADATA_CSV = ("mimic-cxr-2.0.0-metadata.csv.gz", "mimic-cxr-2.0.0-metadata.csv")
SPLIT_CSV = ("mimic-cxr-2.0.0-split.csv.gz", "mimic-cxr-2.0.0-split.csv")
# Column names of the MIMIC-CXR-JPG 2.x CSVs (physionet.org/content/mimic-cxr-jpg).
SPLIT_COLUMNS = ("dicom_id", "study_id", "subject_id", "split")
METADATA_COLUMNS = ("dicom_id", "subject_id", "study_id", "ViewPosition")
# mimic-cxr-reports.zip unpacks to files/pXX/pXXXXXXXX/sXXXXXXXX.txt; people put it beside the JPGs or apart.
REPORT_ROOTS = ("files", "reports/files", "mimic-cxr-reports/files")
SOURCE_SPLIT = "test"


@dataclass(frozen=True)
class MimicCopy:
    root: Path
    metadata_csv: Path
    split_csv: Path
    image_dir: Path

    def report_path(self, subject_id: str, study_id: str) -> Path:
        relative = Path(f"p{subject_id[:2]}") / f"p{subject_id}" / f"s{study_id}.txt"
        for report_root in REPORT_ROOTS:
            candidate = self.root / report_root / relative
            if candidate.is_file():
                return candidate
        return self.root / REPORT_ROOTS[0] / relative

    def image_path(self, manifest_path: str) -> Path:
        return self.image_dir / manifest_path.lstrip("/")


def locate(data_dir: str | Path | None) -> MimicCopy:
    """The local copy's CSVs and folders; DatasetNotAvailableError naming what is missing."""
    root = Path(data_dir) if data_dir is not None else default_data_dir(NAME)
    metadata_csv = find_file(root, METADATA_CSV)
    split_csv = find_file(root, SPLIT_CSV)
    missing = [name[0] for name, found in ((METADATA_CSV, metadata_csv), (SPLIT_CSV, split_csv)) if found is None]
    if not (root / "files").is_dir():
        missing.append("files/")
    if missing:
        raise not_available(NAME, root, missing)
    return MimicCopy(root, metadata_csv, split_csv, root / "files")


def _subject(row: dict) -> str:
    return str(row["subject_id"])


def missing_files(copy: MimicCopy, manifest: list[dict], *, images: bool) -> list[str]:
    missing = []
    for row in manifest:
        report = copy.report_path(_subject(row), row["study_id"])
        if not report.is_file():
            missing.append(str(report.relative_to(copy.root)))
        if images:
            missing += [str(copy.image_path(p).relative_to(copy.root)) for p in row["image_path"]
                        if not copy.image_path(p).is_file()]
    return missing


CHUNK_ROWS = 50_000


def _csv_rows(path: Path, columns, what: str, keep) -> dict:
    """{dicom_id: row} of the CSV rows whose dicom_id is in `keep`, read in chunks to bound memory."""
    found = {}
    for chunk in read_csv_columns(path, columns, what=what, chunksize=CHUNK_ROWS):
        chunk = chunk[chunk["dicom_id"].isin(keep)]
        found.update(zip(chunk["dicom_id"], chunk.to_dict("records"), strict=True))
    return found


def official_test_study_ids(copy: MimicCopy) -> set[str]:
    """Study ids of the official test split (for verify's list of studies ReXrank does not use)."""
    ids: set[str] = set()
    for chunk in read_csv_columns(copy.split_csv, SPLIT_COLUMNS, what="MIMIC-CXR-JPG split CSV", chunksize=CHUNK_ROWS):
        ids.update(chunk.loc[chunk["split"] == SOURCE_SPLIT, "study_id"])
    return ids


def check_csvs(copy: MimicCopy, manifest: list[dict]) -> None:
    """Every manifest image must be a DICOM of the official test split: otherwise this is another version."""
    wanted = {Path(image).stem for row in manifest for image in row["image_path"]}
    split_of = {k: r["split"] for k, r in _csv_rows(copy.split_csv, SPLIT_COLUMNS, "MIMIC-CXR-JPG split CSV",
                                                    wanted).items()}
    known = set(_csv_rows(copy.metadata_csv, METADATA_COLUMNS, "MIMIC-CXR-JPG metadata CSV", wanted))
    wrong = []
    for row in manifest:
        for image in row["image_path"]:
            dicom_id = Path(image).stem
            if dicom_id not in known:
                wrong.append(f"{image}: not in {copy.metadata_csv.name}")
            elif split_of.get(dicom_id) != SOURCE_SPLIT:
                wrong.append(f"{image}: split {split_of.get(dicom_id)!r} in {copy.split_csv.name}, expected 'test'")
    if wrong:
        raise not_available(NAME, copy.root, wrong, problem=(
            f"MIMIC-CXR: {len(wrong)} ReXrank test images do not match the MIMIC-CXR-JPG CSVs in {copy.root} "
            "(a different release, or CSVs from another dataset?)."))


def build_records(data_dir: str | Path | None, split: str = "test", *, require_images: bool = True) -> list[dict]:
    """The ReXrank MIMIC-CXR Study records, in manifest order. Raises for anything missing."""
    copy = locate(data_dir)
    manifest = read_manifest(NAME, split)
    missing = missing_files(copy, manifest, images=require_images)
    if missing:
        raise not_available(NAME, copy.root, missing)
    check_csvs(copy, manifest)
    records, disagreements = [], 0
    for row in manifest:
        text = copy.report_path(_subject(row), row["study_id"]).read_text(encoding="utf-8", errors="replace")
        sections = extract_sections(text)
        disagreements += (sections.findings is not None) != bool(row.get("has_findings"))
        disagreements += (sections.impression is not None) != bool(row.get("has_impression"))
        paths = [str(copy.image_path(p)) for p in row["image_path"]]
        records.append(make_study(
            study_id=row["study_id"], dataset=NAME, split=split, image_paths=paths,
            key_image=str(copy.image_path(row["key_image_path"])) if row.get("key_image_path") else None,
            view_positions=row.get("frontal_lateral") or [], findings=sections.findings,
            impression=sections.impression, context=sections.context, patient_id=_subject(row),
        ))
    if disagreements:
        log.warning("mimic_cxr %s: %d section(s) found/absent differently from the ReXrank manifest "
                    "(`rexrank data verify mimic_cxr` lists them)", split, disagreements)
    return records


class MimicCXR(RexrankBuilder):
    DATASET = NAME

    @classmethod
    def source_files(cls, data_dir):
        if data_dir is None:
            return []
        try:
            copy = locate(data_dir)
        except Exception:
            return []
        files = [copy.metadata_csv, copy.split_csv]
        for split in cls.spec().splits:
            files += [copy.report_path(_subject(r), r["study_id"]) for r in read_manifest(NAME, split)]
        return files

    def studies(self, split: str) -> Iterator[dict]:
        yield from build_records(self.config.data_dir, split, require_images=self.require_images)
