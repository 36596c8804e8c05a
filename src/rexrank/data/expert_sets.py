"""Expert-rated sets for meta-evaluation: radiologists' error counts on (reference, candidate) report pairs.

These are not leaderboard test sets (nothing generates reports for them and the board never shows them), so they
live here and not in `data/catalog.py`: that module's names, splits and `LEADERBOARD_ORDER` are what every stage
treats as "a test set". This module is the one owner of every expert-set fact: name, aliases, source files, the
PhysioNet project and release, the number of studies, candidates per study and raters, the error categories,
licence and access steps, the layouts a download lands in, and ReXrank's gated Hub copy
(`<REXRANK_HUB_ORG>/<hub_name>`, the catalog's organisation).

`read(name, data_dir)` finds a local copy as its download unpacks (`data/layouts.py`) and returns an `ExpertSet`;
`read(name, from_hub=True)` fetches the source files from the gated Hub repo into an owner-only folder
(`data/private_files.py`), since they hold licensed report text. A local copy is read in place and never copied.

What an expert set may see and change: it reads the named CSV files only; it writes nothing but the Hub route's
owner-only download folder. Every value in the files is checked (columns, codes, ranges, counts) and anything
unexpected is one DatasetNotAvailableError naming the file, the row and the fix.

Confirmed from public sources and not: each spec's `sources` names where its layout facts come from. RadEvalX's
count files leave most cells blank and the release does not say what a blank means; they are read as 0 errors (an
assumption every RadEvalX report states in its notes), and its 8 categories' meanings were not found in a public
source, so they are shown by number. The RadEval expert dataset (Hub IAMJB/RadEvalExpertDataset) is read from the
authors' own Hub repo (``hub_repo``) into an owner-only folder like the licensed sets: its card says MIT, but its
reports come from MIMIC-CXR, whose data use agreement still applies to them; a pair whose annotation gives no
whole-number count is left out (never read as 0) and its reports say so.
"""

from __future__ import annotations

import csv
import importlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rexrank.data import layouts
from rexrank.data.catalog import hub_org
from rexrank.data.layouts import Layout
from rexrank.errors import DatasetNotAvailableError, UnknownNameError

# Error counts are stored per (pair, rater, category, significance); SIGNIFICANCE indexes the last axis.
SIGNIFICANCE = ("insignificant", "significant")


@dataclass(frozen=True)
class ExpertSetSpec:
    name: str
    title: str
    label: str  # short name in messages and tables
    reader: str  # "module:function" returning an ExpertSet from a folder holding `files`
    project: str  # PhysioNet project slug (its folder name in a `wget -r` download)
    versions: tuple[str, ...]  # release folders, newest first
    files: tuple[str, ...]  # the source files, as the release names them
    n_studies: int
    candidates: tuple[str, ...]  # candidate report kinds per study, as the source names them
    n_raters: int  # radiologists who rated
    categories: dict[int, str]  # error category code -> what it means
    licence: str
    access: str
    download: str
    layouts: tuple[Layout, ...]
    hub_name: str  # ReXrank's gated Hub copy: <hub_org()>/<hub_name>, the release's files at the repo root
    citation: str
    aliases: tuple[str, ...] = ()
    sources: tuple[str, ...] = field(default_factory=tuple)  # where the layout facts come from
    consensus: bool = False  # one count per pair (agreed, or one reader's) instead of each rater's: no ceiling
    hub_repo: str | None = None  # the Hub route reads this repo (the publisher's own) instead of ReXrank's copy

    @property
    def n_pairs(self) -> int:
        return self.n_studies * len(self.candidates)

    def layout_text(self) -> str:
        lines = [f"DATA_DIR/{layout.prefix.replace('{project}', self.project).replace('{version}', self.versions[0])}"
                 f"{'/' if layout.prefix else ''}{{{', '.join(self.files)}}}   ({layout.name})"
                 for layout in self.layouts]
        return "\n".join(lines)


