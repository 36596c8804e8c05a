"""The events of the store's log: their kinds, how each is made, what a valid one holds, its identity (pure).

Every entry of ``events`` is one of these: a model event (``make_event``: a name registered, details filled in by
the host's own rows, details edited, a name handed over), an Arena vote or rater decision (``make_vote``,
``make_rater_event``), the host's published meta-evaluation (``make_meta_eval_event``: aggregates only) or a
listing (``make_listing_event``). ``check_event`` is what a Hub file may hold; ``event_hash`` its name in the log.
Nothing here touches a store: ``log.Log`` stores and applies them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields as dataclass_fields
from typing import Any

from rexrank.errors import InputError
from rexrank.evaluation.meta_eval_report import meta_eval_summary
from rexrank.leaderboard.records import HOST, ModelInfo

# -- model events: the part of the log that ``models`` is derived from ----------------------------------------------
MODEL_EVENT_KINDS = ("register", "fill", "edit", "owner")
# The Arena's events (``leaderboard/arena.py`` reads them): a rater's vote, and the host's decision about a rater
# (allow-listed as an expert, excluded, or back to a plain rater). They never change ``models``.
ARENA_EVENT_KINDS = ("vote", "rater")
# The host's published meta-evaluation (how each metric agrees with radiologists, ``evaluation/meta_eval.py``):
# aggregates only (``meta_eval_summary``), never a report of the licensed expert set.
META_EVAL_KIND = "meta_eval"
# Whether the published tables list a model on one board table (dataset, split, track): a re-import of newer tables
# withdraws a model they no longer list (``listed`` false) and lists it again if it comes back. Its published rows
# stay in the log and on its model page (``results(withdrawn=True)``); the board's tables leave them out.
LISTING_KIND = "listing"
LISTING_FIELDS = ("kind", "at", "by", "model", "dataset", "split", "track", "listed")
EVENT_KINDS = MODEL_EVENT_KINDS + ARENA_EVENT_KINDS + (META_EVAL_KIND, LISTING_KIND)
VOTE_CHOICES = ("a", "b", "tie", "both_bad")
RATER_ROLES = ("expert", "excluded", "rater")
DETAIL_FIELDS = tuple(f.name for f in dataclass_fields(ModelInfo) if f.name != "name")  # what edit-model may change
_MAX_EVENT_TEXT = 400  # the longest text a field of an event may hold (a Hub file is hostile)


def event_hash(event: dict[str, Any]) -> str:
    """An event's identity: the sha256 of its JSON (sorted keys), as a result's is of its record."""
    return hashlib.sha256(json.dumps(event, sort_keys=True, default=str).encode()).hexdigest()


def make_event(kind: str, model: str, at: float, by: str, *, owner: str | None = None,
               details: dict[str, Any] | None = None) -> dict[str, Any]:
    """One model event. ``register``: a new name, its owner and every detail; ``fill``: details still unknown, given
    by the host's own rows; ``edit``: details the host changed; ``owner``: the name handed over. ``by``: who caused
    it; ``at``: when (the log's order)."""
    event: dict[str, Any] = {"kind": kind, "model": model, "at": float(at), "by": by}
    if kind in ("register", "owner"):
        event["owner"] = owner
    if kind in ("register", "fill", "edit"):
        event["details"] = dict(details or {})
    return event


def check_event(event: Any) -> dict[str, Any]:
    """``event`` if it is one ``make_event`` could have made, else InputError saying what is wrong. What a Hub file
    may hold: these fields of these types and lengths, nothing else (the page shows every text as plain text)."""
    if not isinstance(event, dict) or event.get("kind") not in EVENT_KINDS:
        raise InputError(f"not an event of the log (kind must be one of {', '.join(EVENT_KINDS)})")
    kind = event["kind"]
    if kind in ARENA_EVENT_KINDS:
        return _check_arena_event(event)
    if kind == META_EVAL_KIND:
        return _check_meta_eval_event(event)
    if kind == LISTING_KIND:
        return _check_listing_event(event)
    expected = {"kind", "model", "at", "by"} | ({"owner"} if kind in ("register", "owner") else set()) | (
        {"details"} if kind in ("register", "fill", "edit") else set())
    if set(event) != expected:
        raise InputError(f"a {kind} event holds {', '.join(sorted(expected))} (got {', '.join(sorted(event))})")
    for key in ("model", "by") + (("owner",) if "owner" in expected else ()):
        if not isinstance(event[key], str) or not event[key].strip() or len(event[key]) > _MAX_EVENT_TEXT:
            raise InputError(f"a {kind} event's {key} must be a non-empty text")
    if isinstance(event["at"], bool) or not isinstance(event["at"], (int, float)) or event["at"] != event["at"] \
            or abs(event["at"]) == float("inf"):
        raise InputError(f"a {kind} event's time must be a number")
    details = event.get("details")
    if "details" in expected:
        if not isinstance(details, dict) or not set(details) <= set(DETAIL_FIELDS):
            raise InputError(f"a {kind} event's details are among {', '.join(DETAIL_FIELDS)}")
        for key, value in details.items():
            if key == "trained_on":
                ok = isinstance(value, list) and all(isinstance(v, str) and len(v) < _MAX_EVENT_TEXT for v in value)
            elif key == "year":
                ok = value is None or (isinstance(value, int) and not isinstance(value, bool))
            else:
                ok = value is None or (isinstance(value, str) and len(value) <= _MAX_EVENT_TEXT)
            if not ok or (kind != "register" and value is None):
                raise InputError(f"a {kind} event's {key} is not a valid value ({value!r:.60})")
    return event


def make_listing_event(model: str, dataset: str, split: str, track: str, listed: bool, *, at: float,
                       by: str = HOST) -> dict[str, Any]:
    """Whether the published tables list ``model`` on one board table (``LISTING_KIND``)."""
    return {"kind": LISTING_KIND, "at": float(at), "by": by, "model": model, "dataset": dataset, "split": split,
            "track": track, "listed": bool(listed)}


def _check_listing_event(event: dict[str, Any]) -> dict[str, Any]:
    if set(event) != set(LISTING_FIELDS):
        raise InputError(f"a listing event holds {', '.join(sorted(LISTING_FIELDS))} (got {', '.join(sorted(event))})")
    for key in ("model", "by", "dataset", "split", "track"):
        _text(event, key)
    _check_time(event)
    if not isinstance(event["listed"], bool):
        raise InputError("a listing event's listed must be true or false")
    return event


def _text(event: dict[str, Any], key: str) -> None:
    if not isinstance(event.get(key), str) or not event[key].strip() or len(event[key]) > _MAX_EVENT_TEXT:
        raise InputError(f"a {event['kind']} event's {key} must be a non-empty text of at most {_MAX_EVENT_TEXT}")


def _check_time(event: dict[str, Any]) -> None:
    at = event.get("at")
    if isinstance(at, bool) or not isinstance(at, (int, float)) or at != at or abs(at) == float("inf"):
        raise InputError(f"a {event['kind']} event's time must be a number")


VOTE_FIELDS = ("kind", "at", "by", "rater", "expert", "dataset", "split", "track", "study", "models", "choice",
               "tags", "version")
RATER_FIELDS = ("kind", "at", "by", "rater", "role", "reason")
# A vote's side seed (``arena.side_seed``: 32 hex digits), from which an auditor recomputes its sides; votes cast
# before it existed have none.
VOTE_SEED = "seed"


def make_vote(*, at: float, rater: str, expert: bool, dataset: str, split: str, track: str, study: str,
              models: tuple[str, str] | list[str], choice: str, tags: dict[str, list[int]], version: str,
              seed: str | None = None) -> dict:
    """One Arena vote: ``models`` as shown (side A, side B), ``choice`` one of ``VOTE_CHOICES`` about those sides,
    ``tags`` {"a": [...], "b": [...]} the error categories ticked for each side, ``version`` the app's, ``seed`` the
    ticket's side seed (``VOTE_SEED``)."""
    return ({VOTE_SEED: seed} if seed is not None else {}) | {
        "kind": "vote", "at": float(at), "by": rater, "rater": rater, "expert": bool(expert), "dataset": dataset,
        "split": split, "track": track, "study": study, "models": list(models), "choice": choice,
        "tags": {side: sorted(set(tags.get(side, []))) for side in ("a", "b")}, "version": version}


def make_rater_event(rater: str, role: str, *, at: float, by: str = HOST, reason: str = "") -> dict[str, Any]:
    """The host's decision about a rater: ``expert`` (allow-listed; votes labelled expert), ``excluded`` (every
    view recomputes without their votes), ``rater`` (back to a plain rater)."""
    return {"kind": "rater", "at": float(at), "by": by, "rater": rater, "role": role, "reason": reason}


def vote_key(event: dict[str, Any]) -> str:
    """What one rater may vote on once: (rater, test set, split, track, study, the unordered pair)."""
    return json.dumps([event["rater"], event["dataset"], event["split"], event["track"], event["study"],
                       sorted(event["models"])])


def _check_arena_event(event: dict[str, Any]) -> dict[str, Any]:
    kind = event["kind"]
    expected = set(VOTE_FIELDS if kind == "vote" else RATER_FIELDS)
    if kind == "vote" and VOTE_SEED in event:
        expected.add(VOTE_SEED)
        seed = event[VOTE_SEED]
        if not isinstance(seed, str) or len(seed) != 32 or not set(seed) <= set("0123456789abcdef"):
            raise InputError("a vote's seed is 32 hex digits")
    if set(event) != expected:
        raise InputError(f"a {kind} event holds {', '.join(sorted(expected))} (got {', '.join(sorted(event))})")
    _check_time(event)
    for key in ("by", "rater") + (("dataset", "split", "track", "study", "version") if kind == "vote" else ()):
        _text(event, key)
    if kind == "rater":
        if event["role"] not in RATER_ROLES:
            raise InputError(f"a rater event's role is one of {', '.join(RATER_ROLES)}")
        if not isinstance(event["reason"], str) or len(event["reason"]) > _MAX_EVENT_TEXT:
            raise InputError("a rater event's reason must be a text")
        return event
    models = event["models"]
    if not isinstance(models, list) or len(models) != 2 or models[0] == models[1] or not all(
            isinstance(m, str) and m.strip() and len(m) <= _MAX_EVENT_TEXT for m in models):
        raise InputError("a vote's models are two different model names (side A, side B)")
    if event["choice"] not in VOTE_CHOICES:
        raise InputError(f"a vote's choice is one of {', '.join(VOTE_CHOICES)}")
    if not isinstance(event["expert"], bool):
        raise InputError("a vote's expert flag is true or false")
    tags, codes = event["tags"], set(error_categories())
    if not isinstance(tags, dict) or set(tags) != {"a", "b"} or not all(
            isinstance(v, list) and all(isinstance(c, int) and not isinstance(c, bool) and c in codes for c in v)
            for v in tags.values()):
        raise InputError(f"a vote's tags are {{'a': [...], 'b': [...]}} of the error categories {sorted(codes)}")
    return event


# -- the published meta-evaluation: its aggregates' shape is ``evaluation/meta_eval_report.py``'s ------------------
META_EVAL_FIELDS = ("kind", "at", "by", "meta_eval")  # the event's fields, beside the other events' (VOTE_FIELDS ...)


def make_meta_eval_event(report: Any, *, at: float, by: str = HOST) -> dict[str, Any]:
    """The event publishing a meta-evaluation: its aggregates (``meta_eval_summary``), who published it and when."""
    return {"kind": META_EVAL_KIND, "at": float(at), "by": by, "meta_eval": meta_eval_summary(report)}


def _check_meta_eval_event(event: dict[str, Any]) -> dict[str, Any]:
    if set(event) != set(META_EVAL_FIELDS):
        raise InputError(f"a meta_eval event holds {', '.join(sorted(META_EVAL_FIELDS))} "
                         f"(got {', '.join(sorted(map(str, event)))[:200]})")
    _check_time(event)
    _text(event, "by")
    # Stored exactly as the summary makes it: a Hub file carrying anything more (or less) is refused.
    if meta_eval_summary(event["meta_eval"]) != event["meta_eval"]:
        raise InputError("a meta_eval event's aggregates are not in the board's form (meta_eval_summary)")
    return event


def error_categories() -> dict[int, str]:
    """The clinically significant error types a rater may tag: ReXVal's six (``data/expert_sets.py`` owns them)."""
    from rexrank.data.expert_sets import get_expert_set

    return dict(get_expert_set("rexval").categories)


def subject(event: dict[str, Any]) -> str:
    """The events table's ``model`` column: a model event's name, a vote's ``vote_key``, a rater event's rater."""
    if event["kind"] == "vote":
        return vote_key(event)
    if event["kind"] == META_EVAL_KIND:
        return event["meta_eval"]["dataset"]
    return event["rater"] if event["kind"] == "rater" else event["model"]
