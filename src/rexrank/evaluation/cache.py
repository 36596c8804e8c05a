"""The persistent scoring cache: one SQLite file that survives killed runs and is shared by concurrent ones.

Two tables, both keyed by content hashes so nothing stale can ever be reused:

- ``texts``: per-text artefacts that metrics store through ``Metric.per_text`` (CheXbert embeddings and labels,
  RadGraph annotations, BERTScore reference embeddings). The namespace a metric passes always contains its
  fingerprint (weights hash + options), so new weights never read old values.
- ``pairs``: one finished per-pair result row ({column: value}, the metric's ``score_details`` row) keyed by
  (metric fingerprint, hypothesis hash, reference hash). Written chunk by chunk as chunks finish, so a killed run
  restarted recomputes only the chunk that was in flight.

Why SQLite: one file, atomic transactions, and WAL mode lets many readers run while one process writes; writers
queue on a lock (``busy_timeout``) instead of corrupting anything. Several processes of one run
(torchrun/accelerate) or several runs can share one cache directory on a local disk. Network filesystems that do
not implement POSIX locks (some NFS setups) are not safe for SQLite: put the cache on local disk there.

Values are pickled: the cache is a private working file written by rexrank itself, never a file to exchange.

Privacy: pair rows and artefacts hold (or are derived from) reference text, which is licensed for MIMIC-CXR,
CheXpert Plus and ReXGradient; RadGraph annotations hold the whole report. So the folder is 0700 and the database
with its -wal/-shm files 0600 (rexrank.data.private_files), and a cache opened for a dataset run tags every row
it writes with the dataset (tables ``text_origins``/``pair_origins``), so ``rexrank data purge NAME`` can remove
what came from that dataset: the tagged rows, and every row whose reference (or text) hash is one of the
dataset's reference texts, which also finds rows written before tagging or by ``--references FILE`` runs.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rexrank.data.private_files import make_private, private_file, private_folder
from rexrank.errors import ConfigError

SCHEMA_VERSION = "1"
FILENAME = "scores.sqlite"
# SQLite's host-parameter limit is 32766 on 3.32+, 999 before; stay far below either.
_BATCH = 500
_BUSY_TIMEOUT_MS = 120_000


def default_cache_dir() -> Path:
    """``$REXRANK_CACHE/scores`` (default ``~/.cache/rexrank/scores``)."""
    from rexrank.metrics.weights import cache_dir

    return cache_dir() / "scores"


class ScoreCache:
    """SQLite-backed text and pair cache. Implements the ``TextCache`` protocol of ``rexrank.metrics.base``.

    Safe to use from several processes at once (each opens its own connection, lazily, after any fork).
    """

    def __init__(self, directory: str | os.PathLike | None = None, *, dataset: str | None = None):
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()
        self.path = self.directory / FILENAME
        # The dataset whose references this run scores: every row written is tagged with it (for purge).
        self.dataset = _canonical(dataset)
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None
        self._lock = threading.Lock()

    # -- connection ---------------------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        try:
            private_folder(self.directory)
            # Created 0600 before SQLite opens it: SQLite gives its -wal and -shm files the database's mode.
            private_file(self.path)
            make_private(self.sidecars())  # a cache written before files were owner-only
            conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            _retry(lambda: conn.execute("PRAGMA journal_mode=WAL"))
            # NORMAL in WAL mode: a committed transaction survives a killed process (only an OS crash can lose the
            # last ones, never corrupt the file) and commits stay cheap.
            conn.execute("PRAGMA synchronous=NORMAL")
            _retry(lambda: self._create_schema(conn))
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot open the scoring cache {self.path}: {exc}. Delete the file to start a fresh "
                              "cache, choose another --cache-dir, or run with --no-cache.") from None
        self._conn, self._pid = conn, os.getpid()
        return conn

    @staticmethod
    def _create_schema(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute("CREATE TABLE IF NOT EXISTS texts (namespace TEXT NOT NULL, key TEXT NOT NULL, "
                         "value BLOB NOT NULL, PRIMARY KEY (namespace, key)) WITHOUT ROWID")
            conn.execute("CREATE TABLE IF NOT EXISTS pairs (fingerprint TEXT NOT NULL, hyp TEXT NOT NULL, "
                         "ref TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY (fingerprint, hyp, ref)) WITHOUT ROWID")
            # Which dataset's run wrote a row (added without a schema bump: older readers ignore the tables).
            conn.execute("CREATE TABLE IF NOT EXISTS text_origins (dataset TEXT NOT NULL, namespace TEXT NOT NULL, "
                         "key TEXT NOT NULL, PRIMARY KEY (dataset, namespace, key)) WITHOUT ROWID")
            conn.execute("CREATE TABLE IF NOT EXISTS pair_origins (dataset TEXT NOT NULL, fingerprint TEXT NOT NULL, "
                         "hyp TEXT NOT NULL, ref TEXT NOT NULL, PRIMARY KEY (dataset, fingerprint, hyp, ref)) "
                         "WITHOUT ROWID")
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise sqlite3.DatabaseError(f"cache schema {row[0]} is not the supported schema {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def __getstate__(self):  # a connection never crosses a process boundary
        return {"directory": self.directory, "dataset": self.dataset}

    def __setstate__(self, state):
        self.__init__(state["directory"], dataset=state.get("dataset"))

    def sidecars(self) -> list[Path]:
        """The database and the -wal/-shm files SQLite keeps beside it."""
        return [self.path, *(self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm"))]

    # -- per-text artefacts (TextCache protocol) ------------------------------------------------------------------
    def get_many(self, namespace: str, keys: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for block in _blocks(list(dict.fromkeys(keys))):
            marks = ",".join("?" * len(block))
            rows = self._read(f"SELECT key, value FROM texts WHERE namespace=? AND key IN ({marks})",
                              [namespace, *block])
            found.update((key, pickle.loads(value)) for key, value in rows)
        return found

    def put_many(self, namespace: str, items: dict[str, Any]) -> None:
        rows = [(namespace, key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) for key, value in items.items()]
        tags = [(self.dataset, namespace, key) for key in items] if self.dataset else []
        self._write(("INSERT OR REPLACE INTO texts VALUES (?, ?, ?)", rows),
                    ("INSERT OR IGNORE INTO text_origins VALUES (?, ?, ?)", tags))

    # -- per-pair results ----------------------------------------------------------------------------------------
    def get_pairs(self, fingerprint: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """Finished rows for (hyp hash, ref hash) keys; absent keys are simply missing from the result."""
        wanted = set(keys)
        found: dict[tuple[str, str], dict[str, Any]] = {}
        hyps = sorted({h for h, _ in wanted})
        for block in _blocks(hyps):
            marks = ",".join("?" * len(block))
            rows = self._read(f"SELECT hyp, ref, value FROM pairs WHERE fingerprint=? AND hyp IN ({marks})",
                              [fingerprint, *block])
            for hyp, ref, value in rows:
                if (hyp, ref) in wanted:
                    found[(hyp, ref)] = pickle.loads(value)
        return found

    def put_pairs(self, fingerprint: str, rows: dict[tuple[str, str], dict[str, Any]]) -> None:
        """Store finished rows in one transaction (all or nothing)."""
        payload = [(fingerprint, hyp, ref, pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL))
                   for (hyp, ref), row in rows.items()]
        tags = [(self.dataset, fingerprint, hyp, ref) for hyp, ref in rows] if self.dataset else []
        self._write(("INSERT OR REPLACE INTO pairs VALUES (?, ?, ?, ?)", payload),
                    ("INSERT OR IGNORE INTO pair_origins VALUES (?, ?, ?, ?)", tags))

    # -- purge (rexrank data purge) --------------------------------------------------------------------------------
    def purge(self, dataset: str, texts: Iterable[str] = (), *, dry_run: bool = False) -> dict[str, int]:
        """Remove what came from `dataset` (canonical name): the pair rows and artefacts its runs wrote (tagged),
        every pair row whose reference is one of `texts` (the dataset's reference texts), and every artefact keyed
        by one of them. An artefact another dataset's run also wrote stays unless it is keyed by one of `texts`.

        Returns {"pairs", "texts", "bytes"} (bytes: the removed values). `dry_run` counts without removing.
        Deleted content is overwritten (secure_delete) and the WAL truncated, so no copy stays in the files.
        """
        from rexrank.metrics.base import text_key

        if not self.path.exists():  # never create a cache just to find it empty
            return {"pairs": 0, "texts": 0, "bytes": 0}
        keys = [(key,) for key in {text_key(text) for text in texts}]
        pair_match = ("ref IN (SELECT key FROM temp.purge_keys) OR EXISTS (SELECT 1 FROM pair_origins o WHERE "
                      "o.dataset=:d AND o.fingerprint=pairs.fingerprint AND o.hyp=pairs.hyp AND o.ref=pairs.ref)")
        text_match = ("key IN (SELECT key FROM temp.purge_keys) OR (EXISTS (SELECT 1 FROM text_origins o WHERE "
                      "o.dataset=:d AND o.namespace=texts.namespace AND o.key=texts.key) AND NOT EXISTS (SELECT 1 "
                      "FROM text_origins o WHERE o.dataset<>:d AND o.namespace=texts.namespace AND o.key=texts.key))")
        params = {"d": _canonical(dataset)}
        with self._lock:
            conn = self._connect()

            def transaction() -> dict[str, int]:
                conn.execute("PRAGMA secure_delete=ON")
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute("CREATE TEMP TABLE IF NOT EXISTS purge_keys (key TEXT PRIMARY KEY)")
                    conn.execute("DELETE FROM temp.purge_keys")
                    conn.executemany("INSERT OR IGNORE INTO temp.purge_keys VALUES (?)", keys)
                    n_pairs, pair_bytes = conn.execute(
                        f"SELECT COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM pairs WHERE {pair_match}", params
                    ).fetchone()
                    n_texts, text_bytes = conn.execute(
                        f"SELECT COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM texts WHERE {text_match}", params
                    ).fetchone()
                    if not dry_run:
                        conn.execute(f"DELETE FROM pairs WHERE {pair_match}", params)
                        conn.execute(f"DELETE FROM texts WHERE {text_match}", params)
                        # Tags of this dataset, and tags left pointing at rows that are gone.
                        conn.execute("DELETE FROM pair_origins WHERE dataset=:d OR NOT EXISTS (SELECT 1 FROM pairs p "
                                     "WHERE p.fingerprint=pair_origins.fingerprint AND p.hyp=pair_origins.hyp AND "
                                     "p.ref=pair_origins.ref)", params)
                        conn.execute("DELETE FROM text_origins WHERE dataset=:d OR NOT EXISTS (SELECT 1 FROM texts t "
                                     "WHERE t.namespace=text_origins.namespace AND t.key=text_origins.key)", params)
                    conn.execute("DELETE FROM temp.purge_keys")
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                finally:
                    conn.execute("PRAGMA secure_delete=OFF")
                return {"pairs": n_pairs, "texts": n_texts, "bytes": pair_bytes + text_bytes}

            removed = _retry(transaction)
            if not dry_run:
                # Old page versions may still sit in the WAL: copy the overwritten pages back and empty it.
                _retry(lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
        return removed

    def stats(self) -> dict[str, int]:
        return {"texts": self._read("SELECT COUNT(*) FROM texts", [])[0][0],
                "pairs": self._read("SELECT COUNT(*) FROM pairs", [])[0][0]}

    def integrity_check(self) -> str:
        return self._read("PRAGMA integrity_check", [])[0][0]

    # -- plumbing ------------------------------------------------------------------------------------------------
    def _read(self, sql: str, params: list[Any]) -> list[tuple]:
        with self._lock:
            conn = self._connect()
            return _retry(lambda: conn.execute(sql, params).fetchall())

    def _write(self, *statements: tuple[str, Iterable[tuple]]) -> None:
        """Run each (sql, rows) statement over its rows, all in one transaction."""
        statements = tuple((sql, list(rows)) for sql, rows in statements)
        if not any(rows for _, rows in statements):
            return
        with self._lock:
            conn = self._connect()

            def transaction():
                # IMMEDIATE takes the write lock up front, so two writers queue instead of deadlocking on upgrade.
                conn.execute("BEGIN IMMEDIATE")
                try:
                    for sql, rows in statements:
                        if rows:
                            conn.executemany(sql, rows)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise

            _retry(transaction)


def _canonical(dataset: str | None) -> str | None:
    """A catalog dataset's canonical name (what purge is given); any other label as it is."""
    from rexrank.data.catalog import canonical_dataset
    from rexrank.errors import UnknownNameError

    try:
        return None if dataset is None else canonical_dataset(dataset)
    except UnknownNameError:
        return dataset


def _blocks(items: list, size: int = _BATCH):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _retry(action, attempts: int = 20):
    """Run ``action``, retrying while another process holds the database lock past busy_timeout."""
    delay = 0.05
    for attempt in range(attempts):
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    return None  # pragma: no cover


class MemoryPairCache:
    """What ``--no-cache`` uses: the same interface, held in memory for one run only."""

    def __init__(self) -> None:
        from rexrank.metrics.base import MemoryTextCache

        self._texts = MemoryTextCache()
        self._pairs: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}

    def get_many(self, namespace, keys):
        return self._texts.get_many(namespace, keys)

    def put_many(self, namespace, items):
        self._texts.put_many(namespace, items)

    def get_pairs(self, fingerprint, keys):
        store = self._pairs.get(fingerprint, {})
        return {k: store[k] for k in keys if k in store}

    def put_pairs(self, fingerprint, rows):
        self._pairs.setdefault(fingerprint, {}).update(rows)

    def close(self) -> None:
        pass
