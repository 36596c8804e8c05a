"""`rexrank.data.load`: a ReXrank test set as a `datasets.Dataset` of Study records, optionally for one track.

With `track=`, a `reference` column holds that track's ground truth and studies the track does not count are
excluded. The exclusion is logged and recorded in `dataset.info.description` (a line `rexrank-track: {json}`),
which `track_info(dataset)` reads back; it survives `select`, `map` and `filter` because they copy the info.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from pathlib import Path

import datasets

from rexrank.data.catalog import canonical_dataset, canonical_split, default_data_dir, get_dataset_spec
from rexrank.data.tracks import get_track

log = logging.getLogger("rexrank.data")

TRACK_INFO_PREFIX = "rexrank-track: "


def builder_class(name: str) -> type:
    spec = get_dataset_spec(name)
    module_name, class_name = spec.builder.split(":")
    return getattr(importlib.import_module(module_name), class_name)


def default_split(name: str) -> str:
    """The split the leaderboard scores (declared by the catalog: chexpert_plus: validation, others: test)."""
    return canonical_split(name)


def get_builder(name: str, data_dir: str | os.PathLike | None = None, *, cache_dir: str | os.PathLike | None = None,
                require_images: bool | None = None):
    """The dataset's GeneratorBasedBuilder, pointed at `data_dir` (default $REXRANK_DATA_DIR/<name>)."""
    name = canonical_dataset(name)  # an alias must not give another default folder or cache
    cls = builder_class(name)
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir(name)
    # Always pass the effective value, so the default and an explicit equal value share one cache.
    require = cls.REQUIRE_IMAGES_BY_DEFAULT if require_images is None else bool(require_images)
    return cls(data_dir=str(data_dir), cache_dir=None if cache_dir is None else str(cache_dir),
               require_images=require)


def prepare(name: str, data_dir: str | os.PathLike | None = None, *, cache_dir: str | os.PathLike | None = None,
            require_images: bool | None = None):
    """Build (or reuse) the Arrow cache of every split; returns the builder."""
    from rexrank.errors import RexrankError

    builder = get_builder(name, data_dir, cache_dir=cache_dir, require_images=require_images)
    try:
        builder.download_and_prepare()
    except datasets.exceptions.DatasetGenerationError as exc:
        if isinstance(exc.__cause__, RexrankError):  # unwrap our own, actionable error
            raise exc.__cause__ from None
        raise
    return builder


def load(name: str, data_dir: str | os.PathLike | None = None, split: str | None = None, track: str | None = None,
         *, cache_dir: str | os.PathLike | None = None, require_images: bool | None = None) -> datasets.Dataset:
    """The ReXrank studies of `name`/`split` (default: the split the leaderboard scores).

    track: None (all studies, no `reference` column), "findings" or "findings_impression".
    Raises UnknownNameError for an unknown dataset/split/track and DatasetNotAvailableError for a missing or
    incomplete local copy.
    """
    name = canonical_dataset(name)
    canonical = canonical_split(name, split)
    track_spec = get_track(track) if track is not None else None
    builder = prepare(name, data_dir, cache_dir=cache_dir, require_images=require_images)
    dataset = builder.as_dataset(split=canonical)
    if track_spec is None:
        return dataset
    return apply_track(dataset, track_spec.name, dataset_name=name, split=canonical)


def apply_track(dataset: datasets.Dataset, track: str, *, dataset_name: str = "", split: str = "") -> datasets.Dataset:
    """Keep the studies `track` counts, add its `reference` column, record what was excluded."""
    track_spec = get_track(track)
    required = {column: dataset[column] for column in track_spec.requires}
    ids = dataset["study_id"]
    keep = [i for i in range(len(ids)) if all(values[i] is not None for values in required.values())]
    excluded = [ids[i] for i in sorted(set(range(len(ids))) - set(keep))]
    if excluded:
        dataset = dataset.select(keep).flatten_indices()
    dataset = dataset.add_column("reference", dataset[track_spec.reference_column])
    summary = {"dataset": dataset_name, "split": split, "track": track_spec.name, "n_studies": len(keep),
               "n_excluded": len(excluded), "excluded_reason": _reason(track_spec.requires),
               "excluded_study_ids": excluded}
    if excluded:
        log.warning("%s %s, %s track: %d of %d studies excluded (%s)", dataset_name, split, track_spec.name,
                    len(excluded), len(ids), summary["excluded_reason"])
    text = (f"{dataset.info.description or dataset_name}\n"
            f"{track_spec.name} track: {len(keep)} studies kept, {len(excluded)} excluded "
            f"({summary['excluded_reason']}).\n{TRACK_INFO_PREFIX}{json.dumps(summary)}")
    dataset.info.description = text
    return dataset


def track_info(dataset: datasets.Dataset) -> dict | None:
    """What `load(..., track=)` kept and excluded: {dataset, split, track, n_studies, n_excluded,
    excluded_reason, excluded_study_ids}; None for a dataset loaded without a track."""
    for line in reversed((dataset.info.description or "").splitlines()):
        if line.startswith(TRACK_INFO_PREFIX):
            return json.loads(line[len(TRACK_INFO_PREFIX):])
    return None


def references(name: str, data_dir: str | os.PathLike | None = None, split: str | None = None,
               track: str = "findings", *, cache_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """{study_id: ground truth} of one track: what the scoring harness compares predictions with."""
    dataset = load(name, data_dir, split=split, track=track, cache_dir=cache_dir, require_images=False)
    return dict(zip(dataset["study_id"], dataset["reference"], strict=True))


def _reason(requires: tuple[str, ...]) -> str:
    return "none" if not requires else "no " + " or no ".join(requires)
