"""rexrank.data: the ReXrank test sets as `datasets` builders, the Study record and the tracks.

    from rexrank import data
    ds = data.load("iu_xray", split="test", track="findings")      # datasets.Dataset, `reference` column
    refs = data.references("iu_xray", track="findings_impression")  # {study_id: ground truth}
"""

from rexrank.data.catalog import DATASETS, dataset_names, default_data_dir, get_dataset_spec
from rexrank.data.load import apply_track, default_split, get_builder, load, prepare, references, track_info
from rexrank.data.rexrank_json import read_rexrank_json
from rexrank.data.study import STUDY_COLUMNS, STUDY_FEATURES, findings_impression_text, make_study
from rexrank.data.tracks import DEFAULT_TRACK, TRACKS, Track, get_track, track_names


def verify(name, data_dir=None, split=None, *, open_images=True):
    """Check a local copy against the ReXrank manifest (see rexrank.data.verify.VerifyReport)."""
    from rexrank.data.verify import verify as _verify

    return _verify(name, data_dir, split, open_images=open_images)


__all__ = [
    "DATASETS", "DEFAULT_TRACK", "STUDY_COLUMNS", "STUDY_FEATURES", "TRACKS", "Track", "apply_track",
    "dataset_names", "default_data_dir", "default_split", "findings_impression_text", "get_builder",
    "get_dataset_spec", "get_track", "load", "make_study", "prepare", "read_rexrank_json", "references",
    "track_info", "track_names", "verify",
]
