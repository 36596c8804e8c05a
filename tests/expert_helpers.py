"""Synthetic expert-set files in exactly the releases' layouts (data.builders.rexval and .radevalx document them and
their sources). ReXVal: 50 studies x 4 candidates, 6 raters, categories 1-6, significant True/False, rows only for
non-zero counts. RadEvalX: two count files of 100 rows, header report_id,ground_truth,M2Tr-Generation,1..8, most
count cells blank."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from rexrank.data.expert_sets import get_expert_set

WORDS = ("no acute cardiopulmonary process", "small left pleural effusion", "mild cardiomegaly",
         "right lower lobe opacity", "stable median sternotomy wires", "no pneumothorax", "low lung volumes")


def write_rexval(folder: Path, seed: int = 0, *, extra_rows: list[dict] | None = None) -> tuple[Path, np.ndarray]:
    """Both files into `folder`; returns the folder and the (200, 6, 6, 2) error counts written."""
    spec = get_expert_set("rexval")
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    studies, ratings = spec.files
    errors = np.zeros((spec.n_pairs, spec.n_raters, len(spec.categories), 2))
    with (folder / studies).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["study_id", "gt_report", *spec.candidates])
        for s in range(spec.n_studies):
            reference = ". ".join(rng.choice(WORDS, size=3, replace=False)) + "."
            candidates = [". ".join(rng.choice(WORDS, size=int(rng.integers(1, 4)), replace=False)) + "."
                          for _ in spec.candidates]
            writer.writerow([str(50000000 + s), reference, *candidates])
    with (folder / ratings).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["study_number", "candidate_type", "rater_index", "error_category", "clinically_significant",
                         "num_errors"])
        for s in range(spec.n_studies):
            for k, kind in enumerate(spec.candidates):
                quality = rng.poisson(1.0)
                for r in range(spec.n_raters):
                    for c in sorted(spec.categories):
                        for significant in (False, True):
                            n = int(rng.poisson(0.15 * (1 + quality)))
                            if n:
                                writer.writerow([s, kind, r, c, significant, n])
                                errors[s * 4 + k, r, c - 1, int(significant)] += n
        for row in extra_rows or []:
            writer.writerow([row[c] for c in ("study_number", "candidate_type", "rater_index", "error_category",
                                              "clinically_significant", "num_errors")])
    return folder, errors


def write_radevalx(folder: Path, seed: int = 0) -> tuple[Path, np.ndarray, int]:
    """Both count files into `folder`; returns the folder, the (100, 1, 8, 2) counts written (blank = 0) and the
    number of blank cells."""
    spec = get_expert_set("radevalx")
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    errors = np.zeros((spec.n_studies, 1, 8, 2))
    texts = [(". ".join(rng.choice(WORDS, size=3, replace=False)) + ".",
              ". ".join(rng.choice(WORDS, size=2, replace=False)) + ".") for _ in range(spec.n_studies)]
    blank = 0
    for significant, name in ((1, spec.files[0]), (0, spec.files[1])):
        with (folder / name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["report_id", "ground_truth", "M2Tr-Generation", *map(str, range(1, 9))])
            for i, (reference, candidate) in enumerate(texts):
                cells = []
                for c in range(8):
                    n = int(rng.poisson(0.3))
                    if n == 0 and rng.random() < 0.9:
                        cells.append("")
                        blank += 1
                    else:
                        cells.append(str(n))
                        errors[i, 0, c, significant] = n
                writer.writerow([f"CXR{1000 + i}_IM-{i:04d}", reference, candidate, *cells])
    return folder, errors, blank
