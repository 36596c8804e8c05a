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

Uploads never submitted are capped (``UploadCap``, issue 49 point 4: twenty 5 MB uploads in 1.1 s were all kept for
an hour, without limit): each client (``clients``: its address, an IPv6 /48) keeps at most
``limits.UNSUBMITTED_UPLOADS_PER_CLIENT`` of them, its oldest deleted when it sends another (only that client loses
anything: its newest upload is the one it is about to submit), and an upload that would take all clients' unsubmitted
uploads over ``limits.UNSUBMITTED_UPLOADS_MB`` is refused before it is read (HTTP 503, "try again later": evicting
others' uploads instead would let many clients flush an honest one before it is submitted).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import re
import shutil
import time
import uuid
from pathlib import Path

from rexrank.errors import InputError
from rexrank.leaderboard.limits import UNSUBMITTED_UPLOADS_MB, UNSUBMITTED_UPLOADS_PER_CLIENT, upload_bytes

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


# gradio's upload route (under its API prefix). What a refused upload is told.
UPLOAD_ROUTE = "/gradio_api/upload"
UPLOADS_FULL = ("the server holds too many uploads that were never submitted: try again in a few minutes (uploads "
                "not submitted are deleted after an hour)")
# An upload's file may appear after gradio answers (it moves large files in a background task): an entry whose file
# is not there yet is kept this long before it counts as submitted or deleted.
_APPEAR_S = 60.0


class UploadCap:
    """ASGI middleware in front of gradio's upload route: caps uploads never submitted, per client and in total.

    ``app``: gradio's app (installed through ``launch(app_kwargs={"middleware": ...})``); ``proxies``: the trusted
    proxies that tell a client's address (``clients.trusted_proxies``); ``per_client``: files a client keeps;
    ``total_bytes``: what all of them hold together; ``root``: gradio's upload folder (default ``upload_root()``).
    An upload counts while its file exists: a submitted one is taken out of gradio's folder (``ReceivedUploads``)
    and gradio's ``delete_cache`` removes the rest after the TTL."""

    def __init__(self, app, *, proxies: int = 0, per_client: int = UNSUBMITTED_UPLOADS_PER_CLIENT,
                 total_bytes: int | None = None, root: str | Path | None = None):
        self.app = app
        self.proxies = proxies
        self.per_client = int(per_client)
        self.total_bytes = upload_bytes(UNSUBMITTED_UPLOADS_MB) if total_bytes is None else int(total_bytes)
        self._root = Path(root).resolve() if root is not None else None
        self._lock = threading.Lock()
        # (client, file, bytes, when, whether the file was there when recorded), oldest first
        self._held: list[tuple[str, Path, int, float, bool]] = []

    @property
    def root(self) -> Path:
        return self._root or upload_root()

    async def __call__(self, scope, receive, send):
        if scope.get("type") != "http" or scope.get("method") != "POST" or \
                not str(scope.get("path", "")).rstrip("/").endswith(UPLOAD_ROUTE):
            await self.app(scope, receive, send)
            return
        from starlette.requests import Request

        from rexrank.leaderboard.clients import request_client

        client = request_client(Request(scope), self.proxies)
        length = _content_length(scope)
        if self.held_bytes() + length > self.total_bytes:
            await _plain(send, 503, UPLOADS_FULL)
            return
        answer: dict = {"status": 0, "body": b""}

        async def watch(message):
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            elif message["type"] == "http.response.body":
                answer["body"] += message.get("body", b"")
            await send(message)

        await self.app(scope, receive, watch)
        if answer["status"] == 200:
            self.record(client, _paths(answer["body"]), length)

    def record(self, client: str, paths: list[str], length: int = 0) -> list[Path]:
        """Count ``paths`` (files gradio wrote for one upload of ``length`` bytes) as ``client``'s, then delete its
        oldest unsubmitted uploads beyond ``per_client``. The files deleted."""
        now = time.time()
        root = self.root
        files = [Path(p).resolve() for p in paths]
        files = [f for f in files if root in f.parents]
        with self._lock:
            self._forget_gone(now)
            for file in files:
                # The same bytes again (gradio keeps them as one file): one upload, now the client's newest.
                self._held = [entry for entry in self._held if entry[:2] != (client, file)]
                try:
                    size, seen = file.stat().st_size, True
                except OSError:
                    size, seen = length // max(1, len(files)), False
                self._held.append((client, file, size, now, seen))
            own = [entry for entry in self._held if entry[0] == client]
            evicted = own[:max(0, len(own) - self.per_client)]
            self._held = [entry for entry in self._held if entry not in evicted]
            others = {entry[1] for entry in self._held}
        deleted = []
        for _, file, *_ in evicted:
            if file in others:  # identical bytes another client uploaded too (gradio keeps one file): theirs too
                continue
            file.unlink(missing_ok=True)
            deleted.append(file)
            folder = file.parent
            while folder != root and root in folder.parents and _rmdir(folder):
                folder = folder.parent
        return deleted

    def held_bytes(self) -> int:
        """What the uploads not yet submitted hold, as far as this server counted them."""
        with self._lock:
            self._forget_gone(time.time())
            return sum(entry[2] for entry in self._held)

    def _forget_gone(self, now: float) -> None:
        """Drop the uploads whose file is gone (submitted, or deleted by gradio's TTL); one not there yet is kept
        for ``_APPEAR_S``."""
        self._held = [entry for entry in self._held
                      if entry[1].exists() or (not entry[4] and now - entry[3] < _APPEAR_S)]


def _content_length(scope) -> int:
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                return max(0, int(value))
            except ValueError:
                return 0
    return 0


def _paths(body: bytes) -> list[str]:
    try:
        paths = json.loads(body)
    except ValueError:
        return []
    return [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []


async def _plain(send, status: int, text: str) -> None:
    body = text.encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


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
