"""ReXGradient-160K layout; the ReXrank split is the 10,000-study private test set held by the leaderboard host.

The public dataset (gated Hub repo rajpurkarlab/ReXGradient-160K) ships metadata/<split>_metadata.csv (one row
per study) and metadata/<split>_metadata_view_position.json: {"p<PatientID>_a<AccessionNumber>_s<StudyUID>":
{PatientID, AccessionNumber, StudyInstanceUid, StudyDate, PatientSex, PatientAge, Indication, Comparison,
Findings, Impression, ImagePath: ["../deid_png/..."], ImageViewPosition: [...]}, ...}, images in deid_png/
(the deid_png.partNN archives). The host's private test set is given as a local directory in that layout and is
never downloaded. The site id is read from the first of SITE_FIELDS present (the public metadata's name for it
is not documented in what we could check).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from rexrank.data.builders.base import RexrankBuilder
from rexrank.data.catalog import default_data_dir
from rexrank.data.gating import not_available
from rexrank.data.study import clean_section, make_study
from rexrank.errors import DatasetNotAvailableError

NAME = "rexgradient"
SITE_FIELDS = ("SiteID", "SiteId", "Site", "site_id", "site", "InstitutionName")
SOURCE_SPLITS = {"test": "test"}


def metadata_file(root: Path, split: str = "test") -> Path | None:
    name = f"{SOURCE_SPLITS.get(split, split)}_metadata_view_position.json"
    for candidate in (root / "metadata" / name, root / name):
        if candidate.is_file():
            return candidate
    return None


def _age(value) -> int | None:
    # DICOM age strings look like "045Y"; plain numbers pass through.
    if value is None:
        return None
    match = re.match(r"\s*(\d+)", str(value))
    return int(match.group(1)) if match else None


def _context(entry: dict) -> str | None:
    indication, comparison = clean_section(entry.get("Indication")), clean_section(entry.get("Comparison"))
    text = " ".join(p for p in (f"Indication: {indication}" if indication else None,
                                f"Comparison: {comparison}" if comparison else None) if p)
    return text or None


def read_entries(data_dir: str | Path | None, split: str = "test") -> tuple[Path, dict]:
    root = Path(data_dir) if data_dir is not None else default_data_dir(NAME)
    path = metadata_file(root, split)
    if path is None:
        raise not_available(NAME, root, [f"metadata/{split}_metadata_view_position.json"])
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetNotAvailableError(f"ReXGradient: {path} is not valid JSON ({exc})") from None
    if not isinstance(entries, dict) or not entries:
        raise DatasetNotAvailableError(f"ReXGradient: {path} holds no studies")
    return path, entries


def build_records(data_dir: str | Path | None, split: str = "test", *, require_images: bool = True) -> list[dict]:
    path, entries = read_entries(data_dir, split)
    base = path.parent
    records, missing = [], []
    for study_id, entry in entries.items():
        # ImagePath values are relative to the metadata/ folder ("../deid_png/..."); normalise to absolute paths.
        images = [os.path.normpath(base / p) for p in entry.get("ImagePath") or []]
        if require_images:
            missing += [p for p in images if not os.path.isfile(p)]
        site = next((entry[f] for f in SITE_FIELDS if entry.get(f) not in (None, "")), None)
        records.append(make_study(
            study_id=study_id, dataset=NAME, split=split, image_paths=images, key_image=images[0] if images else None,
            view_positions=entry.get("ImageViewPosition") or [], findings=clean_section(entry.get("Findings")),
            impression=clean_section(entry.get("Impression")), context=_context(entry),
            patient_id=entry.get("PatientID"), site=site, age=_age(entry.get("PatientAge")), sex=entry.get("PatientSex"),
        ))
    if missing:
        raise not_available(NAME, base.parent, [os.path.relpath(p, base.parent) for p in missing])
    return records


class ReXGradient(RexrankBuilder):
    DATASET = NAME

    @classmethod
    def source_files(cls, data_dir):
        if data_dir is None:
            return []
        return [f for f in (metadata_file(Path(data_dir), s) for s in cls.spec().splits) if f is not None]

    def studies(self, split: str) -> Iterator[dict]:
        yield from build_records(self.config.data_dir, split, require_images=self.require_images)
