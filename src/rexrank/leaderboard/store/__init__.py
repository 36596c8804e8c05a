"""The results store: SQLite by default (WAL; every write is one transaction; one schema, older stores refused).

One log. Everything the board shows is an append-only, content-addressed entry: a result (table ``results``, its
id the sha256 of its record) or a model event (table ``events``: a name registered, details filled in by the
host's own rows, details edited, a name handed over; the Arena's votes and rater decisions; the host's published
meta-evaluation, ``meta_eval``, aggregates only: ``evaluation.meta_eval_report``; whether the published tables still list a
model on a board table, ``listing``: ``make_listing_event``; its id the sha256 of the event). Nothing in either table is
ever changed or deleted. ``models`` (one row per name: details, owner) is derived from the events, replayed in
their recorded order (``at``, then hash); the Hub sync carries both kinds of entry (``hub_sync``), so a store
rebuilt from the repo shows the same board. Other tables are not the board: submissions (the queue), attempts
(every submission attempt, rejected ones included: the quotas count them), meta (facts about the store itself,
e.g. whether it was seeded with the published tables: ``published.seed_store`` owns that rule) and the Arena's pair
tickets (``issue_ticket``: never synced, and their writes leave the generation alone).

The generation (``generation()``, which ``version()`` returns) is bumped by every commit that changes a row, so
one number keys every cache and the page's refresh: an edit or a hand-over changes it like a new result does.
Readers never block writers (WAL), and each write commits or rolls back whole, so a process killed mid-write
leaves the store as it was.

What may enter (``add_result``, on every path: `leaderboard add`, the Python API, a submission's ``finish``, the
Hub pull): a record whose numbers are possible (``records.check_numbers``: finite, inside each metric's range,
the mean inside its own CI, at least one study) and, except on a Hub pull of rows already accepted, whose metric
weights are official (``records.check_weights``) unless the caller allows unofficial ones, which the board
labels. A file that is not a SQLite store, or a damaged one, is a one-line ``StoreError`` naming it and the fix.

One schema (``SCHEMA_VERSION``, created whole by ``BASELINE``): a store of any other schema is refused with one line
naming the file and the fix (rebuild it from the Hub, re-import the published tables), read through a read-only
connection so the file keeps every byte. Why not migrate: 0.1.0 was never released, so every older store is a
development store of a few days, and its migrations (eight, one of which called the live event code, so an old step
changed whenever today's code did) were code to own for states no user holds. A release that changes the schema
adds plain SQL steps from this baseline.

Ownership: a model name (compared by ``records.name_key``) belongs to whoever first registered it, the host for
the published rows. Only its owner may add results under it; nothing but ``edit_model`` (the host's CLI) changes
its details or its owner.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from rexrank.data import catalog, tracks
from rexrank.evaluation.disclosure import disclose_record
from rexrank.evaluation.meta_eval_report import meta_eval_summary
from rexrank.errors import InputError, RexrankError, UnknownNameError
from rexrank.leaderboard.records import (
    HOST,
    NAME_KEY_VERSION,
    MetricValue,
    ModelInfo,
    Provenance,
    ResultRecord,
    anonymous_identity,
    canonical_names,
    check_numbers,
    check_weights,
    describe_identity,
    name_key,
)
from rexrank.leaderboard.store.events import (
    ARENA_EVENT_KINDS,
    DETAIL_FIELDS,
    EVENT_KINDS,
    LISTING_FIELDS,
    LISTING_KIND,
    META_EVAL_FIELDS,
    META_EVAL_KIND,
    MODEL_EVENT_KINDS,
    RATER_FIELDS,
    RATER_ROLES,
    VOTE_CHOICES,
    VOTE_FIELDS,
    VOTE_SEED,
    check_event,
    error_categories,
    event_hash,
    make_event,
    make_listing_event,
    make_meta_eval_event,
    make_rater_event,
    make_vote,
    subject,
    vote_key,
)

# The one schema this rexrank reads and writes (``PRAGMA user_version``). 0.1.0 was never released and every store
# before it was a development store of a few days, so there are no migrations: a new store is created at this
# schema by ``BASELINE`` and a store at any other version is refused, untouched (``_refuse``). A later release that
# changes the schema adds its steps as plain SQL from this baseline on, never calling live code.
SCHEMA_VERSION = 8

# Columns in the order schema 8's stores hold them (``SELECT *`` reads the same rows from either).
BASELINE = f"""
CREATE TABLE models (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, institution TEXT, url TEXT, year INTEGER,
    model_type TEXT, trained_on TEXT NOT NULL DEFAULT '[]', created_at REAL NOT NULL, name_key TEXT,
    owner TEXT NOT NULL DEFAULT '{HOST}');
CREATE UNIQUE INDEX models_name_key ON models(name_key);
CREATE TABLE results (
    id INTEGER PRIMARY KEY, model_id INTEGER NOT NULL REFERENCES models(id), dataset TEXT NOT NULL,
    split TEXT NOT NULL, track TEXT NOT NULL, source TEXT NOT NULL, n_studies INTEGER,
    metrics TEXT NOT NULL, extra TEXT NOT NULL DEFAULT '{{}}', note TEXT,
    record TEXT NOT NULL DEFAULT '{{}}', content_hash TEXT NOT NULL UNIQUE, created_at REAL NOT NULL,
    submitted_by TEXT NOT NULL DEFAULT '{HOST}', submitted_via TEXT NOT NULL DEFAULT 'host', submission_id INTEGER,
    submitted_at REAL);
