"""The submission queue: jobs (enqueue, claim, finish, fail, the Hub's copy put back) and attempts (the quotas).

Not the board: a queued job is no result until its worker's ``Store.finish`` adds one to the log, in the same
transaction as the job's status (``provenance``, ``mark_done``), so a crash in between loses neither. Enqueuing registers a new model
name to its submitter in the same transaction (``log.Log.model_id``). Every recorded attempt counts against its
quota, rejected ones included.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from rexrank.leaderboard.records import ModelInfo, Provenance, anonymous_identity, canonical_names
from rexrank.leaderboard.store.connection import Database, DuplicateSubmission, QuotaExceeded
from rexrank.leaderboard.store.log import Log

# A queued job's error when its uploaded file is gone (the Space restarted before scoring it: uploads stay on the
# Space's disk and are never synced): the same predictions may then be submitted again.
LOST_UPLOAD = ("the Space restarted before this submission was scored and uploaded files are not kept across "
               "restarts: submit the same file again (it will not count as a duplicate)")


class Queue:
    """The ``submissions`` and ``attempts`` tables of the store file ``db`` owns; new names are registered in ``log``."""

    def __init__(self, db: Database, log: Log):
        self._db = db
        self._log = log

    def enqueue(self, *, content_hash: str, user: str | None, model: ModelInfo, dataset: str, split: str,
                track: str, predictions_path: str, metrics: list[str], identity: str | None = None) -> int:
        """Queue a job and, in the same transaction, register its model name to its submitter if the name is new.

        ``identity``: the submitter (``hf:NAME``); None for an anonymous submission, whose identity is its own
        (``anon:ID``): it may register a new name but never use an existing one. ``NameTaken`` if the name (or a
        look-alike) belongs to someone else, ``DuplicateSubmission`` if the same predictions were queued before.
        """
        dataset, split, track = canonical_names(dataset, split, track)
        now = time.time()
        try:
            with self._db.transaction() as conn:
                cur = conn.execute(
                    "INSERT INTO submissions(content_hash, user, model, dataset, split, track, predictions_path,"
                    " metrics, status, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?, 'queued', ?, ?)",
                    (content_hash, user, json.dumps(vars(model)), dataset, split, track, predictions_path,
                     json.dumps(list(metrics)), now, now))
                job_id = cur.lastrowid
                identity = identity or anonymous_identity(job_id)
                conn.execute("UPDATE submissions SET identity = ? WHERE id = ?", (identity, job_id))
                self._log.model_id(conn, model, identity)
                return job_id
        except sqlite3.IntegrityError:
            row = self._db.connection().execute("SELECT id, status, error FROM submissions WHERE content_hash = ?",
                                       (content_hash,)).fetchone()
            if row is None:
                raise
            if row["status"] == "failed" and row["error"] == LOST_UPLOAD:
                return self._requeue(row["id"], predictions_path, metrics, now)
            raise DuplicateSubmission(
                f"these predictions were already submitted (submission #{row['id']}, {row['status']}); files that "
                "differ only in format or whitespace count as the same predictions") from None

    def _requeue(self, job_id: int, predictions_path: str, metrics: list[str], now: float) -> int:
        """The same predictions again after their upload was lost (a restart): the old job is queued again."""
        with self._db.transaction() as conn:
            conn.execute("UPDATE submissions SET predictions_path=?, metrics=?, status='queued', error=NULL,"
                         " attempts=0, lease_until=NULL, updated_at=? WHERE id=?",
                         (predictions_path, json.dumps(list(metrics)), now, job_id))
        return job_id

    def restore_submission(self, entry: dict[str, Any]) -> bool:
        """Put back a queue entry from the Hub's requests repo (``hub_sync``); whether anything changed.

        A missing job is inserted under its own id (results point at it) and its model name registered to its
        submitter if still free. A job this store already has is updated only if the entry is newer and is the same
        submission (same content hash). The entry never holds the uploaded file: a job still to score gets no
        predictions path here, and the worker fails it with ``LOST_UPLOAD`` (the submitter may upload it again).
        A job that was running when its Space stopped is queued again: that worker is gone.
        """
        status = "queued" if entry["status"] == "running" else entry["status"]
        model = ModelInfo(**entry["model"])
        with self._db.transaction() as conn:
            row = conn.execute("SELECT content_hash, updated_at FROM submissions WHERE id = ?",
                               (entry["id"],)).fetchone()
            if row is not None and (row["content_hash"] != entry["content_hash"]
                                    or row["updated_at"] >= entry["updated_at"]):
                return False
            result = self._log.result_of_submission(conn, entry["id"])
            values = (entry["content_hash"], entry.get("user"), json.dumps(entry["model"]), entry["dataset"],
                      entry["split"], entry["track"], json.dumps(entry["metrics"]), status, entry.get("error"),
                      entry.get("attempts", 0), result, entry["created_at"], entry["updated_at"], entry.get("identity"))
            if row is None:
                conn.execute("INSERT INTO submissions(content_hash, user, model, dataset, split, track, metrics, status,"
                             " error, attempts, result_id, created_at, updated_at, identity, predictions_path, id)"
                             " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?, '', ?)", (*values, entry["id"]))
            else:
                conn.execute("UPDATE submissions SET content_hash=?, user=?, model=?, dataset=?, split=?, track=?,"
                             " metrics=?, status=?, error=?, attempts=?, result_id=?, created_at=?, updated_at=?,"
                             " identity=?, lease_until=NULL WHERE id=?", (*values, entry["id"]))
            if entry.get("identity"):
                self._log.model_id(conn, model, entry["identity"], enforce=False)
        return True

    def submissions_since(self, user: str, since: float) -> int:
        return self._db.connection().execute("SELECT COUNT(*) FROM submissions WHERE user = ? AND created_at >= ?",
                                    (user, since)).fetchone()[0]

    # -- attempts (quotas) ------------------------------------------------------------------------------
    def reserve_attempt(self, identity: str, dataset: str, split: str, track: str, *, limit: int, window: float,
                        scope: tuple[str, ...] | None = None, what: str = "submissions",
                        shared: tuple[str, int, str] | None = None) -> int:
        """Count ``identity``'s attempts on the datasets of ``scope`` (None: all) in the last ``window`` seconds and,
        if under ``limit``, record this one; atomically, so concurrent attempts cannot all pass. Every recorded
        attempt counts, whatever its outcome (``finish_attempt``). ``QuotaExceeded`` otherwise (not recorded).

        ``shared``: (group, its limit, what it counts): a quota ``identity`` shares with its group, checked in the
        same transaction, over the attempts whose identity is ``group`` or ``group:...`` (all anonymous clients)."""
        now = time.time()
        with self._db.transaction() as conn:
            checks = [("identity = ?", [identity], limit, what)]
            if shared is not None:
                group, group_limit, group_what = shared
                escaped = group.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                checks.append(("(identity = ? OR identity LIKE ? ESCAPE '\\')", [group, f"{escaped}:%"],
                               group_limit, group_what))
            for condition, who, quota, counted in checks:
                sql, args = f"SELECT COUNT(*), MIN(created_at) FROM attempts WHERE {condition} AND created_at > ?", [
                    *who, now - window]
                if scope is not None:
                    sql += f" AND dataset IN ({','.join('?' * len(scope))})"
                    args += list(scope)
                count, oldest = conn.execute(sql, args).fetchone()
                if count >= quota:
                    wait = max(0.0, (oldest or now) + window - now)
                    raise QuotaExceeded(f"quota reached: at most {quota} {counted} per {window / 3600:g} h, rejected "
                                        f"ones included; try again in {wait / 3600:.1f} h")
            cur = conn.execute("INSERT INTO attempts(identity, dataset, split, track, outcome, created_at, updated_at)"
                               " VALUES (?,?,?,?, 'pending', ?, ?)", (identity, dataset, split, track, now, now))
            return cur.lastrowid

    def finish_attempt(self, attempt_id: int, outcome: str, reason: str | None = None,
                       submission_id: int | None = None) -> None:
        with self._db.transaction() as conn:
            conn.execute("UPDATE attempts SET outcome=?, reason=?, submission_id=?, updated_at=? WHERE id=?",
                         (outcome, None if reason is None else reason[:500], submission_id, time.time(), attempt_id))

    def attempts(self, identity: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM attempts", []
        if identity is not None:
            sql, args = sql + " WHERE identity = ?", [identity]
        rows = self._db.connection().execute(sql + " ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
        return [dict(r) for r in rows]

    def claim(self, lease_seconds: float = 600.0, max_attempts: int = 3) -> dict[str, Any] | None:
        """Take the oldest queued job, or one whose worker died (lease expired). Atomic across processes."""
        now = time.time()
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT * FROM submissions WHERE (status = 'queued' OR (status = 'running' AND lease_until < ?))"
                " AND attempts < ? ORDER BY id LIMIT 1", (now, max_attempts)).fetchone()
            if row is None:
                conn.execute("UPDATE submissions SET status='failed', error='gave up after repeated worker"
                             " failures', updated_at=? WHERE status='running' AND lease_until < ? AND attempts >= ?",
                             (now, now, max_attempts))
                return None
            conn.execute("UPDATE submissions SET status='running', attempts=attempts+1, lease_until=?, updated_at=?"
                         " WHERE id=?", (now + lease_seconds, now, row["id"]))
        job = dict(row)
        job["model"] = json.loads(job["model"])
        job["metrics"] = json.loads(job["metrics"])
        job["attempts"] += 1
        return job

    def provenance(self, conn: sqlite3.Connection, job_id: int) -> Provenance:
        """Who a job's result comes from: its submitter (its own anonymous identity if none), "space", the job id and
        the time it was queued."""
        job = conn.execute("SELECT identity, created_at FROM submissions WHERE id = ?", (job_id,)).fetchone()
        return Provenance(submitted_by=job["identity"] if job and job["identity"] else anonymous_identity(job_id),
                          via="space", submission_id=job_id, submitted_at=job["created_at"] if job else None)

    def mark_done(self, conn: sqlite3.Connection, job_id: int, result_id: int) -> None:
        """The job is done and its result is ``result_id``: in the transaction that added the result (``Store.finish``),
        so a crash in between loses neither."""
        conn.execute("UPDATE submissions SET status='done', result_id=?, error=NULL, lease_until=NULL,"
                     " updated_at=? WHERE id=?", (result_id, time.time(), job_id))

    def fail(self, job_id: int, error: str) -> None:
        with self._db.transaction() as conn:
            conn.execute("UPDATE submissions SET status='failed', error=?, lease_until=NULL, updated_at=?"
                         " WHERE id=?", (error[:2000], time.time(), job_id))

    def submissions(self, limit: int | None = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` jobs (None: all), newest first."""
        rows = self._db.connection().execute("SELECT * FROM submissions ORDER BY id DESC LIMIT ?",
                                    (-1 if limit is None else limit,)).fetchall()
        out = []
        for row in rows:
            item = dict(row)
            item["model"] = json.loads(item["model"])
            item["metrics"] = json.loads(item["metrics"])
            out.append(item)
        return out
