"""Whether a path given on the command line can be written: checked before any input is read or model loaded.

Its own module, importing nothing heavy, so a light command (`rexrank leaderboard add`) checks its --store without
importing the scoring harness (pandas, numpy: most of that command's time before).
"""

from __future__ import annotations

import os
from pathlib import Path

from rexrank.errors import ConfigError


def check_writable(path: str | os.PathLike, option: str, *, file: bool = False) -> None:
    """``path`` can be written: an existing writable folder (``file=True``: file), or a new one whose nearest
    existing parent is a writable folder (so it can be created, with any missing parents)."""
    path = Path(path).expanduser()
    what = "file" if file else "folder"
    if path.exists():
        if path.is_dir() == file:
            raise ConfigError(f"{option} {path} is an existing {'folder' if file else 'file'}; give a {what} path"
                              + ("" if file else " (it is created if missing)"))
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{option} {path}: no permission to write there; choose another {what}")
        return
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(f"{option} {path} cannot be created: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {path} cannot be created: no permission to write in {parent}")
