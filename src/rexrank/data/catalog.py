"""The four ReXrank test sets, declared as data: names, aliases, splits, labels, builders, manifests, licence.

This module is the one owner of every dataset fact (docs/architecture.md, "Who owns which fact"): canonical name, the
aliases users type, splits and their aliases, the split the leaderboard scores, the private flag, the display
label, the published-table key and the leaderboard's order of datasets. Builders, `load`, `verify`, the CLI,
scoring, the leaderboard and the Space read them from here; nothing else hard-codes them.

Kept import-light on purpose (standard library only): the leaderboard and the Space import it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from rexrank.errors import UnknownNameError


@dataclass(frozen=True)
class SplitSpec:
    name: str  # canonical split name (the Study record's `split` column)
    n_studies: int | None  # expected size; None where the host alone knows it
    manifest: str | None = None  # package-data file listing the ReXrank studies (ids, image paths, sections present)
    source_split: str | None = None  # what the source itself calls this split


@dataclass(frozen=True)
class DatasetSpec:
    name: str  # canonical name: stored rows, results.json, cache folders and Hub repos all use it
    title: str
    label: str  # short display label (board tabs, model cards)
    builder: str  # "module:Class"
    splits: dict[str, SplitSpec]
    leaderboard_split: str  # the split the leaderboard scores (and `load`/`score` default to)
    licence: str
    access: str  # where to request access / download
    download: str  # what to download
    layout: str  # the expected local layout under data_dir
    gated: bool = True
    hub_repo: str | None = None  # gated Hub dataset of the source, where there is one (not ReXrank's copy)
    # ReXrank's own Hub dataset repo of this set is <org>/<hub_name>: `hub_repo_id(name)` (org: REXRANK_HUB_ORG)
    hub_name: str | None = None
    aliases: tuple[str, ...] = ()  # other names users type; matched case-insensitively (see canonical_dataset)
    private: bool = False  # references stay with the host: only aggregates may leave the scorer and the store
    published_table: str | None = None  # <key> of ReXrank's results/{findings_,}result_<key>.csv tables
    citation: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def split(self, name: str) -> SplitSpec:
        """A split by its name or an alias (SPLIT_ALIASES), case-insensitively."""
        canonical = split_name(name)
        if canonical not in self.splits:
            aliases = [alias for alias, target in SPLIT_ALIASES.items() if target in self.splits]
            raise UnknownNameError(
                f"Unknown split {name!r} for dataset {self.name!r}. Available: {', '.join(self.splits)}"
                + (f" (aliases: {', '.join(aliases)})" if aliases else "")
            )
        return self.splits[canonical]


# "val"/"valid" are what the ReXrank JSONs, the CheXpert Plus CSV and the published result tables call the
# validation split; stored rows and results.json always say "validation".
SPLIT_ALIASES = {"val": "validation", "valid": "validation", "validate": "validation"}

# How to cite ReXrank: the 2024 preprint and the PSB 2026 study (the ReXrank Challenge V1.0), both as their authors
# publish them (shared/reference/citations.bib). The Space's About tab shows it, every evaluate module's citation ends with it and each module's
# card (metrics/<slug>/README.md, a standalone file on the Hub) holds it verbatim (tests/test_evaluate_modules.py).
REXRANK_BIBTEX = r"""@article{zhang2024rexrank,
  title = {ReXrank: A Public Leaderboard for AI-Powered Radiology Report Generation},
  author = {Zhang, Xiaoman and Zhou, Hong-Yu and Yang, Xiaoli and Banerjee, Oishi and Acosta, Juli{\'a}n N. and others},
  journal = {arXiv preprint arXiv:2411.15122},
  year = {2024}
}

@inproceedings{zhang2025automated,
  title = {Automated Chest X-ray Report Generation Remains Unsolved},
  author = {Zhang, Xiaoman and Acosta, Julian Nicolas and Yang, Xiaoli and Adithan, Subathra and Luo, Luyang and Zhou, Hong-Yu and Miller, Joshua and Huang, Ouwen and Zhou, Zongwei and Hamamci, Ibrahim Ethem and others},
  booktitle = {Biocomputing 2026: Proceedings of the Pacific Symposium},
  pages = {236--250},
  year = {2025},
  organization = {World Scientific}
}"""
_REXRANK_CITATION = (
    "Zhang X, Zhou H-Y, Yang X, et al. ReXrank: A Public Leaderboard for AI-Powered Radiology Report "
    "Generation. arXiv:2411.15122, 2024. Zhang X, Acosta JN, Yang X, et al. Automated Chest X-ray Report "
    "Generation Remains Unsolved. Pacific Symposium on Biocomputing 2026, 236-250. https://rexrank.ai, "
    "https://github.com/rajpurkarlab/ReXrank"
)

DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            name="iu_xray",
            title="IU-Xray (Indiana University chest X-ray collection), ReXrank split",
            label="IU-Xray",
            builder="rexrank.data.builders.iu_xray:IUXray",
            splits={
                "test": SplitSpec("test", 590, "splits/ReXRank_IUXray_test.json", "test"),
                "validation": SplitSpec("validation", 296, "splits/ReXRank_IUXray_valid.json", "val"),
            },
            leaderboard_split="test",
            aliases=("iu", "iu-xray", "iuxray"),
            hub_name="iu_xray",
            published_table="iu_xray",
            # Open-i distributes the collection under CC BY-NC-ND 4.0 (as the Open-i FAQ and Hub copies of it state).
            licence="CC BY-NC-ND 4.0 (Open-i, U.S. National Library of Medicine)",
            access="open: https://openi.nlm.nih.gov/faq (no access request needed)",
            download="the ReXrank split ships with rexrank; images: the R2Gen-preprocessed iu_xray images "
            "(images/<study_id>/0.png, 1.png) or Open-i's NLMCXR_png.tgz rearranged the same way",
            layout="DATA_DIR/<study_id>/0.png, 1.png (or DATA_DIR/images/<study_id>/...), e.g. "
            "DATA_DIR/CXR3030_IM-1405/0.png",
            gated=False,
            citation="Demner-Fushman D, et al. Preparing a collection of radiology examinations for distribution "
            "and retrieval. JAMIA 2016;23(2):304-310. " + _REXRANK_CITATION,
            notes=("Reports and the split come from rajpurkarlab/ReXrank (ReXRank_IUXray_{test,valid}.json), "
                   "verbatim; images are optional when only references are needed.",),
        ),
        DatasetSpec(
            name="mimic_cxr",
            title="MIMIC-CXR, ReXrank test set",
            label="MIMIC-CXR",
            builder="rexrank.data.builders.mimic_cxr:MimicCXR",
            splits={"test": SplitSpec("test", 2347, "manifests/mimic_cxr_test.jsonl", "test")},
            leaderboard_split="test",
            aliases=("mimic", "mimic-cxr", "mimiccxr"),
            hub_name="mimic",
            published_table="mimiccxr",
            licence="PhysioNet Credentialed Health Data License 1.5.0",
            access="https://physionet.org/content/mimic-cxr-jpg/2.1.0/ and https://physionet.org/content/mimic-cxr/2.1.0/ "
            "(credentialed PhysioNet account, CITI training, signed data use agreement)",
            download="MIMIC-CXR-JPG: files/ (JPEGs), mimic-cxr-2.0.0-metadata.csv.gz, mimic-cxr-2.0.0-split.csv.gz; "
            "MIMIC-CXR: the free-text reports (mimic-cxr-reports.zip, read in place or unzipped to "
            "files/pXX/pXXXXXXXX/sXXXXXXXX.txt)",
            # The layouts rexrank.data.builders.mimic_cxr searches (release folders 2.0.0 and 2.1.0, or newer).
            layout="images and reports are found apart, in any of:\n"
            "DATA_DIR/physionet.org/files/mimic-cxr-jpg/2.1.0/ and .../mimic-cxr/2.0.0/   (wget -r)\n"
            "DATA_DIR/mimic-cxr-jpg/2.1.0/ and DATA_DIR/mimic-cxr/2.0.0/   (side by side)\n"
            "DATA_DIR/   (flat: everything in one folder)\n"
            "images: mimic-cxr-2.0.0-metadata.csv.gz, mimic-cxr-2.0.0-split.csv.gz, "
            "files/p10/p10046166/s50051329/<dicom_id>.jpg\n"
            "reports: mimic-cxr-reports.zip (read in place), or files/p10/p10046166/s50051329.txt "
            "(or reports/files/...)",
            citation="Johnson AEW, et al. MIMIC-CXR-JPG, a large publicly available database of labeled chest "
            "radiographs. arXiv:1901.07042. " + _REXRANK_CITATION,
            notes=("Findings/impression are extracted from the raw reports by rexrank.data.sections.",
                   "The 2,347 studies and their images come from the ReXrank manifest shipped with rexrank.",),
        ),
        DatasetSpec(
            name="chexpert_plus",
            title="CheXpert Plus, ReXrank validation set",
            label="CheXpert Plus",
            builder="rexrank.data.builders.chexpert_plus:CheXpertPlus",
            splits={"validation": SplitSpec("validation", 200, "manifests/chexpert_plus_valid.jsonl", "valid")},
            # ReXrank scores CheXpert Plus on its validation split (the source and the published tables say "valid").
            leaderboard_split="validation",
            aliases=("chexpert", "chexpertplus", "chexpert-plus"),
            hub_name="chexpert_plus",
            published_table="chexpertplus",
            licence="Stanford University School of Medicine CheXpert Plus Dataset Research Use Agreement",
            access="https://aimi.stanford.edu/datasets/chexpert-plus (Stanford AIMI account, research use agreement)",
            download="df_chexpert_plus_240401.csv (reports with section columns) and the PNG images "
            "(PNG/valid/patientXXXXX/studyN/viewN_frontal.png)",
            layout="DATA_DIR/df_chexpert_plus_240401.csv   (or one folder down)\n"
            "DATA_DIR/PNG/valid/patient64620/study1/view1_frontal.png   (or PNG/PNG/, PNGs/, png/, DATA_DIR/valid/, "
            "or one folder per PNG chunk)",
            citation="Chambon P, et al. CheXpert Plus: Augmenting a Large Chest X-ray Dataset with Text Radiology "
            "Reports, Patient Demographics and Additional Image Formats. arXiv:2405.19538. " + _REXRANK_CITATION,
        ),
        DatasetSpec(
            name="rexgradient",
            title="ReXGradient-160K, ReXrank private test set",
            label="ReXGradient",
            builder="rexrank.data.builders.rexgradient:ReXGradient",
            # 10,000 studies per the ReXrank paper; no public manifest exists, so the count is reported, not enforced.
            splits={"test": SplitSpec("test", None, None, "test")},
            leaderboard_split="test",
            # The published tables call this set after its source, GradientHealth.
            aliases=("gradienthealth", "rexgradient160k", "rexgradient-160k", "rexgradient_160k"),
            hub_name="rexgradient",
            private=True,
            published_table="gradienthealth",
            licence="ReXGradient-160K data use agreement (gated Hugging Face dataset)",
            access="https://huggingface.co/datasets/rajpurkarlab/ReXGradient-160K (accept the terms on the Hub); the "
            "10,000-study private test set is held by the ReXrank host and is never downloaded",
            download="the host's local copy of the private test split: a metadata file in the ReXGradient-160K "
            "layout (test_metadata_view_position.json) and its images",
            layout="DATA_DIR/metadata/test_metadata_view_position.json   (or DATA_DIR/, a clone of the repo, a "
            "Hugging Face cache snapshot)\nits ImagePath values, relative to metadata/ or DATA_DIR, e.g. "
            "DATA_DIR/deid_png/<PatientID>/<AccessionNumber>/studies/.../<image>.png",
            hub_repo="rajpurkarlab/ReXGradient-160K",
            citation="Zhang X, et al. ReXGradient-160K: A Large-Scale Publicly Available Dataset of Chest Radiographs "
            "with Free-text Reports. arXiv:2505.00228. " + _REXRANK_CITATION,
        ),
    )
}


# The order of the datasets on the leaderboard (tabs, overview columns): ReXrank's own order.
LEADERBOARD_ORDER = ("rexgradient", "mimic_cxr", "iu_xray", "chexpert_plus")


def _alias_index() -> dict[str, str]:
    """Every name a user may type -> canonical name: the name, its aliases, its label and its published-table key."""
    index: dict[str, str] = {}
    for spec in DATASETS.values():
        for alias in (spec.name, *spec.aliases, spec.label, spec.published_table):
            if alias is None:
                continue
            key = alias.strip().lower()
            # Two datasets answering to one alias would make a stored row's dataset depend on dict order.
            if index.get(key, spec.name) != spec.name:
                raise AssertionError(f"dataset alias {alias!r} names both {index[key]!r} and {spec.name!r}")
            index[key] = spec.name
    return index


def _check_specs() -> None:
    for spec in DATASETS.values():
        if not spec.hub_name or "/" in spec.hub_name:
            raise AssertionError(f"{spec.name}: hub_name must be a repo name without an org, got {spec.hub_name!r}")
        if spec.leaderboard_split not in spec.splits:
            raise AssertionError(f"{spec.name}: leaderboard_split {spec.leaderboard_split!r} is not one of its splits")
    if sorted(LEADERBOARD_ORDER) != sorted(DATASETS):
        raise AssertionError("LEADERBOARD_ORDER must list every dataset exactly once")


_check_specs()
DATASET_ALIASES: dict[str, str] = _alias_index()


def canonical_dataset(name: str) -> str:
    """The canonical name of a dataset given any alias ("MIMIC-CXR", "mimic", "chexpert" ...).

    Every boundary (CLI options, `rexrank.data.load`, results.json, the Space, store writes) calls this, so
    stored rows and results only ever hold canonical names.
    """
    canonical = DATASET_ALIASES.get(str(name).strip().lower()) if name is not None else None
    if canonical is None:
        raise UnknownNameError(f"Unknown dataset {name!r}. Available: {', '.join(DATASETS)} "
                               f"(aliases: {', '.join(a for a in DATASET_ALIASES if a not in DATASETS)})")
    return canonical


def split_name(split: str) -> str:
    """A split's canonical spelling without checking it against a dataset ("valid" -> "validation", "Test" -> "test"):
    for files that name splits but no catalog dataset."""
    key = str(split).strip().lower()
    return SPLIT_ALIASES.get(key, key)


def canonical_split(dataset: str, split: str | None = None) -> str:
    """The canonical split of `dataset` ("valid", "val" -> "validation"); None -> the split the leaderboard scores."""
    spec = get_dataset_spec(dataset)
    return spec.leaderboard_split if split is None else spec.split(split).name


def get_dataset_spec(name: str) -> DatasetSpec:
    return DATASETS[canonical_dataset(name)]


def dataset_names() -> list[str]:
    return list(DATASETS)


def leaderboard_split(name: str) -> str:
    """The split the leaderboard scores (chexpert_plus: validation, the others: test)."""
    return get_dataset_spec(name).leaderboard_split


def dataset_label(name: str) -> str:
    return get_dataset_spec(name).label


def is_private(name: str) -> bool:
    return get_dataset_spec(name).private


def licensed(name: str) -> bool:
    """Whether the set's report text is licensed: its source needs a data use agreement (``gated``: MIMIC-CXR,
    CheXpert Plus, ReXGradient) or it is a private test set. Licensed text never leaves the machine that holds the
    copy: it is never shown (the Arena), pushed (the Hub), logged or written world-readable; only numbers derived from
    it may (the board, Compare's per-study values, within ``evaluation.disclosure``'s rules). IU-Xray's text is open
    (CC BY-NC-ND 4.0, distributed by Open-i to anyone)."""
    spec = get_dataset_spec(name)
    return spec.gated or spec.private


def licensed_datasets() -> frozenset[str]:
    """The sets whose report text is licensed (``licensed``)."""
    return frozenset(name for name in DATASETS if licensed(name))


def leaderboard_datasets() -> tuple[str, ...]:
    return LEADERBOARD_ORDER


def private_datasets() -> frozenset[str]:
    return frozenset(name for name, spec in DATASETS.items() if spec.private)


def dataset_for_published_table(key: str) -> str | None:
    """The dataset of a published {findings_,}result_<key>.csv table; None for a table ReXrank does not score here."""
    return next((spec.name for spec in DATASETS.values() if spec.published_table == key), None)


def package_file(relative: str) -> Path:
    """A data file shipped inside rexrank.data (split JSONs, manifests)."""
    return Path(str(resources.files("rexrank.data").joinpath(relative)))


# The Hub organisation holding ReXrank's dataset repos; a host serving its own copies sets REXRANK_HUB_ORG.
DEFAULT_HUB_ORG = "rexrank"
HUB_ORG_ENV = "REXRANK_HUB_ORG"


def hub_org() -> str:
    """The organisation of ReXrank's Hub dataset repos: $REXRANK_HUB_ORG, else "rexrank" (read at each call)."""
    return (os.environ.get(HUB_ORG_ENV) or "").strip().strip("/") or DEFAULT_HUB_ORG


def hub_repo_id(name: str, org: str | None = None) -> str:
    """ReXrank's Hub dataset repo of `name` (any alias): "rexrank/mimic" for "mimic_cxr", "mimic" or "MIMIC-CXR"."""
    return f"{org or hub_org()}/{get_dataset_spec(name).hub_name}"


def default_data_dir(name: str) -> Path:
    """Where a dataset's local copy is looked for when no data_dir is given: $REXRANK_DATA_DIR/<name>."""
    root = os.environ.get("REXRANK_DATA_DIR") or Path.home() / ".cache" / "rexrank" / "data"
    return Path(root).expanduser() / canonical_dataset(name)
