"""The images of a run, checked before any model is constructed, and what identifies them in the run's records.

`check_images` stats every image path once (no decoding: a missing --data-dir must fail in a second, not after
the model has loaded and every study has failed) and opens the first image's header with PIL, so a folder of the
wrong files fails too. `image_identity` is what a finished study records of the images it was generated from
(absolute path and size): a resumed run whose study resolves to other files is refused (runner.py), so reports
made from one copy of the images are never mixed with reports made from another.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence

from rexrank.errors import InputError

SHOWN = 5  # paths listed in the error; the count says how many more


def check_images(studies: Iterable[tuple[str, Sequence[str]]], fix: str) -> None:
    """Raise one InputError if any image of `studies` ((study_id, paths) pairs) is missing, unreadable, or if the
    first image is not an image. `fix` is the sentence that tells the user what to pass instead."""
    studies = list(studies)
    paths = list(dict.fromkeys(p for _, study_paths in studies for p in study_paths))
    missing, unreadable = [], []
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            missing.append(path)
            continue
        if not stat.S_ISREG(mode):
            missing.append(path)
        elif not os.access(path, os.R_OK):
            unreadable.append(path)
    if missing:
        raise InputError(f"{len(missing)} of the {len(paths)} images of {len(studies)} studies are missing, e.g.\n"
                         f"{_listing(missing)}\n{fix}")
    if unreadable:
        raise InputError(f"{len(unreadable)} of {len(paths)} images cannot be read (file permissions), e.g.\n"
                         f"{_listing(unreadable)}")
    if paths:
        _check_format(paths[0], fix)


def _listing(paths: list[str]) -> str:
    lines = [f"  {p}" for p in paths[:SHOWN]]
    if len(paths) > SHOWN:
        lines.append(f"  ... and {len(paths) - SHOWN} more")
    return "\n".join(lines)


def _check_format(path: str, fix: str) -> None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path):  # reads the header only
            pass
    except (UnidentifiedImageError, OSError) as exc:
        raise InputError(f"{path} is not an image PIL can read ({type(exc).__name__}). {fix}") from None


def image_identity(paths: Sequence[str]) -> list[list]:
    """[[absolute path, size in bytes or None if absent], ...]: what a study's record keeps of its images. Sizes,
    not hashes: a re-encoded copy at the same path changes its size, and hashing every image would cost more than
    the check it serves."""
    identity = []
    for path in paths:
        try:
            size = os.stat(path).st_size
        except OSError:
            size = None
        identity.append([path, size])
    return identity
