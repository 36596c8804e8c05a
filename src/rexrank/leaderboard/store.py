"""The results store: SQLite by default (WAL; every write is one transaction; schema versioned and migrated).

Tables: models, results (every result ever added: the board shows the newest per model/dataset/split/track/
source, older ones are history) and submissions (the queue). Readers never block writers (WAL), and each
write commits or rolls back whole, so a process killed mid-write leaves the store as it was.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from rexrank.data import catalog, tracks
from rexrank.errors import InputError, RexrankError, UnknownNameError
from rexrank.leaderboard.records import MetricValue, ModelInfo, ResultRecord, canonical_datasets, canonical_names

SCHEMA_VERSION = 3


def _canonical_names_v3(conn: sqlite3.Connection) -> None:
    """Version 3: dataset, split and track names as the catalog spells them (rexrank.data.catalog/tracks).

    Older versions stored what they were given: "valid" for CheXpert Plus (the published tables and
    submissions) next to "validation" (`rexrank score`), and any alias a results.json carried. Rows are
    rewritten to canonical names, with their record JSON and content hash recomputed so a later import of
    the same result is still recognised. Rows whose names the catalog does not know are left as they are.
    """
    _canonical_results(conn)
    _canonical_models(conn)
    _canonical_submissions(conn)


def _canonical_results(conn: sqlite3.Connection) -> None:
    targets: dict[int, tuple[ResultRecord, str]] = {}  # id -> (canonical record, its content hash)
    by_hash: dict[str, list[int]] = {}
    for row in conn.execute("SELECT r.*, m.name AS model_name, m.institution, m.url, m.year, m.model_type,"
                            " m.trained_on FROM results r JOIN models m ON m.id = r.model_id ORDER BY r.id"):
        record = _record_of_row(row)
        digest = record.content_hash() if record is not None else row["content_hash"]
        by_hash.setdefault(digest, []).append(row["id"])
        if record is not None and (digest != row["content_hash"] or (record.dataset, record.split, record.track)
                                   != (row["dataset"], row["split"], row["track"])):
            targets[row["id"]] = (record, digest)
    # Two rows that become one content hash are the same result (same model, set, split, track, source and
    # numbers) stored twice under different spellings, e.g. one CheXpert Plus result added as "valid" and again
    # as "validation". Keep the newest row, as the board's "newest result per model/dataset/split/track/source"
    # rule would have shown it; point submissions at it; drop the older copies (only their notes and timestamps
    # differ). Nothing but such a duplicate is deleted.
    for ids in by_hash.values():
        keep, drop = ids[-1], ids[:-1]
        for old in drop:
            conn.execute("UPDATE submissions SET result_id = ? WHERE result_id = ?", (keep, old))
            conn.execute("DELETE FROM results WHERE id = ?", (old,))
            targets.pop(old, None)
    # Two passes: a row may take the hash another row still holds until that row is rewritten (UNIQUE).
    for row_id in targets:
        conn.execute("UPDATE results SET content_hash = ? WHERE id = ?", (f"migrating:{row_id}", row_id))
    for row_id, (record, digest) in targets.items():
        conn.execute("UPDATE results SET dataset=?, split=?, track=?, record=?, content_hash=? WHERE id=?",
                     (record.dataset, record.split, record.track, json.dumps(record.to_json(), default=str),
                      digest, row_id))


def _record_of_row(row: sqlite3.Row) -> ResultRecord | None:
    """The canonical ResultRecord of a stored row (from its record JSON, else its columns); None if unknown names."""
    try:
        stored = json.loads(row["record"] or "{}")
        if stored:
            return ResultRecord.from_json(stored)
        model = ModelInfo(name=row["model_name"], institution=row["institution"], url=row["url"], year=row["year"],
                          model_type=row["model_type"], trained_on=json.loads(row["trained_on"] or "[]"))
        return ResultRecord(model=model, dataset=row["dataset"], split=row["split"], track=row["track"],
                            source=row["source"], n_studies=row["n_studies"], note=row["note"],
                            metrics={k: MetricValue(**v) for k, v in json.loads(row["metrics"]).items()},
                            extra=json.loads(row["extra"] or "{}"))
    except (InputError, KeyError, TypeError, ValueError):
        return None


def _canonical_models(conn: sqlite3.Connection) -> None:
    for row in conn.execute("SELECT id, trained_on FROM models").fetchall():
        trained = _lenient(lambda names: canonical_datasets(names, "trained_on"), json.loads(row[1] or "[]"))
        if trained is not None and json.dumps(trained) != row[1]:
            conn.execute("UPDATE models SET trained_on = ? WHERE id = ?", (json.dumps(trained), row[0]))


def _canonical_submissions(conn: sqlite3.Connection) -> None:
    for row in conn.execute("SELECT id, dataset, split, track FROM submissions").fetchall():
        names = _lenient(lambda r: canonical_names(r[1], r[2], r[3]), row)
        if names is not None and names != tuple(row[1:]):
            conn.execute("UPDATE submissions SET dataset=?, split=?, track=? WHERE id=?", (*names, row[0]))


def _lenient(canonical: Callable, value: Any) -> Any:
    """canonical(value), or None where the catalog does not know a name (a row is then left as it is)."""
    try:
        return canonical(value)
    except (InputError, UnknownNameError):
        return None


def _canonical_or_same(canonical: Callable[[str], str], name: str | None) -> str | None:
    """A filter value's canonical name; an unknown one unchanged (it then matches no row, as before)."""
    return name if name is None else (_lenient(canonical, name) or name)


