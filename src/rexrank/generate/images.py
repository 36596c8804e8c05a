"""The images of a run, checked before any model is constructed, and what identifies them in the run's records.

`check_images` stats every image path once (no decoding: a missing --data-dir must fail in a second, not after
the model has loaded and every study has failed) and opens the first image's header with PIL, so a folder of the
wrong files fails too. `image_identity` is what a finished study records of the images it was generated from
(a digest of the absolute path, and the size): a resumed run whose study resolves to other files is refused
(runner.py), so reports made from one copy of the images are never mixed with reports made from another.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Sequence

from rexrank.errors import InputError

SHOWN = 5  # paths listed in the error; the count says how many more
DIGEST_PREFIX = "b2:"


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
    """[[path digest, size in bytes or None if absent], ...]: what a study's record keeps of its images. The digest
    (``path_digest``) stands for the absolute path, which stays out of the run's files: they may be shared, and the
    host's folders are nobody else's business. Sizes, not content hashes: a re-encoded copy at the same path changes
    its size, and hashing every image would cost more than the check it serves."""
    identity = []
    for path in paths:
        try:
            size = os.stat(path).st_size
        except OSError:
            size = None
        identity.append([path_digest(path), size])
    return identity


def path_digest(path: str) -> str:
    """A short fixed name for an absolute path (BLAKE2b, 16 bytes), prefixed so it is never taken for a path."""
    data = os.path.abspath(path).encode("utf-8", "surrogateescape")
    return DIGEST_PREFIX + hashlib.blake2b(data, digest_size=16).hexdigest()


def same_images(recorded: list, paths: Sequence[str]) -> bool:
    """Whether a record's ``image_identity`` names the files ``paths`` names now. Records written before digests
    hold the absolute path itself: it is digested here, so such a run still resumes."""
    def normal(entry: list) -> list:
        name, size = entry
        return [name if str(name).startswith(DIGEST_PREFIX) else path_digest(str(name)), size]

    try:
        return [normal(e) for e in recorded] == image_identity(paths)
    except (TypeError, ValueError):  # not [name, size] pairs: a record rexrank did not write
        return False
