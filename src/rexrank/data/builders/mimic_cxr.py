"""MIMIC-CXR, the 2,347-study ReXrank test set, from a user's PhysioNet download.

Study ids and image lists come from the ReXrank manifest shipped with rexrank; report text comes from the user's
MIMIC-CXR free-text reports (sections extracted by rexrank.data.sections); the MIMIC-CXR-JPG split CSV confirms
every image belongs to the official test split and the metadata CSV that every image is a known DICOM.

Where the files are (`locate`): PhysioNet serves each project at https://physionet.org/files/<project>/<version>/
and `wget -r` keeps that path, so a download of both projects gives
`physionet.org/files/mimic-cxr-jpg/2.1.0/{files/, mimic-cxr-2.0.0-metadata.csv.gz, mimic-cxr-2.0.0-split.csv.gz}`
(2.1.0 still names its CSVs 2.0.0) and `physionet.org/files/mimic-cxr/2.0.0/{mimic-cxr-reports.zip, files/}`.
The two parts are found separately under the data directory in any of LAYOUTS, in any release folder, the reports
unzipped or read straight from the zip; `image_root=` / `reports_root=` name either part explicitly.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rexrank.data import layouts
from rexrank.data.builders.base import RexrankBuilder, log
from rexrank.data.catalog import default_data_dir
from rexrank.data.csvfiles import find_file, read_csv_columns
from rexrank.data.gating import not_available
from rexrank.data.layouts import Layout
from rexrank.data.manifests import read_manifest
from rexrank.data.sections import extract_sections
from rexrank.data.study import make_study
from rexrank.errors import DatasetNotAvailableError

NAME = "mimic_cxr"
METADATA_CSV = ("mimic-cxr-2.0.0-metadata.csv.gz", "mimic-cxr-2.0.0-metadata.csv")
SPLIT_CSV = ("mimic-cxr-2.0.0-split.csv.gz", "mimic-cxr-2.0.0-split.csv")
# Column names of the MIMIC-CXR-JPG 2.x CSVs (physionet.org/content/mimic-cxr-jpg).
SPLIT_COLUMNS = ("dicom_id", "study_id", "subject_id", "split")
METADATA_COLUMNS = ("dicom_id", "subject_id", "study_id", "ViewPosition")
# PhysioNet project slugs (the <project> of physionet.org/files/<project>/<version>/).
JPG_PROJECT = "mimic-cxr-jpg"
REPORTS_PROJECT = "mimic-cxr"
# Releases rexrank reads alike (the ReXrank manifest's images and reports are the same in both); a newer
# version-named folder is probed too, newest first.
VERSIONS = ("2.1.0", "2.0.0")
REPORTS_ZIP = "mimic-cxr-reports.zip"
# mimic-cxr-reports.zip unpacks to files/pXX/pXXXXXXXX/sXXXXXXXX.txt; people put it beside the JPGs or apart.
REPORT_ROOTS = ("files", "reports/files", "mimic-cxr-reports/files")
LAYOUTS = (
    Layout("flat", ""),  # one merged folder: the layout accepted before PhysioNet trees were
    Layout("side by side", "{project}/{version}"),
    Layout("wget -r", "physionet.org/files/{project}/{version}"),
    Layout("wget -r, DATA_DIR = physionet.org", "files/{project}/{version}"),
    Layout("DATA_DIR = the project folder", "{version}"),
)
EXPLICIT = "--image-root DIR (holds mimic-cxr-2.0.0-*.csv.gz and files/) --reports-root DIR|ZIP (image_root=, reports_root=)"
SOURCE_SPLIT = "test"
_REPORT_NAME = re.compile(r"((?:.*/)?)p\d\d/p\d+/s\d+\.txt")  # group 1: the folder inside a zip


def report_relative(subject_id: str, study_id: str) -> str:
    return f"p{subject_id[:2]}/p{subject_id}/s{study_id}.txt"


class ReportFolder:
    """Reports unzipped: `folder` holds pXX/pSUBJECT/sSTUDY.txt."""

    def __init__(self, folder: Path):
        self.folder = folder

    def path(self, subject_id: str, study_id: str) -> Path:
        return self.folder / report_relative(subject_id, study_id)

    def has(self, subject_id: str, study_id: str) -> bool:
        return self.path(subject_id, study_id).is_file()

    def read(self, subject_id: str, study_id: str) -> str:
        return self.path(subject_id, study_id).read_text(encoding="utf-8", errors="replace")

    def where(self, subject_id: str, study_id: str) -> str:
        return str(self.path(subject_id, study_id))

    def fingerprint_files(self, rows) -> list[Path]:
        return [self.path(str(r["subject_id"]), r["study_id"]) for r in rows]

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"{self.folder}/"


class ReportZip:
    """mimic-cxr-reports.zip read in place: its directory is read once, each report on demand."""

    def __init__(self, path: Path):
        self.path_ = path
        self._zip: zipfile.ZipFile | None = None
        self._prefix = ""
        self._names: frozenset[str] = frozenset()

    def _open(self) -> zipfile.ZipFile:
        if self._zip is None:
            try:
                self._zip = zipfile.ZipFile(self.path_)
            except (OSError, zipfile.BadZipFile) as exc:
                raise DatasetNotAvailableError(f"MIMIC-CXR: cannot read {self.path_} as a zip ({exc}); download "
                                               "it again or unzip it and name the folder with --reports-root") from None
            names = self._zip.namelist()
            # The PhysioNet zip holds files/pXX/...; take whatever folder the reports sit in.
            match = next((m for m in map(_REPORT_NAME.fullmatch, names) if m), None)
            self._prefix = match.group(1) if match else ""
            self._names = frozenset(names)
        return self._zip

    def member(self, subject_id: str, study_id: str) -> str:
        self._open()
        return self._prefix + report_relative(subject_id, study_id)

    def has(self, subject_id: str, study_id: str) -> bool:
        return self.member(subject_id, study_id) in self._names

    def read(self, subject_id: str, study_id: str) -> str:
        return self._open().read(self.member(subject_id, study_id)).decode("utf-8", errors="replace")

    def where(self, subject_id: str, study_id: str) -> str:
        return f"{self.path_}:{self.member(subject_id, study_id)}"

    def fingerprint_files(self, rows) -> list[Path]:
        return [self.path_]

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
            self._zip = None

    def __repr__(self) -> str:
        return str(self.path_)


@dataclass
class MimicCopy:
    root: Path  # the data directory searched
    image_root: Path  # the MIMIC-CXR-JPG folder: both CSVs and files/
    metadata_csv: Path
    split_csv: Path
    reports: ReportFolder | ReportZip
    layout: str = ""  # which layouts were found, for the log

    @property
    def image_dir(self) -> Path:
        return self.image_root / "files"

    def image_path(self, manifest_path: str) -> Path:
        return self.image_dir / manifest_path.lstrip("/")


def _jpg_score(folder: Path, rows: list[dict]) -> int:
    """0 without both CSVs; else 1 + the sampled manifest images it holds (a CSV-only copy still serves text)."""
    if find_file(folder, METADATA_CSV) is None or find_file(folder, SPLIT_CSV) is None:
        return 0
    return 1 + layouts.count_files(folder / "files" / p.lstrip("/") for r in rows for p in r["image_path"][:1])


def _report_score(source, rows: list[dict]) -> int:
    return sum(source.has(str(r["subject_id"]), r["study_id"]) for r in rows)


def _report_sources(folder: Path) -> list:
    """The ways reports sit in one folder: unzipped (three customary places) or the zip itself."""
    sources: list = [ReportFolder(folder / r) for r in REPORT_ROOTS if (folder / r).is_dir()]
    if (folder / REPORTS_ZIP).is_file():
        sources.append(ReportZip(folder / REPORTS_ZIP))
    return sources


def _explicit_report_sources(given: Path) -> list:
    """--reports-root: the zip, the folder holding files/, the files/ folder itself, or the folder holding the zip."""
    if given.is_file():
        return [ReportZip(given)]
    if not given.is_dir():
        return []
    zipped = [ReportZip(given / REPORTS_ZIP)] if (given / REPORTS_ZIP).is_file() else []
    return [ReportFolder(given / "files"), ReportFolder(given), *zipped]


def _find_images(root: Path, image_root, rows) -> tuple[layouts.Candidate | None, layouts.Search]:
    search = layouts.Search(f"MIMIC-CXR-JPG ({METADATA_CSV[0]}, {SPLIT_CSV[0]}, files/)", root)
    if image_root is not None:
        candidates = [layouts.Candidate("--image-root", Path(image_root))]
    else:
        candidates = search.candidates(LAYOUTS, project=JPG_PROJECT, versions=VERSIONS)
    full = 1 + len(rows)
    chosen, _ = layouts.best(candidates, lambda c: _jpg_score(c.folder, rows), full)
    if chosen is None:
        for c in candidates:
            lacks = [n[0] for n in (METADATA_CSV, SPLIT_CSV) if find_file(c.folder, n) is None]
            search.refuse(c.layout, c.folder, "absent" if not c.folder.is_dir() else f"lacks {', '.join(lacks)}")
    return chosen, search


def _find_reports(root: Path, reports_root, image_folder: Path | None, rows):
    search = layouts.Search(f"MIMIC-CXR reports (files/pXX/pSUBJECT/sSTUDY.txt or {REPORTS_ZIP})", root)
    if reports_root is not None:
        options = [("--reports-root", s) for s in _explicit_report_sources(Path(reports_root))]
        folders = [layouts.Candidate("--reports-root", Path(reports_root))]
    else:
        folders = search.candidates(LAYOUTS, project=REPORTS_PROJECT, versions=VERSIONS)
        if image_folder is not None:  # reports put beside the JPGs
            folders = layouts.unique([layouts.Candidate("beside the images", image_folder), *folders])
        options = [(c.layout, s) for c in folders for s in _report_sources(c.folder)]
    chosen, _ = layouts.best(options, lambda o: _report_score(o[1], rows), len(rows))
    for _, source in options:
        if chosen is None or source is not chosen[1]:
            source.close()
    if chosen is None:
        first = report_relative(str(rows[0]["subject_id"]), rows[0]["study_id"]) if rows else "pXX/..."
        for c in folders:
            search.refuse(c.layout, c.folder, "absent" if not c.folder.exists() else
                          f"no ReXrank test report in files/, reports/files/ or {REPORTS_ZIP} (e.g. files/{first})")
    return chosen, search


def locate(data_dir: str | Path | None, *, image_root: str | Path | None = None,
           reports_root: str | Path | None = None, split: str = SOURCE_SPLIT) -> MimicCopy:
    """The local copy's CSVs, image folder and reports; DatasetNotAvailableError listing every layout looked in."""
    root = Path(data_dir) if data_dir is not None else default_data_dir(NAME)
    rows = layouts.sample(read_manifest(NAME, split))
    images, image_search = _find_images(root, image_root, rows)
    reports, report_search = _find_reports(root, reports_root, images.folder if images else None, rows)
    failed = [s for s, found in ((image_search, images), (report_search, reports)) if found is None]
    if failed:
        if reports is not None:
            reports[1].close()
        raise layouts.not_found(NAME, root, failed, explicit_hint=EXPLICIT)
    folder = images.folder
    copy = MimicCopy(root, folder, find_file(folder, METADATA_CSV), find_file(folder, SPLIT_CSV), reports[1],
                     f"images: {images.layout} ({folder}); reports: {reports[0]} ({reports[1]!r})")
    log.info("mimic_cxr: %s", copy.layout)
    return copy