CREATE INDEX results_board ON results(dataset, track, split);
CREATE INDEX results_latest ON results(model_id, dataset, split, track, source, id);
CREATE TABLE submissions (
    id INTEGER PRIMARY KEY, content_hash TEXT NOT NULL UNIQUE, user TEXT, model TEXT NOT NULL,
    dataset TEXT NOT NULL, split TEXT NOT NULL, track TEXT NOT NULL, predictions_path TEXT NOT NULL,
    metrics TEXT NOT NULL, status TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    lease_until REAL, result_id INTEGER REFERENCES results(id), created_at REAL NOT NULL,
    updated_at REAL NOT NULL, identity TEXT);
CREATE INDEX submissions_status ON submissions(status, id);
CREATE INDEX submissions_user ON submissions(user, created_at);
CREATE TABLE attempts (
    id INTEGER PRIMARY KEY, identity TEXT NOT NULL, dataset TEXT NOT NULL, split TEXT NOT NULL, track TEXT NOT NULL,
    outcome TEXT NOT NULL, reason TEXT, submission_id INTEGER, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX attempts_quota ON attempts(identity, created_at);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE events (
    id INTEGER PRIMARY KEY, content_hash TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, model TEXT NOT NULL,
    at REAL NOT NULL, event TEXT NOT NULL, created_at REAL NOT NULL);
CREATE INDEX events_order ON events(at, content_hash);
CREATE INDEX events_subject ON events(kind, model);
-- store_id: a random name for this store file, so a cache key never matches another store (a store deleted and
-- created again at the same path counts its generations from 0 again). Its row is inserted with the schema.
CREATE TABLE generation (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL, store_id TEXT NOT NULL);
CREATE TABLE arena_reports (
    id INTEGER PRIMARY KEY, dataset TEXT NOT NULL, split TEXT NOT NULL, track TEXT NOT NULL,
    model TEXT NOT NULL, study TEXT NOT NULL, report TEXT NOT NULL, reference TEXT NOT NULL,
    metrics TEXT NOT NULL DEFAULT '{{}}', result_hash TEXT NOT NULL, created_at REAL NOT NULL,
    UNIQUE(dataset, split, track, model, study));
-- The Arena's pair tickets (``issue_ticket``): not the board and not the log (never synced: a ticket names the
-- pair a rater is shown before the vote), kept here so they outlive a restart and serve several processes.
CREATE TABLE arena_tickets (
    digest TEXT PRIMARY KEY, arena TEXT NOT NULL, rater TEXT NOT NULL, study TEXT NOT NULL,
    model_a TEXT NOT NULL, model_b TEXT NOT NULL, issued REAL NOT NULL, expires REAL NOT NULL);
CREATE INDEX arena_tickets_rater ON arena_tickets(arena, rater, issued)
"""
# What to do with a store this rexrank cannot read: the board's own ways of building a store again.
_REBUILD = ("start a new store with this rexrank and fill it again: `rexrank leaderboard sync --repo ORG/NAME --store "
            "NEW_PATH` rebuilds the board from its Hub repo, `rexrank leaderboard import-published --store NEW_PATH` "
            "imports the published tables (then `leaderboard add` your own results again)")


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


def _lenient(canonical: Callable, value: Any) -> Any:
    """canonical(value), or None where the catalog does not know a name (a row is then left as it is)."""
    try:
        return canonical(value)
    except (InputError, UnknownNameError):
        return None


def _canonical_or_same(canonical: Callable[[str], str], name: str | None) -> str | None:
    """A filter value's canonical name; an unknown one unchanged (it then matches no row, as before)."""
    return name if name is None else (_lenient(canonical, name) or name)


# Consecutive entries of one store's log are at least this far apart in time, so they keep their order whatever the
# clock does (an event pulled from a board whose clock runs ahead, or two writes in one clock tick).
_TIME_STEP = 1e-6


def _details_of(model: ModelInfo) -> dict[str, Any]:
    return {key: getattr(model, key) for key in DETAIL_FIELDS}


def _unknown(value: Any) -> bool:
    return value is None or value == []


def _fold(models: dict[str, dict[str, Any]], event: dict[str, Any], key_taken: Callable[[str], bool]) -> bool:
    """Apply one event to ``models`` (name -> the row's fields, trained_on a list); whether it changed anything.

    A name registered again (two boards registered it, or a look-alike of it, before they synced) keeps its first
    registration; a look-alike registered later keeps its own row without the key (as schema 4 left such names),
    so its rows stay. An event about a name never registered changes nothing."""
    kind = event["kind"]
    if kind not in MODEL_EVENT_KINDS:  # an Arena event: not about a model's row
        return False
    name = event["model"]
    if kind == "register":
        if name in models:
            return False
        key = name_key(name)
        models[name] = {"name": name, "name_key": None if key_taken(key) else key, "owner": event["owner"],
                        **{k: event["details"].get(k) for k in DETAIL_FIELDS}, "created_at": event["at"]}
        models[name]["trained_on"] = list(models[name]["trained_on"] or [])
        return True
    row = models.get(name)
    if row is None:
        return False
    before = dict(row)
    if kind == "fill":
        row.update({k: v for k, v in event["details"].items() if _unknown(row[k]) and not _unknown(v)})
    elif kind == "edit":
        row.update({k: v for k, v in event["details"].items() if v is not None})
    else:
        row["owner"] = event["owner"]
    return row != before


