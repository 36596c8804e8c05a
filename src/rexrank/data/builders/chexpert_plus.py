"""CheXpert Plus, the 200-study ReXrank validation set, from a user's Stanford AIMI download.

The report CSV (df_chexpert_plus_240401.csv) has one row per image; its columns, as released:
path_to_image, path_to_dcm, frontal_lateral, ap_pa, deid_patient_id, patient_report_date_order, report,
section_narrative, section_clinical_history, section_history, section_comparison, section_technique,
section_procedure_comments, section_findings, section_impression, section_end_of_impression, section_summary,
section_accession_number, age, sex, race, ethnicity, interpreter_needed, insurance_type, recent_bmi, deceased,
split (train/valid). path_to_image names .jpg files; the PNG release keeps the same tree with .png.

Where the files are (`locate`): the Stanford AIMI download (a blob container copied with azcopy or Azure Storage
Explorer) holds the CSV and the PNG images in chunk archives. How the chunks unpack could not be confirmed from
public sources, so both candidate layouts are accepted: one merged tree (PNG/valid/..., or PNG/PNG/valid/...,
PNGs/, png/ as people unpack it; the tfds CheXpert Plus builder, for one, reads PNG/PNG/) and one folder per
chunk (<chunk>/valid/... or <chunk>/PNG/valid/..., directly in DATA_DIR or in PNG/), each image looked up in
every folder found. The CSV may sit in DATA_DIR or one folder down (the container's own folder).
`image_root=` names the folder holding valid/, `reports_root=` the CSV or its folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rexrank.data import layouts
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
CSV_GLOB = "df_chexpert_plus*.csv"
# Where people unpack the PNG archive (a merged tree); the folder holding most sampled images wins, ties in order.
IMAGE_ROOTS = ("PNG/PNG", "PNG", "PNGs", "png", ".")
# Inside one unpacked chunk folder.
CHUNK_IMAGE_ROOTS = ("PNG", ".")
EXPLICIT = f"--image-root DIR (holds {SOURCE_SPLIT}/) --reports-root CSV|DIR (image_root=, reports_root=)"


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
    image_dir: Path  # the folder holding most of the split's images
    image_dirs: tuple[Path, ...] = ()  # every folder holding a split folder (chunks), image_dir first

    def image_path(self, relative: str) -> Path:
        """The image in the first folder that holds it (chunks may split a study set), else under image_dir."""
        for folder in self.image_dirs:
            if (folder / relative).is_file():
                return folder / relative
        return self.image_dir / relative


def _find_csv(root: Path, reports_root) -> tuple[Path | None, layouts.Search]:
    search = layouts.Search(f"the report CSV ({CSV_NAME})", root)
    if reports_root is not None:
        given = Path(reports_root)
        if given.is_file():
            return given, search
        folders = [layouts.Candidate("--reports-root", given)]
    else:
        folders = [layouts.Candidate("flat", root)] + [layouts.Candidate("one folder down", f)
                                                        for f in layouts.child_folders(root)]
    for candidate in folders:
        if (candidate.folder / CSV_NAME).is_file():
            return candidate.folder / CSV_NAME, search
    for candidate in folders:  # another release of the CSV (df_chexpert_plus_<date>.csv): the newest name
        others = sorted(candidate.folder.glob(CSV_GLOB)) if candidate.folder.is_dir() else []
        if others:
            return others[-1], search
    if reports_root is not None:
        search.refuse("--reports-root", Path(reports_root), "absent" if not Path(reports_root).exists()
                      else f"no {CSV_GLOB}")
    else:
        search.refuse("flat", root, "absent" if not root.is_dir() else f"no {CSV_GLOB}")
        search.refuse("one folder down", root / "*", f"no {CSV_GLOB} in {len(folders) - 1} folder(s)")
    return None, search


def _image_candidates(bases: list[Path], split_folder: str) -> list[layouts.Candidate]:
    """Folders that hold `split_folder`: the merged-tree names under each base, then chunk folders."""
    found = []
    for base in bases:
        found += [layouts.Candidate(f"merged tree {r}/", base / r) for r in IMAGE_ROOTS]
        for container in [base] + [base / r for r in IMAGE_ROOTS if r != "."]:
            for chunk in layouts.child_folders(container):
                found += [layouts.Candidate("chunk folders", chunk / r) for r in CHUNK_IMAGE_ROOTS]
    return [c for c in layouts.unique(found) if (c.folder / split_folder).is_dir()]


def locate(data_dir: str | Path | None, split_folder: str = SOURCE_SPLIT, *, image_root: str | Path | None = None,
           reports_root: str | Path | None = None, require_images: bool = False) -> CheXpertCopy:
    """The report CSV and the image folders; DatasetNotAvailableError listing what was looked for."""
    root = Path(data_dir) if data_dir is not None else default_data_dir(NAME)
    csv, csv_search = _find_csv(root, reports_root)
    bases = [Path(image_root)] if image_root is not None else layouts.unique([root] + ([csv.parent] if csv else []))
    candidates = _image_candidates(bases, split_folder)
    rows = layouts.sample(read_manifest(NAME, leaderboard_split(NAME)))
    sampled = [p for r in rows for p in r["image_path"][:1]]
    ranked = sorted(candidates, key=lambda c: -layouts.count_files(c.folder / p for p in sampled))
    image_search = layouts.Search(f"the PNG images ({split_folder}/patientN/studyN/viewN_*.png)", root)
    if require_images and not ranked:
        for base in bases:
            image_search.refuse("--image-root" if image_root is not None else "merged tree or chunk folders", base,
                                f"no {split_folder}/ in it, in {', '.join(r for r in IMAGE_ROOTS if r != '.')}, "
                                "or in a chunk folder")
    failed = [s for s in (csv_search, image_search) if s.refused]
    if failed:
        raise layouts.not_found(NAME, root, failed, explicit_hint=EXPLICIT)
    image_dir = ranked[0].folder if ranked else bases[0] / "PNG"
    return CheXpertCopy(root, csv, image_dir, tuple(c.folder for c in ranked))


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


def build_records(data_dir: str | Path | None, split: str = "validation", *, require_images: bool = True,
                  image_root: str | Path | None = None, reports_root: str | Path | None = None) -> list[dict]:
    copy = locate(data_dir, image_root=image_root, reports_root=reports_root, require_images=require_images)
    manifest = read_manifest(NAME, split)
    missing = []
    if require_images:
        missing += [layouts.shown(copy.image_path(p), copy.root) for r in manifest for p in r["image_path"]
                    if not copy.image_path(p).is_file()]
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
            image_paths=[str(copy.image_path(p)) for p in entry["image_path"]],
            key_image=str(copy.image_path(entry["key_image_path"])) if entry.get("key_image_path") else None,
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
    def source_files(cls, data_dir, **roots):
        if data_dir is None:
            return []
        try:
            return [locate(data_dir, **roots).csv]
        except Exception:
            return []

    def studies(self, split: str) -> Iterator[dict]:
        yield from build_records(self.config.data_dir, split, require_images=self.require_images, **self.roots)