def _subject(row: dict) -> str:
    return str(row["subject_id"])


def missing_files(copy: MimicCopy, manifest: list[dict], *, images: bool) -> list[str]:
    missing = []
    for row in manifest:
        if not copy.reports.has(_subject(row), row["study_id"]):
            missing.append(layouts.shown(copy.reports.where(_subject(row), row["study_id"]), copy.root))
        if images:
            missing += [layouts.shown(copy.image_path(p), copy.root) for p in row["image_path"]
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
            f"MIMIC-CXR: {len(wrong)} ReXrank test images do not match the MIMIC-CXR-JPG CSVs in {copy.image_root} "
            "(a different release, or CSVs from another dataset?)."))


def build_records(data_dir: str | Path | None, split: str = "test", *, require_images: bool = True,
                  image_root: str | Path | None = None, reports_root: str | Path | None = None) -> list[dict]:
    """The ReXrank MIMIC-CXR Study records, in manifest order. Raises for anything missing."""
    copy = locate(data_dir, image_root=image_root, reports_root=reports_root, split=split)
    try:
        return _records(copy, split, require_images)
    finally:
        copy.reports.close()


def _records(copy: MimicCopy, split: str, require_images: bool) -> list[dict]:
    manifest = read_manifest(NAME, split)
    missing = missing_files(copy, manifest, images=require_images)
    if missing:
        raise not_available(NAME, copy.root, missing)
    check_csvs(copy, manifest)
    records, disagreements = [], 0
    for row in manifest:
        sections = extract_sections(copy.reports.read(_subject(row), row["study_id"]))
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
    def source_files(cls, data_dir, **roots):
        if data_dir is None:
            return []
        try:
            copy = locate(data_dir, **roots)
        except Exception:
            return []
        files = [copy.metadata_csv, copy.split_csv]
        for split in cls.spec().splits:
            files += copy.reports.fingerprint_files(read_manifest(NAME, split))
        copy.reports.close()
        return files

    def studies(self, split: str) -> Iterator[dict]:
        yield from build_records(self.config.data_dir, split, require_images=self.require_images, **self.roots)