# PhysioNet's download routes: `wget -r -N -c -np --user USER --ask-password https://physionet.org/files/<project>/
# <version>/` keeps the host and path; the project page's file browser saves the files into any folder.
PHYSIONET_LAYOUTS = (
    Layout("wget -r", "physionet.org/files/{project}/{version}"),
    Layout("project folder", "{project}/{version}"),
    Layout("flat", ""),
)

EXPERT_SETS: dict[str, ExpertSetSpec] = {
    spec.name: spec
    for spec in (
        ExpertSetSpec(
            name="rexval",
            title="ReXVal (Radiology Report Expert Evaluation) 1.0.0",
            label="ReXVal",
            reader="rexrank.data.builders.rexval:read_folder",
            project="rexval-dataset",
            versions=("1.0.0",),
            files=("50_samples_gt_and_candidates.csv", "6_valid_raters_per_rater_error_categories.csv"),
            n_studies=50,
            # The candidates' columns in 50_samples_gt_and_candidates.csv and the rater file's candidate_type values:
            # the four retrieval candidates of Yu et al. (nearest report by RadGraph, BERTScore, SembScore, BLEU).
            candidates=("radgraph", "bertscore", "s_emb", "bleu"),
            n_raters=6,
            categories={1: "false prediction of finding", 2: "omission of finding",
                        3: "incorrect location/position of finding", 4: "incorrect severity of finding",
                        5: "mention of comparison that is not present in the reference",
                        6: "omission of comparison describing a change from a previous study"},
            licence="PhysioNet Credentialed Health Data License 1.5.0",
            access="https://physionet.org/content/rexval-dataset/1.0.0/ (credentialed PhysioNet account, CITI "
                   "training, signed data use agreement)",
            download="50_samples_gt_and_candidates.csv and 6_valid_raters_per_rater_error_categories.csv",
            layouts=PHYSIONET_LAYOUTS,
            hub_name="rexval",
            aliases=("rex-val", "rexval-dataset"),
            citation="Yu F, Endo M, Krishnan R, et al. Evaluating progress in automatic chest X-ray radiology report "
                     "generation. Patterns 2023;4(9):100802. Dataset: Radiology Report Expert Evaluation (ReXVal) "
                     "Dataset 1.0.0, PhysioNet, https://doi.org/10.13026/2fp8-qr71",
            sources=(
                "PhysioNet rexval-dataset 1.0.0 page: 6 radiologists, 6 error categories, clinically significant or "
                "not, 4 candidates for 50 MIMIC-CXR studies (200 pairs)",
                "the columns: MultiMedEval's test of the ReXVal correlation (reads study_id, gt_report, then the "
                "radgraph, bertscore, s_emb, bleu candidates by position; sums num_errors per study_number and "
                "candidate_type, divides by 6) and a ReXVal processor that reads gt_report, columns[2:], "
                "study_number == row index, candidate_type, error_category 1-6, clinically_significant, num_errors",
            ),
        ),
        ExpertSetSpec(
            name="radevalx",
            title="RadEvalX (Radiology Report Generation Models Evaluation Dataset for Chest X-rays) 1.0.0",
            label="RadEvalX",
            reader="rexrank.data.builders.radevalx:read_folder",
            project="rad-eval-x",
            versions=("1.0.0",),
            files=("RadEval_clinically_significant_errors.csv", "RadEval-clinically_insignificant_errors.csv"),
            n_studies=100,
            candidates=("M2Tr-Generation",),  # one report per study, generated by M2Tr
            n_raters=2,
            categories={code: "category {code} (its meaning was not found in a public source)".format(code=code)
                        for code in range(1, 9)},
            licence="CC BY-NC-SA 4.0 (as public code that downloads the release records it; see the project page)",
            access="https://physionet.org/content/rad-eval-x/1.0.0/ (open access on PhysioNet)",
            download="RadEval_clinically_significant_errors.csv and RadEval-clinically_insignificant_errors.csv "
                     "(metrcis_scores_m2tr.csv, the authors' metric values, is not needed)",
            layouts=(*PHYSIONET_LAYOUTS,
                     # PhysioNet's "Download the ZIP file" unpacks to the title's slug and the release.
                     Layout("zip", "radiology-report-generation-models-evaluation-dataset-for-chest-x-rays-radevalx-"
                                   "1.0.0")),
            hub_name="radevalx",
            aliases=("rad-eval-x", "radeval-x"),
            consensus=True,
            citation="Radiology-Aware Model-Based Evaluation Metric for Report Generation, arXiv:2311.16764 (the "
                     "paper that gathered these annotations). Dataset: RadEvalX 1.0.0, PhysioNet, "
                     "https://physionet.org/content/rad-eval-x/1.0.0/",
            sources=(
                "the PhysioNet rad-eval-x 1.0.0 description (as DataCite mirrors it): 100 IU-Xray studies, one M2Tr report each, two "
                "board-certified radiologists, clinically significant and insignificant errors in 8 categories",
                "the file names, the zip folder and both count files' header 'report_id,ground_truth,M2Tr-Generation,"
                "1,2,3,4,5,6,7,8' (100 rows each): public code that downloads the release, checks it against "
                "the release's SHA256SUMS and pins the headers; the same source records that 1,423 of the 1,600 "
                "count cells are blank and that the release does not say what a blank means",
            ),
        ),
        ExpertSetSpec(
            name="radeval_expert",
            title="RadEval expert dataset (IAMJB/RadEvalExpertDataset, the RadEval authors)",
            label="RadEval expert set",
            reader="rexrank.data.builders.radeval_expert:read_folder",
            project="RadEvalExpertDataset",  # the repo's name: the folder of a `git clone`
            versions=("b4bd9d6",),  # the Hub commit whose layout is described below
            files=("reader_study_final_with_annotationsv3.csv",),
            n_studies=208,  # rows: a reference and three candidates each (a study may have a findings and an
            # impression row; the bootstrap resamples studies, by images_path)
            candidates=("prediction1", "prediction2", "prediction3"),
            n_raters=2,  # two readers share the rows; each pair carries one reader's counts
            categories={1: "false report of a finding", 2: "missing a finding", 3: "wrong location/position of a "
                        "finding", 4: "wrong severity of a finding", 5: "comparison not in the reference",
                        6: "omitted comparison describing a change", 7: "grammar/readability"},
            licence="the Hub card says MIT; the reports are drawn from MIMIC-CXR (PhysioNet Credentialed Health Data "
                    "License 1.5.0) and CheXpert, whose terms still apply to their text, so ReXrank treats it as "
                    "licensed: read into an owner-only folder, never republished (only aggregates leave)",
            access="https://huggingface.co/datasets/IAMJB/RadEvalExpertDataset (public on the Hub; the MIMIC-CXR "
                   "reports in it remain under PhysioNet's data use agreement)",
            download="reader_study_final_with_annotationsv3.csv (`huggingface-cli download IAMJB/RadEvalExpertDataset "
                     "--repo-type dataset --local-dir DATA_DIR`, or a git clone)",
            layouts=(Layout("flat", ""), Layout("git clone", "{project}")),
            hub_name="radeval_expert",
            hub_repo="IAMJB/RadEvalExpertDataset",
            aliases=("radeval", "radeval-expert", "radevalexpertdataset"),
            consensus=True,
            citation="Xu J, Zhang X, Abderezaei J, et al. RadEval: A framework for radiology text evaluation. "
                     "EMNLP 2025 System Demonstrations, pp. 546-557, https://aclanthology.org/2025.emnlp-demos.40/. "
                     "Dataset: https://huggingface.co/datasets/IAMJB/RadEvalExpertDataset",
            sources=(
                "the RadEval README (github.com/jbdel/RadEval): 'a curated evaluation set annotated by board-certified "
                "radiologists', published on the Hub as IAMJB/RadEvalExpertDataset; the Hub page: one file, "
                "reader_study_final_with_annotationsv3.csv (692 kB, commit b4bd9d6), 208 rows, licence MIT",
                "the columns (annotator, type, ground_truth, images_path, prediction1-3, annotation1-3) and the "
                "annotation grammar (significant/insignificant section headers, numbered category lines 1-7 ending "
                "in the count; 7 categories: false finding, omission, location, severity, unsupported comparison, "
                "omitted change, grammar/readability; two counts of the release not explicit integers; a blank "
                "annotation not a zero): public code that pins that commit, checks the columns and audits the "
                "annotation lines, and its protocol notes; also public code that loads the set with "
                "datasets.load_dataset and expands each row into three (prediction, annotation) pairs",
                "not confirmed: the exact wording of the category labels (not read: only the numbers are) and that "
                "the categories are numbered in the order listed",
            ),
        ),
    )
}


