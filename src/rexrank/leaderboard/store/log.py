"""The log: events applied, results, models: the only part of the store the board's views read.

Everything the board shows is an append-only, content-addressed entry: a result (table ``results``, its id the
sha256 of its record) or an event (table ``events``, ``store.events``: a model event, an Arena vote or rater
decision, the host's published meta-evaluation, a listing). Nothing in either table is ever changed or deleted.
``models`` (one row per name: details, owner) is derived from the model events, replayed in their recorded order
(``at``, then hash); the Hub sync carries both kinds of entry (``hub_sync``), so a store rebuilt from the repo
shows the same board.

What may enter (``add_result``, on every path: `leaderboard add`, the Python API, a submission's ``finish``, the
Hub pull): a record whose numbers are possible (``records.check_numbers``: finite, inside each metric's range, the
mean inside its own CI, at least one study) and, except on a Hub pull of rows already accepted, whose metric
weights are official (``records.check_weights``) unless the caller allows unofficial ones, which the board labels.

Ownership: a model name (compared by ``records.name_key``) belongs to whoever first registered it, the host for
the published rows. Only its owner may add results under it; nothing but ``edit_model`` (the host's CLI) changes
its details or its owner.

The other parts append to the log only through ``Log``'s public methods: ``next_event_time`` and ``insert_event``
(the Arena's votes and rater decisions), ``model_id`` and ``result_of_submission`` (the submission queue, whose
jobs' results enter through ``Store.finish``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any, Callable

from rexrank.data import catalog, tracks
from rexrank.errors import InputError, UnknownNameError
from rexrank.evaluation.disclosure import disclose_record
from rexrank.evaluation.meta_eval_report import meta_eval_summary
from rexrank.leaderboard.records import (
    HOST,
    NAME_KEY_VERSION,
    MetricValue,
    ModelInfo,
    Provenance,
    ResultRecord,
    check_numbers,
    check_weights,
    describe_identity,
    name_key,
)
from rexrank.leaderboard.store.connection import Database, NameTaken
from rexrank.leaderboard.store.events import (
    DETAIL_FIELDS,
    LISTING_KIND,
    META_EVAL_KIND,
    MODEL_EVENT_KINDS,
    check_event,
    event_hash,
    make_event,
    make_listing_event,
    make_meta_eval_event,
    subject,
)


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



class Log:
    """The log's tables (events, results, models) in the store file ``db`` owns."""

    def __init__(self, db: Database):
        self._db = db

    def rekey(self, conn: sqlite3.Connection) -> None:
        """Keys computed by another rule of ``records.name_key`` (a store written before its change) are computed
        again from the log, in its order: of two names that now compare equal, the first registered keeps the key.
        Run when the store is opened, in the transaction that creates or checks its schema."""
        if self._db.meta("name_key_version") != NAME_KEY_VERSION:
            _replay_models(conn)
            self._db.set_meta("name_key_version", NAME_KEY_VERSION, conn)

    def result_of_submission(self, conn: sqlite3.Connection, submission_id: int) -> int | None:
        """The newest result a Space submission added (what its queue entry points at), or None."""
        return conn.execute("SELECT MAX(id) FROM results WHERE submission_id = ? AND submitted_via = 'space'",
                            (submission_id,)).fetchone()[0]

    # -- models and results -----------------------------------------------------------------------------
    def _find_model(self, conn: sqlite3.Connection, name: str) -> sqlite3.Row | None:
        """The model registered under ``name`` or a name with the same key (case, width, invisible characters...)."""
        return conn.execute("SELECT * FROM models WHERE name_key = ? OR name = ? ORDER BY name = ? DESC,"
                            " name_key IS NULL, id LIMIT 1", (name_key(name), name, name)).fetchone()

    def model_id(self, conn: sqlite3.Connection, model: ModelInfo, identity: str, *, enforce: bool = True,
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

    def next_event_time(self, conn: sqlite3.Connection, at: float | None = None) -> float:
        """The time of this store's next event: ``at`` (default now), or just after the newest event the log holds
        if that is later (the log's order is its times: ``_TIME_STEP``)."""
        at = time.time() if at is None else at
        last = conn.execute("SELECT MAX(at) FROM events").fetchone()[0]
        return at if last is None else max(at, last + _TIME_STEP)

    def insert_event(self, conn: sqlite3.Connection, event: dict[str, Any]) -> bool:
        """Store ``event`` in the log (not yet applied to ``models``); False if the log already holds it."""
        cur = conn.execute("INSERT OR IGNORE INTO events(content_hash, kind, model, at, event, created_at)"
                           " VALUES (?,?,?,?,?,?)", (event_hash(event), event["kind"], subject(event), event["at"],
                                                     json.dumps(event, sort_keys=True), time.time()))
        return cur.rowcount == 1

    def has_event(self, conn: sqlite3.Connection, kind: str, subject: str) -> bool:
        """Whether the log holds an event of ``kind`` about ``subject`` (``events.subject``)."""
        return conn.execute("SELECT 1 FROM events WHERE kind = ? AND model = ?", (kind, subject)).fetchone() is not None

    def count_events(self, conn: sqlite3.Connection, kind: str, subjects: tuple[str, str], after: float) -> int:
        """How many events of ``kind`` whose subject is in [low, high) the log holds at times after ``after``
        (an index range: e.g. one rater's votes, whose subjects start with the rater)."""
        return conn.execute("SELECT COUNT(*) FROM events WHERE kind = ? AND model >= ? AND model < ? AND at > ?",
                            (kind, *subjects, after)).fetchone()[0]

    def _event(self, conn: sqlite3.Connection, kind: str, model: str, by: str, **fields: Any) -> None:
        """Record this store's own event, after every event it holds, and apply it to ``models``."""
        event = make_event(kind, model, self.next_event_time(conn), by, **fields)
        if self.insert_event(conn, event):
            _apply_event(conn, event)

    def set_listing(self, conn: sqlite3.Connection, model: str, dataset: str, split: str, track: str,
                    listed: bool) -> None:
        """Record that the published tables (do not) list ``model`` on one board table: a ``listing`` event, after
        every event the log holds."""
        self.insert_event(conn, make_listing_event(model, dataset, split, track, listed, at=self.next_event_time(conn)))

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
            with self._db.transaction() as tx:
                return self.add_events(events, tx)
        added = 0
        for event in sorted(events, key=lambda e: (e["at"], event_hash(e))):
            last = conn.execute("SELECT at, content_hash FROM events ORDER BY at DESC, content_hash DESC"
                                " LIMIT 1").fetchone()
            if not self.insert_event(conn, event):
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
        rows = self._db.connection().execute(sql + " ORDER BY at, content_hash", args).fetchall()
        return [(row["content_hash"], json.loads(row["event"])) for row in rows]

    # -- the Arena's part of the log (``leaderboard/arena.py``) -------------------------------------------------------
    def log_rows(self, kinds: tuple[str, ...], after_id: int = 0) -> list[tuple[int, str, dict[str, Any]]]:
        """Events of ``kinds`` stored after row ``after_id`` (row ids grow with every insert), in storage order:
        (row id, content hash, event). What lets a reader follow a long log without reading it again."""
        # "+kind": not the (kind, model) index, which made SQLite walk every vote of the log to find the few rows
        # after ``after_id``; the row id range is the search (39 ms -> under 1 ms per call at 100,000 votes).
        rows = self._db.connection().execute(
            f"SELECT id, content_hash, event FROM events WHERE id > ? AND +kind IN ({','.join('?' * len(kinds))})"
            " ORDER BY id", (after_id, *kinds)).fetchall()
        return [(row["id"], row["content_hash"], json.loads(row["event"])) for row in rows]

    # -- the published meta-evaluation --------------------------------------------------------------------------
    def add_meta_eval(self, report: Any, *, by: str = HOST) -> tuple[str, bool]:
        """Publish a meta-evaluation (a meta_eval.json's report; ``MetaEvalError`` if it is not aggregates only):
        one ``meta_eval`` event at the log's next time. The same aggregates as the newest published ones for their
        expert set add nothing. Returns (the event's content hash, whether it was added)."""
        summary = meta_eval_summary(report)
        with self._db.transaction() as conn:
            newest = conn.execute("SELECT content_hash, event FROM events WHERE kind = ? AND model = ?"
                                  " ORDER BY at DESC, content_hash DESC LIMIT 1",
                                  (META_EVAL_KIND, summary["dataset"])).fetchone()
            if newest is not None and json.loads(newest["event"])["meta_eval"] == summary:
                return newest["content_hash"], False
            event = check_event(make_meta_eval_event(summary, at=self.next_event_time(conn), by=by))
            self.insert_event(conn, event)
        return event_hash(event), True

    def meta_eval(self) -> dict[str, Any] | None:
        """The newest published meta-evaluation (``meta_eval_summary`` plus ``at``, when it was published), or None."""
        row = self._db.connection().execute("SELECT event FROM events WHERE kind = ? ORDER BY at DESC, content_hash DESC"
                                   " LIMIT 1", (META_EVAL_KIND,)).fetchone()
        if row is None:
            return None
        event = json.loads(row["event"])
        return {**event["meta_eval"], "at": event["at"]}

    def model(self, name: str) -> dict[str, Any] | None:
        """The registered model of ``name`` (compared by name key): details, owner; None if the name is free."""
        row = self._find_model(self._db.connection(), name)
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
        row = self._find_model(self._db.connection(), name)
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
        with self._db.transaction() as conn:
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
        row = self._find_model(self._db.connection(), record.model.name)
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
            with self._db.transaction() as tx:
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
        model_id = self.model_id(conn, record.model, provenance.submitted_by, enforce=not mirror,
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
        with self._db.transaction() as conn:
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
        row = self._db.connection().execute("SELECT dataset, track, model_id FROM results WHERE id = ?", (result_id,)).fetchone()
        if row is None:
            return False
        name = self._db.connection().execute("SELECT name FROM models WHERE id = ?", (row["model_id"],)).fetchone()["name"]
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
            found = self._find_model(self._db.connection(), model)
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
        rows = self._db.connection().execute(sql, args).fetchall()
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

    def models(self) -> list[dict[str, Any]]:
        rows = self._db.connection().execute("SELECT * FROM models ORDER BY name").fetchall()
        return [dict(r, trained_on=json.loads(r["trained_on"] or "[]")) for r in rows]
