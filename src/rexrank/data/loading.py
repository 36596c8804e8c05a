"""`rexrank.data.load` (defined here): a ReXrank test set as a `datasets.Dataset` of Study records, optionally for
one track.

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
from rexrank.data.private_files import make_private, private_folder, tree_size
from rexrank.data.tracks import DEFAULT_TRACK, TRACKS, get_track

log = logging.getLogger("rexrank.data")

TRACK_INFO_PREFIX = "rexrank-track: "


def builder_class(name: str) -> type:
    spec = get_dataset_spec(name)
    module_name, class_name = spec.builder.split(":")
    return getattr(importlib.import_module(module_name), class_name)


def default_split(name: str) -> str:
    """The split the leaderboard scores (declared by the catalog: chexpert_plus: validation, others: test)."""
    return canonical_split(name)


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """Where the Arrow copies live: `cache_dir`, else $HF_DATASETS_CACHE (as for any `datasets` builder)."""
    return Path(cache_dir if cache_dir is not None else datasets.config.HF_DATASETS_CACHE).expanduser()


def dataset_cache(name: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """The folder that holds every Arrow copy of dataset `name` under a cache root (`datasets` names it after the
    builder module, which is the canonical name): <root>/<name>/<config>/<version>/<hash>/."""
    return cache_root(cache_dir) / canonical_dataset(name)


def get_builder(name: str, data_dir: str | os.PathLike | None = None, *, cache_dir: str | os.PathLike | None = None,
                require_images: bool | None = None, image_root: str | os.PathLike | None = None,
                reports_root: str | os.PathLike | None = None):
    """The dataset's GeneratorBasedBuilder, pointed at `data_dir` (default $REXRANK_DATA_DIR/<name>);
    `image_root`/`reports_root` name those parts of the copy explicitly (they win over the search of data_dir)."""
    name = canonical_dataset(name)  # an alias must not give another default folder or cache
    cls = builder_class(name)
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir(name)
    # require_images is a check, not content (the records hold the same paths either way), so it stays out of the
    # config kwargs and the cache hash: `prepare` (images required) and `references` (not) share one Arrow copy.
    roots = {option: str(value) for option, value in (("image_root", image_root), ("reports_root", reports_root))
             if value is not None}  # only when given: the default config (and its cache folder) stays as it was
    builder = cls(data_dir=str(data_dir), cache_dir=str(cache_root(cache_dir)), **roots)
    builder.config.require_images = cls.REQUIRE_IMAGES_BY_DEFAULT if require_images is None else bool(require_images)
    return builder


def prepare(name: str, data_dir: str | os.PathLike | None = None, *, cache_dir: str | os.PathLike | None = None,
            require_images: bool | None = None, image_root: str | os.PathLike | None = None,
            reports_root: str | os.PathLike | None = None):
    """Build (or reuse) the Arrow cache of every split; returns the builder.

    The copy is owner-only (rexrank.data.private_files): its folder is made 0700 before `datasets` writes into it,
    and every file in it 0600 afterwards. One copy per dataset and local copy, whatever require_images says.
    """
    root = cache_root(cache_dir)
    if not root.exists():
        private_folder(root)
    folder = private_folder(dataset_cache(name, root))
    try:
        builder = get_builder(name, data_dir, cache_dir=root, require_images=require_images, image_root=image_root,
                              reports_root=reports_root)
        reused = Path(builder.cache_dir, datasets.config.DATASET_INFO_FILENAME).is_file()
        _download_and_prepare(builder)
        if reused and builder.require_images and _missing_images(builder):
            # A copy built while images were absent (or since moved): rebuild it with the check, which names
            # what is missing or records where the images are now.
            _download_and_prepare(builder, datasets.DownloadMode.FORCE_REDOWNLOAD)
        _drop_stale_copies(builder)
    finally:
        make_private([folder, *_lock_files(name, root)])
    return builder


def _drop_stale_copies(builder) -> None:
    """Remove the copies an earlier state of the same local copy left (`datasets` keys a copy by the source
    fingerprint and never deletes the old one), so the cache holds one copy of the text, the current one."""
    import shutil

    current = Path(builder.cache_dir)
    for sibling in current.parent.iterdir():
        # ".incomplete" folders belong to a build in progress (another process): never touched.
        if sibling != current and sibling.is_dir() and not sibling.is_symlink() and "incomplete" not in sibling.name:
            shutil.rmtree(sibling, ignore_errors=True)


def _download_and_prepare(builder, mode=None) -> None:
    from rexrank.errors import RexrankError

    try:
        builder.download_and_prepare(download_mode=mode)
    except datasets.exceptions.DatasetGenerationError as exc:
        if isinstance(exc.__cause__, RexrankError):  # unwrap our own, actionable error
            raise exc.__cause__ from None
        raise


def _missing_images(builder) -> bool:
    for split in builder.info.splits or {}:
        for paths in builder.as_dataset(split=split)["image_paths"]:
            if not all(os.path.isfile(p) for p in paths):
                return True
    return False


def _lock_files(name: str, root: Path) -> list[Path]:
    # `datasets` locks a copy with <root>/<its path, "/" -> "_">.lock, beside (not inside) the dataset's folder.
    prefix = dataset_cache(name, root).as_posix().replace("/", "_") + "_"
    return [path for path in root.glob("*.lock") if path.name.startswith(prefix)]


_READ_ATTEMPTS = 3  # prepare-and-read tries when another process removes the copy in between (``load``)


def load(name: str, data_dir: str | os.PathLike | None = None, split: str | None = None, track: str | None = None,
         *, cache_dir: str | os.PathLike | None = None, require_images: bool | None = None,
         image_root: str | os.PathLike | None = None, reports_root: str | os.PathLike | None = None) -> datasets.Dataset:
    """The ReXrank studies of `name`/`split` (default: the split the leaderboard scores).

    track: None (all studies, no `reference` column), "findings" or "findings_impression".
    Raises UnknownNameError for an unknown dataset/split/track and DatasetNotAvailableError for a missing or
    incomplete local copy.
    """
    name = canonical_dataset(name)
    canonical = canonical_split(name, split)
    track_spec = get_track(track) if track is not None else None
    for attempt in range(_READ_ATTEMPTS):
        builder = prepare(name, data_dir, cache_dir=cache_dir, require_images=require_images, image_root=image_root,
                          reports_root=reports_root)
        try:
            dataset = builder.as_dataset(split=canonical)
            break
        except FileNotFoundError:
            # Another process's `prepare` (another rexrank install, or the same one after the local copy changed)
            # removed this copy as stale between our prepare and our read: build it again and read that.
            if attempt == _READ_ATTEMPTS - 1:
                raise
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
        # In memory: a track is a view of the one Arrow copy, never a second copy of its text on disk.
        dataset = dataset.select(keep).flatten_indices(keep_in_memory=True)
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
               track: str = DEFAULT_TRACK, *, cache_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """{study_id: ground truth} of one track: what the scoring harness compares predictions with."""
    dataset = load(name, data_dir, split=split, track=track, cache_dir=cache_dir, require_images=False)
    return dict(zip(dataset["study_id"], dataset["reference"], strict=True))


def _reason(requires: tuple[str, ...]) -> str:
    return "none" if not requires else "no " + " or no ".join(requires)


# ---- cached copies: what `rexrank data purge` finds and removes -------------------------------------------------

def cached_copies(name: str, cache_dir: str | os.PathLike | None = None) -> dict:
    """What a cache root holds of dataset `name`: {"folder", "copies" (prepared copies: one per local copy it was
    built from), "files", "bytes", "paths" (the folder and its lock files, what `purge_cached_copies` removes)}."""
    root = cache_root(cache_dir)
    folder = dataset_cache(name, root)
    paths = ([folder] if folder.exists() else []) + _lock_files(name, root)
    files = size = 0
    for path in paths:
        n, b = tree_size(path)
        files, size = files + n, size + b
    copies = len(list(folder.glob(f"*/*/*/{datasets.config.DATASET_INFO_FILENAME}"))) if folder.exists() else 0
    return {"folder": folder, "copies": copies, "files": files, "bytes": size, "paths": paths}


def cached_reference_texts(name: str, cache_dir: str | os.PathLike | None = None) -> set[str]:
    """Every track's ground truth found in the Arrow copies of `name` (any split, any local copy): the texts whose
    scoring-cache entries a purge removes."""
    columns = {track.reference_column for track in TRACKS.values()}
    texts: set[str] = set()
    folder = dataset_cache(name, cache_dir)
    for arrow in sorted(folder.rglob("*.arrow")) if folder.exists() else ():
        try:
            table = datasets.Dataset.from_file(str(arrow), in_memory=True)
        except Exception as exc:  # noqa: BLE001 - a half-written copy: its texts are in the finished one
            log.info("skipping %s: %s", arrow, exc)
            continue
        for column in columns & set(table.column_names):
            texts.update(text for text in table[column] if text is not None)
    return texts


def reference_texts(name: str, data_dir: str | os.PathLike | None = None, *,
                    reports_root: str | os.PathLike | None = None) -> set[str]:
    """Every track's ground truth of every split of `name`, built from the local copy into a throwaway cache
    (so looking them up leaves no copy behind). Raises DatasetNotAvailableError without a local copy."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="rexrank-purge-") as tmp:  # mkdtemp: 0700
        builder = prepare(name, data_dir, cache_dir=tmp, require_images=False, reports_root=reports_root)
        columns = [track.reference_column for track in TRACKS.values()]
        texts: set[str] = set()
        for split in builder.info.splits or {}:
            table = builder.as_dataset(split=split, in_memory=True)
            for column in columns:
                texts.update(text for text in table[column] if text is not None)
            del table
        return texts


def purge_cached_copies(name: str, cache_dir: str | os.PathLike | None = None) -> dict:
    """Remove every Arrow copy of `name` under a cache root (the folder and its lock files); returns what
    `cached_copies` reported before removing."""
    import shutil

    found = cached_copies(name, cache_dir)
    for path in found["paths"]:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    return found