@dataclass
class ExpertSet:
    """One expert-rated set, read and checked: pair i is (references[i], hypotheses[i]) of study study_ids[i].

    `errors[i, r, c, s]`: errors rater r counted in pair i, category `categories[c]`, s = 1 clinically significant
    (SIGNIFICANCE). Missing rows in the source count 0 (the source lists only non-zero counts)."""

    name: str
    study_ids: list[str]
    candidates: list[str]
    references: list[str]
    hypotheses: list[str]
    raters: list[str]
    categories: list[int]
    errors: np.ndarray
    source: str  # the folder read (or "hub:<repo>")
    notes: list[str] = field(default_factory=list)  # assumptions every report on this set must state

    @property
    def groups(self) -> np.ndarray:
        """Each pair's study as an integer 0..n_studies-1: the unit the bootstrap resamples."""
        order = {study: k for k, study in enumerate(dict.fromkeys(self.study_ids))}
        return np.asarray([order[s] for s in self.study_ids], dtype=np.int64)


def canonical_expert_set(name: str) -> str:
    key = str(name).strip().lower()
    for spec in EXPERT_SETS.values():
        if key == spec.name or key in spec.aliases:
            return spec.name
    raise UnknownNameError(f"Unknown expert set {name!r}. Available: {', '.join(EXPERT_SETS)}")


