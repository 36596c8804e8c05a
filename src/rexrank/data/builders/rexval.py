"""ReXVal 1.0.0 (PhysioNet `rexval-dataset`): 50 MIMIC-CXR studies x 4 candidate reports, 6 radiologists' error counts.

The files (facts in `data.expert_sets`, with the public sources they come from):
- 50_samples_gt_and_candidates.csv: one row per study; columns study_id, gt_report (the reference), then one column
  per candidate kind: radgraph, bertscore, s_emb, bleu (each the candidate report of that kind).
- 6_valid_raters_per_rater_error_categories.csv: one row per (study_number, candidate_type, rater_index,
  error_category, clinically_significant) with num_errors. study_number is the 0-based row of the study in the
  first file; candidate_type one of the candidate columns; error_category 1-6; clinically_significant True/False.
  Combinations without a row count 0 errors (the published analysis sums rows and divides by the 6 raters).

Where the files are: `layouts.Search` over `expert_sets.PHYSIONET_LAYOUTS` (a `wget -r` of the project, the
project's release folder, or the files directly in DATA_DIR); the first folder holding both files wins. Anything
else is one DatasetNotAvailableError listing every folder looked in. The reader is strict: a missing column, an
unknown candidate or category, a study number outside the study file, a negative or non-numeric count, a study or
rater count other than the release's is refused with the row and the fix. Report text is read in place, never
copied or cached (scoring's own cache is owner-only: `data.private_files`).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from rexrank.data import layouts
from rexrank.data.expert_sets import SIGNIFICANCE, ExpertSet, get_expert_set
from rexrank.errors import DatasetNotAvailableError

NAME = "rexval"
STUDY_ID, REFERENCE = "study_id", "gt_report"
RATING_COLUMNS = ("study_number", "candidate_type", "rater_index", "error_category", "clinically_significant",
                  "num_errors")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")
# The study file holds 50 reports of a few KB; a file far larger is not the release.
MAX_FILE_BYTES = 64 * 1024 * 1024


def locate(root: Path) -> Path:
    """The folder holding both release files, searched as the download unpacks."""
    spec = get_expert_set(NAME)
    root = Path(root).expanduser().absolute()
    search = layouts.Search(f"{spec.title} ({', '.join(spec.files)})", root)
    for candidate in search.candidates(spec.layouts, project=spec.project, versions=spec.versions):
        present = [name for name in spec.files if (candidate.folder / name).is_file()]
        if len(present) == len(spec.files):
            return candidate.folder
        missing = [name for name in spec.files if name not in present]
        search.refuse(candidate.layout, candidate.folder,
                      "absent" if not candidate.folder.is_dir() else f"no {', '.join(missing)}")
    head = (f"{spec.title}: the data directory {root} does not exist." if not root.is_dir()
            else f"{spec.title}: no usable local copy under {root} (DATA_DIR).")
    lines = [head, *(f"  {line}" for line in search.lines()),
             f"  request access: {spec.access}", f"  download:       {spec.download}", "  expected layout:",
             *(f"    {line}" for line in spec.layout_text().splitlines())]
    raise DatasetNotAvailableError("\n".join(lines))


def _rows(path: Path) -> tuple[list[str], list[dict]]:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise DatasetNotAvailableError(f"ReXVal: {path} is {path.stat().st_size:,} bytes, far more than the release "
                                       "file; download it again from PhysioNet")
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            return list(reader.fieldnames or []), rows
    except UnicodeDecodeError as exc:
        raise DatasetNotAvailableError(f"ReXVal: {path} is not UTF-8 text (byte {exc.start:,}); the release is "
                                       "UTF-8: download it again from PhysioNet") from None
    except csv.Error as exc:
        raise DatasetNotAvailableError(f"ReXVal: {path} is not a readable CSV file ({exc}); download it again") from None


def _require(path: Path, columns: list[str], needed) -> None:
    missing = [c for c in needed if c not in columns]
    if missing:
        raise DatasetNotAvailableError(
            f"ReXVal: {path.name} has no column {', '.join(missing)} (its columns: {', '.join(columns) or 'none'}); "
            f"the release's file has {', '.join(needed)}: use the unmodified file from PhysioNet")


def _bad(path: Path, line: int, what: str) -> DatasetNotAvailableError:
    return DatasetNotAvailableError(f"ReXVal: {path.name} line {line}: {what}; use the unmodified file from PhysioNet")


def _integer(path: Path, line: int, column: str, value: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _bad(path, line, f"{column} {value!r} is not a number") from None
    if not math.isfinite(number) or number != int(number):
        raise _bad(path, line, f"{column} {value!r} is not a whole number")
    return int(number)


def read_folder(folder: Path, *, from_hub: bool = False) -> ExpertSet:
    """The 200 pairs and their error counts from a folder holding (somewhere in its layouts) both release files."""
    spec = get_expert_set(NAME)
    found = locate(folder)
    studies_path, ratings_path = (found / name for name in spec.files)
    columns, studies = _rows(studies_path)
    _require(studies_path, columns, (STUDY_ID, REFERENCE, *spec.candidates))
    if len(studies) != spec.n_studies:
        raise DatasetNotAvailableError(f"ReXVal: {studies_path.name} holds {len(studies)} studies, the release has "
                                       f"{spec.n_studies}: use the unmodified file from PhysioNet")
    for line, row in enumerate(studies, start=2):
        empty = [c for c in (STUDY_ID, REFERENCE, *spec.candidates) if not (row.get(c) or "").strip()]
        if empty:
            raise _bad(studies_path, line, f"empty {', '.join(empty)}")

    columns, ratings = _rows(ratings_path)
    _require(ratings_path, columns, RATING_COLUMNS)
    kinds = {kind: k for k, kind in enumerate(spec.candidates)}
    categories = sorted(spec.categories)
    raters: dict[int, int] = {}
    counts: dict[tuple[int, int, int, int, int], float] = {}
    for line, row in enumerate(ratings, start=2):
        study = _integer(ratings_path, line, "study_number", row["study_number"])
        if not 0 <= study < len(studies):
            raise _bad(ratings_path, line, f"study_number {study} is not a row of {studies_path.name} "
                                            f"(0-{len(studies) - 1})")
        kind = (row["candidate_type"] or "").strip()
        if kind not in kinds:
            raise _bad(ratings_path, line, f"candidate_type {kind!r} is not one of {', '.join(spec.candidates)}")
        category = _integer(ratings_path, line, "error_category", row["error_category"])
        if category not in spec.categories:
            raise _bad(ratings_path, line, f"error_category {category} is not one of {', '.join(map(str, categories))}")
        flag = (row["clinically_significant"] or "").strip().lower()
        if flag not in _TRUE + _FALSE:
            raise _bad(ratings_path, line, f"clinically_significant {row['clinically_significant']!r} is not True or "
                                            "False")
        try:
            errors = float(row["num_errors"])
        except (TypeError, ValueError):
            raise _bad(ratings_path, line, f"num_errors {row['num_errors']!r} is not a number") from None
        if not math.isfinite(errors) or errors < 0:
            raise _bad(ratings_path, line, f"num_errors {row['num_errors']!r} is not a count (0 or more)")
        rater = raters.setdefault(_integer(ratings_path, line, "rater_index", row["rater_index"]), len(raters))
        key = (study, kinds[kind], rater, categories.index(category), int(flag in _TRUE))
        # Repeated keys add up, as the published analysis sums every row of a study and candidate.
        counts[key] = counts.get(key, 0.0) + errors
    if len(raters) != spec.n_raters:
        raise DatasetNotAvailableError(f"ReXVal: {ratings_path.name} names {len(raters)} raters, the release has "
                                       f"{spec.n_raters}: use the unmodified file from PhysioNet")

    n_kinds = len(spec.candidates)
    rater_order = sorted(raters)
    errors = np.zeros((len(studies) * n_kinds, len(raters), len(categories), len(SIGNIFICANCE)))
    position = {index: rater_order.index(index) for index in raters}
    by_slot = {slot: index for index, slot in raters.items()}
    for (study, kind, slot, category, significant), value in counts.items():
        errors[study * n_kinds + kind, position[by_slot[slot]], category, significant] = value
    pairs = [(row, kind) for row in studies for kind in spec.candidates]
    return ExpertSet(
        name=NAME, study_ids=[row[STUDY_ID].strip() for row, _ in pairs], candidates=[kind for _, kind in pairs],
        references=[row[REFERENCE] for row, _ in pairs], hypotheses=[row[kind] for row, kind in pairs],
        raters=[str(index) for index in rater_order], categories=categories, errors=errors,
        source=f"hub:{found}" if from_hub else str(found))
