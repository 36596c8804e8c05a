"""Hub dataset repo backend for a hosted board: the store's log as JSON files, synced both ways with the local store.

Layout in the results repo: the store's log (``rexrank.leaderboard.store``), one file per entry, named by its
content hash: ``results/<content_hash>.json``, one ``ResultRecord`` each (aggregates only), and
``events/<content_hash>.json``, one event each (a model's: a name registered, details filled or edited, a name
handed over, ``store.make_event``; or the Arena's: a vote, ``store.make_vote``, or the host's decision about a
rater, ``store.make_rater_event``; or the host's published meta-evaluation, aggregates only,
``store.make_meta_eval_event``; or whether the published tables still list a model, ``store.make_listing_event``),
and ``reports/<content_hash>.json``, one scored public submission's per-study metric values, with its predictions
and references where the set's text is open (``Store.keep_reports``: IU-Xray's; a licensed set's rows carry empty
texts; never a private set's, which the store refuses to keep). A report file of the repo that holds a licensed set's
text (pushed by an earlier rexrank) is restored without it and deleted from the repo at the next push. Files are only ever added, never rewritten, so pushing and pulling are idempotent and
two boards never overwrite each other's files; a pull applies events in their recorded order whatever order they
arrive in (``Store.add_events``), so an edit or a hand-over survives a restart from the repo. The SQLite store
stays the working copy; the repo is the durable, shareable copy.

What a pull accepts (the repo is outside input): an event file whose content hashes to its name and that
``store.check_event`` accepts; a result file that builds a ``ResultRecord`` with possible numbers
(``records.check_numbers``, as ``Store.add_result`` checks on every path); a report file whose rows are
[study, report, reference, {metric: number}] texts and numbers of a public set (``Store.keep_reports`` refuses a
private one). Anything else is skipped, logged and
listed in ``refused``; it never stops the pull or changes a stored row. Results are stored as they were accepted
where they were added (``Store.add_result(mirror=True)``: owner and weights rules not applied again).

What is pushed is the disclosed record (``rexrank.evaluation.disclosure.disclose_record``): a private test set's
numbers rounded to 3 decimals and small subgroups suppressed, even where the local row holds more, and the file is
named after the disclosed record's hash (a row already disclosed keeps its own hash).

Each result file also holds the row's ``provenance`` (who added it, how, when, its submission id, when this store
recorded it and, for repos written before events existed, its model name's owner at the time; not part of the
record or its hash), so a board rebuilt from the repo shows the same rows in the same order.

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

from rexrank.data import catalog
from rexrank.errors import ConfigError, InputError, RexrankError
from rexrank.evaluation.disclosure import disclose_record
from rexrank.leaderboard.records import HOST, MetricValue, ModelInfo, Provenance, ResultRecord
from rexrank.leaderboard.store import Store, check_event, event_hash

log = logging.getLogger(__name__)

PREFIX = "results/"
EVENTS_PREFIX = "events/"
REPORTS_PREFIX = "reports/"
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


def _recorded_at(data: Any) -> float:
    """When a result file's row was first recorded (older files: when it was submitted); 0 if unknown."""
    given = (data.get("provenance") if isinstance(data, dict) else None) or {}
    for key in ("recorded_at", "submitted_at"):
        if isinstance(given, dict) and isinstance(given.get(key), (int, float)):
            return float(given[key])
    return 0.0


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


def report_files(store: Store) -> list[bytes]:
    """One file per kept submission's reports (``Store.keep_reports``): its set, model, result hash, time and
    rows."""
    groups: dict[tuple, dict[str, Any]] = {}
    for row in store.arena_reports():
        key = (row["dataset"], row["split"], row["track"], row["model"])
        group = groups.setdefault(key, {"dataset": row["dataset"], "split": row["split"], "track": row["track"],
                                        "model": row["model"], "result_hash": row["result_hash"],
                                        "provenance": {"recorded_at": row["created_at"]}, "rows": []})
        group["rows"].append([row["study"], row["report"], row["reference"], row["metrics"]])
    return [_payload(group) for group in groups.values()]


