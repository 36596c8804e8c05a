"""RadEvalX 1.0.0 (PhysioNet `rad-eval-x`): 100 IU-Xray studies, one M2Tr report each, two radiologists' consensus
error counts in 8 categories, clinically significant and insignificant in two files.

The files (facts and their public sources in `data.expert_sets`): RadEval_clinically_significant_errors.csv and
RadEval-clinically_insignificant_errors.csv, 100 rows each, header exactly
`report_id,ground_truth,M2Tr-Generation,1,2,3,4,5,6,7,8`: the study's id, the reference report, the generated report,
and the count of errors of each category. Both files hold the same studies with the same texts (checked).

What is not confirmed, and how it is read: most count cells are blank and the release does not say what a blank
means. A blank is read as 0 errors (a consensus annotation that names no error of a category) and every report on
RadEvalX says so, with the number of blank cells (`ExpertSet.notes`). Any other value must be a whole number >= 0.
The 8 categories are shown by number: their meanings were not found in a public source. The counts are one consensus
per pair, so there is no per-rater ceiling.

Strict like the ReXVal reader: a missing column, a duplicate or unknown study, texts that differ between the two
files, a count that is not a whole number >= 0, or a study count other than 100 is one DatasetNotAvailableError with
the file, the line and the fix. Text is read in place, never copied.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rexrank.data.expert_sets import (
    SIGNIFICANCE,
    ExpertSet,
    bad_value,
    get_expert_set,
    locate,
    read_rows,
    unmodified,
    whole_number,
)
from rexrank.errors import DatasetNotAvailableError

NAME = "radevalx"
REPORT_ID, REFERENCE = "report_id", "ground_truth"
CONSENSUS = "consensus"


def _read(spec, path: Path, categories: list[int]) -> tuple[dict[str, dict], int]:
    """{report_id: row} of one count file, and how many of its count cells are blank."""
    candidate = spec.candidates[0]
    columns = (REPORT_ID, REFERENCE, candidate, *map(str, categories))
    rows = read_rows(spec, path, columns)
    if len(rows) != spec.n_studies:
        raise DatasetNotAvailableError(f"{spec.label}: {path.name} holds {len(rows)} studies, the release has "
                                       f"{spec.n_studies}: {unmodified(spec)}")
    out: dict[str, dict] = {}
    blank = 0
    for line, row in enumerate(rows, start=2):
        study = (row[REPORT_ID] or "").strip()
        empty = [c for c in (REPORT_ID, REFERENCE, candidate) if not (row[c] or "").strip()]
        if empty:
            raise bad_value(spec, path, line, f"empty {', '.join(empty)}")
        if study in out:
            raise bad_value(spec, path, line, f"report_id {study!r} appears twice")
        counts = []
        for code in categories:
            cell = (row[str(code)] or "").strip()
            if not cell:
                blank += 1
                counts.append(0.0)
                continue
            value = whole_number(spec, path, line, f"category {code}", cell)
            if value < 0:
                raise bad_value(spec, path, line, f"category {code} {cell!r} is not a count (0 or more)")
            counts.append(float(value))
        out[study] = {"line": line, "reference": row[REFERENCE], "hypothesis": row[candidate], "counts": counts}
    return out, blank


def read_folder(folder: Path, *, from_hub: bool = False) -> ExpertSet:
    """The 100 pairs and their consensus error counts from a folder holding (in one of its layouts) both files."""
    spec = get_expert_set(NAME)
    found = locate(spec, folder)
    categories = sorted(spec.categories)
    significant_path, insignificant_path = (found / name for name in spec.files)
    significant, blank_s = _read(spec, significant_path, categories)
    insignificant, blank_i = _read(spec, insignificant_path, categories)
    for study, row in insignificant.items():
        if study not in significant:
            raise bad_value(spec, insignificant_path, row["line"],
                            f"report_id {study!r} is not in {significant_path.name}")
        if (row["reference"], row["hypothesis"]) != (significant[study]["reference"], significant[study]["hypothesis"]):
            raise bad_value(spec, insignificant_path, row["line"],
                            f"report {study!r} has other texts than in {significant_path.name}")
    order = list(significant)  # the significant file's row order
    errors = np.zeros((len(order), 1, len(categories), len(SIGNIFICANCE)))
    for i, study in enumerate(order):
        errors[i, 0, :, SIGNIFICANCE.index("significant")] = significant[study]["counts"]
        errors[i, 0, :, SIGNIFICANCE.index("insignificant")] = insignificant[study]["counts"]
    cells = 2 * len(order) * len(categories)
    note = (f"{spec.label}: {blank_s + blank_i:,} of {cells:,} error-count cells are blank and were read as 0 errors "
            "(the release does not say what a blank means); counts are the radiologists' consensus, so there is no "
            "inter-rater ceiling")
    return ExpertSet(
        name=NAME, study_ids=order, candidates=[spec.candidates[0]] * len(order),
        references=[significant[s]["reference"] for s in order],
        hypotheses=[significant[s]["hypothesis"] for s in order], raters=[CONSENSUS], categories=categories,
        errors=errors, source=f"hub:{found}" if from_hub else str(found), notes=[note])
