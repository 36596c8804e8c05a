"""ReXGradient-160K layout; the ReXrank split is the 10,000-study private test set held by the leaderboard host.

The public dataset (gated Hub repo rajpurkarlab/ReXGradient-160K) ships metadata/<split>_metadata.csv (one row
per study) and metadata/<split>_metadata_view_position.json: {"p<PatientID>_a<AccessionNumber>_s<StudyUID>":
{PatientID, AccessionNumber, StudyInstanceUid, StudyDate, PatientSex, PatientAge, Indication, Comparison,
Findings, Impression, ImagePath: ["../deid_png/..."], ImageViewPosition: [...]}, ...}, images in deid_png/
(the deid_png.partNN archives). The host's private test set is given as a local directory in that layout and is
never downloaded. The site id is read from the first of SITE_FIELDS present (the public metadata's name for it
is not documented in what we could check).

Where the files are (`locate`): the metadata JSON in DATA_DIR/metadata/ or DATA_DIR (a `hf download
rajpurkarlab/ReXGradient-160K --repo-type dataset --local-dir DATA_DIR`), in a folder named after the repo (a git
clone), or in a Hugging Face cache snapshot (DATA_DIR/[hub/]datasets--rajpurkarlab--ReXGradient-160K/snapshots/
<revision>/metadata/). Images: `ImagePath` values are read relative to the metadata folder as written
("../deid_png/..."), or with the leading "../" dropped under DATA_DIR (deid_png.partNN unpacked there); the
folder holding most sampled images wins. `reports_root=` names the JSON or its folder, `image_root=` the folder
holding deid_png/ (or deid_png/ itself).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from rexrank.data import layouts
from rexrank.data.builders.base import RexrankBuilder
from rexrank.data.catalog import default_data_dir, get_dataset_spec
from rexrank.data.gating import MAX_LISTED, not_available
from rexrank.data.study import clean_section, make_study
from rexrank.errors import DatasetNotAvailableError

NAME = "rexgradient"
SITE_FIELDS = ("SiteID", "SiteId", "Site", "site_id", "site", "InstitutionName")
SOURCE_SPLITS = {"test": "test"}
# The folder the deid_png.partNN archives unpack to (ImagePath values start "../deid_png/").
IMAGES_FOLDER = "deid_png"
CACHE_LAYOUT = "Hugging Face cache"
EXPLICIT = f"--image-root DIR (holds {IMAGES_FOLDER}/) --reports-root JSON|DIR (image_root=, reports_root=)"


def metadata_name(split: str = "test") -> str:
    return f"{SOURCE_SPLITS.get(split, split)}_metadata_view_position.json"


def metadata_folders(root: Path) -> list[tuple[str, Path]]:
    """(layout, folder) where a download of the Hub repo puts the metadata, in the order they are tried."""
    repo = get_dataset_spec(NAME).hub_repo
    folders = [("hf download --local-dir", root / "metadata"), ("flat", root),
               ("a clone of the repo", root / repo.split("/")[-1] / "metadata")]
    for cache in (root / cache_folder(), root / "hub" / cache_folder()):
        for snapshot in layouts.child_folders(cache / "snapshots"):
            folders.append((CACHE_LAYOUT, snapshot / "metadata"))
    return folders


def cache_folder() -> str:
    """huggingface_hub's cache folder of the source's dataset repo (datasets--<org>--<name>)."""
    return "datasets--" + get_dataset_spec(NAME).hub_repo.replace("/", "--")


def metadata_file(root: Path, split: str = "test", reports_root: str | Path | None = None) -> Path | None:
    name = metadata_name(split)
    if reports_root is not None:
        given = Path(reports_root)
        options = [given] if given.is_file() else [given / name, given / "metadata" / name]
    else:
        options = [folder / name for _, folder in metadata_folders(root)]
    return next((candidate for candidate in options if candidate.is_file()), None)


def _missing_metadata(root: Path, split: str, reports_root) -> DatasetNotAvailableError:
    search = layouts.Search(f"the metadata file ({metadata_name(split)})", root)
    if reports_root is not None:
        search.refuse("--reports-root", Path(reports_root), f"no {metadata_name(split)} in it or in its metadata/")
    else:
        folders = metadata_folders(root)
        for layout, folder in folders:
            search.refuse(layout, folder, "absent" if not folder.is_dir() else f"no {metadata_name(split)}")
        if not any(layout == CACHE_LAYOUT for layout, _ in folders):
            search.refuse(CACHE_LAYOUT, root / cache_folder() / "snapshots" / "<revision>" / "metadata", "absent")
    return layouts.not_found(NAME, root, [search], explicit_hint=EXPLICIT)


def image_bases(root: Path, metadata: Path, image_root: str | Path | None) -> list[Path]:
    """Folders to read `ImagePath` values against; '../' is dropped for every one but the metadata folder."""
    if image_root is not None:
        given = Path(image_root)
        return [given.parent if given.name == IMAGES_FOLDER else given]
    return [metadata.parent, root]


def image_path(base: Path, metadata: Path, value: str) -> str:
    if base == metadata.parent:  # as written: relative to the metadata folder
        return os.path.normpath(base / value)
    return os.path.normpath(base / re.sub(r"^(\.\./)+", "", value))


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


def read_entries(data_dir: str | Path | None, split: str = "test", *,
                 reports_root: str | Path | None = None) -> tuple[Path, dict]:
    root = Path(data_dir) if data_dir is not None else default_data_dir(NAME)
    path = metadata_file(root, split, reports_root)
    if path is None:
        raise _missing_metadata(root, split, reports_root)
    raw = path.read_bytes()
    try:
        entries = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, raw, exc) from None
    except json.JSONDecodeError as exc:
        raise DatasetNotAvailableError(f"ReXGradient: {path} is not valid JSON ({exc})") from None
    if not isinstance(entries, dict) or not entries:
        raise DatasetNotAvailableError(f"ReXGradient: {path} holds no studies")
    return path, entries


def _not_utf8(path: Path, raw: bytes, exc: UnicodeDecodeError) -> DatasetNotAvailableError:
    """One line: the file, the byte offset and value, the study and field holding it (when the rest parses), the fix."""
    where = ""
    try:  # undecodable bytes become lone surrogates U+DC80-U+DCFF: the first value holding one is the culprit
        entries = json.loads(raw.decode("utf-8", errors="surrogateescape"))
        where = next((f", in study {study_id} field {field}" for study_id, entry in entries.items()
                      if isinstance(entry, dict) for field, value in entry.items()
                      if any("\udc80" <= ch <= "\udcff" for ch in str(value))), "")
    except (ValueError, AttributeError):  # not JSON either: the offset alone says where
        pass
    return DatasetNotAvailableError(
        f"ReXGradient: {path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte {exc.start:,}{where}); the "
        "published metadata is UTF-8: download it again, or convert the file from the encoding it was saved in, "
        f"e.g. `iconv -f latin1 -t utf-8 {path.name} > fixed.json`")


def unusable(entry: dict) -> str | None:
    """Why a metadata entry cannot be a test study, or None: every study needs an image (what a model is given)
    and a Findings or an Impression section (a study with neither would enter Findings + Impression with the
    reference "Findings: None Impression: None", and no track without it). Read by the builder and by verify."""
    if not entry.get("ImagePath"):
        return NO_IMAGE
    if clean_section(entry.get("Findings")) is None and clean_section(entry.get("Impression")) is None:
        return NO_REPORT
    return None


NO_IMAGE = "no image"
NO_REPORT = "neither Findings nor Impression"


def _refuse_unusable(path: Path, entries: dict) -> None:
    """The other builders' rule for a missing part (never a silently shorter set): unusable studies are an error,
    one line with the count and the ids of each kind."""
    found: dict[str, list[str]] = {}
    for study_id, entry in entries.items():
        reason = unusable(entry if isinstance(entry, dict) else {})
        if reason is not None:
            found.setdefault(reason, []).append(study_id)
    if not found:
        return
    kinds = []
    for reason in (NO_IMAGE, NO_REPORT):
        ids = found.get(reason, [])
        if ids:
            more = f", and {len(ids) - MAX_LISTED:,} more" if len(ids) > MAX_LISTED else ""
            kinds.append(f"{len(ids):,} with {reason} ({', '.join(ids[:MAX_LISTED])}{more})")
    total = sum(len(ids) for ids in found.values())
    raise DatasetNotAvailableError(
        f"ReXGradient: {total:,} of {len(entries):,} studies in {path} cannot be test studies: {'; '.join(kinds)}. "
        "Each needs an ImagePath and a Findings or Impression section: complete those entries, or remove them "
        "from the file")


def locate_images(data_dir: str | Path | None, path: Path, entries: dict,
                  image_root: str | Path | None = None) -> Path:
    """The folder `ImagePath` values are read against: the one holding most of a sample of the images."""
    root = Path(data_dir) if data_dir is not None else default_data_dir(NAME)
    bases = layouts.unique(image_bases(root, path, image_root))
    values = [v for entry in layouts.sample(list(entries.values())) for v in (entry.get("ImagePath") or [])[:1]]
    return max(bases, key=lambda base: (sum(os.path.isfile(image_path(base, path, v)) for v in values),
                                        -bases.index(base)))


def build_records(data_dir: str | Path | None, split: str = "test", *, require_images: bool = True,
                  image_root: str | Path | None = None, reports_root: str | Path | None = None) -> list[dict]:
    path, entries = read_entries(data_dir, split, reports_root=reports_root)
    _refuse_unusable(path, entries)
    base = locate_images(data_dir, path, entries, image_root)
    records, missing = [], []
    for study_id, entry in entries.items():
        images = [image_path(base, path, p) for p in entry.get("ImagePath") or []]
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
        shown_root = path.parent.parent
        raise not_available(NAME, shown_root, [os.path.relpath(p, shown_root) for p in missing])
    return records


class ReXGradient(RexrankBuilder):
    DATASET = NAME

    @classmethod
    def source_files(cls, data_dir, reports_root=None, **roots):
        if data_dir is None:
            return []
        return [f for f in (metadata_file(Path(data_dir), s, reports_root) for s in cls.spec().splits)
                if f is not None]

    def studies(self, split: str) -> Iterator[dict]:
        yield from build_records(self.config.data_dir, split, require_images=self.require_images, **self.roots)
