"""Finding a source's files in a local copy as its download unpacks them, without walking the tree.

A MIMIC-CXR-JPG copy holds 377,110 images, so a resolver never lists it: it probes known relative folders under
the data directory (each builder declares its layouts and release folders), lists at most a few small folders
(version folders, a download's top level), and ranks the candidates by how many of a sample of the manifest's
files each holds. Studies outside the manifest, a second release folder or an unrelated `files/` elsewhere score
nothing and are never chosen. Every candidate looked at is remembered, so a failure lists every layout with the
folder probed and what it lacked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rexrank.data.gating import not_available

# A release folder as PhysioNet names them ("2.0.0", "2.1.0").
_VERSION = re.compile(r"\d+(\.\d+)+")
SAMPLE_SIZE = 16  # manifest files probed per candidate: enough to tell a real copy from a decoy, still instant


@dataclass(frozen=True)
class Layout:
    """A way a download lands under DATA_DIR. `prefix` may hold `{project}` (the source's folder name, e.g.
    PhysioNet's project slug) and `{version}` (any release folder present, newest first)."""

    name: str
    prefix: str


@dataclass(frozen=True)
class Candidate:
    layout: str
    folder: Path


@dataclass
class Search:
    """The candidates of one part of a copy (images, reports, ...) and why each was refused."""

    what: str  # e.g. "MIMIC-CXR-JPG (mimic-cxr-2.0.0-metadata.csv.gz, ...)"
    root: Path
    refused: list[tuple[str, str]] = field(default_factory=list)  # (layout, line)
    order: list[str] = field(default_factory=list)  # layout names in the order they are tried

    def candidates(self, layouts: Sequence[Layout], *, project: str = "", versions: Sequence[str] = ()) -> list[Candidate]:
        """Each layout's folder, one per release folder present (newest first). A layout whose release folder is
        absent is recorded as refused and yields nothing."""
        found: list[Candidate] = []
        self.order += [layout.name for layout in layouts]
        for layout in layouts:
            prefix = layout.prefix.replace("{project}", project)
            if "{version}" not in prefix:
                found.append(Candidate(layout.name, self.root / prefix if prefix else self.root))
                continue
            parent = self.root / prefix.split("{version}")[0]
            names = version_folders(parent, versions)
            if not names:
                self.refuse(layout.name, Path(str(self.root / prefix).replace("{version}", "<version>")),
                            f"no release folder ({', '.join(versions)})" if versions else "absent")
            found += [Candidate(layout.name, Path(str(self.root / prefix).replace("{version}", v))) for v in names]
        return unique(found)

    def refuse(self, layout: str, folder: Path, reason: str) -> None:
        self.refused.append((layout, f"{layout}: {shown(folder, self.root)} - {reason}"))

    def lines(self) -> list[str]:
        rank = {name: i for i, name in enumerate(self.order)}
        ordered = sorted(self.refused, key=lambda item: rank.get(item[0], len(rank)))  # stable: per layout, in order
        return [f"{self.what} not found; looked in:"] + [f"  {line}" for _, line in ordered]


def version_folders(parent: Path, known: Sequence[str] = ()) -> list[str]:
    """Release folders under `parent`, newest first: the known ones present and any other version-named folder
    (one listing of a folder that holds a few releases)."""
    if not parent.is_dir():
        return []
    names = {name for name in known if (parent / name).is_dir()}
    try:
        names |= {entry.name for entry in os.scandir(parent) if _VERSION.fullmatch(entry.name) and entry.is_dir()}
    except OSError:
        pass
    return sorted(names, key=lambda name: tuple(int(part) for part in name.split(".")), reverse=True)


def child_folders(parent: Path) -> list[Path]:
    """The folders directly inside `parent`, sorted (one listing: a download's top level, never an image tree)."""
    try:
        return sorted(Path(entry.path) for entry in os.scandir(parent) if entry.is_dir())
    except OSError:
        return []


def best(options: Iterable, score: Callable[[object], int], full: int) -> tuple:
    """The option with the highest score above 0, the earliest on a tie; stops at the first with `full`, so later
    (costlier) options such as a zip's directory are only read when no earlier one is complete."""
    chosen, top = None, 0
    for option in options:
        value = score(option)
        if value > top:
            chosen, top = option, value
            if value >= full:
                break
    return chosen, top


def sample(items: Sequence, size: int = SAMPLE_SIZE) -> list:
    """`size` items spread evenly over `items` (the same ones every run)."""
    if len(items) <= size:
        return list(items)
    step = len(items) / size
    return [items[int(i * step)] for i in range(size)]


def count_files(paths: Iterable[Path]) -> int:
    return sum(1 for path in paths if path.is_file())


def unique(items: Iterable) -> list:
    seen, kept = set(), []
    for item in items:
        key = item.folder if isinstance(item, Candidate) else item
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def shown(path: Path | str, root: Path) -> str:
    """`path` relative to the data directory when inside it (shorter messages), else absolute."""
    try:
        relative = Path(path).relative_to(root)
    except ValueError:
        return str(path)
    return "DATA_DIR" if str(relative) == "." else str(relative)


def not_found(name: str, root: Path, searches: Sequence[Search], *, explicit_hint: str):
    """The one error for a copy whose parts were not found: every layout looked in, per part, and the options
    that name the folders explicitly."""
    from rexrank.data.catalog import get_dataset_spec

    title = get_dataset_spec(name).title
    if not root.is_dir():  # nothing to list: every layout lies under a folder that is not there
        lines = [f"{title}: the data directory {root} does not exist."]
    else:
        lines = [f"{title}: no usable local copy under {root} (DATA_DIR)."]
        for search in searches:
            lines += [f"  {line}" for line in search.lines()]
    lines.append(f"  or name the folders: {explicit_hint}")
    return not_available(name, root, [], problem="\n".join(lines))