# Each migration takes the store from version i to i+1: SQL statements, or a function of the connection for a
# step that rewrites data. Never edit a released step; append a new one.
MIGRATIONS: list[str | Callable[[sqlite3.Connection], None]] = [
    """
    CREATE TABLE models (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, institution TEXT, url TEXT, year INTEGER,
        model_type TEXT, trained_on TEXT NOT NULL DEFAULT '[]', created_at REAL NOT NULL);
    CREATE TABLE results (
        id INTEGER PRIMARY KEY, model_id INTEGER NOT NULL REFERENCES models(id), dataset TEXT NOT NULL,
        split TEXT NOT NULL, track TEXT NOT NULL, source TEXT NOT NULL, n_studies INTEGER,
        metrics TEXT NOT NULL, extra TEXT NOT NULL DEFAULT '{}', note TEXT,
        record TEXT NOT NULL DEFAULT '{}', content_hash TEXT NOT NULL UNIQUE, created_at REAL NOT NULL);
    CREATE INDEX results_board ON results(dataset, track, split);
    CREATE INDEX results_latest ON results(model_id, dataset, split, track, source, id);
    """,
    """
    CREATE TABLE submissions (
        id INTEGER PRIMARY KEY, content_hash TEXT NOT NULL UNIQUE, user TEXT, model TEXT NOT NULL,
        dataset TEXT NOT NULL, split TEXT NOT NULL, track TEXT NOT NULL, predictions_path TEXT NOT NULL,
        metrics TEXT NOT NULL, status TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL DEFAULT 0,
        lease_until REAL, result_id INTEGER REFERENCES results(id), created_at REAL NOT NULL,
        updated_at REAL NOT NULL);
    CREATE INDEX submissions_status ON submissions(status, id);
    CREATE INDEX submissions_user ON submissions(user, created_at);
    """,
    _canonical_names_v3,
]
assert len(MIGRATIONS) == SCHEMA_VERSION


def _apply(conn: sqlite3.Connection, migration: str | Callable[[sqlite3.Connection], None]) -> None:
    if callable(migration):
        migration(conn)
        return
    for statement in migration.split(";"):
        if statement.strip():
            conn.execute(statement)


class StoreError(RexrankError):
    pass


class DuplicateSubmission(StoreError, InputError):
    pass