def _model_fields(row: sqlite3.Row) -> dict[str, Any]:
    fields = {k: row[k] for k in ("name", "name_key", "owner", *DETAIL_FIELDS, "created_at")}
    fields["trained_on"] = json.loads(fields["trained_on"] or "[]")
    return fields


def _write_model(conn: sqlite3.Connection, fields: dict[str, Any]) -> None:
    values = (fields["name_key"], fields["owner"], fields["institution"], fields["url"], fields["year"],
              fields["model_type"], json.dumps(fields["trained_on"]), fields["created_at"])
    if conn.execute("SELECT 1 FROM models WHERE name = ?", (fields["name"],)).fetchone():
        conn.execute("UPDATE models SET name_key=?, owner=?, institution=?, url=?, year=?, model_type=?, trained_on=?,"
                     " created_at=? WHERE name=?", (*values, fields["name"]))
    else:
        conn.execute("INSERT INTO models(name_key, owner, institution, url, year, model_type, trained_on, created_at,"
                     " name) VALUES (?,?,?,?,?,?,?,?,?)", (*values, fields["name"]))


def _insert_event(conn: sqlite3.Connection, event: dict[str, Any]) -> bool:
    """Store ``event`` in the log (not yet applied); False if the log already holds it."""
    cur = conn.execute("INSERT OR IGNORE INTO events(content_hash, kind, model, at, event, created_at)"
                       " VALUES (?,?,?,?,?,?)", (event_hash(event), event["kind"], subject(event), event["at"],
                                                 json.dumps(event, sort_keys=True), time.time()))
    return cur.rowcount == 1


def _apply_event(conn: sqlite3.Connection, event: dict[str, Any]) -> None:
    """Apply the newest event of the log to ``models`` (one row)."""
    if event["kind"] not in MODEL_EVENT_KINDS:
        return
    row = conn.execute("SELECT * FROM models WHERE name = ?", (event["model"],)).fetchone()
    models = {} if row is None else {row["name"]: _model_fields(row)}
    key_taken = lambda key: conn.execute("SELECT 1 FROM models WHERE name_key = ?", (key,)).fetchone() is not None
    if _fold(models, event, key_taken):
        _write_model(conn, models[event["model"]])


def _replay_models(conn: sqlite3.Connection) -> None:
    """``models`` rebuilt from the whole log, in its order (``at``, then hash): what an event that arrived out of
    order (a Hub pull of another board's older events) needs. Row ids are kept; new names get new rows in order."""
    models: dict[str, dict[str, Any]] = {}
    taken: set[str] = set()
    kinds = ",".join(f"'{k}'" for k in MODEL_EVENT_KINDS)
    for (text,) in conn.execute(f"SELECT event FROM events WHERE kind IN ({kinds})"
                                " ORDER BY at, content_hash").fetchall():
        event = json.loads(text)
        if _fold(models, event, taken.__contains__) and event["kind"] == "register":
            key = models[event["model"]]["name_key"]
            if key is not None:
                taken.add(key)
    conn.executemany("UPDATE models SET name_key = NULL WHERE name = ?", [(name,) for name in models])
    for fields in models.values():
        _write_model(conn, fields)


class StoreError(RexrankError):
    pass


def _unreadable(path: Path, exc: Exception) -> StoreError:
    return StoreError(f"{path} is not a readable rexrank store ({exc}): it is damaged or not a SQLite file. Move it "
                      "aside and restore a backup, or rebuild it from the board's Hub repo with `rexrank leaderboard "
                      "sync --repo ORG/NAME --store NEW_PATH`")


