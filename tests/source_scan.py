"""The source as the owner scans read it, parsed once (issue 51 point 3).

The owner checks of tests/test_catalog.py each walked every Python file of the tree; parsing the ~230 files costs
~1.3 s of CPU, and each of the five scans did it again. Here a file is read, parsed and walked once, keyed by its
path, modification time and size, so a file written meanwhile (a test's own ``old.py``, a file another engineer
edits) is read again, never a stale copy. What these return is shared: read it, never change it. ``forget()`` drops
it all (the ``source_tree`` fixture does after its module: live trees slow the garbage collector).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


def _stamp(path: Path) -> tuple[str, int, int]:
    info = path.stat()
    return str(path.resolve()), info.st_mtime_ns, info.st_size


@functools.lru_cache(maxsize=None)
def _text(stamp: tuple[str, int, int]) -> str:
    return Path(stamp[0]).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def _tree(stamp: tuple[str, int, int]) -> ast.Module:
    return ast.parse(_text(stamp))


@functools.lru_cache(maxsize=None)
def _nodes(stamp: tuple[str, int, int]) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(_tree(stamp)))


def text(path: Path) -> str:
    return _text(_stamp(path))


def tree(path: Path) -> ast.Module:
    """``ast.parse`` of the file."""
    return _tree(_stamp(path))


def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the file's tree, in ``ast.walk`` order."""
    return _nodes(_stamp(path))


def python_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def forget() -> None:
    for cached in (_text, _tree, _nodes):
        cached.cache_clear()
