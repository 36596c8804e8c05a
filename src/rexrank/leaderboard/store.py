"""The results store: SQLite by default (WAL; every write is one transaction; schema versioned and migrated).

Tables: models (one per name: its details and its owner), results (every result ever added, each with its
provenance: the board shows the newest the owner or the host added per model/dataset/split/track/source, older
ones are history), submissions (the queue), attempts (every submission attempt, rejected ones included: the
quotas count them) and meta (facts about the store itself, e.g. whether it was seeded with the published tables:
``published.seed_store`` owns that rule). Readers never block writers (WAL), and each write commits or rolls back whole, so a process
killed mid-write leaves the store as it was.

Ownership: a model name (compared by ``records.name_key``: NFKC, casefold, hidden characters and look-alikes
folded) belongs to whoever first registered it, the host for the published rows. Only its owner may add results
under it; nothing but ``edit_model`` (the host's CLI) changes its details or its owner.
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
from rexrank.evaluation.disclosure import disclose_record
from rexrank.errors import InputError, RexrankError, UnknownNameError
from rexrank.leaderboard.records import (
    HOST,
    MetricValue,
    ModelInfo,
    Provenance,
    ResultRecord,
    anonymous_identity,
    canonical_datasets,
    canonical_names,
    describe_identity,
    name_key,
)

SCHEMA_VERSION = 5


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


def _ownership_v4(conn: sqlite3.Connection) -> None:
    """Version 4: model names have owners, results their provenance, attempts are recorded for the quotas.

    Provenance is rebuilt from what the store knows: published and rexrank rows were added by the host; a
    submission row by its job's user (``user:NAME``, a name the Space took from the request) or, without one, by
    that anonymous job (``anon:ID``). A name belongs to whoever first registered it: the adder of its oldest row
    (the host for the published rows and for a name with no rows). So a published model stays the host's and a
    team's first submission keeps its name, while rows that others added later under it stay in the history but
    leave the board. Model details that a submission overwrote (the old merge let any submission replace a
    published model's institution and link) are rebuilt from the owner's own results (the host's when the host
    owns the name), earliest first. Names that differ only by case, width, invisible characters or look-alikes
    keep their rows; the first model of such a group holds the name.
    """
    for statement in (
            "ALTER TABLE models ADD COLUMN name_key TEXT",
            f"ALTER TABLE models ADD COLUMN owner TEXT NOT NULL DEFAULT '{HOST}'",
            f"ALTER TABLE results ADD COLUMN submitted_by TEXT NOT NULL DEFAULT '{HOST}'",
            "ALTER TABLE results ADD COLUMN submitted_via TEXT NOT NULL DEFAULT 'host'",
            "ALTER TABLE results ADD COLUMN submission_id INTEGER",
            "ALTER TABLE results ADD COLUMN submitted_at REAL",
            "ALTER TABLE submissions ADD COLUMN identity TEXT",
            "CREATE TABLE attempts (id INTEGER PRIMARY KEY, identity TEXT NOT NULL, dataset TEXT NOT NULL,"
            " split TEXT NOT NULL, track TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT,"
            " submission_id INTEGER, created_at REAL NOT NULL, updated_at REAL NOT NULL)",
            "CREATE INDEX attempts_quota ON attempts(identity, created_at)"):
        conn.execute(statement)
    for row in conn.execute("SELECT id, user FROM submissions").fetchall():
        identity = f"user:{row['user']}" if row["user"] else anonymous_identity(row["id"])
        conn.execute("UPDATE submissions SET identity = ? WHERE id = ?", (identity, row["id"]))
    jobs = {row["result_id"]: row for row in conn.execute(
        "SELECT id, identity, created_at, result_id FROM submissions WHERE result_id IS NOT NULL ORDER BY id")}
    for row in conn.execute("SELECT id, source, created_at FROM results").fetchall():
        if row["source"] == "submission":
            job = jobs.get(row["id"])
            provenance = ((job["identity"], "space", job["id"], job["created_at"]) if job is not None
                          else ("unknown", "unknown", None, row["created_at"]))
        else:
            provenance = (HOST, "published" if row["source"] == "published" else "host", None, row["created_at"])
        conn.execute("UPDATE results SET submitted_by=?, submitted_via=?, submission_id=?, submitted_at=? WHERE id=?",
                     (*provenance, row["id"]))
    taken: set[str] = set()
    for model in conn.execute("SELECT id, name FROM models ORDER BY id").fetchall():
        key = name_key(model["name"])
        conn.execute("UPDATE models SET name_key = ? WHERE id = ?", (None if key in taken else key, model["id"]))
        taken.add(key)
        first = conn.execute("SELECT submitted_by FROM results WHERE model_id = ? ORDER BY id LIMIT 1",
                             (model["id"],)).fetchone()
        owner = first["submitted_by"] if first is not None and first["submitted_by"] != "unknown" else HOST
        conn.execute("UPDATE models SET owner = ? WHERE id = ?", (owner, model["id"]))
        _rebuild_details(conn, model["id"], owner)
    conn.execute("CREATE UNIQUE INDEX models_name_key ON models(name_key)")


def _rebuild_details(conn: sqlite3.Connection, model_id: int, owner: str) -> None:
    """A model's details as its owner's own results gave them (later rows filling in), else its first row's."""
    rows = conn.execute("SELECT submitted_by, record FROM results WHERE model_id = ? ORDER BY id", (model_id,)).fetchall()
    models = [json.loads(r["record"] or "{}").get("model") for r in rows]
    own = [m for r, m in zip(rows, models) if m and r["submitted_by"] == owner]
    chosen = own or [m for m in models if m][:1]
    if not chosen:
        return
    details: dict[str, Any] = {}
    for model in chosen:
        for key in ("institution", "url", "year", "model_type"):
            if model.get(key) is not None:
                details[key] = model[key]
        if model.get("trained_on"):
            details["trained_on"] = json.dumps(model["trained_on"])
    conn.execute("UPDATE models SET institution=?, url=?, year=?, model_type=?, trained_on=? WHERE id=?",
                 (details.get("institution"), details.get("url"), details.get("year"), details.get("model_type"),
                  details.get("trained_on", "[]"), model_id))


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
    _ownership_v4,
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at REAL NOT NULL)",
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


