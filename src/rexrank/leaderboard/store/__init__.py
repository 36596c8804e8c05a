"""The results store: one SQLite file (WAL; every write one transaction; one schema, older stores refused).

A small package, each module around one owner of the file's connection:

- ``connection``: ``Database``, the one connection owner (connections per thread, transactions, the schema
  ``BASELINE`` and the refusal of any other, the generation, listeners, meta) and the store's errors;
- ``events``: the events of the log (kinds, makers, ``check_event``, ``event_hash``): pure functions;
- ``log``: ``Log``, events applied, results, models: the only part the board's views read;
- ``queue``: ``Queue``, the submission queue and the attempts its quotas count;
- ``arena``: ``ArenaTables``, the Arena's votes and rater decisions (events of the log), tickets and kept reports.

No module reaches into another's private names: what two parts need is a public method of its owner
(``Database.connection``/``transaction``; ``Log.insert_event``/``next_event_time``/``has_event``/``count_events``
for the Arena, ``Log.model_id``/``result_of_submission`` for the queue; ``events.subject``).

``Store`` is a thin facade, by choice: it composes the parts (``db``, ``log``, ``queue``, ``arena``) over one
``Database`` and delegates each public method to its part by an explicit method, so every caller keeps the one
object it always had (``Store(path).add_result(...)``) and a reader finds each method's code in the module named
for what it holds. The one write spanning two parts, ``finish`` (a job's result into the log and the job marked done,
in one transaction), is composed here. The package re-exports every public name the single module had.

The generation (``generation()``, which ``version()`` returns) is bumped by every commit that changes a row, so
one number keys every cache and the page's refresh: an edit or a hand-over changes it like a new result does.
Readers never block writers (WAL), and each write commits or rolls back whole, so a process killed mid-write
leaves the store as it was. A file that is not a SQLite store, or a damaged one, is a one-line ``StoreError``
naming it and the fix.

One schema (``SCHEMA_VERSION``, created whole by ``BASELINE``): a store of any other schema is refused with one line
naming the file and the fix (rebuild it from the Hub, re-import the published tables), read through a read-only
connection so the file keeps every byte. Why not migrate: 0.1.0 was never released, so every older store is a
development store of a few days, and its migrations (eight, one of which called the live event code, so an old step
changed whenever today's code did) were code to own for states no user holds. A release that changes the schema
adds plain SQL steps from this baseline.

Other tables are not the board: submissions (the queue), attempts (every submission attempt, rejected ones
included: the quotas count them), meta (facts about the store itself, e.g. whether it was seeded with the published
tables: ``published.seed_store`` owns that rule) and the Arena's pair tickets (never synced, and their writes leave
the generation alone).
"""

from __future__ import annotations

import logging
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Callable

from rexrank.leaderboard.records import HOST, ModelInfo, Provenance, ResultRecord
from rexrank.leaderboard.store.arena import ArenaTables
from rexrank.leaderboard.store.connection import (
    BASELINE,
    SCHEMA_VERSION,
    Database,
    DuplicateSubmission,
    DuplicateVote,
    NameTaken,
    QuotaExceeded,
    StoreError,
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
    vote_key,
)
from rexrank.leaderboard.store.log import Log, check_owner
from rexrank.leaderboard.store.queue import LOST_UPLOAD, Queue

__all__ = [
    "ARENA_EVENT_KINDS", "BASELINE", "DETAIL_FIELDS", "EVENT_KINDS", "LISTING_FIELDS", "LISTING_KIND", "LOST_UPLOAD",
    "META_EVAL_FIELDS", "META_EVAL_KIND", "MODEL_EVENT_KINDS", "RATER_FIELDS", "RATER_ROLES", "SCHEMA_VERSION",
    "VOTE_CHOICES", "VOTE_FIELDS", "VOTE_SEED", "DuplicateSubmission", "DuplicateVote", "NameTaken", "QuotaExceeded",
    "Store", "StoreError", "check_event", "check_owner", "error_categories", "event_hash", "make_event",
    "make_listing_event", "make_meta_eval_event", "make_rater_event", "make_vote", "vote_key",
]


_logger = logging.getLogger(__name__)