def get_expert_set(name: str) -> ExpertSetSpec:
    return EXPERT_SETS[canonical_expert_set(name)]


def hub_repo_id(name: str, org: str | None = None) -> str:
    """The Hub repo the Hub route reads: the publisher's own (``hub_repo``) where the set is published on the Hub,
    else ReXrank's gated copy, <REXRANK_HUB_ORG or rexrank>/<hub_name>."""
    spec = get_expert_set(name)
    return spec.hub_repo or f"{org or hub_org()}/{spec.hub_name}"


def hub_cache_dir(name: str) -> Path:
    """Where the Hub route keeps its download: owner-only, under $REXRANK_CACHE_DIR or ~/.cache/rexrank."""
    root = os.environ.get("REXRANK_CACHE_DIR") or Path.home() / ".cache" / "rexrank"
    return Path(root).expanduser() / "expert_sets" / canonical_expert_set(name)


def read(name: str, data_dir: str | os.PathLike | None = None, *, from_hub: bool = False,
         token: str | bool | None = None) -> ExpertSet:
    """An expert set from its local copy (`data_dir`, searched as the download unpacks) or, with `from_hub`, from
    ReXrank's gated Hub copy (downloaded once into an owner-only folder)."""
    from rexrank.errors import ConfigError

    spec = get_expert_set(name)
    if from_hub:
        if data_dir is not None:
            raise ConfigError("give either a data directory or the Hub route (--from-hub), not both")
        folder = _download(spec, token)
    elif data_dir is None:
        raise ConfigError(f"{spec.title}: name its local copy with --data-dir DIR (request access at {spec.access}), "
                          f"or read ReXrank's gated copy with --from-hub ({hub_repo_id(spec.name)})")
    else:
        folder = Path(data_dir).expanduser()
    module, _, function = spec.reader.partition(":")
    return getattr(importlib.import_module(module), function)(folder, from_hub=from_hub)


