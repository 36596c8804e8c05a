"""The Study record: one imaging study of a ReXrank test set, the same columns for every dataset.

Images are stored as paths (`Image(decode=False)`), never as bytes, so licensed pixels are never copied into a
`datasets` cache; `image_paths` holds the same absolute paths as plain strings for code that wants no decoding.
"""

from __future__ import annotations

from typing import Any

import datasets

# Study record columns. Other stages (generation, scoring) read these names: keep them stable.
STUDY_FEATURES = datasets.Features(
    {
        "study_id": datasets.Value("string"),
        "dataset": datasets.Value("string"),
        "split": datasets.Value("string"),
        "images": datasets.List(datasets.Image(decode=False)),
        "image_paths": datasets.List(datasets.Value("string")),
        "key_image": datasets.Value("string"),
        "view_positions": datasets.List(datasets.Value("string")),
        "findings": datasets.Value("string"),
        "impression": datasets.Value("string"),
        "gt_findings": datasets.Value("string"),
        "gt_findings_impression": datasets.Value("string"),
        "context": datasets.Value("string"),
        "patient_id": datasets.Value("string"),
        "site": datasets.Value("string"),
        "age": datasets.Value("int32"),
        "sex": datasets.Value("string"),
    }
)

STUDY_COLUMNS = tuple(STUDY_FEATURES)


def clean_section(text: Any) -> str | None:
    """A section extracted from a raw report: whitespace runs collapsed; empty, NaN or missing -> None."""
    present = section_or_none(text)
    if present is None:
        return None
    return " ".join(present.split()) or None


def section_or_none(text: Any) -> str | None:
    """A section kept exactly as the source wrote it, except that empty, blank, NaN or missing -> None.

    Official ground truth (the IU-Xray JSON) is used verbatim: any rewriting would change metric values.
    """
    if text is None or isinstance(text, float):  # pandas NaN for an empty CSV cell
        return None
    text = str(text)
    return text if text.strip() else None


def findings_impression_text(findings: str | None, impression: str | None) -> str:
    """The findings+impression ground truth exactly as ReXrank writes it.

    Source: ReXrank (rajpurkarlab/ReXrank) builds `f"Findings: {findings} Impression: {impression}"` and a
    missing section prints as the literal word None (see reference/METRICS.md, "Tracks and ground truth").
    """
    return f"Findings: {findings} Impression: {impression}"


def make_study(
    *,
    study_id: str,
    dataset: str,
    split: str,
    image_paths: list[str],
    key_image: str | None = None,
    view_positions: list[str | None] | None = None,
    findings: Any = None,
    impression: Any = None,
    context: Any = None,
    patient_id: Any = None,
    site: Any = None,
    age: Any = None,
    sex: Any = None,
) -> dict:
    """One Study record (a plain dict matching STUDY_FEATURES), with both tracks' ground truth filled in.

    Section text is kept as given (callers that extract sections from raw reports clean them first).
    """
    findings = section_or_none(findings)
    impression = section_or_none(impression)
    paths = [str(p) for p in image_paths]
    return {
        "study_id": str(study_id),
        "dataset": dataset,
        "split": split,
        "images": list(paths),
        "image_paths": paths,
        "key_image": None if key_image is None else str(key_image),
        "view_positions": [_view(v) for v in (view_positions or [])],
        "findings": findings,
        "impression": impression,
        "gt_findings": findings,
        "gt_findings_impression": findings_impression_text(findings, impression),
        "context": section_or_none(context),
        "patient_id": _optional_str(patient_id),
        "site": _optional_str(site),
        "age": _optional_int(age),
        "sex": _optional_str(sex),
    }


def _view(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return str(value)


def _optional_str(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value).strip()
    return text or None


def _optional_int(value: Any) -> int | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None