# A queued job's error when its uploaded file is gone (the Space restarted before scoring it: uploads stay on the
# Space's disk and are never synced): the same predictions may then be submitted again.
LOST_UPLOAD = ("the Space restarted before this submission was scored and uploaded files are not kept across "
               "restarts: submit the same file again (it will not count as a duplicate)")


class DuplicateSubmission(StoreError, InputError):
    pass


class NameTaken(StoreError, InputError):
    """A model name (or a look-alike of it) registered by someone else."""


class QuotaExceeded(StoreError, InputError):
    pass


# A row is on the board when its model's owner added it, or the host did (the published rows, `leaderboard add`).
_SHOWN = f"(r.submitted_by = m.owner OR r.submitted_by = '{HOST}')"


def check_owner(row: sqlite3.Row | dict, name: str, identity: str | None) -> None:
    """``NameTaken`` unless ``identity`` owns the registered model ``row``. An anonymous submission's identity
    (``anon:ID``) is its own, so it owns only the name it registered itself (its result may be stored under it)."""
    owner = row["owner"]
    if identity is not None and identity == owner:
        return
    same = "" if row["name"] == name else f" (as {row['name']!r}: names are compared ignoring case, width, " \
                                          "spacing, invisible characters and look-alike letters)"
    if identity is None or identity.startswith("anon:"):
        fix = "Choose another name, or log in with Hugging Face as its owner to submit under it."
    elif identity == HOST:
        fix = "Choose another name, or hand the name over with `rexrank leaderboard edit-model NAME --owner host`."
    else:
        fix = "Choose another name, or log in as its owner to submit under it."
    raise NameTaken(f"the model name {name!r} is already registered by {describe_identity(owner)}{same}. {fix}")