@contextmanager
def _readable(path: Path) -> Iterator[None]:
    """SQLite's "file is not a database" / "database disk image is malformed" (a plain DatabaseError, not one of
    its subclasses: locks, constraints) as a StoreError naming the file and the fix, wherever a query meets it."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if type(exc) is not sqlite3.DatabaseError:
            raise
        raise _unreadable(path, exc) from None


class _Cursor(sqlite3.Cursor):
    def execute(self, *args):
        with _readable(self.connection.store_path):
            return super().execute(*args)

    def executemany(self, *args):
        with _readable(self.connection.store_path):
            return super().executemany(*args)

    def fetchone(self):
        with _readable(self.connection.store_path):
            return super().fetchone()

    def fetchall(self):
        with _readable(self.connection.store_path):
            return super().fetchall()

    def __next__(self):
        with _readable(self.connection.store_path):
            return super().__next__()


class _Connection(sqlite3.Connection):
    """A connection whose queries report a damaged store file as ``StoreError`` (``_readable``)."""

    store_path = Path()

    def execute(self, sql, parameters=()):
        return self.cursor(_Cursor).execute(sql, parameters)

    def executemany(self, sql, parameters):
        return self.cursor(_Cursor).executemany(sql, parameters)


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


class DuplicateVote(StoreError, InputError):
    """A second vote of one rater on one study and pair."""


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
        self._refuse_other_schema()  # before the first connection sets WAL: a refused file keeps every byte
        with self.transaction() as conn:
            self._open_schema(conn)

    # -- plumbing ---------------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None,
                                       check_same_thread=False, factory=_Connection)
            except sqlite3.OperationalError as exc:
                raise StoreError(f"cannot open the store {self.path} ({exc}): give a --store path in a folder you "
                                 "can write") from None
            conn.store_path = self.path
            conn.row_factory = sqlite3.Row
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA foreign_keys=ON")
                conn.execute("PRAGMA synchronous=NORMAL")
            except BaseException:
                conn.close()
                raise
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self, *, board: bool = True) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT: one write transaction, rolled back whole on any error. ``board=False``: a write
        the board never shows (the Arena's tickets), which leaves the generation and the listeners alone."""
        conn = self._conn()
        before = conn.total_changes
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            changed = board and conn.total_changes != before
            if changed:  # one generation per commit that changed a row: every cache's and the page's key
                conn.execute("UPDATE generation SET value = value + 1")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if changed:
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

    def _refuse_other_schema(self) -> None:
        """``StoreError`` for an existing file at another schema, read through a read-only connection."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        try:
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=self._timeout)
        except sqlite3.OperationalError as exc:
            raise StoreError(f"cannot open the store {self.path} ({exc}): give a --store path in a folder you "
                             "can write") from None
        try:
            with _readable(self.path):
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        finally:
            conn.close()
        self._check_version(version, tables)

    def _check_version(self, version: int, tables: int) -> None:
        if version == SCHEMA_VERSION or (version == 0 and tables == 0):
            return
        if version == 0:
            raise StoreError(f"{self.path} is a SQLite file but not a rexrank store (it holds other tables); it was "
                             "left untouched: give another --store path")
        age = "newer" if version > SCHEMA_VERSION else "older"
        fix = "upgrade rexrank, or " + _REBUILD if version > SCHEMA_VERSION else _REBUILD
        raise StoreError(f"{self.path} is a rexrank store of schema {version}, {age} than this rexrank's "
                         f"({SCHEMA_VERSION}), which reads only its own (development stores are not migrated); it "
                         f"was left untouched: {fix}")

    def _open_schema(self, conn: sqlite3.Connection) -> None:
        """A new store gets the baseline; an existing one is checked again inside the write lock (two processes
        may create one file at once: the second finds the first's schema)."""
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        self._check_version(version, tables)
        if version == 0:
            for statement in BASELINE.split(";"):  # one by one: executescript would commit the transaction
                conn.execute(statement)
            conn.execute("INSERT INTO generation(id, value, store_id) VALUES (1, 0, ?)", (secrets.token_hex(8),))
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        # Keys computed by another rule of ``records.name_key`` (a store written before its change) are computed
        # again from the log, in its order: of two names that now compare equal, the first registered keeps the key.
        row = conn.execute("SELECT value FROM meta WHERE key = 'name_key_version'").fetchone()
        if row is None or json.loads(row[0]) != NAME_KEY_VERSION:
            _replay_models(conn)
            self.set_meta("name_key_version", NAME_KEY_VERSION, conn)

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
        Registering and filling are events of the log (``_event``).
        """
        row = self._find_model(conn, model.name)
        if row is None:
            self._event(conn, "register", model.name, identity, owner=owner_if_new or identity,
                        details=_details_of(model))
            return conn.execute("SELECT id FROM models WHERE name = ?", (model.name,)).fetchone()[0]
        if enforce:
            check_owner(row, model.name, identity)
        if identity == HOST and row["owner"] == HOST:
            stored = _model_fields(row)
            missing = {k: v for k, v in _details_of(model).items() if _unknown(stored[k]) and not _unknown(v)}
            if missing:
                self._event(conn, "fill", row["name"], HOST, details=missing)
        return row["id"]

    def _event(self, conn: sqlite3.Connection, kind: str, model: str, by: str, **fields: Any) -> None:
        """Record this store's own event, after every event it holds, and apply it to ``models``."""
        last = conn.execute("SELECT MAX(at) FROM events").fetchone()[0]
        at = time.time() if last is None else max(time.time(), last + _TIME_STEP)
        event = make_event(kind, model, at, by, **fields)
        if _insert_event(conn, event):
            _apply_event(conn, event)

    def set_listing(self, conn: sqlite3.Connection, model: str, dataset: str, split: str, track: str,
                    listed: bool) -> None:
        """Record that the published tables (do not) list ``model`` on one board table: a ``listing`` event, after
        every event the log holds."""
        last = conn.execute("SELECT MAX(at) FROM events").fetchone()[0]
        at = time.time() if last is None else max(time.time(), last + _TIME_STEP)
        _insert_event(conn, make_listing_event(model, dataset, split, track, listed, at=at))

    def withdrawn(self) -> set[tuple[str, str, str, str]]:
        """(name_key(model), dataset, split, track) of every board table the published tables no longer list the
        model on: the latest ``listing`` event of each says so."""
        state: dict[tuple[str, str, str, str], bool] = {}
        for _, event in self.events((LISTING_KIND,)):
            state[(name_key(event["model"]), event["dataset"], event["split"], event["track"])] = event["listed"]
        return {key for key, listed in state.items() if not listed}

    def add_events(self, events: list[dict[str, Any]], conn: sqlite3.Connection | None = None) -> int:
        """Add events made elsewhere (a Hub pull: another board's, or this one's before a restart); how many were new.

        Every event is checked (``check_event``) before any is stored; the ones the log already holds are skipped
        (idempotent), and ``models`` is replayed from the whole log when any arrived out of order, so the result does
        not depend on the order events arrive in.
        """
        events = [check_event(event) for event in events]
        if conn is None:
            with self.transaction() as tx:
                return self.add_events(events, tx)
        added = 0
        for event in sorted(events, key=lambda e: (e["at"], event_hash(e))):
            last = conn.execute("SELECT at, content_hash FROM events ORDER BY at DESC, content_hash DESC"
                                " LIMIT 1").fetchone()
            if not _insert_event(conn, event):
                continue
            added += 1
            if event["kind"] not in MODEL_EVENT_KINDS:
                continue
            if last is None or (event["at"], event_hash(event)) > (last["at"], last["content_hash"]):
                _apply_event(conn, event)
            else:
                _replay_models(conn)
        return added

    def events(self, kinds: tuple[str, ...] | None = None) -> list[tuple[str, dict[str, Any]]]:
        """The events of the log (``kinds``: only those), in its order: (content hash, event)."""
        sql, args = "SELECT content_hash, event FROM events", list(kinds or ())
        if kinds:
            sql += f" WHERE kind IN ({','.join('?' * len(kinds))})"
        rows = self._conn().execute(sql + " ORDER BY at, content_hash", args).fetchall()
        return [(row["content_hash"], json.loads(row["event"])) for row in rows]

    # -- the Arena's part of the log (``leaderboard/arena.py``) -------------------------------------------------------
    def log_rows(self, kinds: tuple[str, ...], after_id: int = 0) -> list[tuple[int, str, dict[str, Any]]]:
        """Events of ``kinds`` stored after row ``after_id`` (row ids grow with every insert), in storage order:
        (row id, content hash, event). What lets a reader follow a long log without reading it again."""
        # "+kind": not the (kind, model) index, which made SQLite walk every vote of the log to find the few rows
        # after ``after_id``; the row id range is the search (39 ms -> under 1 ms per call at 100,000 votes).
        rows = self._conn().execute(
            f"SELECT id, content_hash, event FROM events WHERE id > ? AND +kind IN ({','.join('?' * len(kinds))})"
            " ORDER BY id", (after_id, *kinds)).fetchall()
        return [(row["id"], row["content_hash"], json.loads(row["event"])) for row in rows]

    def reports_version(self) -> tuple[int, int]:
        """Changes whenever the kept reports change (``keep_reports`` deletes and inserts rows)."""
        row = self._conn().execute("SELECT COALESCE(MAX(id), 0), COUNT(*) FROM arena_reports").fetchone()
        return int(row[0]), int(row[1])

    def add_vote(self, event: dict[str, Any], *, quota: int | None = None, window: float = 86400.0,
                 now: float | None = None) -> str:
        """Append one vote (``make_vote``) to the log, in one transaction with its checks: ``DuplicateVote`` if this
        rater already voted on this study and pair (``vote_key``), ``QuotaExceeded`` past ``quota`` votes of the
        rater in the last ``window`` seconds before ``now`` (the Arena's clock; default the system's). Its time is the
        log's next. Returns its content hash."""
        with self.transaction() as conn:
            check_event(event)
            if conn.execute("SELECT 1 FROM events WHERE kind = 'vote' AND model = ?", (vote_key(event),)).fetchone():
                raise DuplicateVote("you already voted on this study and pair: each rater votes once per pair; "
                                    "load the next pair")
            if quota is not None:
                # The rater's own votes only: their subjects (``vote_key``) start with the rater (an index range).
                prefix = json.dumps([event["rater"]])[:-1] + ", "
                count = conn.execute("SELECT COUNT(*) FROM events WHERE kind = 'vote' AND model >= ? AND model < ?"
                                     " AND at > ?", (prefix, prefix + "\uffff",
                                                     (time.time() if now is None else now) - window)).fetchone()[0]
                if count >= quota:
                    raise QuotaExceeded(f"quota reached: at most {quota} votes per {window / 3600:g} h; thank you, "
                                        "come back later")
            last = conn.execute("SELECT MAX(at) FROM events").fetchone()[0]
            event = {**event, "at": event["at"] if last is None else max(event["at"], last + _TIME_STEP)}
            _insert_event(conn, event)
        return event_hash(event)

    # -- the Arena's pair tickets: a rater's proof that a pair was shown to them (``leaderboard/arena.py``) -----------
    @staticmethod
    def _ticket_digest(ticket_id: str) -> str:
        """Tickets are stored by their sha256: a copy of the store file holds no ticket a client could present."""
        return hashlib.sha256(ticket_id.encode("utf-8", "surrogatepass")).hexdigest()

    def issue_ticket(self, ticket_id: str, *, arena: str, rater: str, study: str, models: tuple[str, str],
                     issued: float, ttl: float, keep: int) -> None:
        """Store a new ticket (``models``: side A, side B), dropping expired tickets and all but the newest ``keep - 1``
        of this rater's other live tickets in ``arena``. Never changes the generation (``transaction(board=False)``)."""
        with self.transaction(board=False) as conn:
            conn.execute("DELETE FROM arena_tickets WHERE expires <= ?", (issued,))
            conn.execute("DELETE FROM arena_tickets WHERE digest IN (SELECT digest FROM arena_tickets WHERE arena = ?"
                         " AND rater = ? ORDER BY issued DESC, digest LIMIT -1 OFFSET ?)", (arena, rater, keep - 1))
            conn.execute("INSERT INTO arena_tickets(digest, arena, rater, study, model_a, model_b, issued, expires)"
                         " VALUES (?,?,?,?,?,?,?,?)", (self._ticket_digest(ticket_id), arena, rater, study, models[0],
                                                       models[1], issued, issued + ttl))

    def live_tickets(self, arena: str, now: float) -> list[dict[str, Any]]:
        """The unexpired tickets of ``arena`` (rater, study, models, issued), whichever process issued them."""
        rows = self._conn().execute("SELECT rater, study, model_a, model_b, issued FROM arena_tickets WHERE arena = ?"
                                    " AND expires > ? ORDER BY issued, digest", (arena, now)).fetchall()
        return [{"rater": r["rater"], "study": r["study"], "models": (r["model_a"], r["model_b"]),
                 "issued": r["issued"]} for r in rows]

    def ticket(self, ticket_id: str, *, arena: str, now: float) -> dict[str, Any] | None:
        """A live ticket of ``arena`` by its id (rater, study, models, issued), or None. Server-side only."""
        row = self._conn().execute("SELECT rater, study, model_a, model_b, issued FROM arena_tickets WHERE digest = ?"
                                   " AND arena = ? AND expires > ?",
                                   (self._ticket_digest(ticket_id), arena, now)).fetchone()
        return None if row is None else {"rater": row["rater"], "study": row["study"],
                                         "models": (row["model_a"], row["model_b"]), "issued": row["issued"]}

    def claim_ticket(self, ticket_id: str, *, arena: str, rater: str, now: float) -> dict[str, Any] | None:
        """Use a ticket once: delete and return it (study, models) if it is live, of ``arena`` and issued to
        ``rater``, else None (another rater's ticket stays theirs). One statement in one transaction, so of two
        processes presenting the same ticket exactly one gets it."""
        with self.transaction(board=False) as conn:
            rows = conn.execute("DELETE FROM arena_tickets WHERE digest = ? AND arena = ? AND rater = ? AND expires > ?"
                                " RETURNING study, model_a, model_b",
                                (self._ticket_digest(ticket_id), arena, rater, now)).fetchall()  # all: then COMMIT
        return {"study": rows[0][0], "models": (rows[0][1], rows[0][2])} if rows else None

    def add_rater_event(self, rater: str, role: str, *, reason: str = "", by: str = HOST) -> dict[str, Any]:
        """The host's decision about a rater (``make_rater_event``), appended to the log at its next time."""
        with self.transaction() as conn:
            last = conn.execute("SELECT MAX(at) FROM events").fetchone()[0]
            at = time.time() if last is None else max(time.time(), last + _TIME_STEP)
            event = check_event(make_rater_event(rater, role, at=at, by=by, reason=reason))
            _insert_event(conn, event)
        return event

    # -- the published meta-evaluation --------------------------------------------------------------------------
    def add_meta_eval(self, report: Any, *, by: str = HOST) -> tuple[str, bool]:
        """Publish a meta-evaluation (a meta_eval.json's report; ``MetaEvalError`` if it is not aggregates only):
        one ``meta_eval`` event at the log's next time. The same aggregates as the newest published ones for their
        expert set add nothing. Returns (the event's content hash, whether it was added)."""
        summary = meta_eval_summary(report)
        with self.transaction() as conn:
            newest = conn.execute("SELECT content_hash, event FROM events WHERE kind = ? AND model = ?"
                                  " ORDER BY at DESC, content_hash DESC LIMIT 1",
                                  (META_EVAL_KIND, summary["dataset"])).fetchone()
            if newest is not None and json.loads(newest["event"])["meta_eval"] == summary:
                return newest["content_hash"], False
            last = conn.execute("SELECT MAX(at) FROM events").fetchone()[0]
            at = time.time() if last is None else max(time.time(), last + _TIME_STEP)
            event = check_event(make_meta_eval_event(summary, at=at, by=by))
            _insert_event(conn, event)
        return event_hash(event), True

    def meta_eval(self) -> dict[str, Any] | None:
        """The newest published meta-evaluation (``meta_eval_summary`` plus ``at``, when it was published), or None."""
        row = self._conn().execute("SELECT event FROM events WHERE kind = ? ORDER BY at DESC, content_hash DESC"
                                   " LIMIT 1", (META_EVAL_KIND,)).fetchone()
        if row is None:
            return None
        event = json.loads(row["event"])
        return {**event["meta_eval"], "at": event["at"]}

    def keep_reports(self, *, dataset: str, split: str, track: str, model: str, result_hash: str,
                     rows: list[tuple[str, str, str, dict[str, float]]], recorded_at: float | None = None) -> int:
        """Keep a scored public submission's reports for the Arena: ``rows`` (study, report, reference, per-study
        metric values). Never a private test set's (InputError): their reports may not leave the scorer. The newest
        result of a model replaces its older reports (one transaction). ``recorded_at``: when they were first kept (a
        Hub pull). How many rows were stored."""
        dataset, split, track = canonical_names(dataset, split, track)
        if catalog.is_private(dataset):
            raise InputError(f"{dataset} is a private test set: its reports are never kept for the Arena")
        now = time.time() if recorded_at is None else recorded_at
        with self.transaction() as conn:
            conn.execute("DELETE FROM arena_reports WHERE dataset=? AND split=? AND track=? AND model=?",
                         (dataset, split, track, model))
            conn.executemany(
                "INSERT INTO arena_reports(dataset, split, track, model, study, report, reference, metrics,"
                " result_hash, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(dataset, split, track, model, str(study), report, reference,
                  json.dumps({k: float(v) for k, v in values.items()}), result_hash, now)
                 for study, report, reference, values in rows])
        return len(rows)

    def arena_reports(self, dataset: str | None = None) -> list[dict[str, Any]]:
        """The kept reports (``keep_reports``), one dict per (model, study), metrics decoded."""
        sql, args = "SELECT * FROM arena_reports", []
        if dataset is not None:
            sql, args = sql + " WHERE dataset = ?", [dataset]
        rows = self._conn().execute(sql + " ORDER BY id", args).fetchall()
        return [dict(r, metrics=json.loads(r["metrics"])) for r in rows]

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

    def edit_model(self, name: str, *, owner: str | None = None, by: str = HOST, **details: Any) -> dict[str, Any]:
        """The host's explicit edit of a model's details or owner (``rexrank leaderboard edit-model``).

        ``details``: institution, url, year, model_type, trained_on; values None are left as they are. Each change
        is an event of the log (``edit`` for the details that differ, ``owner`` for a hand-over), so the board, its
        caches and the Hub copy follow it at once; an edit that changes nothing records nothing.
        """
        unknown = set(details) - set(DETAIL_FIELDS)
        if unknown:
            raise InputError(f"unknown model fields: {', '.join(sorted(unknown))}")
        with self.transaction() as conn:
            row = self._find_model(conn, name)
            if row is None:
                raise InputError(f"no model named {name!r}")
            stored = _model_fields(row)
            changed = {k: (list(v) if k == "trained_on" else v) for k, v in details.items()
                       if v is not None and stored[k] != v}
            if changed:
                self._event(conn, "edit", row["name"], by, details=changed)
            if owner is not None and owner != row["owner"]:
                self._event(conn, "owner", row["name"], by, owner=owner)
        return self.model(row["name"])

    def check_result(self, record: ResultRecord, *, provenance: Provenance | None = None,
                     allow_unofficial_weights: bool = False) -> ResultRecord:
        """What ``add_result`` checks before it writes, without writing: InputError for impossible numbers
        (``records.check_numbers``), ``UnofficialWeightsError`` for weights that are not official unless allowed
        (``records.check_weights``), ``NameTaken`` for a name another adder owns. Returns the record as it would be
        stored (with its weights verdict where it lacked one and unofficial weights were allowed)."""
        check_numbers(record)
        record = check_weights(record, allow_unofficial_weights=allow_unofficial_weights)
        row = self._find_model(self._conn(), record.model.name)
        if row is not None:
            check_owner(row, record.model.name, (provenance or Provenance()).submitted_by)
        return record

    def add_result(self, record: ResultRecord, conn: sqlite3.Connection | None = None, *,
                   provenance: Provenance | None = None, allow_unofficial_weights: bool = False,
                   mirror: bool = False, owner_if_new: str | None = None,
                   recorded_at: float | None = None) -> tuple[int, bool]:
        """Insert a result; returns (result id, whether it was new). The same result twice is stored once.

        Checked first, whoever calls (`leaderboard add`, the Python API, ``finish``, the Hub pull), and nothing is
        written when a check fails: the numbers (``records.check_numbers``: InputError), and, except for a
        ``mirror``, the weights (``records.check_weights``: ``UnofficialWeightsError`` unless
        ``allow_unofficial_weights``, which stores the record with its label) and the owner (``NameTaken``).
        "The same": the same content hash, or (``_same_result``) a result its adder already stored for this
        model, test set, split, track and source with the same ``ResultRecord.result_key`` (the same numbers,
        scored at another time: re-running `rexrank score` and `leaderboard add` adds nothing).
        ``provenance``: who adds it and how (default: the host); a new name is registered to
        ``provenance.submitted_by`` (or ``owner_if_new``). ``mirror``: a row of this board's own Hub copy (or
        another of the host's boards), stored exactly as it was accepted there, at ``recorded_at``.
        """
        check_numbers(record)  # before disclosure, which cannot round an infinity
        if not mirror:
            record = check_weights(record, allow_unofficial_weights=allow_unofficial_weights)
        if conn is None:
            with self.transaction() as tx:
                return self.add_result(record, tx, provenance=provenance, mirror=mirror, owner_if_new=owner_if_new,
                                       recorded_at=recorded_at, allow_unofficial_weights=True)
        provenance = provenance or Provenance()
        # A private set's result is stored as it may be disclosed (rounded, small groups suppressed): the store is
        # synced to the Hub and read by the Space, so full precision must never enter it.
        record = ResultRecord.from_json(disclose_record(record.to_json()))
        digest = record.content_hash()
        found = conn.execute("SELECT id FROM results WHERE content_hash = ?", (digest,)).fetchone()
        if found:
            return found["id"], False
        same = self._same_result(conn, record, provenance.submitted_by)
        if same is not None:
            return same, False
        model_id = self._model_id(conn, record.model, provenance.submitted_by, enforce=not mirror,
                                  owner_if_new=owner_if_new)
        metrics = {k: vars(v) for k, v in record.metrics.items()}
        now = recorded_at if mirror and recorded_at is not None else self._next_time(conn)
        cur = conn.execute(
            "INSERT INTO results(model_id, dataset, split, track, source, n_studies, metrics, extra, note,"
            " record, content_hash, created_at, submitted_by, submitted_via, submission_id, submitted_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (model_id, record.dataset, record.split, record.track, record.source, record.n_studies,
             json.dumps(metrics), json.dumps(record.extra, default=str), record.note,
             json.dumps(record.to_json(), default=str), digest, now, provenance.submitted_by, provenance.via,
             provenance.submission_id, provenance.submitted_at or now))
        return cur.lastrowid, True

    @staticmethod
    def _next_time(conn: sqlite3.Connection) -> float:
        """Now, or just after the newest row if the clock says otherwise: rows' times follow their ids, so a store
        rebuilt from the Hub (which orders rows by these times) gives them the same order."""
        last = conn.execute("SELECT created_at FROM results ORDER BY id DESC LIMIT 1").fetchone()
        now = time.time()
        return now if last is None or now > last[0] else last[0] + _TIME_STEP

    def add_results(self, records: list[ResultRecord], *, provenance: Provenance | None = None,
                    allow_unofficial_weights: bool = False) -> list[tuple[int, bool]]:
        """Many results at once (`leaderboard add A.json B.json ...`): every one checked (``check_result``) before any
        is stored, then all stored in ONE transaction, so either all are added or none."""
        checked = [self.check_result(r, provenance=provenance, allow_unofficial_weights=allow_unofficial_weights)
                   for r in records]
        with self.transaction() as conn:
            return [self.add_result(r, conn, provenance=provenance, allow_unofficial_weights=True) for r in checked]

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
                model: str | None = None, include_hidden: bool = False,
                withdrawn: bool = False) -> list[dict[str, Any]]:
        """Rows joined with model metadata and owner. ``latest``: newest per (model, dataset, split, track, source).

        Only rows the model's owner or the host added are returned (what the board may show), and ``latest``
        picks the newest among those; ``include_hidden`` adds the others (history, Hub sync). Published rows of a
        model the published tables no longer list (``withdrawn()``) are left out unless ``withdrawn`` (a model's
        page: its history) or ``include_hidden``; those returned carry ``withdrawn: True``. Each row carries
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
        gone = self.withdrawn()
        out = []
        for row in rows:
            item = dict(row)
            if gone and row["source"] == "published":
                item["withdrawn"] = (name_key(row["model_name"]), row["dataset"], row["split"], row["track"]) in gone
                if item["withdrawn"] and not (withdrawn or include_hidden):
                    continue
            item["metrics"] = json.loads(item["metrics"])
            item["extra"] = json.loads(item["extra"])
            item["trained_on"] = json.loads(item["trained_on"] or "[]")
            item["record"] = json.loads(item["record"] or "{}")
            out.append(item)
        return out

    def generation(self) -> int:
        """The store's generation: bumped by every commit that changed a row (a result, a registration, an edit, a
        hand-over, the queue, ...), in every process that writes the file."""
        return int(self._conn().execute("SELECT value FROM generation").fetchone()[0])

    def version(self) -> str:
        """A cheap key for caching views and refreshing the page: this store's id and its generation, as one opaque
        text (hashable, and the same after a trip through JSON, e.g. in a page's state)."""
        row = self._conn().execute("SELECT store_id, value FROM generation").fetchone()
        return f"{row['store_id']}:{row['value']}"

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
                        scope: tuple[str, ...] | None = None, what: str = "submissions",
                        shared: tuple[str, int, str] | None = None) -> int:
        """Count ``identity``'s attempts on the datasets of ``scope`` (None: all) in the last ``window`` seconds and,
        if under ``limit``, record this one; atomically, so concurrent attempts cannot all pass. Every recorded
        attempt counts, whatever its outcome (``finish_attempt``). ``QuotaExceeded`` otherwise (not recorded).

        ``shared``: (group, its limit, what it counts): a quota ``identity`` shares with its group, checked in the
        same transaction, over the attempts whose identity is ``group`` or ``group:...`` (all anonymous clients)."""
        now = time.time()
        with self.transaction() as conn:
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
