"""IU-Xray with the official ReXrank split (590 test, 296 validation).

Reports, sections and image lists come verbatim from the split files shipped with rexrank (copied from
rajpurkarlab/ReXrank); images come from the user's local copy (optional unless `require_images=True`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from rexrank.data.builders.base import RexrankBuilder
from rexrank.data.catalog import default_data_dir, get_dataset_spec, package_file
from rexrank.data.gating import not_available
from rexrank.data.rexrank_json import read_rexrank_json
from rexrank.errors import ConfigError

NAME = "iu_xray"


def image_root(data_dir: str | Path | None, explicit: str | Path | None = None) -> Path:
    """The folder holding <study_id>/0.png: `explicit` (image_root=) when given, else DATA_DIR/images when present
    (R2Gen's layout), else DATA_DIR."""
    if explicit is not None:
        return Path(explicit).expanduser().absolute()
    root = Path(data_dir) if data_dir is not None else default_data_dir(NAME)
    root = root.expanduser().absolute()
    return root / "images" if (root / "images").is_dir() else root


def check_roots(reports_root) -> None:
    if reports_root is not None:
        raise ConfigError(f"{NAME}: its reports ship with rexrank, so --reports-root/reports_root does not apply "
                          "(name the images with --image-root or --data-dir)")


def split_file(split: str) -> Path:
    return package_file(get_dataset_spec(NAME).split(split).manifest)


def read_split(split: str, data_dir: str | Path | None = None, *, image_folder: str | Path | None = None) -> list[dict]:
    """The ReXrank IU-Xray studies of `split`, image paths resolved under the local image folder."""
    canonical = get_dataset_spec(NAME).split(split).name
    return read_rexrank_json(split_file(canonical), image_root(data_dir, image_folder), dataset=NAME, split=canonical)


def missing_images(records: list[dict]) -> list[str]:
    return [path for record in records for path in record["image_paths"] if not Path(path).is_file()]


class IUXray(RexrankBuilder):
    DATASET = NAME
    REQUIRE_IMAGES_BY_DEFAULT = False

    @classmethod
    def source_files(cls, data_dir, **roots):
        return [image_root(data_dir, roots.get("image_root"))]

    def studies(self, split: str) -> Iterator[dict]:
        check_roots(self.roots["reports_root"])
        records = read_split(split, self.config.data_dir, image_folder=self.roots["image_root"])
        if self.require_images:
            missing = missing_images(records)
            if missing:
                raise not_available(NAME, self.config.data_dir, missing)
        yield from records
