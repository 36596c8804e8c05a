"""Owner-only caches: the one rule for every folder and file rexrank caches that can hold report text.

Licensed report text (MIMIC-CXR, CheXpert Plus, ReXGradient) reaches two caches: the `datasets` Arrow copy of a
test set and the scoring cache (pair rows and per-text artefacts such as RadGraph annotations, which hold the full
report). Both are kept owner-only, for open sets too (one rule, nothing to decide per dataset): folders 0700,
files 0600. So is every `rexrank generate` run folder (generate/lock.py, generate/runner.py), which holds context,
reports and open sets' sections. A cache folder is made 0700 *before* anything writes into it, so files that a
library creates with the default mode are never reachable by other users, and they are chmod-ed 0600 afterwards
as well. The process umask
is left alone: it is process-wide, and changing it around a write would race with other threads.

Standard library only: the data layer and the scoring cache both import it.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger("rexrank.data")

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(path: str | os.PathLike) -> Path:
    """Create `path` (and any missing parent) as 0700 folders and make `path` itself 0700; returns it.

    Parents that already exist keep their mode: they may be shared folders (~/.cache, $HF_DATASETS_CACHE).
    """
    path = Path(path).expanduser()
    missing = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=FOLDER_MODE)
        except FileExistsError:  # another process created it meanwhile
            pass
        _chmod(folder, FOLDER_MODE)
    _chmod(path, FOLDER_MODE)
    return path


def private_file(path: str | os.PathLike) -> Path:
    """Create `path` empty with mode 0600 if it does not exist (so a library opening it later keeps that mode), and
    make an existing one 0600; returns it."""
    path = Path(path)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, FILE_MODE))  # no O_TRUNC: an existing file keeps its data
    _chmod(path, FILE_MODE)
    return path


def make_private(paths: Iterable[str | os.PathLike]) -> None:
    """Every folder under (and including) each path 0700, every file 0600; symbolic links are not followed."""
    for top in paths:
        top = Path(top)
        if top.is_symlink() or not top.exists():
            continue
        if top.is_file():
            _chmod(top, FILE_MODE)
            continue
        _chmod(top, FOLDER_MODE)
        for root, folders, files in os.walk(top):
            for name in folders:
                if not os.path.islink(os.path.join(root, name)):
                    _chmod(Path(root, name), FOLDER_MODE)
            for name in files:
                if not os.path.islink(os.path.join(root, name)):
                    _chmod(Path(root, name), FILE_MODE)


def tree_size(path: str | os.PathLike) -> tuple[int, int]:
    """(files, bytes) under a folder (or of one file); (0, 0) when it does not exist."""
    path = Path(path)
    if path.is_file():
        return 1, path.stat().st_size
    files = size = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                size += os.lstat(os.path.join(root, name)).st_size
                files += 1
            except OSError:
                pass
    return files, size


def _chmod(path: Path, mode: int) -> None:
    try:
        if stat.S_IMODE(path.stat().st_mode) != mode:
            os.chmod(path, mode)
    except FileNotFoundError:
        pass
    except PermissionError:
        # Someone else's folder (a shared cache root): nothing we may change; say so once per path.
        log.warning("cannot make %s owner-only (mode %o): it belongs to another user", path, mode)