class Store:
    """SQLite results store. One connection per thread; safe across processes."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._timeout = timeout
        self._local = threading.local()
        self._listeners: list[Callable[[], None]] = []
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
        before = conn.total_changes
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if conn.total_changes != before:
            self._changed()

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after every committed write that changed a row (the Hub sync's push trigger).
        It runs in the writer's thread, so it must only signal (never do slow work)."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    def _changed(self) -> None:
        for callback in list(self._listeners):
            try:
                callback()
            except Exception:  # noqa: BLE001 - a listener never undoes or fails a committed write
                pass

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

    def meta(self, key: str) -> Any:
        """A stored fact about the store (JSON value), or None."""
        row = self._conn().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any, conn: sqlite3.Connection | None = None) -> None:
        if conn is None:
            with self.transaction() as tx:
                return self.set_meta(key, value, tx)
        conn.execute("INSERT INTO meta(key, value, updated_at) VALUES (?,?,?) ON CONFLICT(key) DO UPDATE SET"
                     " value = excluded.value, updated_at = excluded.updated_at", (key, json.dumps(value), time.time()))

    def schema_version(self) -> int:
        return self._conn().execute("PRAGMA user_version").fetchone()[0]

    def integrity_check(self) -> str:
        return self._conn().execute("PRAGMA integrity_check").fetchone()[0]

    # -- models and results -----------------------------------------------------------------------------
    def _find_model(self, conn: sqlite3.Connection, name: str) -> sqlite3.Row | None:
        """The model registered under ``name`` or a name with the same key (case, width, invisible characters...)."""
        return conn.execute("SELECT * FROM models WHERE name_key = ? OR name = ? ORDER BY name = ? DESC,"
                            " name_key IS NULL, id LIMIT 1", (name_key(name), name, name)).fetchone()

    def _model_id(self, conn: sqlite3.Connection, model: ModelInfo, identity: str, *, enforce: bool = True,
                  owner_if_new: str | None = None) -> int:
        """The id of ``model``'s name, registering it to ``identity`` (or ``owner_if_new``) if it is new.

        A registered name may be used only by its owner (``NameTaken`` otherwise, unless ``enforce`` is False: the
        host mirroring its own Hub copy). Its details never change here, except that the host's own additions
        fill details still unknown (the published tables give a model's link in one table and not in another).
        """
        row = self._find_model(conn, model.name)
        if row is None:
            cur = conn.execute(
                "INSERT INTO models(name, name_key, owner, institution, url, year, model_type, trained_on, created_at)"
                " VALUES (?,?,?,?,?,?,?,?,?)",
                (model.name, name_key(model.name), owner_if_new or identity, model.institution, model.url,
                 model.year, model.model_type, json.dumps(model.trained_on), time.time()))
            return cur.lastrowid
        if enforce:
            check_owner(row, model.name, identity)
        if identity == HOST and row["owner"] == HOST:
            conn.execute(
                "UPDATE models SET institution=COALESCE(institution, ?), url=COALESCE(url, ?),"
                " year=COALESCE(year, ?), model_type=COALESCE(model_type, ?),"
                " trained_on=CASE WHEN trained_on='[]' THEN ? ELSE trained_on END WHERE id=?",
                (model.institution, model.url, model.year, model.model_type, json.dumps(model.trained_on), row["id"]))
        return row["id"]

    def model(self, name: str) -> dict[str, Any] | None:
        """The registered model of ``name`` (compared by name key): details, owner; None if the name is free."""
        row = self._find_model(self._conn(), name)
        return None if row is None else dict(row, trained_on=json.loads(row["trained_on"] or "[]"))

    def model_info(self, name: str) -> ModelInfo | None:
        """The registered details of ``name`` as a ModelInfo (what a submission's result is stored with)."""
        row = self.model(name)
        if row is None:
            return None
        return ModelInfo(name=row["name"], institution=row["institution"], url=row["url"], year=row["year"],
                         model_type=row["model_type"], trained_on=row["trained_on"])

    def check_name(self, name: str, identity: str | None) -> dict[str, Any] | None:
        """Raise ``NameTaken`` unless ``identity`` may submit under ``name``; the registered model, or None if free."""
        row = self._find_model(self._conn(), name)
        if row is not None:
            check_owner(row, name, identity)
        return None if row is None else dict(row)

    def edit_model(self, name: str, *, owner: str | None = None, **details: Any) -> dict[str, Any]:
        """The host's explicit edit of a model's details or owner (``rexrank leaderboard edit-model``).

        ``details``: institution, url, year, model_type, trained_on; values None are left as they are.
        """
        allowed = ("institution", "url", "year", "model_type", "trained_on")
        unknown = set(details) - set(allowed)
        if unknown:
            raise InputError(f"unknown model fields: {', '.join(sorted(unknown))}")
        with self.transaction() as conn:
            row = self._find_model(conn, name)
            if row is None:
                raise InputError(f"no model named {name!r}")
            sets, args = [], []
            for key in allowed:
                if details.get(key) is not None:
                    value = details[key]
                    sets.append(f"{key} = ?")
                    args.append(json.dumps(value) if key == "trained_on" else value)
            if owner is not None:
                sets.append("owner = ?")
                args.append(owner)
            if sets:
                conn.execute(f"UPDATE models SET {', '.join(sets)} WHERE id = ?", (*args, row["id"]))
        return self.model(row["name"])

    def add_result(self, record: ResultRecord, conn: sqlite3.Connection | None = None, *,
                   provenance: Provenance | None = None, enforce_owner: bool = True,
                   owner_if_new: str | None = None) -> tuple[int, bool]:
        """Insert a result; returns (result id, whether it was new). The same result twice is stored once.

        "The same": the same content hash, or (``_same_result``) a result its adder already stored for this
        model, test set, split, track and source with the same ``ResultRecord.result_key`` (the same numbers,
        scored at another time: re-running `rexrank score` and `leaderboard add` adds nothing).
        ``provenance``: who adds it and how (default: the host). Only the owner of the model's name may add a
        result under it (``NameTaken`` otherwise); a new name is registered to ``provenance.submitted_by``.
        """
        if conn is None:
            with self.transaction() as tx:
                return self.add_result(record, tx, provenance=provenance, enforce_owner=enforce_owner,
                                       owner_if_new=owner_if_new)
        provenance = provenance or Provenance()
        # A private set's result is stored as it may be disclosed (rounded, small groups suppressed): the store is
        # synced to the Hub and read by the Space, so full precision must never enter it.
        # Rows stored before disclosure existed carry the undisclosed record's hash: either one means "stored".
        as_given = record.content_hash()
        record = ResultRecord.from_json(disclose_record(record.to_json()))
        digest = record.content_hash()
        found = conn.execute("SELECT id FROM results WHERE content_hash IN (?, ?)", (digest, as_given)).fetchone()
        if found:
            return found["id"], False
        same = self._same_result(conn, record, provenance.submitted_by)
        if same is not None:
            return same, False
        model_id = self._model_id(conn, record.model, provenance.submitted_by, enforce=enforce_owner,
                                  owner_if_new=owner_if_new)
        metrics = {k: vars(v) for k, v in record.metrics.items()}
        now = time.time()
        cur = conn.execute(
            "INSERT INTO results(model_id, dataset, split, track, source, n_studies, metrics, extra, note,"
            " record, content_hash, created_at, submitted_by, submitted_via, submission_id, submitted_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (model_id, record.dataset, record.split, record.track, record.source, record.n_studies,
             json.dumps(metrics), json.dumps(record.extra, default=str), record.note,
             json.dumps(record.to_json(), default=str), digest, now, provenance.submitted_by, provenance.via,
             provenance.submission_id, provenance.submitted_at or now))
        return cur.lastrowid, True

    def _same_result(self, conn: sqlite3.Connection, record: ResultRecord, submitted_by: str) -> int | None:
        """The newest row ``submitted_by`` stored with ``record``'s result key for its model/set/split/track/source."""
        model = self._find_model(conn, record.model.name)
        if model is None:
            return None
        key = record.result_key()
        rows = conn.execute(
            "SELECT r.*, m.name AS model_name, m.institution, m.url, m.year, m.model_type, m.trained_on"
            " FROM results r JOIN models m ON m.id = r.model_id WHERE r.model_id = ? AND r.dataset = ? AND"
            " r.split = ? AND r.track = ? AND r.source = ? AND r.submitted_by = ? ORDER BY r.id DESC",
            (model["id"], record.dataset, record.split, record.track, record.source, submitted_by)).fetchall()
        for row in rows:
            stored = _record_of_row(row)
            if stored is not None and stored.result_key() == key:
                return row["id"]
        return None

    def is_shown(self, result_id: int) -> bool:
        """Whether the board shows this row (the newest its model's owner or the host added for its set/track)."""
        row = self._conn().execute("SELECT dataset, track, model_id FROM results WHERE id = ?", (result_id,)).fetchone()
        if row is None:
            return False
        name = self._conn().execute("SELECT name FROM models WHERE id = ?", (row["model_id"],)).fetchone()["name"]
        return any(r["id"] == result_id for r in self.results(row["dataset"], row["track"], model=name))

    def results(self, dataset: str | None = None, track: str | None = None, *, latest: bool = True,
                model: str | None = None, include_hidden: bool = False) -> list[dict[str, Any]]:
        """Rows joined with model metadata and owner. ``latest``: newest per (model, dataset, split, track, source).

        Only rows the model's owner or the host added are returned (what the board may show), and ``latest``
        picks the newest among those; ``include_hidden`` adds the others (history, Hub sync). Each row carries
        its provenance: submitted_by, submitted_via, submission_id, submitted_at.
        ``dataset`` and ``track`` may be aliases ("chexpert", "Findings"): rows are stored under canonical names.
        ``model`` is compared as names are (``records.name_key``).
        """
        dataset, track = _canonical_or_same(catalog.canonical_dataset, dataset), _canonical_or_same(
            tracks.canonical_track, track)
        where, args = [], []
        for column, value in (("r.dataset", dataset), ("r.track", track)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if model is not None:
            found = self._find_model(self._conn(), model)
            where.append("m.id = ?")
            args.append(found["id"] if found is not None else -1)
        if not include_hidden:
            where.append(_SHOWN)
        sql = ("SELECT r.*, m.name AS model_name, m.institution, m.url, m.year, m.model_type, m.trained_on,"
               " m.owner FROM results r JOIN models m ON m.id = r.model_id")
        if latest:
            shown = "" if include_hidden else " AND " + _SHOWN.replace("r.", "r2.")
            where.append("r.id = (SELECT MAX(r2.id) FROM results r2 WHERE r2.model_id = r.model_id AND"
                         " r2.dataset = r.dataset AND r2.split = r.split AND r2.track = r.track AND"
                         f" r2.source = r.source{shown})")
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
                track: str, predictions_path: str, metrics: list[str], identity: str | None = None) -> int:
        """Queue a job and, in the same transaction, register its model name to its submitter if the name is new.

        ``identity``: the submitter (``hf:NAME``); None for an anonymous submission, whose identity is its own
        (``anon:ID``): it may register a new name but never use an existing one. ``NameTaken`` if the name (or a
        look-alike) belongs to someone else, ``DuplicateSubmission`` if the same predictions were queued before.
        """
        dataset, split, track = canonical_names(dataset, split, track)
        now = time.time()
        try:
            with self.transaction() as conn:
                cur = conn.execute(
                    "INSERT INTO submissions(content_hash, user, model, dataset, split, track, predictions_path,"
                    " metrics, status, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?, 'queued', ?, ?)",
                    (content_hash, user, json.dumps(vars(model)), dataset, split, track, predictions_path,
                     json.dumps(list(metrics)), now, now))
                job_id = cur.lastrowid
                identity = identity or anonymous_identity(job_id)
                conn.execute("UPDATE submissions SET identity = ? WHERE id = ?", (identity, job_id))
                self._model_id(conn, model, identity)
                return job_id
        except sqlite3.IntegrityError:
            row = self._conn().execute("SELECT id, status, error FROM submissions WHERE content_hash = ?",
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
        with self.transaction() as conn:
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
        with self.transaction() as conn:
            row = conn.execute("SELECT content_hash, updated_at FROM submissions WHERE id = ?",
                               (entry["id"],)).fetchone()
            if row is not None and (row["content_hash"] != entry["content_hash"]
                                    or row["updated_at"] >= entry["updated_at"]):
                return False
            result = conn.execute("SELECT MAX(id) FROM results WHERE submission_id = ? AND submitted_via = 'space'",
                                  (entry["id"],)).fetchone()[0]
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
                self._model_id(conn, model, entry["identity"], enforce=False)
        return True

    def submissions_since(self, user: str, since: float) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM submissions WHERE user = ? AND created_at >= ?",
                                    (user, since)).fetchone()[0]

    # -- attempts (quotas) ------------------------------------------------------------------------------
    def reserve_attempt(self, identity: str, dataset: str, split: str, track: str, *, limit: int, window: float,
                        scope: tuple[str, ...] | None = None, what: str = "submissions") -> int:
        """Count ``identity``'s attempts on the datasets of ``scope`` (None: all) in the last ``window`` seconds and,
        if under ``limit``, record this one; atomically, so concurrent attempts cannot all pass. Every recorded
        attempt counts, whatever its outcome (``finish_attempt``). ``QuotaExceeded`` otherwise (not recorded)."""
        now = time.time()
        with self.transaction() as conn:
            sql, args = "SELECT COUNT(*), MIN(created_at) FROM attempts WHERE identity = ? AND created_at > ?", [
                identity, now - window]
            if scope is not None:
                sql += f" AND dataset IN ({','.join('?' * len(scope))})"
                args += list(scope)
            count, oldest = conn.execute(sql, args).fetchone()
            if count >= limit:
                wait = max(0.0, (oldest or now) + window - now)
                raise QuotaExceeded(f"quota reached: at most {limit} {what} per {window / 3600:g} h, rejected ones "
                                    f"included; try again in {wait / 3600:.1f} h")
            cur = conn.execute("INSERT INTO attempts(identity, dataset, split, track, outcome, created_at, updated_at)"
                               " VALUES (?,?,?,?, 'pending', ?, ?)", (identity, dataset, split, track, now, now))
            return cur.lastrowid

    def finish_attempt(self, attempt_id: int, outcome: str, reason: str | None = None,
                       submission_id: int | None = None) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE attempts SET outcome=?, reason=?, submission_id=?, updated_at=? WHERE id=?",
                         (outcome, None if reason is None else reason[:500], submission_id, time.time(), attempt_id))

    def attempts(self, identity: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM attempts", []
        if identity is not None:
            sql, args = sql + " WHERE identity = ?", [identity]
        rows = self._conn().execute(sql + " ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
        return [dict(r) for r in rows]

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
        """Add the result and mark the job done in ONE transaction: a crash in between loses neither.

        The result carries the job's provenance (its submitter, "space", the job id and time); only the owner of
        the model's name may add it (``NameTaken`` otherwise, and nothing is written).
        """
        with self.transaction() as conn:
            job = conn.execute("SELECT identity, created_at FROM submissions WHERE id = ?", (job_id,)).fetchone()
            provenance = Provenance(submitted_by=(job["identity"] if job and job["identity"]
                                                  else anonymous_identity(job_id)),
                                    via="space", submission_id=job_id, submitted_at=job["created_at"] if job else None)
            result_id, _ = self.add_result(record, conn, provenance=provenance)
            conn.execute("UPDATE submissions SET status='done', result_id=?, error=NULL, lease_until=NULL,"
                         " updated_at=? WHERE id=?", (result_id, time.time(), job_id))
        return result_id

    def fail(self, job_id: int, error: str) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE submissions SET status='failed', error=?, lease_until=NULL, updated_at=?"
                         " WHERE id=?", (error[:2000], time.time(), job_id))

    def submissions(self, limit: int | None = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` jobs (None: all), newest first."""
        rows = self._conn().execute("SELECT * FROM submissions ORDER BY id DESC LIMIT ?",
                                    (-1 if limit is None else limit,)).fetchall()
        out = []
        for row in rows:
            item = dict(row)
            item["model"] = json.loads(item["model"])
            item["metrics"] = json.loads(item["metrics"])
            out.append(item)
        return out
