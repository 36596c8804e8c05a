"""The persistent scoring cache: one SQLite file that survives killed runs and is shared by concurrent ones.

Rows keyed by content hashes so nothing stale can ever be reused (the tables are ``text_rows`` and ``pair_rows``;
each name and text hash is stored once, in ``names`` and ``digests``, and rows refer to them by integer ids: about
60 bytes per cached float, bench/cache_size.py):

- ``texts``: per-text artefacts that metrics store through ``Metric.per_text`` (CheXbert embeddings and labels,
  RadGraph annotations, BERTScore reference embeddings). The namespace a metric passes always contains its
  fingerprint (weights hash + options), so new weights never read old values.
- ``pairs``: one finished per-pair result row ({column: value}, the metric's ``score_details`` row) keyed by
  (metric fingerprint, hypothesis hash, reference hash). Written chunk by chunk as chunks finish, so a killed run
  restarted recomputes only the chunk that was in flight.
- ``runs``: the run memo (``rexrank.evaluation.harness.RunMemo``): what one whole `rexrank score` run wrote (its
  results and its per-study table's bytes), keyed by a digest of the exact input files' bytes and of everything else
  that decides a number (code, package versions, metrics' fingerprints, options). A re-run of the same files with
  the same settings writes it back instead of reading 59,000 pair rows; the newest ``MAX_RUN_MEMOS`` are kept.

Why SQLite: one file, atomic transactions, and WAL mode lets many readers run while one process writes; writers
queue on a lock (``busy_timeout``) instead of corrupting anything. Several processes of one run
(torchrun/accelerate) or several runs can share one cache directory on a local disk. Network filesystems that do
not implement POSIX locks (some NFS setups) are not safe for SQLite: put the cache on local disk there.

What the cache trusts, and what it checks. The file is outside input: anything that can write it could change
scores, so it holds values, never code, and every row is checked before it is used.

- Values are plain data in a typed binary encoding (``encode_value``/``decode_value``): None, bool, int, float,
  str, bytes, list, tuple, dict, set, frozenset, pandas' NA, and numpy arrays and scalars of bool/int/float/complex/
  fixed-width string dtypes. They come back exactly: the same types, floats bit for bit (NaN payloads, -0.0,
  infinities), arrays with their dtype and shape. Nothing is unpickled or imported by name when a row is read; a
  metric that stores any other type gets a TypeError when it stores it. Reading hostile bytes can at worst give
  a wrong value that passes the checks below; it never runs code.
- Each row carries one checksum (BLAKE2b, 8 bytes) over its key (names and hex hashes, not the ids they are stored
  under) and its value bytes. A row whose checksum or
  encoding does not match is never used: the read logs one "corrupt cache row" warning naming the file and the
  value is recomputed (and the row replaced). The checksum is not keyed: it catches corruption, a hand-edited value
  and a row moved to another key, not someone who recomputes it, which is why:
- The folder must be the user's own and not writable by group or others, and the database files the user's own;
  otherwise opening the cache is refused (a ConfigError naming the folder and the fix), before anything is read.
  Parent folders are not checked.
- SQLite itself reads the file with ``trusted_schema=OFF`` (no side-effecting SQL functions in a schema a file
  brings along).
- A cache of schema 1 (pickled values, written only by development versions, never released) is refused in one
  line, unread and untouched. Caches with hex keys (schema 2) are converted when opened (one info line), each row
  checked against its old checksum first.

A full disk or a file-size limit (``ulimit -f``) while the cache is written is one error naming the folder and
what to do (free space, another ``--cache-dir``, or ``--no-cache``); SQLite rolls the transaction back, so the
rows committed before stay sound. Only a file that is not a sound database is answered with "delete it".

Privacy: pair rows and artefacts hold (or are derived from) reference text, which is licensed for MIMIC-CXR,
CheXpert Plus and ReXGradient; RadGraph annotations hold the whole report. So the folder is 0700 and the database
with its -wal/-shm files 0600 (rexrank.data.private_files), and a cache opened for a dataset run tags every row
it stores something for with the dataset (table ``tags``: an artefact's key, a pair row's reference), so ``rexrank
data purge NAME`` can remove what came from that dataset: the rows of tagged texts, and every row whose reference
(or text) hash is one of the dataset's reference texts, which also finds rows written before tagging or by
``--references FILE`` runs.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import math
import os
import re
import shutil
import sqlite3
import stat
import struct
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rexrank.data.private_files import make_private, private_file, private_folder
from rexrank.errors import ConfigError, RexrankError

log = logging.getLogger("rexrank.evaluation")

# 3: compact rows (integer ids for names and text hashes, binary hashes, one checksum per row). 2: the same typed
# values and checksums under hex keys, converted when such a cache is opened. 1: pickled values, never released
# (refused unread).
SCHEMA_VERSION = "3"
_CONVERTED_SCHEMAS = ("2",)
_UNRELEASED_SCHEMAS = ("1",)
FILENAME = "scores.sqlite"
# SQLite's host-parameter limit is 32766 on 3.32+, 999 before; stay far below either.
_BATCH = 500
_BUSY_TIMEOUT_MS = 120_000
# 64 bits: the chance that a corrupted or edited row passes is 2^-64 (schema 2 kept 16 bytes, for 8 more per row).
_CHECKSUM_BYTES = 8
_SCHEMA2_CHECKSUM_BYTES = 16
# A text key that is a sha256 in hex (``rexrank.metrics.base.text_key``, every key the metrics use) is stored as its
# 32 bytes; any other key string as TEXT, which SQLite never finds equal to a BLOB.
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
# Run memos kept (newest first): each holds one run's per-study table, megabytes for a large test set.
MAX_RUN_MEMOS = 32
# I/O errors of reading, which a full disk does not cause (the others are mostly writes: full disk, ulimit -f).
_READ_ERRORS = frozenset({"SQLITE_IOERR_READ", "SQLITE_IOERR_SHORT_READ"})


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
        check_cache_folder(self.directory)  # before anything is created, chmod-ed or read there
        conn = None
        try:
            private_folder(self.directory)
            # Created 0600 before SQLite opens it: SQLite gives its -wal and -shm files the database's mode.
            private_file(self.path)
            make_private(self.sidecars())  # a cache written before files were owner-only
            conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA trusted_schema=OFF")
            _retry(lambda: conn.execute("PRAGMA journal_mode=WAL"))
            # NORMAL in WAL mode: a committed transaction survives a killed process (only an OS crash can lose the
            # last ones, never corrupt the file) and commits stay cheap.
            conn.execute("PRAGMA synchronous=NORMAL")
            if _retry(lambda: self._create_schema(conn)):
                # Rows a conversion dropped: their old page versions copied back over, the WAL emptied (as purge).
                _retry(lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
        except (sqlite3.DatabaseError, OSError) as exc:
            if conn is not None:
                conn.close()
            raise self._storage_error(exc) from None
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _create_schema(self, conn: sqlite3.Connection) -> bool:
        """Create the tables, or check the file's schema; True when rows of an older schema were converted."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            stored = None if row is None else row[0]
            if stored in _UNRELEASED_SCHEMAS:
                raise _UnreleasedSchema(stored)
            if stored is not None and stored not in _CONVERTED_SCHEMAS and stored != SCHEMA_VERSION:
                raise _NewerSchema(stored)
            if stored != SCHEMA_VERSION:
                for view in ("texts", "pairs", "origins"):
                    if (view, "view") in _objects(conn):
                        conn.execute(f"DROP VIEW {view}")
            for statement in _SCHEMA:
                conn.execute(statement)
            if stored in _CONVERTED_SCHEMAS:
                self._convert_hex_rows(conn, stored)
            for statement in _VIEWS:
                conn.execute(statement)
            if stored != SCHEMA_VERSION:
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
        return stored in _CONVERTED_SCHEMAS

    def _convert_hex_rows(self, conn: sqlite3.Connection, schema: str) -> None:
        """Schema 2 kept the same checked values under hex keys, with a dataset tag per row: each row is read, its
        checksum checked as any read checks it, and stored in the compact tables (a row that fails is dropped and
        will be recomputed); then the old tables are dropped and their pages overwritten (secure_delete)."""
        tables = {name for name, kind in _objects(conn) if kind == "table"}
        kept = {"texts": 0, "pairs": 0}
        dropped = 0
        if "texts" in tables:
            rows = conn.execute("SELECT namespace, key, value, checksum FROM texts ORDER BY namespace, key")
            for namespace, block in _by_scope(rows):
                seal, old = _Seal("texts", namespace), _Seal("texts", namespace, _SCHEMA2_CHECKSUM_BYTES)
                items = {}
                for _, key, value, checksum in block:
                    try:
                        items[(key,)] = old.open((key,), value, checksum)
                    except _CorruptRow:
                        dropped += 1
                _put_sealed_texts(conn, namespace, seal.close_all(items), None)
                kept["texts"] += len(items)
        if "pairs" in tables:
            rows = conn.execute("SELECT fingerprint, hyp, ref, value, checksum FROM pairs "
                                "ORDER BY fingerprint, hyp, ref")
            for fingerprint, block in _by_scope(rows):
                seal, old = _Seal("pairs", fingerprint), _Seal("pairs", fingerprint, _SCHEMA2_CHECKSUM_BYTES)
                items = {}
                for _, hyp, ref, value, checksum in block:
                    try:
                        row = old.open((hyp, ref), value, checksum)
                    except _CorruptRow:
                        row = None
                    if type(row) is not dict:
                        dropped += 1
                        continue
                    items[(hyp, ref)] = row
                _put_sealed_pairs(conn, fingerprint, seal.close_all(items), None)
                kept["pairs"] += len(items)
        # The tags: a dataset's tag moves from each row to the text it keys (for pair rows: the reference).
        if "text_origins" in tables:
            for dataset, keys in _grouped(conn.execute("SELECT DISTINCT dataset, key FROM text_origins").fetchall()):
                _tag(conn, dataset, _digest_ids(conn, keys).values())
        if "pair_origins" in tables:
            for dataset, refs in _grouped(conn.execute("SELECT DISTINCT dataset, ref FROM pair_origins").fetchall()):
                _tag(conn, dataset, _digest_ids(conn, refs).values())
        conn.execute("PRAGMA secure_delete=ON")
        try:
            # The memos were keyed by the older code (never a hit now) and sealed with the older checksum width.
            conn.execute("DELETE FROM runs")
            for table in ("texts", "pairs", "text_origins", "pair_origins"):
                if table in tables:
                    conn.execute(f"DROP TABLE {table}")
        finally:
            conn.execute("PRAGMA secure_delete=OFF")
        log.info("scoring cache %s: converted %d pair rows and %d per-text artefacts of schema %s (hex keys) to the "
                 "compact schema %s%s", self.path, kept["pairs"], kept["texts"], schema, SCHEMA_VERSION,
                 f"; {dropped} rows failed their checksum and were dropped (recomputed when needed)" if dropped else "")

    def _storage_error(self, exc: BaseException) -> RexrankError:
        """One line for a failed open/read/write of the cache: the problem, the folder and the fix."""
        if isinstance(exc, RexrankError):
            return exc
        if isinstance(exc, _UnreleasedSchema):
            return ConfigError(f"the scoring cache {self.path} has cache schema {exc.args[0]} (pickled values, written "
                               "only by unreleased development versions; never read): give this run another "
                               "--cache-dir, or run with --no-cache")
        if isinstance(exc, _NewerSchema):
            return ConfigError(f"the scoring cache {self.path} was written by a newer rexrank (cache schema "
                               f"{exc.args[0]}; this version reads schema {SCHEMA_VERSION}): run that version, give "
                               "this one another --cache-dir, or run with --no-cache")
        name = getattr(exc, "sqlite_errorname", None) or ""
        text = str(exc)
        full = (name == "SQLITE_FULL" or "disk is full" in text
                or isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT))
        if name in _READ_ERRORS:
            return RexrankError(f"cannot read the scoring cache {self.path}: disk I/O error ({name}), the disk may be "
                                "failing. Point --cache-dir at a folder on another disk, or run with --no-cache")
        if full or name.startswith("SQLITE_IOERR") or "disk I/O error" in text:
            if full:
                what = "the disk is full or a file-size limit (ulimit -f) was reached"
            else:
                what = f"disk I/O error ({name or text}), usually a full disk or a file-size limit (ulimit -f)"
            return RexrankError(f"cannot write the scoring cache in {self.directory}: {what}"
                                f"{_free_space(self.directory)}. Free space there, point --cache-dir at a folder on "
                                "another disk, or run with --no-cache; the rows already committed are intact")
        if name == "SQLITE_NOTADB" or name.startswith("SQLITE_CORRUPT") or "not a database" in text:
            return ConfigError(f"the scoring cache {self.path} is not a sound SQLite database ({text}): delete it "
                               "and its -wal/-shm files to start a fresh cache, choose another --cache-dir, or run "
                               "with --no-cache")
        return ConfigError(f"cannot use the scoring cache {self.path}: {text}. Choose another --cache-dir, or run "
                           "with --no-cache")

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
        return _sidecars(self.path)

    # -- per-text artefacts (TextCache protocol) ------------------------------------------------------------------
    def get_many(self, namespace: str, keys: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        corrupt = 0
        seal = _Seal("texts", namespace)
        wanted = list(dict.fromkeys(keys))

        def read(conn: sqlite3.Connection) -> list[tuple]:
            scope = _name_id(conn, _NAMESPACE, namespace)
            if scope is None:
                return []
            rows = []
            for block in _blocks(wanted):
                marks = ",".join("?" * len(block))
                rows += conn.execute(f"SELECT d.digest, t.value, t.checksum FROM digests d JOIN text_rows t ON "
                                     f"t.scope=? AND t.key=d.id WHERE d.digest IN ({marks})",
                                     [scope, *map(_stored_key, block)]).fetchall()
            return rows

        for key, value, checksum in self._query(read):
            key = _key_of(key)
            try:
                found[key] = seal.open((key,), value, checksum)
            except _CorruptRow:
                corrupt += 1
        self._report_corrupt(corrupt, f"per-text artefacts ({namespace.split(':', 1)[0]})")
        return found

    def put_many(self, namespace: str, items: dict[str, Any]) -> None:
        if items:
            sealed = _Seal("texts", namespace).close_all({(key,): value for key, value in items.items()})
            self._transaction(lambda conn: _put_sealed_texts(conn, namespace, sealed, self.dataset))

    # -- per-pair results ----------------------------------------------------------------------------------------
    def get_pairs(self, fingerprint: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """Finished rows for (hyp hash, ref hash) keys; absent keys (and corrupt rows) are missing from the result."""
        wanted = set(keys)
        found: dict[tuple[str, str], dict[str, Any]] = {}
        corrupt = 0
        seal = _Seal("pairs", fingerprint)
        hyps = sorted({h for h, _ in wanted})
        # The stored bytes of each wanted hash -> its hex (cheaper than hex() per row read).
        names = {_stored_key(key): key for pair in wanted for key in pair}

        def read(conn: sqlite3.Connection) -> list[tuple]:
            scope = _name_id(conn, _FINGERPRINT, fingerprint)
            if scope is None:
                return []
            rows = []
            for block in _blocks(hyps):
                marks = ",".join("?" * len(block))
                rows += conn.execute(f"SELECT h.digest, r.digest, p.value, p.checksum FROM digests h JOIN pair_rows p "
                                     f"ON p.scope=? AND p.hyp=h.id JOIN digests r ON r.id=p.ref "
                                     f"WHERE h.digest IN ({marks})", [scope, *map(_stored_key, block)]).fetchall()
            return rows

        for hyp, ref, value, checksum in self._query(read):
            key = (names.get(hyp), names.get(ref))
            if key in wanted:
                try:
                    row = seal.open(key, value, checksum)
                except _CorruptRow:
                    corrupt += 1
                    continue
                if type(row) is not dict:  # a sound encoding of the wrong shape is corrupt too
                    corrupt += 1
                    continue
                found[key] = row
        self._report_corrupt(corrupt, "pair rows")
        return found

    def put_pairs(self, fingerprint: str, rows: dict[tuple[str, str], dict[str, Any]]) -> None:
        """Store finished rows in one transaction (all or nothing)."""
        if rows:
            sealed = _Seal("pairs", fingerprint).close_all(rows)
            self._transaction(lambda conn: _put_sealed_pairs(conn, fingerprint, sealed, self.dataset))

    # -- whole-run memos -------------------------------------------------------------------------------------------
    def get_run(self, key: str) -> dict[str, Any] | None:
        """The memo stored under ``key`` (a dict), or None: absent, or corrupt (then one warning, as for any row).
        Asked before a run's inputs are read: a missing cache is not created for the question (a run whose inputs
        then fail validation leaves nothing behind)."""
        if not self.path.exists():
            return None
        rows = self._read("SELECT value, checksum FROM runs WHERE key=?", [key])
        if not rows:
            return None
        try:
            memo = _Seal("runs", "run").open((key,), *rows[0])
        except _CorruptRow:
            memo = None
        if type(memo) is not dict:
            self._report_corrupt(1, "run memo")
            return None
        return memo

    def put_run(self, key: str, memo: dict[str, Any]) -> None:
        """Store ``memo`` under ``key`` (replacing a row there) and drop all but the newest MAX_RUN_MEMOS."""
        data, checksum = _Seal("runs", "run").close((key,), memo)
        self._write(("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?)", [(key, data, checksum, time.time())]),
                    ("DELETE FROM runs WHERE key NOT IN (SELECT key FROM runs ORDER BY written DESC LIMIT ?)",
                     [(MAX_RUN_MEMOS,)]))

    def report_corrupt_run(self) -> None:
        """A memo whose checksum held but whose content is not a run's (checked by its reader): one warning."""
        self._report_corrupt(1, "run memo")

    def _report_corrupt(self, count: int, what: str) -> None:
        if count:
            log.warning("corrupt cache row%s in %s: %d %s failed the checksum or could not be decoded; not used, "
                        "recomputed and replaced", "s" if count > 1 else "", self.path, count, what)

    # -- purge (rexrank data purge) --------------------------------------------------------------------------------
    def purge(self, dataset: str, texts: Iterable[str] = (), *, dry_run: bool = False) -> dict[str, int]:
        """Remove what came from `dataset` (canonical name): the pair rows and artefacts its runs wrote (tagged),
        every pair row whose reference is one of `texts` (the dataset's reference texts), and every artefact keyed
        by one of them. An artefact another dataset's run also wrote stays unless it is keyed by one of `texts`.

        Every run memo goes too, whichever dataset it scored: a memo is one run's per-study table (reference
        hashes and values), and without the pair rows it was made from it would still hold them. The next run of
        those inputs rebuilds it from the pair rows that remain.

        Returns {"pairs", "texts", "runs", "bytes"} (bytes: the removed values). `dry_run` counts without removing.
        Deleted content is overwritten (secure_delete) and the WAL truncated, so no copy stays in the files.
        """
        from rexrank.metrics.base import text_key

        if not self.path.exists():  # never create a cache just to find it empty
            return {"pairs": 0, "texts": 0, "runs": 0, "bytes": 0}
        keys = [(_stored_key(key),) for key in {text_key(text) for text in texts}]
        # Text ids to remove: the dataset's texts, and the texts its runs tagged (as a reference of a pair row or as
        # the key of an artefact). An artefact another dataset's run also tagged stays unless it is one of `texts`.
        tagged = "SELECT digest FROM tags WHERE dataset=:d"
        pair_match = f"ref IN (SELECT id FROM temp.purge_ids) OR ref IN ({tagged})"
        text_match = (f"key IN (SELECT id FROM temp.purge_ids) OR (key IN ({tagged}) AND key NOT IN (SELECT digest "
                      "FROM tags WHERE dataset<>:d))")
        with self._lock:
            conn = self._connect()

            def transaction() -> dict[str, int]:
                conn.execute("PRAGMA secure_delete=ON")
                conn.execute("BEGIN IMMEDIATE")
                try:
                    dataset_id = _name_id(conn, _DATASET, _canonical(dataset))
                    params = {"d": -1 if dataset_id is None else dataset_id}
                    conn.execute("CREATE TEMP TABLE IF NOT EXISTS purge_keys (key PRIMARY KEY)")
                    conn.execute("CREATE TEMP TABLE IF NOT EXISTS purge_ids (id INTEGER PRIMARY KEY)")
                    conn.execute("DELETE FROM temp.purge_keys")
                    conn.execute("DELETE FROM temp.purge_ids")
                    conn.executemany("INSERT OR IGNORE INTO temp.purge_keys VALUES (?)", keys)
                    conn.execute("INSERT INTO temp.purge_ids SELECT d.id FROM digests d JOIN temp.purge_keys k ON "
                                 "d.digest=k.key")
                    n_pairs, pair_bytes = conn.execute(
                        f"SELECT COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM pair_rows WHERE {pair_match}", params
                    ).fetchone()
                    n_texts, text_bytes = conn.execute(
                        f"SELECT COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM text_rows WHERE {text_match}", params
                    ).fetchone()
                    n_runs, run_bytes = conn.execute(
                        "SELECT COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM runs").fetchone()
                    if not dry_run:
                        conn.execute("DELETE FROM runs")
                        conn.execute(f"DELETE FROM pair_rows WHERE {pair_match}", params)
                        conn.execute(f"DELETE FROM text_rows WHERE {text_match}", params)
                        conn.execute("DELETE FROM tags WHERE dataset=:d", params)
                        # The hashes no row keys any more, and tags left pointing at them.
                        conn.execute("DELETE FROM digests WHERE id NOT IN (SELECT key FROM text_rows) AND id NOT IN "
                                     "(SELECT hyp FROM pair_rows) AND id NOT IN (SELECT ref FROM pair_rows)")
                        conn.execute("DELETE FROM tags WHERE digest NOT IN (SELECT id FROM digests)")
                    conn.execute("DELETE FROM temp.purge_keys")
                    conn.execute("DELETE FROM temp.purge_ids")
                    conn.execute("COMMIT")
                except BaseException:
                    _rollback(conn)
                    raise
                finally:
                    conn.execute("PRAGMA secure_delete=OFF")
                return {"pairs": n_pairs, "texts": n_texts, "runs": n_runs,
                        "bytes": pair_bytes + text_bytes + run_bytes}

            removed = self._run(transaction)
            if not dry_run:
                # Old page versions may still sit in the WAL: copy the overwritten pages back and empty it.
                self._run(lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
        return removed

    def stats(self) -> dict[str, int]:
        return {"texts": self._read("SELECT COUNT(*) FROM text_rows", [])[0][0],
                "pairs": self._read("SELECT COUNT(*) FROM pair_rows", [])[0][0]}

    def integrity_check(self) -> str:
        return self._read("PRAGMA integrity_check", [])[0][0]

    # -- plumbing ------------------------------------------------------------------------------------------------
    def _run(self, action):
        """``action()`` with lock retries; a database failure becomes one RexrankError (``_storage_error``)."""
        try:
            return _retry(action)
        except sqlite3.DatabaseError as exc:
            raise self._storage_error(exc) from None

    def _read(self, sql: str, params: list[Any]) -> list[tuple]:
        return self._query(lambda conn: conn.execute(sql, params).fetchall())

    def _query(self, read):
        """``read(connection)``, with lock retries and one-line storage errors."""
        with self._lock:
            conn = self._connect()
            return self._run(lambda: read(conn))

    def _write(self, *statements: tuple[str, Iterable[tuple]]) -> None:
        """Run each (sql, rows) statement over its rows, all in one transaction."""
        statements = tuple((sql, list(rows)) for sql, rows in statements)
        if any(rows for _, rows in statements):
            self._transaction(lambda conn: [conn.executemany(sql, rows) for sql, rows in statements if rows])

    def _transaction(self, fill) -> None:
        """``fill(connection)`` in one write transaction: all of it or nothing."""
        with self._lock:
            conn = self._connect()

            def transaction():
                # IMMEDIATE takes the write lock up front, so two writers queue instead of deadlocking on upgrade.
                conn.execute("BEGIN IMMEDIATE")
                try:
                    fill(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    _rollback(conn)
                    raise

            self._run(transaction)


def check_cache_folder(directory: str | os.PathLike) -> None:
    """Refuse a cache folder that someone else could have written: not the user's own, writable by group or
    others, or holding a database file of another user. A folder that does not exist yet is fine (it is created
    0700). Raises ConfigError naming the folder and the fix."""
    directory = Path(directory).expanduser()
    if not hasattr(os, "geteuid"):  # no POSIX owners to check (Windows)
        return
    try:
        info = directory.stat()
    except FileNotFoundError:
        return
    me = os.geteuid()
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"the scoring cache folder {directory} is not a folder; give --cache-dir a folder path")
    if info.st_uid != me:
        raise ConfigError(f"the scoring cache folder {directory} belongs to another user (uid {info.st_uid}), who "
                          "could have written its scores: give --cache-dir a folder of your own, run with "
                          f"--no-cache, or, if the folder is yours, `chown -R {me} {directory}`")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = " and ".join(w for w, bit in (("its group", stat.S_IWGRP), ("other users", stat.S_IWOTH))
                           if info.st_mode & bit)
        raise ConfigError(f"the scoring cache folder {directory} can be written by {who} (mode "
                          f"{stat.S_IMODE(info.st_mode):o}), who could have changed its scores: `chmod 700 "
                          f"{directory}` if only you have written there, or give --cache-dir another folder")
    for path in _sidecars(directory / FILENAME):
        try:
            owner = path.lstat().st_uid
        except FileNotFoundError:
            continue
        if owner != me:
            raise ConfigError(f"the scoring cache file {path} belongs to another user (uid {owner}), who could "
                              f"have written its scores: give --cache-dir a folder of your own, run with --no-cache, "
                              f"or delete the file")


def _sidecars(path: Path) -> list[Path]:
    return [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))]


def _free_space(directory: Path) -> str:
    for folder in (directory, *directory.parents):
        try:
            free = shutil.disk_usage(folder).free
            return f" ({free / 1e9:.1f} GB free there)" if free >= 1e9 else f" ({free / 1e6:.1f} MB free there)"
        except OSError:
            continue
    return ""


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back what is left of a failed transaction. SQLite has already rolled it back after some errors (a full
    disk, an I/O error): a second ROLLBACK would raise and hide the error that matters."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


class _NewerSchema(sqlite3.DatabaseError):
    """The file's schema is newer than this version reads (args[0]: its schema)."""


class _UnreleasedSchema(sqlite3.DatabaseError):
    """The file's schema was only ever written by development versions (args[0]: its schema)."""


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


# -- schema 3: compact rows ----------------------------------------------------------------------------------------
# Names (text namespaces, metric fingerprints, datasets) and text hashes are stored once each and referred to by
# integer ids, so a pair row is three small integers, its value and its checksum. The checksum still covers the
# names and the hex hashes (``_Seal``), so a row moved to another id, or an id whose hash was edited, fails it.
_NAMESPACE, _FINGERPRINT, _DATASET = "namespace", "fingerprint", "dataset"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS names (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, "
    "UNIQUE (kind, name))",
    # sha256 digests as 32 bytes (a key that is no hex digest: its TEXT)
    "CREATE TABLE IF NOT EXISTS digests (id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS text_rows (scope INTEGER NOT NULL, key INTEGER NOT NULL, value BLOB NOT NULL, "
    "checksum BLOB NOT NULL, PRIMARY KEY (scope, key)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS pair_rows (scope INTEGER NOT NULL, hyp INTEGER NOT NULL, ref INTEGER NOT NULL, "
    "value BLOB NOT NULL, checksum BLOB NOT NULL, PRIMARY KEY (scope, hyp, ref)) WITHOUT ROWID",
    # Which dataset's run stored something for a text (a pair row's reference, an artefact's key): for purge.
    "CREATE TABLE IF NOT EXISTS tags (dataset INTEGER NOT NULL, digest INTEGER NOT NULL, "
    "PRIMARY KEY (dataset, digest)) WITHOUT ROWID",
    # Whole-run memos. A rowid table: its rows are megabytes, which SQLite keeps poorly in a WITHOUT ROWID b-tree.
    "CREATE TABLE IF NOT EXISTS runs (key TEXT PRIMARY KEY, value BLOB NOT NULL, checksum BLOB NOT NULL, "
    "written REAL NOT NULL)",
)
_HEX_OF = "CASE WHEN typeof({0}) = 'blob' THEN lower(hex({0})) ELSE {0} END"
# Views with the names and hex keys, for a person inspecting the file with sqlite3; rexrank never reads them.
_VIEWS = (
    f"CREATE VIEW IF NOT EXISTS texts AS SELECT n.name AS namespace, {_HEX_OF.format('d.digest')} AS key, t.value, "
    "t.checksum FROM text_rows t JOIN names n ON n.id = t.scope JOIN digests d ON d.id = t.key",
    f"CREATE VIEW IF NOT EXISTS pairs AS SELECT n.name AS fingerprint, {_HEX_OF.format('h.digest')} AS hyp, "
    f"{_HEX_OF.format('r.digest')} AS ref, p.value, p.checksum FROM pair_rows p JOIN names n ON n.id = p.scope "
    "JOIN digests h ON h.id = p.hyp JOIN digests r ON r.id = p.ref",
    f"CREATE VIEW IF NOT EXISTS origins AS SELECT n.name AS dataset, {_HEX_OF.format('d.digest')} AS key "
    "FROM tags g JOIN names n ON n.id = g.dataset JOIN digests d ON d.id = g.digest",
)


def _objects(conn: sqlite3.Connection) -> set[tuple[str, str]]:
    return set(conn.execute("SELECT name, type FROM sqlite_master"))


def _stored_key(key: str) -> bytes | str:
    return bytes.fromhex(key) if _HEX_DIGEST.fullmatch(key) else key


def _key_of(stored: bytes | str) -> str:
    return stored.hex() if type(stored) is bytes else stored


def _name_id(conn: sqlite3.Connection, kind: str, name: str, create: bool = False) -> int | None:
    if create:
        conn.execute("INSERT OR IGNORE INTO names (kind, name) VALUES (?, ?)", (kind, name))
    row = conn.execute("SELECT id FROM names WHERE kind=? AND name=?", (kind, name)).fetchone()
    return None if row is None else row[0]


def _digest_ids(conn: sqlite3.Connection, keys: Iterable[str]) -> dict[str, int]:
    """{key: id} of each text key, adding the ones the file does not hold yet (inside the caller's transaction)."""
    stored = {key: _stored_key(key) for key in dict.fromkeys(keys)}
    conn.executemany("INSERT OR IGNORE INTO digests (digest) VALUES (?)", [(v,) for v in stored.values()])
    back = {v: k for k, v in stored.items()}
    ids: dict[str, int] = {}
    for block in _blocks(list(back)):
        marks = ",".join("?" * len(block))
        for digest, ident in conn.execute(f"SELECT digest, id FROM digests WHERE digest IN ({marks})", block):
            ids[back[digest]] = ident
    return ids


def _tag(conn: sqlite3.Connection, dataset: str, ids: Iterable[int]) -> None:
    tag = _name_id(conn, _DATASET, dataset, create=True)
    conn.executemany("INSERT OR IGNORE INTO tags VALUES (?, ?)", [(tag, ident) for ident in set(ids)])


def _put_sealed_texts(conn: sqlite3.Connection, namespace: str, sealed: dict, dataset: str | None) -> None:
    """Store {(key,): (value bytes, checksum)} under ``namespace``; tag the keys with ``dataset`` if given."""
    if not sealed:
        return
    scope = _name_id(conn, _NAMESPACE, namespace, create=True)
    ids = _digest_ids(conn, [key for (key,) in sealed])
    conn.executemany("INSERT OR REPLACE INTO text_rows VALUES (?, ?, ?, ?)",
                     [(scope, ids[key], data, checksum) for (key,), (data, checksum) in sealed.items()])
    if dataset:
        _tag(conn, dataset, ids.values())


def _put_sealed_pairs(conn: sqlite3.Connection, fingerprint: str, sealed: dict, dataset: str | None) -> None:
    """Store {(hyp, ref): (value bytes, checksum)} under ``fingerprint``; tag the references with ``dataset``."""
    if not sealed:
        return
    scope = _name_id(conn, _FINGERPRINT, fingerprint, create=True)
    ids = _digest_ids(conn, [key for pair in sealed for key in pair])
    conn.executemany("INSERT OR REPLACE INTO pair_rows VALUES (?, ?, ?, ?, ?)",
                     [(scope, ids[hyp], ids[ref], data, checksum) for (hyp, ref), (data, checksum) in sealed.items()])
    if dataset:
        _tag(conn, dataset, (ids[ref] for _, ref in sealed))


def _by_scope(rows: Iterable[tuple], size: int = _BATCH):
    """(first column, up to ``size`` rows) of rows sorted by their first column."""
    scope, block = None, []
    for row in rows:
        if block and (row[0] != scope or len(block) == size):
            yield scope, block
            block = []
        scope = row[0]
        block.append(row)
    if block:
        yield scope, block


def _grouped(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    groups: dict[str, list[str]] = {}
    for first, second in pairs:
        groups.setdefault(first, []).append(second)
    return list(groups.items())


# -- rows: checksum + value encoding ------------------------------------------------------------------------------
class _CorruptRow(ValueError):
    """A stored row whose checksum or encoding does not match: never used."""


class _Seal:
    """Checksums of one table's rows under one namespace/fingerprint: BLAKE2b over the table, every key part
    (length-prefixed, so no two keys share an encoding) and the value's bytes."""

    def __init__(self, table: str, scope: str, size: int = _CHECKSUM_BYTES) -> None:
        self._prefix = hashlib.blake2b(_framed((table, scope)), digest_size=size, person=b"rexrank-scores")

    def _digest(self, key: tuple[str, ...], value: bytes) -> bytes:
        h = self._prefix.copy()
        h.update(_framed(key))
        h.update(value)
        return h.digest()

    def close(self, key: tuple[str, ...], value: Any) -> tuple[bytes, bytes]:
        """(encoded value, checksum) to store."""
        data = encode_value(value)
        return data, self._digest(key, data)

    def close_all(self, items: dict[tuple[str, ...], Any]) -> dict[tuple[str, ...], tuple[bytes, bytes]]:
        return {key: self.close(key, value) for key, value in items.items()}

    def open(self, key: tuple[str, ...], data: Any, checksum: Any) -> Any:
        """The stored value, if its checksum and encoding hold; else _CorruptRow."""
        # _digest inlined: this runs once per row of every warm read.
        h = self._prefix.copy()
        h.update(_framed(key))
        if type(data) is not bytes:  # a TEXT or NULL someone wrote into the BLOB column
            raise _CorruptRow
        h.update(data)
        if h.digest() != checksum:
            raise _CorruptRow
        return decode_value(data)


def _framed(parts: tuple[str, ...]) -> bytes:
    """Strings in one unambiguous byte string: each prefixed by its length in characters."""
    return "".join([f"{len(part)}:{part}" for part in parts]).encode("utf-8", "surrogatepass")


_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U64 = struct.Struct("<Q")
_MAX_DEPTH = 100
_MAX_NDIM = 32
# dtype strings an array or numpy scalar may carry (numpy's dtype.str: byte order, kind, item size): bool, int, uint,
# float, complex and fixed-width byte/unicode strings. Checked before numpy parses them: never object or structured.
_DTYPE = re.compile(r"[<>|][biufcSU][0-9]{1,6}")

# One-byte tags of the encoding.
_NONE, _TRUE, _FALSE, _INT, _BIGINT, _FLOAT, _STR, _BYTES = b"N", b"T", b"F", b"i", b"I", b"f", b"s", b"b"
_LIST, _TUPLE, _DICT, _SET, _FROZENSET, _ARRAY, _SCALAR, _NA = b"l", b"t", b"d", b"S", b"Z", b"a", b"g", b"A"
_RECORD = b"r"  # a dict of str keys and float values, stored compactly
_SHORT_RECORD = b"q"  # the same with its two counts in one byte each (under 256 columns and 256 bytes of names)
_CONTAINERS = {list: _LIST, tuple: _TUPLE, set: _SET, frozenset: _FROZENSET}


def encode_value(value: Any) -> bytes:
    """The bytes the cache stores for ``value`` (see the module docstring for the types); TypeError for others."""
    out = bytearray()
    _encode(value, out, 0)
    return bytes(out)


def decode_value(data: bytes) -> Any:
    """``encode_value``'s inverse. Malformed bytes raise ``_CorruptRow``; nothing in them is executed or imported."""
    try:
        value, end = _decode(data, 0, 0)
    except _CorruptRow:
        raise
    except (IndexError, ValueError, TypeError, OverflowError, struct.error, RecursionError, MemoryError):
        raise _CorruptRow from None
    if end != len(data):
        raise _CorruptRow
    return value


def _encode(value: Any, out: bytearray, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise TypeError(f"the scoring cache stores values nested at most {_MAX_DEPTH} deep")
    kind = type(value)
    if kind is float:
        out += _FLOAT
        out += _F64.pack(value)  # the IEEE bits as they are: NaN payloads and -0.0 included
    elif kind is str:
        data = value.encode("utf-8", "surrogatepass")
        out += _STR
        out += _U32.pack(len(data))
        out += data
    elif value is None:
        out += _NONE
    elif kind is bool:
        out += _TRUE if value else _FALSE
    elif kind is int:
        if -(1 << 63) <= value < (1 << 63):
            out += _INT
            out += _I64.pack(value)
        else:
            data = str(value).encode("ascii")
            out += _BIGINT
            out += _U32.pack(len(data))
            out += data
    elif kind is dict and value and all(type(v) is float for v in value.values()) \
            and all(type(k) is str and "\0" not in k for k in value):
        # A row of float columns (most pair rows): its keys as one string and its numbers as one block, read
        # back in two calls instead of two per column.
        keys = "\0".join(value).encode("utf-8", "surrogatepass")
        if len(value) < 256 and len(keys) < 256:
            out += _SHORT_RECORD
            out += bytes((len(value), len(keys)))
        else:
            out += _RECORD
            out += _U32.pack(len(value))
            out += _U32.pack(len(keys))
        out += keys
        out += _floats(len(value)).pack(*value.values())
    elif kind is dict:
        out += _DICT
        out += _U32.pack(len(value))
        for key, item in value.items():
            _encode(key, out, depth + 1)
            _encode(item, out, depth + 1)
    elif kind in _CONTAINERS:
        out += _CONTAINERS[kind]
        out += _U32.pack(len(value))
        for item in value:
            _encode(item, out, depth + 1)
    elif kind is bytes:
        out += _BYTES
        out += _U32.pack(len(value))
        out += value
    elif kind is np.ndarray:
        array = value
        if array.ndim > _MAX_NDIM:
            raise TypeError(f"the scoring cache stores arrays of at most {_MAX_NDIM} dimensions, not {array.ndim}")
        out += _ARRAY
        _encode_dtype(array.dtype, out)
        out += bytes((array.ndim,))
        for size in array.shape:
            out += _U64.pack(size)
        out += array.tobytes(order="C")  # any layout; a 0-d array keeps its shape (ascontiguousarray would not)
    elif isinstance(value, np.generic):
        scalar = np.asarray(value)
        out += _SCALAR
        _encode_dtype(scalar.dtype, out)
        out += scalar.tobytes()
    elif kind.__name__ == "NAType" and kind.__module__.startswith("pandas"):
        out += _NA
    else:
        raise TypeError(f"the scoring cache stores plain values (None, bool, int, float, str, bytes, list, tuple, "
                        f"dict, set, frozenset, pandas NA, numeric numpy arrays and scalars), not "
                        f"{kind.__module__}.{kind.__qualname__}")


def _encode_dtype(dtype: np.dtype, out: bytearray) -> None:
    code = dtype.str
    if not _DTYPE.fullmatch(code) or dtype.itemsize == 0:
        raise TypeError(f"the scoring cache stores numpy values of bool, number or fixed-width string dtypes, not "
                        f"{dtype}")
    out += bytes((len(code),))
    out += code.encode("ascii")


def _decode_dtype(data: bytes, pos: int) -> tuple[np.dtype, int]:
    size = data[pos]
    code = data[pos + 1 : pos + 1 + size].decode("ascii")
    if not _DTYPE.fullmatch(code):
        raise _CorruptRow
    dtype = np.dtype(code)
    if dtype.itemsize == 0:
        raise _CorruptRow
    return dtype, pos + 1 + size


def _decode(data: bytes, pos: int, depth: int) -> tuple[Any, int]:
    """(value, position after it). Out-of-range reads raise IndexError/struct.error; a read past the end through
    a slice is caught by decode_value's final length check."""
    if depth > _MAX_DEPTH:
        raise _CorruptRow
    tag = data[pos]
    pos += 1
    if tag == _T_SHORT_RECORD or tag == _T_RECORD:
        if tag == _T_SHORT_RECORD:
            count, size = data[pos], data[pos + 1]
            pos += 2
        else:
            count, size = _unpack_2u32(data, pos)
            pos += 8
        blob = data[pos : pos + size]
        keys = _record_keys.get(blob)
        if keys is None:
            keys = tuple(blob.decode("utf-8", "surrogatepass").split("\0"))
            if len(keys) != count or len(set(keys)) != count:
                raise _CorruptRow
            if len(_record_keys) < 4096:  # the same few column sets over and over: decode each once
                _record_keys[blob] = keys
        elif len(keys) != count:
            raise _CorruptRow
        pos += size
        return dict(zip(keys, _floats(count).unpack_from(data, pos))), pos + 8 * count
    # Floats and strings are most of what other values hold: containers read them inline, sparing a call per item.
    if tag == _T_FLOAT:
        return _unpack_f64(data, pos)[0], pos + 8
    if tag == _T_STR:
        end = pos + 4 + _unpack_u32(data, pos)[0]
        return data[pos + 4 : end].decode("utf-8", "surrogatepass"), end
    if tag == _T_DICT:
        (count,) = _unpack_u32(data, pos)
        pos += 4
        result = {}
        for _ in range(count):
            if data[pos] == _T_STR:
                end = pos + 5 + _unpack_u32(data, pos + 1)[0]
                key = data[pos + 5 : end].decode("utf-8", "surrogatepass")
                pos = end
            else:
                key, pos = _decode(data, pos, depth + 1)
            if data[pos] == _T_FLOAT:
                result[key] = _unpack_f64(data, pos + 1)[0]
                pos += 9
            else:
                result[key], pos = _decode(data, pos, depth + 1)
        return result, pos
    if tag == _T_INT:
        return _unpack_i64(data, pos)[0], pos + 8
    if tag == _T_NONE:
        return None, pos
    if tag == _T_TRUE:
        return True, pos
    if tag == _T_FALSE:
        return False, pos
    if tag in _SEQUENCES:
        (count,) = _unpack_u32(data, pos)
        pos += 4
        items = []
        for _ in range(count):
            if data[pos] == _T_FLOAT:
                items.append(_unpack_f64(data, pos + 1)[0])
                pos += 9
            else:
                item, pos = _decode(data, pos, depth + 1)
                items.append(item)
        return _SEQUENCES[tag](items), pos
    if tag == _T_BYTES:
        end = pos + 4 + _unpack_u32(data, pos)[0]
        return data[pos + 4 : end], end
    if tag == _T_BIGINT:
        end = pos + 4 + _unpack_u32(data, pos)[0]
        raw = data[pos + 4 : end]
        if not raw.lstrip(b"-").isdigit():
            raise _CorruptRow
        return int(raw), end
    if tag == _T_ARRAY:
        dtype, pos = _decode_dtype(data, pos)
        ndim = data[pos]
        if ndim > _MAX_NDIM:
            raise _CorruptRow
        shape = struct.unpack_from(f"<{ndim}Q", data, pos + 1)
        pos += 1 + 8 * ndim
        count = math.prod(shape)
        end = pos + count * dtype.itemsize
        if end > len(data):
            raise _CorruptRow
        # A copy: the caller gets a writable array of its own, as it would from the computation.
        return np.frombuffer(data, dtype=dtype, count=count, offset=pos).reshape(shape).copy(), end
    if tag == _T_SCALAR:
        dtype, pos = _decode_dtype(data, pos)
        end = pos + dtype.itemsize
        if end > len(data):
            raise _CorruptRow
        return np.frombuffer(data, dtype=dtype, count=1, offset=pos)[0], end
    if tag == _T_NA:
        import pandas as pd

        return pd.NA, pos
    raise _CorruptRow


_T_NONE, _T_TRUE, _T_FALSE, _T_INT, _T_BIGINT, _T_FLOAT, _T_STR, _T_BYTES = (
    _NONE[0], _TRUE[0], _FALSE[0], _INT[0], _BIGINT[0], _FLOAT[0], _STR[0], _BYTES[0])
_T_DICT, _T_ARRAY, _T_SCALAR, _T_NA, _T_RECORD = _DICT[0], _ARRAY[0], _SCALAR[0], _NA[0], _RECORD[0]
_T_SHORT_RECORD = _SHORT_RECORD[0]
_SEQUENCES = {tag[0]: kind for kind, tag in _CONTAINERS.items()}
_unpack_u32, _unpack_i64, _unpack_f64 = _U32.unpack_from, _I64.unpack_from, _F64.unpack_from
_unpack_2u32 = struct.Struct("<II").unpack_from
_record_keys: dict[bytes, tuple[str, ...]] = {}


def _floats(count: int) -> struct.Struct:
    """struct for `count` little-endian doubles (one per row width, kept)."""
    packer = _float_structs.get(count)
    if packer is None:
        packer = _float_structs[count] = struct.Struct(f"<{count}d")
    return packer


_float_structs: dict[int, struct.Struct] = {}


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