class Store:
    """The results store at ``path``: one connection per thread; safe across processes. A facade over its parts."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0):
        self.db = Database(path, timeout=timeout)  # refuses a file of another schema, untouched
        self.path = self.db.path
        self.log = Log(self.db)
        self.queue = Queue(self.db, self.log)
        self.arena = ArenaTables(self.db, self.log)
        with self.db.transaction() as conn:
            self.db.open_schema(conn)
            self.log.rekey(conn)
        cleaned = self.arena.clean_licensed_text()
        if cleaned:
            _logger.warning("%s: removed the licensed report text of %s kept from an earlier rexrank (the per-study "
                        "values stay); a Hub results repo this store pushed to loses those files at the next sync, "
                        "and keeps them in its history until you squash it (HfApi.super_squash_history)",
                        self.path, ", ".join(f"{n} rows of {d}" for d, n in sorted(cleaned.items())))

    # -- the file: ``connection.Database`` -----------------------------------------------------------------------
    def connection(self) -> sqlite3.Connection:
        return self.db.connection()

    def transaction(self, *, board: bool = True) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.transaction(board=board)

    def backup(self, out: str | Path) -> Path:
        return self.db.backup(out)

    def add_listener(self, callback: Callable[[], None]) -> None:
        self.db.add_listener(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        self.db.remove_listener(callback)

    def close(self) -> None:
        self.db.close()

    def meta(self, key: str) -> Any:
        return self.db.meta(key)

    def set_meta(self, key: str, value: Any, conn: sqlite3.Connection | None = None) -> None:
        self.db.set_meta(key, value, conn)

    def schema_version(self) -> int:
        return self.db.schema_version()

    def integrity_check(self) -> str:
        return self.db.integrity_check()

    def generation(self) -> int:
        return self.db.generation()

    def version(self) -> str:
        return self.db.version()

    def counts(self) -> dict[str, int]:
        return {table: self.db.count(table) for table in ("models", "results", "submissions")}

    # -- the log: ``log.Log`` -----------------------------------------------------------------------------------
    def set_listing(self, conn: sqlite3.Connection, model: str, dataset: str, split: str, track: str,
                    listed: bool) -> None:
        self.log.set_listing(conn, model, dataset, split, track, listed)

    def withdrawn(self) -> set[tuple[str, str, str, str]]:
        return self.log.withdrawn()

    def add_events(self, events: list[dict[str, Any]], conn: sqlite3.Connection | None = None) -> int:
        return self.log.add_events(events, conn)

    def events(self, kinds: tuple[str, ...] | None = None) -> list[tuple[str, dict[str, Any]]]:
        return self.log.events(kinds)

    def log_rows(self, kinds: tuple[str, ...], after_id: int = 0) -> list[tuple[int, str, dict[str, Any]]]:
        return self.log.log_rows(kinds, after_id)

    def add_meta_eval(self, report: Any, *, by: str = HOST) -> tuple[str, bool]:
        return self.log.add_meta_eval(report, by=by)

    def meta_eval(self) -> dict[str, Any] | None:
        return self.log.meta_eval()

    def model(self, name: str) -> dict[str, Any] | None:
        return self.log.model(name)

    def model_info(self, name: str) -> ModelInfo | None:
        return self.log.model_info(name)

    def models(self) -> list[dict[str, Any]]:
        return self.log.models()

    def check_name(self, name: str, identity: str | None) -> dict[str, Any] | None:
        return self.log.check_name(name, identity)

    def edit_model(self, name: str, *, owner: str | None = None, by: str = HOST, **details: Any) -> dict[str, Any]:
        return self.log.edit_model(name, owner=owner, by=by, **details)

    def check_result(self, record: ResultRecord, *, provenance: Provenance | None = None,
                     allow_unofficial_weights: bool = False) -> ResultRecord:
        return self.log.check_result(record, provenance=provenance, allow_unofficial_weights=allow_unofficial_weights)

    def add_result(self, record: ResultRecord, conn: sqlite3.Connection | None = None, *,
                   provenance: Provenance | None = None, allow_unofficial_weights: bool = False,
                   mirror: bool = False, owner_if_new: str | None = None,
                   recorded_at: float | None = None) -> tuple[int, bool]:
        return self.log.add_result(record, conn, provenance=provenance, mirror=mirror, owner_if_new=owner_if_new,
                                   allow_unofficial_weights=allow_unofficial_weights, recorded_at=recorded_at)

    def add_results(self, records: list[ResultRecord], *, provenance: Provenance | None = None,
                    allow_unofficial_weights: bool = False) -> list[tuple[int, bool]]:
        return self.log.add_results(records, provenance=provenance, allow_unofficial_weights=allow_unofficial_weights)

    def is_shown(self, result_id: int) -> bool:
        return self.log.is_shown(result_id)

    def results(self, dataset: str | None = None, track: str | None = None, *, latest: bool = True,
                model: str | None = None, include_hidden: bool = False,
                withdrawn: bool = False) -> list[dict[str, Any]]:
        return self.log.results(dataset, track, latest=latest, model=model, include_hidden=include_hidden,
                                withdrawn=withdrawn)

    # -- the Arena: ``arena.ArenaTables`` -----------------------------------------------------------------------
    def add_vote(self, event: dict[str, Any], *, quota: int | None = None, window: float = 86400.0,
                 now: float | None = None) -> str:
        return self.arena.add_vote(event, quota=quota, window=window, now=now)

    def add_rater_event(self, rater: str, role: str, *, reason: str = "", by: str = HOST) -> dict[str, Any]:
        return self.arena.add_rater_event(rater, role, reason=reason, by=by)

    def issue_ticket(self, ticket_id: str, *, arena: str, rater: str, study: str, models: tuple[str, str],
                     issued: float, ttl: float, keep: int) -> None:
        self.arena.issue_ticket(ticket_id, arena=arena, rater=rater, study=study, models=models, issued=issued,
                                ttl=ttl, keep=keep)

    def live_tickets(self, arena: str, now: float) -> list[dict[str, Any]]:
        return self.arena.live_tickets(arena, now)

    def ticket(self, ticket_id: str, *, arena: str, now: float) -> dict[str, Any] | None:
        return self.arena.ticket(ticket_id, arena=arena, now=now)

    def claim_ticket(self, ticket_id: str, *, arena: str, rater: str, now: float) -> dict[str, Any] | None:
        return self.arena.claim_ticket(ticket_id, arena=arena, rater=rater, now=now)

    def keep_reports(self, *, dataset: str, split: str, track: str, model: str, result_hash: str,
                     rows: list[tuple[str, str, str, dict[str, float]]], recorded_at: float | None = None) -> int:
        return self.arena.keep_reports(dataset=dataset, split=split, track=track, model=model,
                                       result_hash=result_hash, rows=rows, recorded_at=recorded_at)

    def arena_reports(self, dataset: str | None = None) -> list[dict[str, Any]]:
        return self.arena.arena_reports(dataset)

    def reports_version(self) -> tuple[int, int]:
        return self.arena.reports_version()

    # -- the submission queue: ``queue.Queue`` ------------------------------------------------------------------
    def enqueue(self, *, content_hash: str, user: str | None, model: ModelInfo, dataset: str, split: str,
                track: str, predictions_path: str, metrics: list[str], identity: str | None = None) -> int:
        return self.queue.enqueue(content_hash=content_hash, user=user, model=model, dataset=dataset, split=split,
                                  track=track, predictions_path=predictions_path, metrics=metrics, identity=identity)

    def restore_submission(self, entry: dict[str, Any]) -> bool:
        return self.queue.restore_submission(entry)

    def submissions_since(self, user: str, since: float) -> int:
        return self.queue.submissions_since(user, since)

    def reserve_attempt(self, identity: str, dataset: str, split: str, track: str, *, limit: int, window: float,
                        scope: tuple[str, ...] | None = None, what: str = "submissions",
                        shared: tuple[str, int, str] | None = None) -> int:
        return self.queue.reserve_attempt(identity, dataset, split, track, limit=limit, window=window, scope=scope,
                                          what=what, shared=shared)

    def finish_attempt(self, attempt_id: int, outcome: str, reason: str | None = None,
                       submission_id: int | None = None) -> None:
        self.queue.finish_attempt(attempt_id, outcome, reason, submission_id)

    def attempts(self, identity: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        return self.queue.attempts(identity, limit)

    def claim(self, lease_seconds: float = 600.0, max_attempts: int = 3) -> dict[str, Any] | None:
        return self.queue.claim(lease_seconds, max_attempts)

    def finish(self, job_id: int, record: ResultRecord) -> int:
        """Add a job's result and mark the job done in ONE transaction: a crash in between loses neither. The result
        carries the job's provenance (``Queue.provenance``); only the owner of the model's name may add it
        (``NameTaken`` otherwise, and nothing is written). The one write spanning two parts, so it is composed here,
        through this store's own ``add_result``."""
        with self.db.transaction() as conn:
            result_id, _ = self.add_result(record, conn, provenance=self.queue.provenance(conn, job_id))
            self.queue.mark_done(conn, job_id, result_id)
        return result_id

    def fail(self, job_id: int, error: str) -> None:
        self.queue.fail(job_id, error)

    def submissions(self, limit: int | None = 100) -> list[dict[str, Any]]:
        return self.queue.submissions(limit)
