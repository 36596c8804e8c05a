"""rexrank.data: the ReXrank test sets as `datasets` builders, the Study record and the tracks.

    from rexrank import data
    ds = data.load("iu_xray", split="test", track="findings")      # datasets.Dataset, `reference` column
    refs = data.references("iu_xray", track="findings_impression")  # {study_id: ground truth}

The catalog and the tracks are imported at once; everything that needs `datasets` is imported on first use,
so the leaderboard, the Space and the CLI can read dataset names and tracks without loading `datasets`.
"""

import importlib

from rexrank.data.catalog import (
    DATASETS,
    canonical_dataset,
    canonical_split,
    dataset_names,
    default_data_dir,
    get_dataset_spec,
    leaderboard_split,
)
from rexrank.data.tracks import DEFAULT_TRACK, TRACKS, Track, canonical_track, get_track, track_names

# Public names that need `datasets`, and the module that defines each.
_LAZY = {
    **dict.fromkeys(("apply_track", "default_split", "get_builder", "load", "prepare", "references", "track_info"),
                    "rexrank.data.loading"),
    "read_rexrank_json": "rexrank.data.rexrank_json",
    **dict.fromkeys(("STUDY_COLUMNS", "STUDY_FEATURES", "findings_impression_text", "make_study"),
                    "rexrank.data.study"),
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def verify(name, data_dir=None, split=None, *, open_images=True, image_root=None, reports_root=None):
    """Check a local copy against the ReXrank manifest (see rexrank.data.verification.VerifyReport)."""
    from rexrank.data.verification import verify as _verify

    return _verify(name, data_dir, split, open_images=open_images, image_root=image_root, reports_root=reports_root)


__all__ = [
    "DATASETS", "DEFAULT_TRACK", "STUDY_COLUMNS", "STUDY_FEATURES", "TRACKS", "Track", "apply_track",
    "canonical_dataset", "canonical_split", "canonical_track", "dataset_names", "default_data_dir", "default_split",
    "findings_impression_text", "get_builder", "get_dataset_spec", "get_track", "leaderboard_split", "load",
    "make_study", "prepare", "read_rexrank_json", "references", "track_info", "track_names", "verify",
]
