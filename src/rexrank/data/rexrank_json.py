"""Read and write ReXrank-style JSON: {study_id: {image_path, key_image_path, report, section_findings, ...}}.

That is the shape of the official IU-Xray split files (rajpurkarlab/ReXrank, data/IU-Xray/ReXRank_IUXray_*.json)
and of upstream submissions (`inference.py <input_json> <output_json> <img_root_dir>` adds `model_prediction`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rexrank.data.catalog import split_name
from rexrank.errors import InputError

# The field an upstream submission adds to each study object (rajpurkarlab/ReXrank README, "Submission"); the
# object's "report" stays the ground truth. Written by `rexrank generate`, read by the scoring harness.
MODEL_PREDICTION = "model_prediction"


def read_rexrank_json(path: str | os.PathLike, image_root: str | os.PathLike | None = None, *,
                      dataset: str | None = None, split: str | None = None) -> list[dict]:
    """Study records from a ReXrank-style JSON, in file order.

    Relative image paths are joined to `image_root` (default: the JSON file's folder) and made absolute.
    The JSON's `split` value is normalised ("val" -> "validation"); `split=` overrides it.
    Sections are kept verbatim: they are the official ground truth.
    """
    path = Path(path)
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"ReXrank JSON not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not valid JSON: {exc}") from None
    except (RecursionError, ValueError) as exc:  # absurd nesting, or a number over Python's int-parsing limit
        problem = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(":")[0].lower()
        raise InputError(f"{path} cannot be read as JSON: {problem}") from None
    if not isinstance(entries, dict):
        raise InputError(f"{path}: expected a JSON object {{study_id: {{...}}}}, got {type(entries).__name__}")
    root = Path(image_root) if image_root is not None else path.parent
    root = root.expanduser().absolute()
    return [_study_from_entry(study_id, entry, root, dataset, split, path) for study_id, entry in entries.items()]


def _study_from_entry(study_id: str, entry: Any, root: Path, dataset: str | None, split: str | None,
                      source: Path) -> dict:
    if not isinstance(entry, dict):
        raise InputError(f"{source}: study {study_id!r} is not an object")
    images = entry.get("image_path") or []
    if isinstance(images, str):
        images = [images]
    paths = [_absolute(root, p) for p in images]
    key = entry.get("key_image_path")
    entry_split = split or entry.get("split") or ""
    from rexrank.data.study import make_study  # loads `datasets`: here, so the field name above stays light

    return make_study(
        study_id=study_id,
        dataset=dataset or "",
        split=split_name(entry_split),
        image_paths=paths,
        key_image=_absolute(root, key) if key else (paths[0] if paths else None),
        view_positions=entry.get("frontal_lateral") or [],
        findings=entry.get("section_findings"),
        impression=entry.get("section_impression"),
        context=entry.get("context"),
        patient_id=entry.get("patient_id"),
        site=entry.get("site"),
        age=entry.get("age"),
        sex=entry.get("sex"),
    )


def _absolute(root: Path, value: str) -> str:
    # Upstream JSONs use relative paths, sometimes with a leading "/" (MIMIC's "/p10/..."): both are below root.
    value = str(value)
    candidate = Path(value)
    if candidate.is_absolute() and candidate.exists():
        return str(candidate)
    return str(root / value.lstrip("/"))


def write_rexrank_json(records, path: str | os.PathLike) -> Path:
    """Study records (a Dataset or list of dicts) as a ReXrank-style JSON, the shape upstream submissions read."""
    path = Path(path)
    out = {}
    for record in records:
        findings, impression = record.get("findings"), record.get("impression")
        out[record["study_id"]] = {
            "key_image_path": record.get("key_image"),
            "image_path": list(record.get("image_paths") or []),
            "report": record.get("gt_findings_impression"),
            "section_findings": findings,
            "section_impression": impression,
            "split": record.get("split"),
            "frontal_lateral": list(record.get("view_positions") or []),
            "context": record.get("context"),
        }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=4), encoding="utf-8")
    return path
