"""Ground truth for scoring: from a reference file (any predictions shape) or a dataset builder, by track.

Tracks (reference/METRICS.md, "Tracks and ground truth"; declared in rexrank.data.tracks):
- findings: the findings section; studies without one are not part of the track (excluded and counted).
- findings_impression: ``f"Findings: {findings} Impression: {impression}"`` with the literal word None for a
  missing section, every study counts. A plain ``report`` field is used as is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rexrank.data.tracks import FINDINGS, canonical_track
from rexrank.evaluation.predictions import (
    DEFAULT_MAX_FILE_SIZE_MB,
    MODEL_PREDICTION,
    Problems,
    ReportFile,
    check_values,
    read_report_file,
)

class _Excluded:
    """Marker: this study is not part of the track (no findings section on the findings track)."""

    def __repr__(self) -> str:
        return "EXCLUDED"


EXCLUDED = _Excluded()


@dataclass
class ReferenceSet:
    texts: dict[str, str]  # study_id -> ground truth, in source order
    source: str  # file path or "dataset:split"
    excluded: set[str] = field(default_factory=set)  # ids of the split that this track leaves out
    attributes: dict[str, dict[str, Any]] = field(default_factory=dict)  # study_id -> {"site": ...}
    ok: bool = True  # False when the file could not be read (then id checks are skipped)
    ids: list[str] = field(default_factory=list)  # every id the file listed (also bad ones), for id checks


def check_track(track: str) -> str:
    """The canonical track name (aliases accepted); UnknownNameError listing the tracks otherwise."""
    return canonical_track(track)


def _section(value: Any) -> str | None:
    # Same rule as the dataset builders (rexrank.data.study.section_or_none): blank, NaN or missing -> None.
    if value is None or isinstance(value, float):
        return None
    value = str(value)
    return value if value.strip() else None


def reference_picker(track: str):
    """How a ReXrank study object becomes this track's ground truth."""
    track = check_track(track)

    def pick(study_id: str, entry: dict[str, Any], where: str):
        has_sections = "section_findings" in entry or "section_impression" in entry
        if track == FINDINGS:
            if "section_findings" in entry:
                findings = _section(entry["section_findings"])
                return (findings if findings is not None else EXCLUDED), None
            if "report" in entry and not has_sections:
                return entry["report"], None
            return None, "'section_findings'"
        if has_sections:
            findings, impression = _section(entry.get("section_findings")), _section(entry.get("section_impression"))
            # ReXrank's findings+impression ground truth, "None" printed for a missing section (METRICS.md).
            return f"Findings: {findings} Impression: {impression}", None
        if "report" in entry:
            return entry["report"], None
        return None, "'report' (or 'section_findings'/'section_impression')"

    return pick


def prediction_picker():
    def pick(study_id: str, entry: dict[str, Any], where: str):
        # A ReXrank study object also holds the ground truth in "report": only "model_prediction" is the model's.
        if MODEL_PREDICTION in entry:
            return entry[MODEL_PREDICTION], None
        return None, repr(MODEL_PREDICTION)

    return pick


def from_file(path: str | os.PathLike, track: str, problems: Problems, *,
              max_file_size_mb: float = DEFAULT_MAX_FILE_SIZE_MB) -> ReferenceSet:
    track = check_track(track)
    file: ReportFile = read_report_file(path, "references", problems, pick=reference_picker(track),
                                        text_fields=("report",), max_file_size_mb=max_file_size_mb)
    excluded = {r.study_id for r in file.records if r.value is EXCLUDED}
    kept = ReportFile(file.path, [r for r in file.records if r.value is not EXCLUDED], file.ok)
    texts = check_values(kept, "references", problems)
    attributes = {r.study_id: dict(r.extra) for r in kept.records if r.extra}
    ids = list(dict.fromkeys(r.study_id for r in kept.records))
    return ReferenceSet(texts, str(Path(path)), excluded, attributes, file.ok, ids)


def from_dataset(name: str, split: str | None, track: str, data_dir: str | os.PathLike | None,
                 problems: Problems) -> ReferenceSet:
    """References through the dataset builders (``rexrank.data.load``), imported only when used.

    Besides the ground truth this keeps each study's site (per-site analyses) and the ids the track excludes
    (``rexrank.data.track_info``), so predictions for those studies are dropped and counted, not reported as extra.
    """
    track = check_track(track)
    from rexrank import data as data_module
    from rexrank.evaluation.predictions import Record

    name = data_module.canonical_dataset(name)  # labels and sources name the dataset as results.json does
    dataset = data_module.load(name, data_dir, split=split, track=track, require_images=False)
    ids = [str(i) for i in dataset["study_id"]]
    texts = list(dataset["reference"])
    sites = dataset["site"] if "site" in dataset.column_names else [None] * len(ids)
    info = data_module.track_info(dataset) or {}
    excluded = {str(i) for i in info.get("excluded_study_ids", ())}
    attributes = {i: {"site": s} for i, s in zip(ids, sites) if s not in (None, "")}
    label = f"{name} {info.get('split') or split or ''} ({track} track)".replace("  ", " ")
    problems.where["references"] = label
    file = ReportFile(Path(label), [Record(i, t, f"study {i!r}") for i, t in zip(ids, texts)], True)
    good = check_values(file, "references", problems)
    return ReferenceSet(good, f"{name}:{info.get('split') or split}", excluded, attributes, True, ids)
