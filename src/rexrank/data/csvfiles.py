"""Reading the sources' CSV files with clear errors for missing files or columns."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rexrank.errors import DatasetNotAvailableError


def find_file(root: Path, names: Sequence[str]) -> Path | None:
    """The first of `names` (relative to root) that exists."""
    for name in names:
        candidate = root / name
        if candidate.is_file():
            return candidate
    return None


def read_csv_columns(path: Path, required: Sequence[str], optional: Sequence[str] = (), *, what: str = "",
                     chunksize: int | None = None):
    """A DataFrame with the required columns (error naming those missing) and whichever optional ones exist;
    with `chunksize`, an iterator of DataFrames (the MIMIC-CXR CSVs have 377,110 rows, of which few are needed)."""
    import pandas as pd

    try:
        header = pd.read_csv(path, nrows=0)
    except Exception as exc:  # unreadable, not CSV, empty
        raise DatasetNotAvailableError(f"{what or path.name}: cannot read {path} as CSV ({exc})") from None
    present = set(header.columns)
    missing = [c for c in required if c not in present]
    if missing:
        raise DatasetNotAvailableError(
            f"{what or path.name}: {path} lacks the column(s) {', '.join(missing)}; it has "
            f"{', '.join(map(str, header.columns[:30]))}. Is this the right file and version?")
    columns = list(required) + [c for c in optional if c in present and c not in required]
    return pd.read_csv(path, usecols=columns, dtype=str, keep_default_na=False, na_values=[""], chunksize=chunksize)
