"""The Arena's tables: votes and rater decisions (events of the log), pair tickets, kept reports.

A vote (``events.make_vote``) and the host's decision about a rater (``events.make_rater_event``) are events of the
log, appended through ``log.Log`` at the log's next time; the checks a vote must pass (one vote per rater, study
and pair; the rater's quota) run in the same transaction as its insert. The pair tickets (``issue_ticket``) are not
the board and not the log: never synced (a ticket names the pair a rater is shown before the vote), and their writes
leave the generation alone. The kept reports (``keep_reports``) are a scored public submission's per-study values
(Compare's paired tests read them) with its reports and references only where the set's text is open (the
catalog's ``licensed``: IU-Xray's text is open; MIMIC-CXR's and CheXpert Plus's are kept as values alone), never a
private test set's. ``leaderboard/arena.py`` is what reads the texts: pairing, the fit, the tab's answers. A store
that holds licensed text from before this rule is cleaned when it opens (``clean_licensed_text``).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from rexrank.data import catalog
from rexrank.errors import InputError
from rexrank.leaderboard.records import HOST, canonical_names
from rexrank.leaderboard.store.connection import Database, DuplicateVote, QuotaExceeded
from rexrank.leaderboard.store.events import check_event, event_hash, make_rater_event, vote_key
from rexrank.leaderboard.store.log import Log


def _ticket_digest(ticket_id: str) -> str:
    """Tickets are stored by their sha256: a copy of the store file holds no ticket a client could present."""
    return hashlib.sha256(ticket_id.encode("utf-8", "surrogatepass")).hexdigest()


class ArenaTables:
    """The Arena's part of the store file ``db`` owns: ``arena_tickets``, ``arena_reports``, and its events in ``log``."""

    def __init__(self, db: Database, log: Log):
        self._db = db
        self._log = log

    def reports_version(self) -> tuple[int, int]:
        """Changes whenever the kept reports change (``keep_reports`` deletes and inserts rows)."""
        row = self._db.connection().execute("SELECT COALESCE(MAX(id), 0), COUNT(*) FROM arena_reports").fetchone()
        return int(row[0]), int(row[1])

    def add_vote(self, event: dict[str, Any], *, quota: int | None = None, window: float = 86400.0,
                 now: float | None = None) -> str:
        """Append one vote (``make_vote``) to the log, in one transaction with its checks: ``DuplicateVote`` if this
        rater already voted on this study and pair (``vote_key``), ``QuotaExceeded`` past ``quota`` votes of the
        rater in the last ``window`` seconds before ``now`` (the Arena's clock; default the system's). Its time is the
        log's next. Returns its content hash."""
        with self._db.transaction() as conn:
            check_event(event)
            if self._log.has_event(conn, "vote", vote_key(event)):
                raise DuplicateVote("you already voted on this study and pair: each rater votes once per pair; "
                                    "load the next pair")
            if quota is not None:
                # The rater's own votes only: their subjects (``vote_key``) start with the rater (an index range).
                prefix = json.dumps([event["rater"]])[:-1] + ", "
                count = self._log.count_events(conn, "vote", (prefix, prefix + "\uffff"),
                                               (time.time() if now is None else now) - window)
                if count >= quota:
                    raise QuotaExceeded(f"quota reached: at most {quota} votes per {window / 3600:g} h; thank you, "
                                        "come back later")
            event = {**event, "at": self._log.next_event_time(conn, event["at"])}
            self._log.insert_event(conn, event)
        return event_hash(event)

    # -- the Arena's pair tickets: a rater's proof that a pair was shown to them (``leaderboard/arena.py``) -----------
    def issue_ticket(self, ticket_id: str, *, arena: str, rater: str, study: str, models: tuple[str, str],
                     issued: float, ttl: float, keep: int) -> None:
        """Store a new ticket (``models``: side A, side B), dropping expired tickets and all but the newest ``keep - 1``
        of this rater's other live tickets in ``arena``. Never changes the generation (``transaction(board=False)``)."""
        with self._db.transaction(board=False) as conn:
            conn.execute("DELETE FROM arena_tickets WHERE expires <= ?", (issued,))
            conn.execute("DELETE FROM arena_tickets WHERE digest IN (SELECT digest FROM arena_tickets WHERE arena = ?"
                         " AND rater = ? ORDER BY issued DESC, digest LIMIT -1 OFFSET ?)", (arena, rater, keep - 1))
            conn.execute("INSERT INTO arena_tickets(digest, arena, rater, study, model_a, model_b, issued, expires)"
                         " VALUES (?,?,?,?,?,?,?,?)", (_ticket_digest(ticket_id), arena, rater, study, models[0],
                                                  models[1], issued, issued + ttl))

    def live_tickets(self, arena: str, now: float) -> list[dict[str, Any]]:
        """The unexpired tickets of ``arena`` (rater, study, models, issued), whichever process issued them."""
        rows = self._db.connection().execute("SELECT rater, study, model_a, model_b, issued FROM arena_tickets WHERE arena = ?"
                                    " AND expires > ? ORDER BY issued, digest", (arena, now)).fetchall()
        return [{"rater": r["rater"], "study": r["study"], "models": (r["model_a"], r["model_b"]),
                 "issued": r["issued"]} for r in rows]

    def ticket(self, ticket_id: str, *, arena: str, now: float) -> dict[str, Any] | None:
        """A live ticket of ``arena`` by its id (rater, study, models, issued), or None. Server-side only."""
        row = self._db.connection().execute("SELECT rater, study, model_a, model_b, issued FROM arena_tickets WHERE digest = ?"
                                   " AND arena = ? AND expires > ?",
                                   (_ticket_digest(ticket_id), arena, now)).fetchone()
        return None if row is None else {"rater": row["rater"], "study": row["study"],
                                         "models": (row["model_a"], row["model_b"]), "issued": row["issued"]}

    def claim_ticket(self, ticket_id: str, *, arena: str, rater: str, now: float) -> dict[str, Any] | None:
        """Use a ticket once: delete and return it (study, models) if it is live, of ``arena`` and issued to
        ``rater``, else None (another rater's ticket stays theirs). One statement in one transaction, so of two
        processes presenting the same ticket exactly one gets it."""
        with self._db.transaction(board=False) as conn:
            rows = conn.execute("DELETE FROM arena_tickets WHERE digest = ? AND arena = ? AND rater = ? AND expires > ?"
                                " RETURNING study, model_a, model_b",
                                (_ticket_digest(ticket_id), arena, rater, now)).fetchall()  # all: then COMMIT
        return {"study": rows[0][0], "models": (rows[0][1], rows[0][2])} if rows else None

    def add_rater_event(self, rater: str, role: str, *, reason: str = "", by: str = HOST) -> dict[str, Any]:
        """The host's decision about a rater (``make_rater_event``), appended to the log at its next time."""
        with self._db.transaction() as conn:
            event = check_event(make_rater_event(rater, role, at=self._log.next_event_time(conn), by=by,
                                                 reason=reason))
            self._log.insert_event(conn, event)
        return event

    def keep_reports(self, *, dataset: str, split: str, track: str, model: str, result_hash: str,
                     rows: list[tuple[str, str, str, dict[str, float]]], recorded_at: float | None = None) -> int:
        """Keep a scored public submission's rows: ``rows`` (study, report, reference, per-study metric values).
        Never a private test set's (InputError): their reports may not leave the scorer. A licensed set's report and
        reference are not kept, whatever the caller passed (stored as empty texts): only its values, so licensed text
        never reaches the store, the Hub or a page. The newest result of a model replaces its older rows (one
        transaction). ``recorded_at``: when they were first kept (a Hub pull). How many rows were stored."""
        dataset, split, track = canonical_names(dataset, split, track)
        if catalog.is_private(dataset):
            raise InputError(f"{dataset} is a private test set: its reports are never kept for the Arena")
        if catalog.licensed(dataset):
            rows = [(study, "", "", values) for study, _report, _reference, values in rows]
        now = time.time() if recorded_at is None else recorded_at
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM arena_reports WHERE dataset=? AND split=? AND track=? AND model=?",
                         (dataset, split, track, model))
            conn.executemany(
                "INSERT INTO arena_reports(dataset, split, track, model, study, report, reference, metrics,"
                " result_hash, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(dataset, split, track, model, str(study), report, reference,
                  json.dumps({k: float(v) for k, v in values.items()}), result_hash, now)
                 for study, report, reference, values in rows])
        return len(rows)

    def clean_licensed_text(self) -> dict[str, int]:
        """Empty the report and reference texts of licensed sets' kept rows (written by a rexrank before the rule
        of ``keep_reports``), their values kept; {dataset: rows cleaned}. The freed bytes are overwritten
        (``secure_delete``, set on every connection) and the write-ahead log is checkpointed and truncated, so the
        text is left in no page of the file nor of its -wal."""
        names = sorted(catalog.licensed_datasets())
        marks = ",".join("?" * len(names))
        where = f"dataset IN ({marks}) AND (report != '' OR reference != '')"
        conn = self._db.connection()
        counts = dict(conn.execute(f"SELECT dataset, COUNT(*) FROM arena_reports WHERE {where} GROUP BY dataset",
                                   names).fetchall())
        if counts:
            # Not the board (values are unchanged), so the generation stays: no view changes.
            with self._db.transaction(board=False) as tx:
                tx.execute(f"UPDATE arena_reports SET report = '', reference = '' WHERE {where}", names)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return counts

    def arena_reports(self, dataset: str | None = None) -> list[dict[str, Any]]:
        """The kept reports (``keep_reports``), one dict per (model, study), metrics decoded."""
        sql, args = "SELECT * FROM arena_reports", []
        if dataset is not None:
            sql, args = sql + " WHERE dataset = ?", [dataset]
        rows = self._db.connection().execute(sql + " ORDER BY id", args).fetchall()
        return [dict(r, metrics=json.loads(r["metrics"])) for r in rows]