class Store:
    """SQLite results store. One connection per thread; safe across processes."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._timeout = timeout
        self._local = threading.local()
        with self.transaction() as conn:
            self._migrate(conn)

    # -- plumbing ---------------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT: one write transaction, rolled back whole on any error."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"store {self.path} has schema version {version}, newer than this rexrank "
                             f"({SCHEMA_VERSION}): upgrade rexrank")
        for step in range(version, SCHEMA_VERSION):
            _apply(conn, MIGRATIONS[step])
            conn.execute(f"PRAGMA user_version = {step + 1}")

    def schema_version(self) -> int:
        return self._conn().execute("PRAGMA user_version").fetchone()[0]

    def integrity_check(self) -> str:
        return self._conn().execute("PRAGMA integrity_check").fetchone()[0]

    # -- models and results -----------------------------------------------------------------------------
    def _model_id(self, conn: sqlite3.Connection, model: ModelInfo) -> int:
        row = conn.execute("SELECT id FROM models WHERE name = ?", (model.name,)).fetchone()
        fields = (model.institution, model.url, model.year, model.model_type, json.dumps(model.trained_on))
        if row:
            # Later metadata fills gaps but never erases what is known.
            conn.execute(
                "UPDATE models SET institution=COALESCE(?, institution), url=COALESCE(?, url),"
                " year=COALESCE(?, year), model_type=COALESCE(?, model_type),"
                " trained_on=CASE WHEN ?='[]' THEN trained_on ELSE ? END WHERE id=?",
                (*fields[:4], fields[4], fields[4], row["id"]))
            return row["id"]
        cur = conn.execute(
            "INSERT INTO models(name, institution, url, year, model_type, trained_on, created_at)"
            " VALUES (?,?,?,?,?,?,?)", (model.name, *fields, time.time()))
        return cur.lastrowid

    def add_result(self, record: ResultRecord, conn: sqlite3.Connection | None = None) -> tuple[int, bool]:
        """Insert a result; returns (result id, whether it was new). The same content twice is stored once."""
        if conn is None:
            with self.transaction() as tx:
                return self.add_result(record, tx)
        digest = record.content_hash()
        found = conn.execute("SELECT id FROM results WHERE content_hash = ?", (digest,)).fetchone()
        if found:
            return found["id"], False
        model_id = self._model_id(conn, record.model)
        metrics = {k: vars(v) for k, v in record.metrics.items()}
        cur = conn.execute(
            "INSERT INTO results(model_id, dataset, split, track, source, n_studies, metrics, extra, note,"
            " record, content_hash, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (model_id, record.dataset, record.split, record.track, record.source, record.n_studies,
             json.dumps(metrics), json.dumps(record.extra, default=str), record.note,
             json.dumps(record.to_json(), default=str), digest, time.time()))
        return cur.lastrowid, True

    def results(self, dataset: str | None = None, track: str | None = None, *, latest: bool = True,
                model: str | None = None) -> list[dict[str, Any]]:
        """Rows joined with model metadata. ``latest``: newest per (model, dataset, split, track, source).

        ``dataset`` and ``track`` may be aliases ("chexpert", "Findings"): rows are stored under canonical names.
        """
        dataset, track = _canonical_or_same(catalog.canonical_dataset, dataset), _canonical_or_same(
            tracks.canonical_track, track)
        where, args = [], []
        for column, value in (("r.dataset", dataset), ("r.track", track), ("m.name", model)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = ("SELECT r.*, m.name AS model_name, m.institution, m.url, m.year, m.model_type, m.trained_on"
               " FROM results r JOIN models m ON m.id = r.model_id")
        if latest:
            where.append("r.id = (SELECT MAX(r2.id) FROM results r2 WHERE r2.model_id = r.model_id AND"
                         " r2.dataset = r.dataset AND r2.split = r.split AND r2.track = r.track AND"
                         " r2.source = r.source)")
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.id"
        rows = self._conn().execute(sql, args).fetchall()
        out = []
        for row in rows:
            item = dict(row)
            item["metrics"] = json.loads(item["metrics"])
            item["extra"] = json.loads(item["extra"])
            item["trained_on"] = json.loads(item["trained_on"] or "[]")
            item["record"] = json.loads(item["record"] or "{}")
            out.append(item)
        return out

    def version(self) -> tuple[int, int]:
        """Changes whenever a result is added (results are append-only): a cheap key for caching views."""
        row = self._conn().execute("SELECT COALESCE(MAX(id), 0), COUNT(*) FROM results").fetchone()
        return int(row[0]), int(row[1])

    def models(self) -> list[dict[str, Any]]:
        rows = self._conn().execute("SELECT * FROM models ORDER BY name").fetchall()
        return [dict(r, trained_on=json.loads(r["trained_on"] or "[]")) for r in rows]

    def counts(self) -> dict[str, int]:
        conn = self._conn()
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("models", "results", "submissions")}

    # -- submissions queue ------------------------------------------------------------------------------
    def enqueue(self, *, content_hash: str, user: str | None, model: ModelInfo, dataset: str, split: str,
                track: str, predictions_path: str, metrics: list[str]) -> int:
        dataset, split, track = canonical_names(dataset, split, track)
        now = time.time()
        try:
            with self.transaction() as conn:
                cur = conn.execute(
                    "INSERT INTO submissions(content_hash, user, model, dataset, split, track, predictions_path,"
                    " metrics, status, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?, 'queued', ?, ?)",
                    (content_hash, user, json.dumps(vars(model)), dataset, split, track, predictions_path,
                     json.dumps(list(metrics)), now, now))
                return cur.lastrowid
        except sqlite3.IntegrityError:
            row = self._conn().execute("SELECT id, status FROM submissions WHERE content_hash = ?",
                                       (content_hash,)).fetchone()
            raise DuplicateSubmission(
                f"this predictions file was already submitted (submission #{row['id']}, {row['status']})") from None

    def submissions_since(self, user: str, since: float) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM submissions WHERE user = ? AND created_at >= ?",
                                    (user, since)).fetchone()[0]

    def claim(self, lease_seconds: float = 600.0, max_attempts: int = 3) -> dict[str, Any] | None:
        """Take the oldest queued job, or one whose worker died (lease expired). Atomic across processes."""
        now = time.time()
        with self.transaction() as conn:
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

    def finish(self, job_id: int, record: ResultRecord) -> int:
        """Add the result and mark the job done in ONE transaction: a crash in between loses neither."""
        with self.transaction() as conn:
            result_id, _ = self.add_result(record, conn)
            conn.execute("UPDATE submissions SET status='done', result_id=?, error=NULL, lease_until=NULL,"
                         " updated_at=? WHERE id=?", (result_id, time.time(), job_id))
        return result_id

    def fail(self, job_id: int, error: str) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE submissions SET status='failed', error=?, lease_until=NULL, updated_at=?"
                         " WHERE id=?", (error[:2000], time.time(), job_id))

    def submissions(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = self._conn().execute("SELECT * FROM submissions ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        out = []
        for row in rows:
            item = dict(row)
            item["model"] = json.loads(item["model"])
            item["metrics"] = json.loads(item["metrics"])
            out.append(item)
        return out
