"""What a /submit request reads: its own copy of the upload, taken out of gradio's upload folder.

gradio keeps an upload at ``<upload folder>/<keyed sha256 of its bytes>/<file name>``, so one file sent by several
clients at once is ONE file that all their requests name. Deleting it when the first request was handled broke the
others (issue 35 point 2: twelve identical uploads at once gave 1 queued, 6 "unexpected error" (the file vanished
while it was read), 5 "no longer available").

So each request takes its own copy first (``ReceivedUploads.take``): it opens the upload, or, if a request naming
the same content-addressed file took it already, that request's kept copy; copies it into a file of its own; and
removes gradio's file. The request is then handled from its copy alone (identical predictions get the service's
"already submitted" answer, whatever another request did meanwhile), and its copy is deleted once handled
(``release``). The kept copy of each content-addressed upload stays, owner-only, in the service's own folder for as
long as gradio would have kept an upload nobody used (``ttl``: the Space's ``upload_ttl``), then it is deleted with
gradio's emptied folder (``sweep``, run by each ``take``). Nothing is ever read or deleted outside gradio's upload
folder and this one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
import uuid
from pathlib import Path

from rexrank.errors import InputError

# What a request whose upload is gone is told (the service says the same of a path that is not a file).
UPLOAD_GONE = "the uploaded file is no longer available (each upload is used once): upload it again"
# gradio's folder for one upload: the hex sha256 of the file's bytes (keyed by gradio's hash seed).
_CONTENT_FOLDER = re.compile(r"[0-9a-f]{64}")
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,10}")
# This module's files: kept copies (``kept-<gradio folder>-<name digest><suffix>``) and requests' own copies.
_KEPT = re.compile(r"kept-([0-9a-f]{64})-[0-9a-f]{16}(\.[A-Za-z0-9]{1,10})?")
_OWN = re.compile(r"own-[0-9a-f]{32}(\.[A-Za-z0-9]{1,10})?(\.part)?")


def upload_root() -> Path:
    """gradio's upload folder: the only place a submitted file may come from, and the only one we delete in."""
    from gradio.utils import get_upload_folder

    return Path(get_upload_folder()).resolve()


class ReceivedUploads:
    """The uploads /submit requests took: their own copies and, per content-addressed upload, one kept copy.

    ``folder`` is the submission service's (created owner-only); ``ttl`` how long a kept copy stays (seconds);
    ``root`` gradio's upload folder (default: ``upload_root()``)."""

    def __init__(self, folder: str | Path, ttl: float, root: str | Path | None = None):
        self.folder = Path(folder)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.folder.chmod(0o700)
        self.ttl = float(ttl)
        self._root = Path(root).resolve() if root is not None else None

    @property
    def root(self) -> Path:
        return self._root or upload_root()

    def take(self, path: str | Path) -> Path:
        """This request's own copy of the upload at ``path`` (inside gradio's upload folder; the caller checked),
        owner-only; gradio's file is removed. ``InputError(UPLOAD_GONE)`` when neither it nor a kept copy of it
        exists."""
        self.sweep()
        source = Path(path).resolve()
        suffix = source.suffix if _SUFFIX.fullmatch(source.suffix) else ""
        kept = self._kept(source, suffix)
        handle = _open(source)
        if handle is None and kept is not None:
            handle = _open(kept)  # a request naming the same file took it first: its kept copy
        if handle is None:
            raise InputError(UPLOAD_GONE)
        own = self.folder / f"own-{uuid.uuid4().hex}{suffix}"
        part = own.with_name(own.name + ".part")
        try:
            # An open file stays readable whoever removes its name: the copy is whole even if another request
            # removes gradio's file meanwhile.
            with handle, os.fdopen(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as target:
                shutil.copyfileobj(handle, target)
            part.replace(own)
            if kept is not None:
                try:
                    os.link(own, kept)  # the same bytes under the upload's kept name (same folder, no second copy)
                except FileExistsError:
                    pass
        except BaseException:
            part.unlink(missing_ok=True)
            own.unlink(missing_ok=True)
            raise
        self._remove_upload(source, content_addressed=kept is not None)
        return own

    def release(self, own: str | Path | None) -> None:
        """Delete a request's own copy once it was handled (only a file of this folder named as ``take`` names)."""
        if own is None:
            return
        own = Path(own)
        if own.parent.resolve() == self.folder.resolve() and _OWN.fullmatch(own.name):
            own.unlink(missing_ok=True)

    def sweep(self, now: float | None = None) -> int:
        """Delete kept copies older than ``ttl`` (and gradio's folder of each, if empty) and own copies that old (a
        process stopped while handling them). How many files were deleted."""
        now = time.time() if now is None else now
        removed = 0
        for entry in self.folder.iterdir():
            kept = _KEPT.fullmatch(entry.name)
            if not kept and not _OWN.fullmatch(entry.name):
                continue
            try:
                if now - entry.stat().st_mtime <= self.ttl:
                    continue
                entry.unlink()
            except FileNotFoundError:  # another request swept it first
                continue
            removed += 1
            if kept:
                _rmdir(self.root / kept.group(1))
        return removed

    def _kept(self, source: Path, suffix: str) -> Path | None:
        """Where the kept copy of a content-addressed upload lies; None for a file gradio did not name by content."""
        if source.parent.parent != self.root or not _CONTENT_FOLDER.fullmatch(source.parent.name):
            return None
        name = hashlib.sha256(source.name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return self.folder / f"kept-{source.parent.name}-{name}{suffix}"

    def _remove_upload(self, source: Path, *, content_addressed: bool) -> None:
        """Remove gradio's file. Its folder stays while its kept copy does when the folder is named by content (an
        identical upload arriving now renames its file into that folder: removing it could fail that upload);
        other empty folders up to the upload folder go at once."""
        root = self.root
        if root not in source.parents:
            return
        source.unlink(missing_ok=True)
        if content_addressed:
            return
        folder = source.parent
        while folder != root and root in folder.parents:
            if not _rmdir(folder):
                break
            folder = folder.parent


def _open(path: Path):
    try:
        return open(path, "rb")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _rmdir(folder: Path) -> bool:
    try:
        folder.rmdir()  # only if empty
        return True
    except OSError:
        return False
