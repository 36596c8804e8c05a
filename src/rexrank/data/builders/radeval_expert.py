"""The RadEval expert dataset (Hub ``IAMJB/RadEvalExpertDataset``, the RadEval authors): 208 rows, each a reference
report and three candidate reports, with one radiologist's error counts for each candidate (624 pairs).

The file (facts and their public sources in `data.expert_sets`): reader_study_final_with_annotationsv3.csv, columns
exactly ``annotator, type, ground_truth, images_path, prediction1, prediction2, prediction3, annotation1,
annotation2, annotation3``. ``images_path`` names the study (a study may have a Findings and an Impression row:
``type``), ``annotationK`` holds the reader's counts for ``predictionK`` as lines of text:

    Clinically significant errors:
    1. <category>: 0
    ...
    7. <category>: 1
    Clinically insignificant errors:
    1. <category>: 0
    ...

A section header is ``[clinically] significant|insignificant [errors]:`` (any case); a count line is the category
number 1-7, ``.`` or ``)``, optionally a label, and the count after ``:`` or ``=`` at the end of the line (or the
count alone: ``3. 1``). The counts read are only those numbers; the labels are not interpreted.

What is not confirmed, and how it is read: the public description of the file says two category counts of the
release are not explicit integers, and that a blank annotation is not a count of zero. So a pair whose annotation is
blank, lacks a section or a category, or gives a count that is not a whole number is left out (not read as 0), and
every report on this set says how many pairs were left out and why (``ExpertSet.notes``). Each pair carries one
reader's counts (two readers share the rows), so, as for a consensus, there is no inter-rater ceiling.

Strict otherwise: a missing column, a row count other than 208, an empty reference or candidate, an unknown line
in an annotation, a category outside 1-7, a count line before any section header or a category given twice in one
section is one DatasetNotAvailableError with the file, the line (the CSV record's first line) and the fix. Text is
read in place, never copied.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from rexrank.data.expert_sets import SIGNIFICANCE, ExpertSet, bad_value, get_expert_set, locate, read_rows, unmodified
from rexrank.errors import DatasetNotAvailableError

NAME = "radeval_expert"
ANNOTATOR, TYPE, REFERENCE, STUDY = "annotator", "type", "ground_truth", "images_path"
SLOTS = (1, 2, 3)
READER = "reader"  # one reader's counts per pair: the set's only rater column

_HEADER = re.compile(r"\s*(?:clinically\s+)?(insignificant|significant)(?:\s+errors)?\s*:\s*", re.IGNORECASE)
_NUMBERED = re.compile(r"\s*(\d+)\s*[.)](.*)")
_TERMINAL_COUNT = re.compile(r".*[:=]\s*(\S+?)\s*[.;]?\s*")


class _Unreadable(Exception):
    """A count the reader did not give as a whole number: the pair is left out, with a note."""


def _parse(text: str, categories: list[int], where) -> np.ndarray:
    """(categories, significance) counts of one annotation cell; ``where(problem)`` makes the file's error."""
    counts = np.full((len(categories), len(SIGNIFICANCE)), np.nan)
    section = None
    for raw in text.splitlines():
        if not raw.strip():
            continue
        header = _HEADER.fullmatch(raw)
        if header:
            section = SIGNIFICANCE.index(header.group(1).lower())
            continue
        numbered = _NUMBERED.fullmatch(raw)
        if not numbered:
            raise where(f"unknown annotation line {raw.strip()[:60]!r} (expected a section header or a numbered "
                        "category count)")
        code, rest = int(numbered.group(1)), numbered.group(2)
        if code not in categories:
            raise where(f"error category {code} is not one of {categories[0]}-{categories[-1]}")
        if section is None:
            raise where(f"category {code}'s count comes before any 'clinically significant/insignificant errors:' "
                        "header")
        if not np.isnan(counts[categories.index(code), section]):
            raise where(f"category {code} is given twice in the {SIGNIFICANCE[section]} section")
        terminal = _TERMINAL_COUNT.fullmatch(rest)
        value = (terminal.group(1) if terminal else rest).strip().rstrip(".;").strip()
        if not value.isdigit():
            raise _Unreadable(f"category {code} ({SIGNIFICANCE[section]}) has no whole-number count")
        counts[categories.index(code), section] = float(value)
    if np.isnan(counts).any():
        missing = sorted({SIGNIFICANCE[s] for _, s in zip(*np.nonzero(np.isnan(counts)))})
        raise _Unreadable(f"no count for some categories of the {' and '.join(missing)} section(s)")
    return counts


def read_folder(folder: Path, *, from_hub: bool = False) -> ExpertSet:
    """The pairs with a readable annotation and their reader's error counts, from a folder holding the file."""
    spec = get_expert_set(NAME)
    found = locate(spec, folder)
    path = found / spec.files[0]
    predictions, annotations = [f"prediction{k}" for k in SLOTS], [f"annotation{k}" for k in SLOTS]
    rows = read_rows(spec, path, (ANNOTATOR, TYPE, REFERENCE, STUDY, *predictions, *annotations))
    if len(rows) != spec.n_studies:
        raise DatasetNotAvailableError(f"{spec.label}: {path.name} holds {len(rows)} rows, the release has "
                                       f"{spec.n_studies}: {unmodified(spec)}")
    categories = sorted(spec.categories)
    study_ids, candidates, references, hypotheses, errors = [], [], [], [], []
    left_out: dict[str, int] = {}
    line = 2  # the CSV record's first line: records may span lines (multi-line annotations)
    for row in rows:
        if None in row or any(value is None for value in row.values()):
            raise bad_value(spec, path, line, "a row with another number of cells than the header")
        empty = [c for c in (STUDY, REFERENCE, *predictions) if not row[c].strip()]
        if empty:
            raise bad_value(spec, path, line, f"empty {', '.join(empty)}")
        for k in SLOTS:
            text = row[f"annotation{k}"]
            try:
                if not text.strip():
                    raise _Unreadable("blank annotation")
                counts = _parse(text, categories,
                                lambda problem, k=k: bad_value(spec, path, line, f"annotation{k}: {problem}"))
            except _Unreadable as why:
                reason = str(why)
                left_out[reason] = left_out.get(reason, 0) + 1
                continue
            study_ids.append(row[STUDY].strip())
            candidates.append(f"{row[TYPE].strip().lower() or 'report'}:prediction{k}")
            references.append(row[REFERENCE])
            hypotheses.append(row[f"prediction{k}"])
            errors.append(counts[None])
        line += 1 + sum(value.count("\n") for value in row.values())
    notes = ["RadEval expert set: each pair carries one reader's counts (two readers share the rows), so there is "
             "no inter-rater ceiling"]
    if left_out:
        total = sum(left_out.values())
        why = "; ".join(f"{n} {reason}" for reason, n in sorted(left_out.items()))
        notes.append(f"RadEval expert set: {total} of {spec.n_pairs} pairs left out, not read as 0 errors ({why})")
    if not study_ids:
        raise DatasetNotAvailableError(f"{spec.label}: {path.name} has no pair with a readable annotation; "
                                       f"{unmodified(spec)}")
    return ExpertSet(name=NAME, study_ids=study_ids, candidates=candidates, references=references,
                     hypotheses=hypotheses, raters=[READER], categories=categories,
                     errors=np.concatenate(errors).reshape(len(study_ids), 1, len(categories), len(SIGNIFICANCE)),
                     source=f"hub:{found}" if from_hub else str(found), notes=notes)
