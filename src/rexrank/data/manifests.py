"""The ReXrank study manifests shipped with rexrank: study ids, image paths, which sections exist — no text.

Copied from ../shared/data/manifests (the ReXrank test sets of rajpurkarlab/ReXrank); they drive building and
verification of the licensed datasets, so a local copy can be checked study by study.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache

from rexrank.data.catalog import get_dataset_spec, package_file


@lru_cache(maxsize=None)
def _read(relative: str) -> tuple[dict, ...]:
    rows = []
    with package_file(relative).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                rows.append(_without_nan(json.loads(line)))  # the MIMIC manifest has NaN view positions
    return tuple(rows)


def read_manifest(name: str, split: str) -> list[dict]:
    """Manifest rows of dataset `name`/`split`: study_id, image_path (list), key_image_path, frontal_lateral,
    has_findings, has_impression (+ subject_id for MIMIC-CXR, ap_pa for CheXpert Plus)."""
    spec = get_dataset_spec(name).split(split)
    if spec.manifest is None:
        return []
    if spec.manifest.endswith(".json"):  # IU-Xray: the official split file itself
        entries = json.loads(package_file(spec.manifest).read_text(encoding="utf-8"))
        return [{"study_id": sid, "image_path": e["image_path"], "key_image_path": e.get("key_image_path"),
                 "frontal_lateral": e.get("frontal_lateral"), "has_findings": bool(e.get("section_findings")),
                 "has_impression": bool(e.get("section_impression"))} for sid, e in entries.items()]
    return [dict(row) for row in _read(spec.manifest)]


def _without_nan(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_without_nan(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_nan(v) for k, v in value.items()}
    return value
