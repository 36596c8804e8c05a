"""`rexrank data verify NAME`: check a local copy study by study against the ReXrank manifest.

Reports studies of the ReXrank set that are missing, studies of the source's split that ReXrank does not use
(extra, informational), missing and unreadable files, and sections found/absent differently from the manifest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rexrank.data import layouts
from rexrank.data.catalog import canonical_split, default_data_dir, get_dataset_spec
from rexrank.data.manifests import read_manifest
from rexrank.errors import ConfigError, DatasetNotAvailableError


@dataclass
class VerifyReport:
    dataset: str
    split: str
    data_dir: str
    n_expected: int | None
    n_found: int = 0
    missing_studies: list[str] = field(default_factory=list)
    extra_studies: list[str] = field(default_factory=list)
    missing_files: list[str] = field(default_factory=list)
    unreadable_images: list[str] = field(default_factory=list)
    section_disagreements: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing_studies or self.missing_files or self.unreadable_images
                    or self.section_disagreements or self.problems)

    def summary(self, max_listed: int = 10) -> str:
        lines = [f"{self.dataset} {self.split} in {self.data_dir}: {'OK' if self.ok else 'PROBLEMS'}",
                 f"  studies: {self.n_found} found of {self.n_expected if self.n_expected is not None else '?'} expected"]
        for title, items in (("problems", self.problems), ("missing studies", self.missing_studies),
                             ("missing files", self.missing_files), ("unreadable images", self.unreadable_images),
                             ("section disagreements with the manifest", self.section_disagreements),
                             ("extra studies (in the source split, not in ReXrank's set)", self.extra_studies)):
            if items:
                lines.append(f"  {title}: {len(items)}")
                lines += [f"    {item}" for item in items[:max_listed]]
                if len(items) > max_listed:
                    lines.append(f"    ... and {len(items) - max_listed} more")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__} | {"ok": self.ok}


def readable_image(path: str) -> str | None:
    """None when PIL can open and verify the image, else the reason."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.verify()
        return None
    except Exception as exc:  # PIL raises many types for a broken file
        return f"{type(exc).__name__}: {exc}"


def verify(name: str, data_dir: str | os.PathLike | None = None, split: str | None = None, *,
           open_images: bool = True, image_root: str | os.PathLike | None = None,
           reports_root: str | os.PathLike | None = None) -> VerifyReport:
    """`image_root`/`reports_root` name those parts of the copy explicitly, as for `rexrank.data.load`."""
    spec = get_dataset_spec(name)
    name = spec.name  # aliases ("mimic", "CheXpert Plus") verify the canonical dataset
    split = canonical_split(name, split)
    root = Path(data_dir) if data_dir is not None else default_data_dir(name)
    report = VerifyReport(name, split, str(root), spec.splits[split].n_studies)
    checker = checker_for(name)
    try:
        checker(report, root, split, image_root=image_root, reports_root=reports_root)
    except (DatasetNotAvailableError, ConfigError) as exc:
        report.problems.append(str(exc))
    if open_images:
        _check_images(report)
    return report


def checker_for(name: str):
    """The layout check of a catalog dataset: the function `_<name>` below (one per dataset, named after it,
    so the dataset names stay declared in the catalog alone)."""
    checker = globals().get(f"_{name}")
    if checker is None:
        raise NotImplementedError(f"rexrank.data.verification has no check for dataset {name!r}: add a function "
                                  f"_{name}")
    return checker


def _check_images(report: VerifyReport) -> None:
    for path in getattr(report, "_present_images", []):
        reason = readable_image(path)
        if reason is not None:
            report.unreadable_images.append(f"{path}: {reason}")


def _record_images(report: VerifyReport, paths: list[str], root: Path) -> bool:
    """Sort paths into present (checked later) and missing; True when all are present."""
    present = report.__dict__.setdefault("_present_images", [])
    complete = True
    for path in paths:
        if os.path.isfile(path):
            present.append(path)
        else:
            complete = False
            report.missing_files.append(layouts.shown(path, root))
    return complete


def _sections(report: VerifyReport, study_id: str, row: dict, findings, impression) -> None:
    for section, value, expected in (("findings", findings, row.get("has_findings")),
                                     ("impression", impression, row.get("has_impression"))):
        if (value is not None) != bool(expected):
            report.section_disagreements.append(
                f"{study_id}: {section} {'found' if value is not None else 'absent'}, manifest says "
                f"{'present' if expected else 'absent'}")


