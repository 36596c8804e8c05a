"""The store's one connection owner: the SQLite file, its schema, transactions, the generation, listeners, meta.

``Database`` owns the file: one connection per thread (safe across processes: WAL, every write one ``BEGIN
IMMEDIATE`` transaction), the one schema (``SCHEMA_VERSION``, created whole by ``BASELINE``; a file of any other
schema refused untouched through a read-only connection), the generation bumped by every commit that changed a row
(with this store's random id, ``version()``: the key of every view's memo and the page's refresh), the listeners
told after such a commit, and ``meta`` (facts about the store itself). The other modules of the store reach the
file only through it (``connection()``, ``transaction()``). The store's errors live here too: every part raises
them and each is one line naming the problem and the fix.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from rexrank.data.private_files import make_private, private_file, private_folder
from rexrank.errors import InputError, RexrankError
from rexrank.leaderboard.records import HOST

# The one schema this rexrank reads and writes (``PRAGMA user_version``). 0.1.0 was never released and every store
# before it was a development store of a few days, so there are no migrations: a new store is created at this
# schema by ``BASELINE`` and a store at any other version is refused, untouched (``Database``). A later release that
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


class DuplicateSubmission(StoreError, InputError):
    pass


class NameTaken(StoreError, InputError):
    """A model name (or a look-alike of it) registered by someone else."""


class QuotaExceeded(StoreError, InputError):
    pass


class DuplicateVote(StoreError, InputError):
    """A second vote of one rater on one study and pair."""


class Database:
    """The store file's one owner: the connections (one per thread), transactions, the schema, the generation,
    listeners and meta. Opening refuses a file of another schema untouched; ``open_schema`` creates a new one."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0):
        self.path = Path(path)
        self._timeout = timeout
        self._local = threading.local()
        self._listeners: list[Callable[[], None]] = []
        self._refuse_other_schema()  # before the first connection sets WAL: a refused file keeps every byte
        self._owner_only()

    def _owner_only(self) -> None:
        """The store file and its -wal/-shm owner-only (0600; SQLite gives its sidecars the file's mode), and a
        missing folder created 0700: the store holds model details, the queue and open sets' kept reports, and is
        only the host's to read. An existing folder keeps its mode (it may be the host's working folder). SQLite's
        in-memory store (":memory:") has no file."""
        if str(self.path) == ":memory:":
            return
        try:
            if not self.path.parent.exists():
                private_folder(self.path.parent)
            private_file(self.path)
        except OSError as exc:
            raise StoreError(f"cannot open the store {self.path} ({exc.strerror or exc}): give a --store path of a "
                             "file in a folder you can write") from None
        make_private(Path(f"{self.path}{suffix}") for suffix in ("-wal", "-shm", "-journal"))

    def connection(self) -> sqlite3.Connection:
        """This thread's connection to the store file (opened on first use; autocommit outside ``transaction``)."""
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
                # Deleted or replaced rows are overwritten with zeros: text a row no longer holds (e.g. licensed
                # text cleaned by ``ArenaTables.clean_licensed_text``) is left in no free page of the file.
                conn.execute("PRAGMA secure_delete=ON")
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
        conn = self.connection()
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

    def open_schema(self, conn: sqlite3.Connection) -> None:
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

    def meta(self, key: str) -> Any:
        """A stored fact about the store (JSON value), or None."""
        row = self.connection().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any, conn: sqlite3.Connection | None = None) -> None:
        if conn is None:
            with self.transaction() as tx:
                return self.set_meta(key, value, tx)
        conn.execute("INSERT INTO meta(key, value, updated_at) VALUES (?,?,?) ON CONFLICT(key) DO UPDATE SET"
                     " value = excluded.value, updated_at = excluded.updated_at", (key, json.dumps(value), time.time()))

    def backup(self, out: str | Path) -> Path:
        """A consistent copy of the store at ``out``, taken with SQLite's online backup API while the board runs:
        the writes still in the -wal are in it, and it is one file (no -wal of its own). Owner-only, like the store;
        written beside ``out`` and renamed into place, so ``out`` is never a half copy. An existing ``out`` is
        refused (a backup never overwrites), as is ``out`` being the store itself."""
        out = Path(out)
        if out.exists() or out.is_symlink():
            raise StoreError(f"{out} exists: a backup never overwrites a file; give a new path")
        if out.parent.resolve() == self.path.parent.resolve() and out.name == self.path.name:
            raise StoreError(f"{out} is the store itself: give another path")
        if not out.parent.is_dir():
            raise StoreError(f"{out.parent} is not a folder: create it, or give a path in an existing folder")
        part = out.with_name(f".{out.name}.part-{secrets.token_hex(4)}")
        try:
            private_file(part)
            target = sqlite3.connect(part)
            try:
                self.connection().backup(target)
                target.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, readable anywhere
            finally:
                target.close()
            try:
                os.link(part, out)  # fails if ``out`` appeared meanwhile: never overwritten
            except FileExistsError:
                raise StoreError(f"{out} appeared while the backup was written: nothing was overwritten") from None
        except OSError as exc:
            raise StoreError(f"cannot write the backup {out} ({exc.strerror or exc}): free some space or give "
                             "another path") from None
        finally:
            part.unlink(missing_ok=True)
        return out

    def schema_version(self) -> int:
        return self.connection().execute("PRAGMA user_version").fetchone()[0]

    def integrity_check(self) -> str:
        return self.connection().execute("PRAGMA integrity_check").fetchone()[0]

    def generation(self) -> int:
        """The store's generation: bumped by every commit that changed a row (a result, a registration, an edit, a
        hand-over, the queue, ...), in every process that writes the file."""
        return int(self.connection().execute("SELECT value FROM generation").fetchone()[0])

    def version(self) -> str:
        """A cheap key for caching views and refreshing the page: this store's id and its generation, as one opaque
        text (hashable, and the same after a trip through JSON, e.g. in a page's state)."""
        row = self.connection().execute("SELECT store_id, value FROM generation").fetchone()
        return f"{row['store_id']}:{row['value']}"

    def count(self, table: str) -> int:
        """How many rows ``table`` (one of the schema's, named by the code, never by input) holds."""
        return self.connection().execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
