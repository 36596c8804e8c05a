"""ReXVal 1.0.0 (PhysioNet `rexval-dataset`): 50 MIMIC-CXR studies x 4 candidate reports, 6 radiologists' error counts.

The files (facts in `data.expert_sets`, with the public sources they come from):
- 50_samples_gt_and_candidates.csv: one row per study; columns study_id, gt_report (the reference), then one column
  per candidate kind: radgraph, bertscore, s_emb, bleu (each the candidate report of that kind).
- 6_valid_raters_per_rater_error_categories.csv: one row per (study_number, candidate_type, rater_index,
  error_category, clinically_significant) with num_errors. study_number is the 0-based row of the study in the
  first file; candidate_type one of the candidate columns; error_category 1-6; clinically_significant True/False.
  Combinations without a row count 0 errors (the published analysis sums rows and divides by the 6 raters).

Where the files are: `expert_sets.locate` over the spec's layouts (a `wget -r` of the project, the project's
release folder, or the files directly in DATA_DIR); anything else is one DatasetNotAvailableError listing every
folder looked in. The reader is strict: a missing column, an unknown candidate or category, a study number outside
the study file, a negative or non-numeric count, a study or rater count other than the release's is refused with
the file, the line and the fix. Report text is read in place, never copied or cached (scoring's own cache is
owner-only: `data.private_files`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rexrank.data.expert_sets import (
    SIGNIFICANCE,
    ExpertSet,
    bad_value,
    error_count,
    get_expert_set,
    locate,
    read_rows,
    unmodified,
    whole_number,
)
from rexrank.errors import DatasetNotAvailableError

NAME = "rexval"
STUDY_ID, REFERENCE = "study_id", "gt_report"
RATING_COLUMNS = ("study_number", "candidate_type", "rater_index", "error_category", "clinically_significant",
                  "num_errors")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def read_folder(folder: Path, *, from_hub: bool = False) -> ExpertSet:
    """The 200 pairs and their error counts from a folder holding (somewhere in its layouts) both release files."""
    spec = get_expert_set(NAME)
    found = locate(spec, folder)
    studies_path, ratings_path = (found / name for name in spec.files)
    studies = read_rows(spec, studies_path, (STUDY_ID, REFERENCE, *spec.candidates))
    if len(studies) != spec.n_studies:
        raise DatasetNotAvailableError(f"ReXVal: {studies_path.name} holds {len(studies)} studies, the release has "
                                       f"{spec.n_studies}: {unmodified(spec)}")
    for line, row in enumerate(studies, start=2):
        empty = [c for c in (STUDY_ID, REFERENCE, *spec.candidates) if not (row.get(c) or "").strip()]
        if empty:
            raise bad_value(spec, studies_path, line, f"empty {', '.join(empty)}")

    ratings = read_rows(spec, ratings_path, RATING_COLUMNS)
    kinds = {kind: k for k, kind in enumerate(spec.candidates)}
    categories = sorted(spec.categories)
    counts: dict[tuple[int, int, int, int, int], float] = {}
    for line, row in enumerate(ratings, start=2):
        study = whole_number(spec, ratings_path, line, "study_number", row["study_number"])
        if not 0 <= study < len(studies):
            raise bad_value(spec, ratings_path, line, f"study_number {study} is not a row of {studies_path.name} "
                                                      f"(0-{len(studies) - 1})")
        kind = (row["candidate_type"] or "").strip()
        if kind not in kinds:
            raise bad_value(spec, ratings_path, line,
                            f"candidate_type {kind!r} is not one of {', '.join(spec.candidates)}")
        category = whole_number(spec, ratings_path, line, "error_category", row["error_category"])
        if category not in spec.categories:
            raise bad_value(spec, ratings_path, line,
                            f"error_category {category} is not one of {', '.join(map(str, categories))}")
        flag = (row["clinically_significant"] or "").strip().lower()
        if flag not in _TRUE + _FALSE:
            raise bad_value(spec, ratings_path, line,
                            f"clinically_significant {row['clinically_significant']!r} is not True or False")
        errors = error_count(spec, ratings_path, line, "num_errors", row["num_errors"])
        rater = whole_number(spec, ratings_path, line, "rater_index", row["rater_index"])
        key = (study, kinds[kind], rater, categories.index(category), int(flag in _TRUE))
        # Repeated keys add up, as the published analysis sums every row of a study and candidate.
        counts[key] = counts.get(key, 0.0) + errors
    raters = sorted({key[2] for key in counts})
    if len(raters) != spec.n_raters:
        raise DatasetNotAvailableError(f"ReXVal: {ratings_path.name} names {len(raters)} raters, the release has "
                                       f"{spec.n_raters}: {unmodified(spec)}")

    n_kinds = len(spec.candidates)
    position = {rater: r for r, rater in enumerate(raters)}
    errors = np.zeros((len(studies) * n_kinds, len(raters), len(categories), len(SIGNIFICANCE)))
    for (study, kind, rater, category, significant), value in counts.items():
        errors[study * n_kinds + kind, position[rater], category, significant] = value
    pairs = [(row, kind) for row in studies for kind in spec.candidates]
    return ExpertSet(
        name=NAME, study_ids=[row[STUDY_ID].strip() for row, _ in pairs], candidates=[kind for _, kind in pairs],
        references=[row[REFERENCE] for row, _ in pairs], hypotheses=[row[kind] for row, kind in pairs],
        raters=[str(rater) for rater in raters], categories=categories, errors=errors,
        source=f"hub:{found}" if from_hub else str(found))
