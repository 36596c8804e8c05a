"""The four ReXrank test sets, declared as data: splits, builders, manifests, licence and how to get access.

Builders, `load`, `verify`, the CLI and the dataset cards all read these specs; nothing else hard-codes them.
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
    name: str
    title: str
    builder: str  # "module:Class"
    splits: dict[str, SplitSpec]
    licence: str
    access: str  # where to request access / download
    download: str  # what to download
    layout: str  # the expected local layout under data_dir
    gated: bool = True
    hub_repo: str | None = None  # gated Hub dataset of the source, where there is one
    citation: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def split(self, name: str) -> SplitSpec:
        canonical = SPLIT_ALIASES.get(name, name)
        if canonical not in self.splits:
            raise UnknownNameError(
                f"Unknown split {name!r} for dataset {self.name!r}. Available: {', '.join(self.splits)}"
            )
        return self.splits[canonical]


# "val"/"valid" are what the ReXrank JSONs and result tables call the validation split.
SPLIT_ALIASES = {"val": "validation", "valid": "validation", "validate": "validation"}

_REXRANK_CITATION = (
    "Zhang X, Zhou H-Y, Yang X, et al. ReXrank: A Public Leaderboard for AI-Powered Radiology Report "
    "Generation. arXiv:2411.15122, 2024. https://rexrank.ai, https://github.com/rajpurkarlab/ReXrank"
)

DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            name="iu_xray",
            title="IU-Xray (Indiana University chest X-ray collection), ReXrank split",
            builder="rexrank.data.builders.iu_xray:IUXray",
            splits={
                "test": SplitSpec("test", 590, "splits/ReXRank_IUXray_test.json", "test"),
                "validation": SplitSpec("validation", 296, "splits/ReXRank_IUXray_valid.json", "val"),
            },
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
            builder="rexrank.data.builders.mimic_cxr:MimicCXR",
            splits={"test": SplitSpec("test", 2347, "manifests/mimic_cxr_test.jsonl", "test")},
            licence="PhysioNet Credentialed Health Data License 1.5.0",
            access="https://physionet.org/content/mimic-cxr-jpg/2.1.0/ and https://physionet.org/content/mimic-cxr/2.1.0/ "
            "(credentialed PhysioNet account, CITI training, signed data use agreement)",
            download="MIMIC-CXR-JPG: files/ (JPEGs), mimic-cxr-2.0.0-metadata.csv.gz, mimic-cxr-2.0.0-split.csv.gz; "
            "MIMIC-CXR: the free-text reports (mimic-cxr-reports.zip, unzipped to files/pXX/pXXXXXXXX/sXXXXXXXX.txt)",
            layout="DATA_DIR/mimic-cxr-2.0.0-metadata.csv.gz\nDATA_DIR/mimic-cxr-2.0.0-split.csv.gz\n"
            "DATA_DIR/files/p10/p10046166/s50051329/<dicom_id>.jpg\n"
            "DATA_DIR/files/p10/p10046166/s50051329.txt   (report; or under DATA_DIR/reports/files/...)",
            citation="Johnson AEW, et al. MIMIC-CXR-JPG, a large publicly available database of labeled chest "
            "radiographs. arXiv:1901.07042. " + _REXRANK_CITATION,
            notes=("Findings/impression are extracted from the raw reports by rexrank.data.sections.",
                   "The 2,347 studies and their images come from the ReXrank manifest shipped with rexrank.",),
        ),
        DatasetSpec(
            name="chexpert_plus",
            title="CheXpert Plus, ReXrank validation set",
            builder="rexrank.data.builders.chexpert_plus:CheXpertPlus",
            splits={"validation": SplitSpec("validation", 200, "manifests/chexpert_plus_valid.jsonl", "valid")},
            licence="Stanford University School of Medicine CheXpert Plus Dataset Research Use Agreement",
            access="https://aimi.stanford.edu/datasets/chexpert-plus (Stanford AIMI account, research use agreement)",
            download="df_chexpert_plus_240401.csv (reports with section columns) and the PNG images "
            "(PNG/valid/patientXXXXX/studyN/viewN_frontal.png)",
            layout="DATA_DIR/df_chexpert_plus_240401.csv\nDATA_DIR/PNG/valid/patient64620/study1/view1_frontal.png "
            "(or DATA_DIR/valid/...)",
            citation="Chambon P, et al. CheXpert Plus: Augmenting a Large Chest X-ray Dataset with Text Radiology "
            "Reports, Patient Demographics and Additional Image Formats. arXiv:2405.19538. " + _REXRANK_CITATION,
        ),
        DatasetSpec(
            name="rexgradient",
            title="ReXGradient-160K, ReXrank private test set",
            builder="rexrank.data.builders.rexgradient:ReXGradient",
            # 10,000 studies per the ReXrank paper; no public manifest exists, so the count is reported, not enforced.
            splits={"test": SplitSpec("test", None, None, "test")},
            licence="ReXGradient-160K data use agreement (gated Hugging Face dataset)",
            access="https://huggingface.co/datasets/rajpurkarlab/ReXGradient-160K (accept the terms on the Hub); the "
            "10,000-study private test set is held by the ReXrank host and is never downloaded",
            download="the host's local copy of the private test split: a metadata file in the ReXGradient-160K "
            "layout (test_metadata.csv or .json) and its images",
            layout="DATA_DIR/test_metadata.csv (or .json, .jsonl, .parquet)\nDATA_DIR/<ImagePath values>, e.g. "
            "DATA_DIR/deid_png/<PatientID>/<AccessionNumber>/studies/.../<image>.png",
            hub_repo="rajpurkarlab/ReXGradient-160K",
            citation="Zhang X, et al. ReXGradient-160K: A Large-Scale Publicly Available Dataset of Chest Radiographs "
            "with Free-text Reports. arXiv:2505.00228. " + _REXRANK_CITATION,
        ),
    )
}


def get_dataset_spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownNameError(f"Unknown dataset {name!r}. Available: {', '.join(DATASETS)}") from None


def dataset_names() -> list[str]:
    return list(DATASETS)


def package_file(relative: str) -> Path:
    """A data file shipped inside rexrank.data (split JSONs, manifests)."""
    return Path(str(resources.files("rexrank.data").joinpath(relative)))


def default_data_dir(name: str) -> Path:
    """Where a dataset's local copy is looked for when no data_dir is given: $REXRANK_DATA_DIR/<name>."""
    root = os.environ.get("REXRANK_DATA_DIR") or Path.home() / ".cache" / "rexrank" / "data"
    return Path(root).expanduser() / name
