"""Hub dataset repo backend for a hosted board: results as JSON files, synced both ways with the local store.

Layout in the repo: ``results/<content_hash>.json``, one ``ResultRecord`` each (aggregates only). A result's
file name is its content hash, so pushing and pulling are idempotent and two boards never overwrite each
other's files. The SQLite store stays the working copy; the repo is the durable, shareable copy.

What is pushed is the disclosed record (``rexrank.evaluation.disclosure.disclose_record``): a private test set's
numbers rounded to 3 decimals and small subgroups suppressed, even where the local row holds more, and the file is
named after the disclosed record's hash (a row already disclosed keeps its own hash).

Each file also holds the row's ``provenance`` (who added it, how, when, its submission id and its model name's
owner; not part of the record or its hash), so a board rebuilt from the repo keeps every name's owner and shows
the same rows.

Requests (the submission queue), in a second dataset repo when one is configured: ``requests/<id>.json``, one
per job, holding ``REQUEST_FIELDS`` only: the job's id, the sha256 identifying its predictions (duplicate
detection; not reversible), submitter identity and username, the model's (sanitised) details, test set, split,
track, metrics, status, the submitter-facing error, attempts and times. Never the uploaded predictions, their
path or any text of them, for any test set: nothing in that repo can rebuild what was submitted. A job still
queued when its Space restarts therefore comes back without its file and fails with ``store.LOST_UPLOAD``, which
lets the submitter upload the same predictions again.

Hosting (``start``): the Space pulls both repos before it opens (``pull_with_retries``; a Hub that cannot be
read stops the start rather than risk overwriting the repos with a fresh store's rows) and pushes after every
write that changed the store, from one background thread with retries and capped exponential backoff, so a slow or
failing Hub never blocks a request (``flush`` waits for the push, e.g. before shutting down).
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from rexrank.errors import ConfigError, RexrankError
from rexrank.evaluation.disclosure import disclose_record
from rexrank.leaderboard.records import HOST, MetricValue, ModelInfo, Provenance, ResultRecord
from rexrank.leaderboard.store import Store

log = logging.getLogger(__name__)

PREFIX = "results/"
REQUESTS_PREFIX = "requests/"
# What a request file holds (see the module docstring): never the predictions or where they lie.
REQUEST_FIELDS = ("id", "content_hash", "identity", "user", "model", "dataset", "split", "track", "metrics",
                  "status", "error", "attempts", "created_at", "updated_at")


def request_entry(job: dict[str, Any]) -> dict[str, Any]:
    """A queue row (``Store.submissions``) as its request file holds it."""
    return {key: job.get(key) for key in REQUEST_FIELDS}


def _payload(data: dict[str, Any]) -> bytes:
    return json.dumps(data, indent=1, sort_keys=True, default=str).encode()


def _git_blob_sha1(data: bytes) -> str:
    """The id git (and so the Hub's tree listing) gives a file's content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def record_from_row(row: dict[str, Any]) -> ResultRecord:
    """The ResultRecord a store row was made from (exactly, so its content hash is unchanged)."""
    if row.get("record"):
        return ResultRecord.from_json(row["record"])
    model = ModelInfo(name=row["model_name"], institution=row["institution"], url=row["url"], year=row["year"],
                      model_type=row["model_type"], trained_on=row["trained_on"])
    return ResultRecord(model=model, dataset=row["dataset"], split=row["split"], track=row["track"],
                        source=row["source"], metrics={k: MetricValue(**v) for k, v in row["metrics"].items()},
                        n_studies=row["n_studies"], note=row["note"], extra=row["extra"])


def shared_record(row: dict[str, Any]) -> tuple[ResultRecord, str]:
    """(record, content hash) as it may leave this host: ``record_from_row`` disclosed; an open set's record, or
    a row already stored disclosed, unchanged with the row's own hash."""
    record = record_from_row(row)
    disclosed = disclose_record(record.to_json())
    if disclosed == record.to_json():
        return record, row["content_hash"]
    record = ResultRecord.from_json(disclosed)
    return record, record.content_hash()


class HubSync:
    """Both-way sync of a store with a results repo and, optionally, a requests repo (Hub datasets)."""

    def __init__(self, store: Store, repo_id: str, *, requests_repo: str | None = None, api=None,
                 token: str | None = None, backoff: float = 2.0, max_backoff: float = 300.0):
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi(token=token)
        self.store, self.repo_id, self.requests_repo, self.api = store, repo_id, requests_repo, api
        self.backoff, self.max_backoff = backoff, max_backoff
        self._cond = threading.Condition()
        self._wanted = self._pushed = 0  # pushes asked for / the last one a successful push covered
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None

    def _remote_names(self) -> set[str]:
        try:
            files = self.api.list_repo_files(self.repo_id, repo_type="dataset")
        except Exception as exc:  # noqa: BLE001 - one clear message for auth/network/missing repo
            raise RexrankError(f"cannot list the results repo {self.repo_id}: {type(exc).__name__}. Check that it "
                               "exists and that HF_TOKEN can read it.") from None
        return {f[len(PREFIX):] for f in files if f.startswith(PREFIX) and f.endswith(".json")}

    def _request_files(self) -> dict[str, str]:
        """{path: content id} of the requests repo's request files (git blob sha1, or sha256 for an LFS file)."""
        try:
            entries = self.api.list_repo_tree(self.requests_repo, repo_type="dataset", recursive=True)
            return {e.path: (e.lfs.sha256 if getattr(e, "lfs", None) else getattr(e, "blob_id", None))
                    for e in entries if e.path.startswith(REQUESTS_PREFIX) and e.path.endswith(".json")}
        except Exception as exc:  # noqa: BLE001 - one clear message for auth/network/missing repo
            raise RexrankError(f"cannot list the requests repo {self.requests_repo}: {type(exc).__name__}. Check that "
                               "it exists and that HF_TOKEN can read it.") from None

    def push(self) -> int:
        """Upload every stored result missing from the results repo, in one commit, and every queue entry that
        differs from its request file, in one commit to the requests repo. Returns how many files were uploaded."""
        from huggingface_hub import CommitOperationAdd

        remote = self._remote_names()
        ops = []
        for row in self.store.results(latest=False, include_hidden=True):
            record, digest = shared_record(row)
            name = f"{digest}.json"
            if name not in remote:
                remote.add(name)  # two local rows that disclose to one record are pushed once
                data = {**record.to_json(), "provenance": {
                    "submitted_by": row["submitted_by"], "via": row["submitted_via"],
                    "submission_id": row["submission_id"], "submitted_at": row["submitted_at"], "owner": row["owner"]}}
                ops.append(CommitOperationAdd(path_in_repo=PREFIX + name, path_or_fileobj=_payload(data)))
        if ops:
            self.api.create_commit(self.repo_id, operations=ops, repo_type="dataset",
                                   commit_message=f"rexrank: add {len(ops)} result(s)")
        return len(ops) + self._push_requests()

    def _push_requests(self) -> int:
        if not self.requests_repo:
            return 0
        from huggingface_hub import CommitOperationAdd

        remote = self._request_files()
        ops = []
        for job in self.store.submissions(None):
            payload = _payload(request_entry(job))
            path = f"{REQUESTS_PREFIX}{job['id']}.json"
            if remote.get(path) not in (_git_blob_sha1(payload), hashlib.sha256(payload).hexdigest()):
                ops.append(CommitOperationAdd(path_in_repo=path, path_or_fileobj=payload))
        if ops:
            self.api.create_commit(self.requests_repo, operations=ops, repo_type="dataset",
                                   commit_message=f"rexrank: update {len(ops)} request(s)")
        return len(ops)

    def pull(self) -> int:
        """Add every repo result missing from the store, then put back the queue entries of the requests repo.
        Returns how many results and queue entries were new or updated."""
        rows = self.store.results(latest=False, include_hidden=True)
        # A local row is known under its own hash and under its disclosed record's (the name it was pushed as).
        known = {row["content_hash"] for row in rows} | {shared_record(row)[1] for row in rows}
        added = 0
        with tempfile.TemporaryDirectory() as tmp:
            files = [json.loads(Path(self.api.hf_hub_download(self.repo_id, PREFIX + name, repo_type="dataset",
                                                              local_dir=tmp)).read_text())
                     for name in sorted(self._remote_names()) if name[:-5] not in known]
        # In the order they were first added: a host-owned model's missing details are filled from its earliest
        # rows (``Store._model_id``), so the rebuilt store registers the same details as the original.
        files.sort(key=lambda data: ((data.get("provenance") or {}).get("submitted_at") or 0.0))
        for data in files:
            record = ResultRecord.from_json(data)
            # The repo is the host's own copy: rows come back as they were (provenance and owners kept; the
            # board's owner rule decides what is shown). A file without provenance predates it: a result the
            # host added, or a submission from no one known (kept, not shown).
            given = data.get("provenance") or {}
            provenance = Provenance(
                submitted_by=given.get("submitted_by") or (HOST if record.source != "submission" else "unknown"),
                via=given.get("via") or "hub-sync", submission_id=given.get("submission_id"),
                submitted_at=given.get("submitted_at"))
            added += self.store.add_result(record, provenance=provenance, enforce_owner=False,
                                           owner_if_new=given.get("owner") or HOST)[1]
        return added + self._pull_requests()

    def _pull_requests(self) -> int:
        if not self.requests_repo:
            return 0
        local = {f"{REQUESTS_PREFIX}{job['id']}.json": _payload(request_entry(job))
                 for job in self.store.submissions(None)}
        changed = 0
        with tempfile.TemporaryDirectory() as tmp:
            for path, content_id in sorted(self._request_files().items()):
                if path in local and content_id in (_git_blob_sha1(local[path]),
                                                    hashlib.sha256(local[path]).hexdigest()):
                    continue
                file = self.api.hf_hub_download(self.requests_repo, path, repo_type="dataset", local_dir=tmp)
                entry = json.loads(Path(file).read_text())
                if self.store.restore_submission(entry):
                    changed += 1
                elif path in local:
                    log.warning("request %s in %s is another submission than this store's job %s (or older): "
                                "kept the local one", path, self.requests_repo, entry.get("id"))
        return changed

    def sync(self) -> dict[str, int]:
        pulled = self.pull()
        return {"pulled": pulled, "pushed": self.push()}

    # -- hosting: pull on start, push after every write ----------------------------------------------------------
    def pull_with_retries(self, attempts: int = 5) -> int:
        """``pull``, retried with backoff; ``ConfigError`` if the repos still cannot be read (the board must not
        start from an empty store and then push over what the repos hold)."""
        delay = self.backoff
        for attempt in range(1, attempts + 1):
            try:
                return self.pull()
            except Exception as exc:  # noqa: BLE001 - network, auth, Hub errors: retried, then one message
                if attempt == attempts:
                    repos = " and ".join(r for r in (self.repo_id, self.requests_repo) if r)
                    raise ConfigError(f"cannot read the Hub dataset repo(s) {repos} ({exc}); the board was not "
                                      "started, so nothing was overwritten. Check the repo names and that HF_TOKEN "
                                      "can read and write them, or start without them.") from None
                log.warning("pulling from the Hub failed (%s); retrying in %.0f s", exc, delay)
                time.sleep(delay)
                delay = min(delay * 2, self.max_backoff)
        return 0

    def start(self) -> threading.Thread:
        """Push now and after every write that changes the store, from a background thread."""
        self.store.add_listener(self.notify)
        self._thread = threading.Thread(target=self._run, name="rexrank-hub-sync", daemon=True)
        self._thread.start()
        self.notify()  # what the store already holds (e.g. just seeded) and the repos lack
        return self._thread

    def notify(self) -> None:
        with self._cond:
            self._wanted += 1
            self._cond.notify_all()

    def flush(self, timeout: float = 60.0) -> bool:
        """Wait until every write so far is pushed; False if that did not happen within ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            target = self._wanted
            while self._pushed < target:
                left = deadline - time.monotonic()
                if left <= 0 or not self._cond.wait(left):
                    return self._pushed >= target
        return True

    def stop(self, timeout: float = 30.0) -> None:
        self.store.remove_listener(self.notify)
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        delay = self.backoff
        while not self._stop.is_set():
            with self._cond:
                while self._pushed >= self._wanted and not self._stop.is_set():
                    self._cond.wait()
                target = self._wanted
            if self._stop.is_set():
                return
            try:
                self.push()
            except Exception as exc:  # noqa: BLE001 - the Hub may fail any way: retried, never raised into a request
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("pushing to the Hub failed (%s); retrying in %.0f s", self.last_error, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, self.max_backoff)
                continue
            delay, self.last_error = self.backoff, None
            with self._cond:
                self._pushed = max(self._pushed, target)
                self._cond.notify_all()