def _restore_reports(store: Store, data: Any) -> int:
    """A report file of the repo back into the store (private sets refused by ``keep_reports``); 1 if stored."""
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise InputError("not a report file (an object with rows)")
    rows = []
    for row in data["rows"]:
        study, report, reference, values = row
        if not all(isinstance(t, str) and len(t) < 20000 for t in (study, report, reference)) or not isinstance(
                values, dict) or not all(isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(
                    v, bool) and v == v for k, v in values.items()):
            raise InputError("a report row is [study, report, reference, {metric: number}]")
        rows.append((study, report, reference, values))
    for key in ("dataset", "split", "track", "model", "result_hash"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise InputError(f"a report file's {key} must be a text")
    store.keep_reports(dataset=data["dataset"], split=data["split"], track=data["track"], model=data["model"],
                       result_hash=data["result_hash"], rows=rows, recorded_at=_recorded_at(data))
    return 1


def _holds_licensed_text(data: Any) -> bool:
    """Whether a repo's report file holds a licensed set's report or reference text (``catalog.licensed``)."""
    try:
        if not catalog.licensed(str(data["dataset"])):
            return False
        return any(isinstance(row, list) and len(row) == 4 and (row[1] or row[2]) for row in data["rows"])
    except (KeyError, TypeError, RexrankError):  # not a report file, or no set rexrank knows: refused by the restore
        return False


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
        self.refused: list[str] = []  # repo files the last pull skipped (see the module docstring)
        self.licensed_files: set[str] = set()  # report files of the repo holding licensed text: deleted by push

    def _remote_files(self) -> dict[str, set[str]]:
        """{prefix: file names (``<hash>.json``)} of the results repo's results and events."""
        try:
            files = self.api.list_repo_files(self.repo_id, repo_type="dataset")
        except Exception as exc:  # noqa: BLE001 - one clear message for auth/network/missing repo
            raise RexrankError(f"cannot list the results repo {self.repo_id}: {type(exc).__name__}. Check that it "
                               "exists and that HF_TOKEN can read it.") from None
        return {prefix: {f[len(prefix):] for f in files if f.startswith(prefix) and f.endswith(".json")}
                for prefix in (PREFIX, EVENTS_PREFIX, REPORTS_PREFIX)}

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
        """Upload every result and event of the store missing from the results repo, in one commit, and every queue
        entry that differs from its request file, in one commit to the requests repo. Returns how many files were
        uploaded."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        remote = self._remote_files()
        ops = []
        for row in self.store.results(latest=False, include_hidden=True):
            record, digest = shared_record(row)
            name = f"{digest}.json"
            if name not in remote[PREFIX]:
                remote[PREFIX].add(name)  # two local rows that disclose to one record are pushed once
                data = {**record.to_json(), "provenance": {
                    "submitted_by": row["submitted_by"], "via": row["submitted_via"],
                    "submission_id": row["submission_id"], "submitted_at": row["submitted_at"],
                    "recorded_at": row["created_at"], "owner": row["owner"]}}
                ops.append(CommitOperationAdd(path_in_repo=PREFIX + name, path_or_fileobj=_payload(data)))
        results = len(ops)
        for digest, event in self.store.events():
            if f"{digest}.json" not in remote[EVENTS_PREFIX]:
                ops.append(CommitOperationAdd(path_in_repo=f"{EVENTS_PREFIX}{digest}.json",
                                              path_or_fileobj=_payload(event)))
        for payload in report_files(self.store):
            name = f"{hashlib.sha256(payload).hexdigest()}.json"
            if name not in remote[REPORTS_PREFIX]:
                ops.append(CommitOperationAdd(path_in_repo=REPORTS_PREFIX + name, path_or_fileobj=payload))
        purged = sorted(p for p in self.licensed_files if p[len(REPORTS_PREFIX):] in remote[REPORTS_PREFIX])
        ops.extend(CommitOperationDelete(path_in_repo=path) for path in purged)
        if ops:
            self.api.create_commit(self.repo_id, operations=ops, repo_type="dataset",
                                   commit_message=f"rexrank: add {results} result(s), {len(ops) - results - len(purged)}"
                                                  f" event(s) or report file(s)"
                                                  + (f"; delete {len(purged)} holding licensed text" if purged else ""))
            if purged:
                log.warning("deleted %d report file(s) holding licensed text from %s; its history still holds "
                            "them until you squash it (HfApi.super_squash_history)", len(purged), self.repo_id)
                self.licensed_files.difference_update(purged)
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
        """Add every event and result of the repo missing from the store (events first: they register the names
        and carry their details and owners), then put back the queue entries of the requests repo. Returns how many
        events, results and queue entries were new or updated; files refused are listed in ``refused``."""
        self.refused = []
        remote = self._remote_files()
        local_events = {digest for digest, _ in self.store.events()}
        rows = self.store.results(latest=False, include_hidden=True)
        # A local row is known under its own hash and under its disclosed record's (the name it was pushed as).
        known = {row["content_hash"] for row in rows} | {shared_record(row)[1] for row in rows}
        with tempfile.TemporaryDirectory() as tmp:
            events = [(name, self._download(EVENTS_PREFIX + name, tmp)) for name in sorted(remote[EVENTS_PREFIX])
                      if name[:-5] not in local_events]
            files = [(name, self._download(PREFIX + name, tmp)) for name in sorted(remote[PREFIX])
                     if name[:-5] not in known]
            local_reports = {hashlib.sha256(p).hexdigest() for p in report_files(self.store)}
            reports = [(name, self._download(REPORTS_PREFIX + name, tmp)) for name in sorted(remote[REPORTS_PREFIX])
                       if name[:-5] not in local_reports]
        accepted = []
        for name, data in events:
            try:
                if not isinstance(data, dict) or event_hash(data) != name[:-5]:
                    raise InputError("its content does not hash to its name")
                accepted.append(check_event(data))
            except InputError as exc:
                self._refuse(EVENTS_PREFIX + name, exc)
        # In the order they were first recorded: the rebuilt store holds them in the original's order (the board's
        # "newest row" rule reads that order), and a repo without events fills a host-owned model's details from its
        # earliest rows as the original did (``store.log.Log.model_id``).
        files.sort(key=lambda item: _recorded_at(item[1]))
        added = 0
        with self.store.transaction() as conn:
            added += self.store.add_events(accepted, conn)
            for name, data in files:
                try:
                    added += self._add_file(data, conn)
                except (InputError, KeyError, TypeError, ValueError, AttributeError) as exc:
                    self._refuse(PREFIX + name, exc)
        for name, data in sorted(reports, key=lambda item: _recorded_at(item[1])):
            if _holds_licensed_text(data):
                self.licensed_files.add(REPORTS_PREFIX + name)
            try:
                added += _restore_reports(self.store, data)
            except (InputError, KeyError, TypeError, ValueError, AttributeError) as exc:
                self._refuse(REPORTS_PREFIX + name, exc)
        return added + self._pull_requests()

    def _download(self, path: str, tmp: str) -> Any:
        """A repo file's JSON (None if it is not JSON: refused by the caller's checks)."""
        text = Path(self.api.hf_hub_download(self.repo_id, path, repo_type="dataset", local_dir=tmp)).read_text()
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            return None

    def _add_file(self, data: Any, conn) -> int:
        """Store one result file of the repo (as it was accepted where it was added); whether it was new."""
        if not isinstance(data, dict):
            raise InputError("not a JSON object")
        record = ResultRecord.from_json(data)
        # The repo is the host's own copy: rows come back as they were (provenance and owners kept; the board's
        # owner rule decides what is shown). A file without provenance predates it: a result the host added, or a
        # submission from no one known (kept, not shown). Its "owner" only matters for a repo without events.
        given = data.get("provenance") if isinstance(data.get("provenance"), dict) else {}
        for key, types in (("submitted_by", str), ("via", str), ("owner", str), ("submission_id", int),
                           ("submitted_at", (int, float)), ("recorded_at", (int, float))):
            if given.get(key) is not None and (not isinstance(given[key], types) or isinstance(given[key], bool)):
                raise InputError(f"provenance {key} is not a {getattr(types, '__name__', 'number')}")
        provenance = Provenance(
            submitted_by=given.get("submitted_by") or (HOST if record.source != "submission" else "unknown"),
            via=given.get("via") or "hub-sync", submission_id=given.get("submission_id"),
            submitted_at=given.get("submitted_at"))
        return self.store.add_result(record, conn, provenance=provenance, mirror=True,
                                     owner_if_new=given.get("owner") or HOST,
                                     recorded_at=given.get("recorded_at"))[1]

    def _refuse(self, path: str, exc: Exception) -> None:
        self.refused.append(path)
        log.warning("skipped %s from %s: %s", path, self.repo_id, exc)

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
