"""The resumable store: one append-only JSONL file per process, one line per finished study.

A line is {"index", "study_id", "report", "raw", "error", "images"} (error None on success; images: [[path digest,
size], ...] of what the model got, images.image_identity, which a resumed run compares, runner._check_same_images).
A batch's lines are written with one write + flush after the batch finishes, so a process that crashes or is killed
loses at most the batch in flight (flushed data is in the OS's hands). fsync, for machine crashes, runs at most every
FSYNC_SECONDS and on close: a per-batch fsync costs ~5 ms, a tenth of a small model's batch on CPU. A torn last
line (the process died mid-write) is cut off when its owner reopens the file and ignored by readers.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path

from rexrank.data.private_files import private_file
from rexrank.errors import InputError

log = logging.getLogger("rexrank.generate")

PARTS_DIR = "parts"
FSYNC_SECONDS = 2.0


def part_path(out_dir: Path, rank: int) -> Path:
    return Path(out_dir) / PARTS_DIR / f"process-{rank:05d}.jsonl"


class PartWriter:
    """Appends records to this process's part file."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _cut_torn_tail(self.path)
        private_file(self.path)  # owner-only before the first line: reports may quote licensed context
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._synced = time.monotonic()

    def write(self, records: Iterable[dict]) -> None:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        if text:
            self._file.write(text)
            self._file.flush()
            if time.monotonic() - self._synced >= FSYNC_SECONDS:
                self._sync()

    def _sync(self) -> None:
        os.fsync(self._file.fileno())
        self._synced = time.monotonic()

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            self._sync()
            self._file.close()

    def __enter__(self) -> PartWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _cut_torn_tail(path: Path) -> None:
    """Drop a last line without its newline: the previous owner died while writing it."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as handle:
        data = handle.read()
        if data.endswith(b"\n"):
            return
        keep = data.rfind(b"\n") + 1
        handle.truncate(keep)
        log.warning("%s: dropped an incomplete last record (%d bytes) left by an interrupted run",
                    path, len(data) - keep)


def read_parts(out_dir: Path) -> list[dict]:
    """Every record of every part file under out_dir (any process count of any earlier run), file by file.

    A line that is not JSON is skipped with a warning (its study is generated again). Bytes rexrank never writes
    (not UTF-8, or a NUL: json.dumps escapes control characters) mean the file is not a part file this tool wrote, or
    was damaged on disk: InputError naming the file and the fix, never a guess at what it held.
    """
    records: list[dict] = []
    folder = Path(out_dir) / PARTS_DIR
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        with open(path, "rb") as handle:
            for line_no, raw in enumerate(handle, 1):
                if not raw.endswith(b"\n"):
                    break  # torn tail: its owner cuts it off on restart
                try:
                    if b"\0" in raw:
                        raise ValueError("a NUL byte")
                    line = raw.decode("utf-8")
                except ValueError as exc:  # UnicodeDecodeError is a ValueError
                    what = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
                    raise InputError(
                        f"{path} line {line_no} holds bytes rexrank never writes ({what}): the file is damaged or "
                        "not a rexrank part file. Move it out of the folder (its studies are generated again) or "
                        "rerun with --overwrite to start afresh.") from None
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    log.warning("%s:%d is not a valid record; ignored", path, line_no)
                    continue
                if isinstance(record, dict) and "study_id" in record:
                    records.append(record)
    return records


def latest_by_id(records: Iterable[dict]) -> dict[str, dict]:
    """One record per study: a success beats an error (a retried study), otherwise the later record wins."""
    best: dict[str, dict] = {}
    for record in records:
        current = best.get(record["study_id"])
        if current is None or record.get("error") is None or current.get("error") is not None:
            best[record["study_id"]] = record
    return best