def _download(spec: ExpertSetSpec, token) -> Path:
    from rexrank.data.hub import download_file
    from rexrank.data.private_files import make_private, private_folder

    folder = private_folder(hub_cache_dir(spec.name))  # 0700 before any licensed byte lands in it
    repo = hub_repo_id(spec.name)
    for filename in spec.files:
        download_file(repo, filename, local_dir=folder, token=token)
    make_private([folder])
    return folder


# ---- what both readers share: finding the files, reading CSV rows, one error per problem -----------------------
# A release file is a few hundred KB; a file far larger is not the release.
MAX_FILE_BYTES = 64 * 1024 * 1024


def locate(spec: ExpertSetSpec, root: str | os.PathLike) -> Path:
    """The folder holding every file of the release, searched as the download unpacks (`spec.layouts`); else one
    DatasetNotAvailableError listing every folder looked in, the access steps and the expected layout."""
    root = Path(root).expanduser().absolute()
    search = layouts.Search(f"the files ({', '.join(spec.files)})", root)
    for candidate in search.candidates(spec.layouts, project=spec.project, versions=spec.versions):
        missing = [name for name in spec.files if not (candidate.folder / name).is_file()]
        if not missing:
            return candidate.folder
        search.refuse(candidate.layout, candidate.folder,
                      "absent" if not candidate.folder.is_dir() else f"no {', '.join(missing)}")
    head = (f"{spec.title}: the data directory {root} does not exist." if not root.is_dir()
            else f"{spec.title}: no usable local copy under {root} (DATA_DIR).")
    lines = [head, *(f"  {line}" for line in search.lines()),
             f"  request access: {spec.access}", f"  download:       {spec.download}", "  expected layout:",
             *(f"    {line}" for line in spec.layout_text().splitlines())]
    raise DatasetNotAvailableError("\n".join(lines))


def unmodified(spec: ExpertSetSpec) -> str:
    """The fix for a file that is not the release: where to get it again."""
    return f"use the unmodified release file ({spec.access.split(' ')[0]})"


def read_rows(spec: ExpertSetSpec, path: Path, needed: tuple[str, ...]) -> list[dict]:
    """The rows of one release CSV, after checking its size, encoding and that it has the `needed` columns."""
    if path.stat().st_size > MAX_FILE_BYTES:
        raise DatasetNotAvailableError(f"{spec.label}: {path} is {path.stat().st_size:,} bytes, far more than the "
                                       f"release file; {unmodified(spec)}")
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            columns = list(reader.fieldnames or [])
    except UnicodeDecodeError as exc:
        raise DatasetNotAvailableError(f"{spec.label}: {path} is not UTF-8 text (byte {exc.start:,}); the release "
                                       f"is UTF-8: {unmodified(spec)}") from None
    except csv.Error as exc:
        raise DatasetNotAvailableError(f"{spec.label}: {path} is not a readable CSV file ({exc}); "
                                       f"{unmodified(spec)}") from None
    missing = [c for c in needed if c not in columns]
    if missing:
        raise DatasetNotAvailableError(
            f"{spec.label}: {path.name} has no column {', '.join(missing)} (its columns: "
            f"{', '.join(columns) or 'none'}); the release's file has {', '.join(needed)}: {unmodified(spec)}")
    return rows


def bad_value(spec: ExpertSetSpec, path: Path, line: int, what: str) -> DatasetNotAvailableError:
    return DatasetNotAvailableError(f"{spec.label}: {path.name} line {line}: {what}; {unmodified(spec)}")


def whole_number(spec: ExpertSetSpec, path: Path, line: int, column: str, value: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise bad_value(spec, path, line, f"{column} {value!r} is not a number") from None
    if not math.isfinite(number) or number != int(number):
        raise bad_value(spec, path, line, f"{column} {value!r} is not a whole number")
    return int(number)


def error_count(spec: ExpertSetSpec, path: Path, line: int, column: str, value: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise bad_value(spec, path, line, f"{column} {value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise bad_value(spec, path, line, f"{column} {value!r} is not a count (0 or more)")
    return number