def _iu_xray(report: VerifyReport, root: Path, split: str, *, image_root=None, reports_root=None) -> None:
    from rexrank.data.builders import iu_xray

    iu_xray.check_roots(reports_root)
    records = iu_xray.read_split(split, root, image_folder=image_root)
    images = iu_xray.image_root(root, image_root)
    for record in records:
        if _record_images(report, record["image_paths"], images):
            report.n_found += 1
        else:
            report.missing_studies.append(record["study_id"])
    report.notes.append("report text ships with rexrank; only images are checked")


def _mimic_cxr(report: VerifyReport, root: Path, split: str, *, image_root=None, reports_root=None) -> None:
    from rexrank.data.builders import mimic_cxr as m

    copy = m.locate(root, image_root=image_root, reports_root=reports_root, split=split)
    try:
        _mimic_studies(report, copy, split)
    finally:
        copy.reports.close()


def _mimic_studies(report: VerifyReport, copy, split: str) -> None:
    from rexrank.data.builders import mimic_cxr as m
    from rexrank.data.sections import extract_sections

    root = copy.root
    report.notes.append(f"found {copy.layout}")
    manifest = read_manifest(m.NAME, split)
    for row in manifest:
        subject, study = str(row["subject_id"]), row["study_id"]
        images_ok = _record_images(report, [str(copy.image_path(p)) for p in row["image_path"]], root)
        if not copy.reports.has(subject, study):
            report.missing_files.append(layouts.shown(copy.reports.where(subject, study), root))
            report.missing_studies.append(row["study_id"])
            continue
        sections = extract_sections(copy.reports.read(subject, study))
        _sections(report, row["study_id"], row, sections.findings, sections.impression)
        if images_ok:
            report.n_found += 1
        else:
            report.missing_studies.append(row["study_id"])
    try:
        m.check_csvs(copy, manifest)
    except DatasetNotAvailableError as exc:
        report.problems.append(str(exc))
    try:
        in_test = m.official_test_study_ids(copy)
    except DatasetNotAvailableError:
        in_test = set()  # already reported by check_csvs
    report.extra_studies = sorted(in_test - {r["study_id"] for r in manifest})
    if report.extra_studies:
        report.notes.append("ReXrank's MIMIC-CXR test set keeps the official test studies that have a findings "
                            "section, so other test studies are expected to be extra")


def _chexpert_plus(report: VerifyReport, root: Path, split: str, *, image_root=None, reports_root=None) -> None:
    from rexrank.data.builders import chexpert_plus as c
    from rexrank.data.study import clean_section

    copy = c.locate(root, image_root=image_root, reports_root=reports_root)
    reports = c.read_reports(copy)
    manifest = read_manifest(c.NAME, split)
    for row in manifest:
        images_ok = _record_images(report, [str(copy.image_path(p)) for p in row["image_path"]], root)
        found = reports.get(row["study_id"])
        if found is None:
            report.missing_studies.append(row["study_id"])
            continue
        _sections(report, row["study_id"], row, clean_section(found["section_findings"]),
                  clean_section(found["section_impression"]))
        if images_ok:
            report.n_found += 1
        else:
            report.missing_studies.append(row["study_id"])
    report.extra_studies = sorted(set(reports) - {r["study_id"] for r in manifest})


def _rexgradient(report: VerifyReport, root: Path, split: str, *, image_root=None, reports_root=None) -> None:
    from rexrank.data.builders import rexgradient as g

    path, entries = g.read_entries(root, split, reports_root=reports_root)
    base = g.locate_images(root, path, entries, image_root)
    for study_id, entry in entries.items():
        images = [g.image_path(base, path, p) for p in entry.get("ImagePath") or []]
        reason = g.unusable(entry)  # the builder's rule: it refuses such a study
        if reason is not None:
            report.problems.append(f"{study_id}: {reason}")
        if _record_images(report, images, root) and images:
            report.n_found += 1
        else:
            report.missing_studies.append(study_id)
    report.notes.append(f"no public manifest: {len(entries)} studies in {path.name}; the ReXrank private test set "
                        "has 10,000")
