"""What every ReXrank builder shares: the Study features, split generators, and a source fingerprint.

The fingerprint (builder version, shipped split/manifest files, size and mtime of the source's text files) is the
builder's cache `hash`, so a second prepare of an unchanged copy reuses the Arrow cache and an edited copy
is rebuilt.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import datasets

from rexrank.data.catalog import DatasetSpec, get_dataset_spec, package_file
from rexrank.data.study import STUDY_FEATURES

log = logging.getLogger("rexrank.data")

# Bump when a builder's output changes for the same input (section rules, columns): it invalidates caches.
BUILDER_VERSION = "1.0.0"
# Builder options naming a part of the local copy explicitly (they win over the search of data_dir).
SOURCE_OPTIONS = ("image_root", "reports_root")


class RexrankConfig(datasets.BuilderConfig):
    """`require_images`: a study whose images are missing makes the copy incomplete (an error) when True;
    when False the record keeps the paths it would have (scoring needs only the text).
    `image_root`, `reports_root`: where the images and the report text are, named explicitly; each wins over the
    search of `data_dir` (rexrank.data.layouts) for its part."""

    def __init__(self, *args, require_images: bool | None = None, image_root: str | None = None,
                 reports_root: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.require_images = require_images
        self.image_root = image_root
        self.reports_root = reports_root


class RexrankBuilder(datasets.GeneratorBasedBuilder):
    DATASET: str = ""
    BUILDER_CONFIG_CLASS = RexrankConfig
    BUILDER_CONFIGS = [RexrankConfig(name="default", version=datasets.Version(BUILDER_VERSION))]
    DEFAULT_CONFIG_NAME = "default"
    # Whether images must be present by default (IU-Xray: no, its text ships with rexrank).
    REQUIRE_IMAGES_BY_DEFAULT = True

    def __init__(self, *args, data_dir: str | os.PathLike | None = None, hash: str | None = None, **kwargs):
        data_dir = None if data_dir is None else str(Path(data_dir).expanduser().absolute())
        for option in SOURCE_OPTIONS:  # absolute, so the cache key names the folder wherever it was given from
            if kwargs.get(option) is not None:
                kwargs[option] = str(Path(kwargs[option]).expanduser().absolute())
        if hash is None:
            hash = self.source_fingerprint(data_dir, kwargs.get("require_images"),
                                           **{option: kwargs.get(option) for option in SOURCE_OPTIONS})
        super().__init__(*args, data_dir=data_dir, hash=hash, **kwargs)

    # ---- functional core, implemented per dataset -------------------------------------------------------------
    @classmethod
    def source_files(cls, data_dir: str | None, **roots) -> Iterable[Path]:
        """The source files whose content the records are built from (for the cache fingerprint); `roots` are
        the explicit SOURCE_OPTIONS."""
        return ()

    def studies(self, split: str) -> Iterator[dict]:
        raise NotImplementedError

    # ---- shared ----------------------------------------------------------------------------------------------
    @classmethod
    def spec(cls) -> DatasetSpec:
        return get_dataset_spec(cls.DATASET)

    @property
    def require_images(self) -> bool:
        value = getattr(self.config, "require_images", None)
        return self.REQUIRE_IMAGES_BY_DEFAULT if value is None else bool(value)

    @property
    def roots(self) -> dict[str, str | None]:
        """The explicit SOURCE_OPTIONS of this builder ({"image_root": ..., "reports_root": ...})."""
        return {option: getattr(self.config, option, None) for option in SOURCE_OPTIONS}

    @classmethod
    def source_fingerprint(cls, data_dir: str | None, require_images: bool | None = None, **roots) -> str:
        named = "".join(f"|{option}={roots[option]}" for option in SOURCE_OPTIONS if roots.get(option) is not None)
        digest = hashlib.sha256(f"{cls.DATASET}|{BUILDER_VERSION}|{data_dir}|{require_images}{named}".encode())
        for split in cls.spec().splits.values():
            if split.manifest:
                _update_with_stat(digest, package_file(split.manifest))
        try:
            for path in cls.source_files(data_dir, **roots):
                _update_with_stat(digest, Path(path))
        except OSError:
            digest.update(b"unreadable")
        return digest.hexdigest()[:16]

    def _info(self) -> datasets.DatasetInfo:
        spec = self.spec()
        return datasets.DatasetInfo(description=spec.title, features=STUDY_FEATURES, citation=spec.citation,
                                    license=spec.licence, homepage=spec.access)

    def _split_generators(self, dl_manager):
        # Records are built here, before generation starts: datasets wraps errors raised inside
        # _generate_examples in DatasetGenerationError, and ours must reach the user as they are.
        # (A tuple, not a list: datasets would treat a list gen_kwarg as shards.)
        return [datasets.SplitGenerator(name=name, gen_kwargs={"split": name, "records": tuple(self.studies(name))})
                for name in self.spec().splits]

    def _generate_examples(self, split: str, records: tuple = ()):
        expected = self.spec().splits[split].n_studies
        if expected is not None and len(records) != expected:
            # Never a silently shorter dataset: the functional core raises for anything missing; this guards it.
            raise datasets.exceptions.DatasetGenerationError(
                f"{self.DATASET} {split}: built {len(records)} studies, the ReXrank set has {expected}")
        for record in records:
            yield record["study_id"], record
        log.info("%s %s: %d studies", self.DATASET, split, len(records))


def _update_with_stat(digest, path: Path) -> None:
    try:
        stat = path.stat()
        digest.update(f"{path}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    except OSError:
        digest.update(f"{path}|missing".encode())
