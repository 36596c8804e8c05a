"""Reading predictions (and reference files) in every accepted shape, and validating them before any scoring.

Accepted shapes (docs/harness.md, "Validation"): ReXrank JSON ``{study_id: {..., "model_prediction": str}}``, plain JSON
``{study_id: str}``, JSONL and CSV with the columns ``study_id`` and ``report``. Reference files take the same
shapes; in ReXrank JSON (or JSONL with section fields) the ground truth is picked by track (references.py).

Validation collects every problem of both files into one report instead of stopping at the first, so a user fixes
a file once. Nothing is scored and no result file is written while any problem remains.

Hostile text is stopped here, before any model sees it: lone UTF-16 surrogates (a JSON escape such as "\\ud800" that
encodes no character: every model-backed metric would crash on it), reports made only of whitespace and invisible
characters (empty), and reports over the per-report length limit (RadGraph's relation scoring, the LLM judges and
the encoders all grow with report length; one huge report must not take the scorer down).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rexrank.data.rexrank_json import MODEL_PREDICTION
from rexrank.errors import InputError

DEFAULT_MAX_FILE_SIZE_MB = 200.0


def megabytes(size_mb: float) -> int:
    """A file-size limit in decimal MB as bytes: the one rule for --max-file-size-mb, the run memo's size check and
    the Space's upload limit (rexrank.leaderboard.limits)."""
    return int(size_mb * 1_000_000)

# Per-report length limit, whichever is hit first. Real reports have tens to a few hundred words; the defaults are
# far above any of them and keep every metric's memory bounded (docs/radgraph.md, "Memory"). Words are counted as
# the metrics' tokenizers split them: every run of letters/digits and every punctuation mark is one word, so text
# made of punctuation cannot slip many tokens past the limit.
DEFAULT_MAX_REPORT_WORDS = 5_000
DEFAULT_MAX_REPORT_CHARS = 50_000
DEFAULT_MAX_LISTED = 10
# Fields holding a model's report, in preference order: a row with both is read from its model_prediction.
PREDICTION_FIELDS = (MODEL_PREDICTION, "report")
ID_FIELD = "study_id"
# Per-study attributes carried into the per-study table when a file provides them (per-site analyses).
EXTRA_FIELDS = ("site",)

_SURROGATE = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of an undecodable byte
_ANY_SURROGATE = re.compile("[\ud800-\udfff]")
_WORD = re.compile(r"\w+|[^\w\s]")
# Characters that render as nothing: Unicode's Default_Ignorable_Code_Point set (zero-width space/joiners, word
# joiner, BOM, soft hyphen, direction marks, variation selectors, Hangul fillers, tags...) and the braille blank.
# The one definition of "invisible": a report made only of these and whitespace is empty; a model name holding one
# is refused (leaderboard.records).
_INVISIBLE_CLASS = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                    "\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
                    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff")
_INVISIBLE = re.compile(f"[{_INVISIBLE_CLASS}]")
_BLANK = re.compile(f"[\\s{_INVISIBLE_CLASS}]*")


def is_invisible(char: str) -> bool:
    """Whether ``char`` renders as nothing (see _INVISIBLE_CLASS)."""
    return _INVISIBLE.fullmatch(char) is not None


# -- the problem report -----------------------------------------------------------------------------------------
# kind -> headline templates (one, many). {n}: count, {role}/{one}: "predictions"/"prediction" or
# "references"/"reference", {where}: the file. Dict order = report order.
KINDS: dict[str, tuple[str, str]] = {
    "file": ("{role} file {where} cannot be used",) * 2,
    "format": ("{role} file {where} is not in an accepted format",) * 2,
    "columns": ("{role} file {where} lacks required fields",) * 2,
    "undecodable": ("1 {one} contains bytes that are not UTF-8 (save the file as UTF-8)",
                    "{n} {role} contain bytes that are not UTF-8 (save the file as UTF-8)"),
    "surrogate": ("1 {one} contains a lone UTF-16 surrogate, an escape that encodes no character (remove it or "
                  "write the whole character)",
                  "{n} {role} contain a lone UTF-16 surrogate, an escape that encodes no character (remove it or "
                  "write the whole character)"),
    "duplicate": ("1 study id appears more than once in {role}", "{n} study ids appear more than once in {role}"),
    "null": ("1 {one} is null or NaN", "{n} {role} are null or NaN"),
    "not_string": ("1 {one} is not a string", "{n} {role} are not strings"),
    "empty": ("1 {one} is empty", "{n} {role} are empty"),
    "too_long": ("1 {one} is over the per-report length limit (punctuation marks count as words; raise the limit "
                 "with --max-report-words / --max-report-chars)",
                 "{n} {role} are over the per-report length limit (punctuation marks count as words; raise the "
                 "limit with --max-report-words / --max-report-chars)"),
    "missing_id": ("1 reference study has no prediction (score the rest with --allow-missing)",
                   "{n} reference studies have no prediction (score the rest with --allow-missing)"),
    "extra_id": ("1 prediction has no reference study (check --dataset/--split/--track, or use --allow-missing)",
                 "{n} predictions have no reference study (check --dataset/--split/--track, or use --allow-missing)"),
    # Private test sets only (Problems(private=True)): every id problem in one category, and every problem of the
    # host's references in another, neither naming an id or a count (see PRIVATE_KINDS).
    "id_mismatch": ("the study ids do not match this test set and track: submit exactly one prediction per study "
                    "of the track (a private test set: which ids, and how many, are not shown)",) * 2,
    "reference_withheld": ("the host's copy of this private test set failed validation (details are not shown; "
                           "the host can check it with `rexrank data verify`)",) * 2,
}
_ONE = {"predictions": "prediction", "references": "reference"}
# What a private set's id problems become: missing ids, extra ids and ids the track excludes are one category, so a
# message can tell neither membership, exclusion by the track, nor the set's size.
PRIVATE_KINDS = {"missing_id": "id_mismatch", "extra_id": "id_mismatch"}


@dataclass
class Problems:
    """Every problem found, grouped by (kind, role); rendered as one message.

    ``private`` (the references are a private test set): id problems become one ``id_mismatch`` entry and every
    problem of the references one ``reference_withheld`` entry, without ids or counts, so the message is the same
    whichever ids are members, excluded by the track or absent, and whatever the set's size. Problems of the
    submitted file itself (duplicates, empty or over-long reports...) are checked on every record alike and are
    reported as usual.
    """

    max_listed: int = DEFAULT_MAX_LISTED
    items: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)  # role -> file name shown in headlines
    private: bool = False

    def add(self, kind: str, role: str, item: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown problem kind {kind!r}")
        if self.private and kind in PRIVATE_KINDS:
            self.items.setdefault((PRIVATE_KINDS[kind], "predictions"), [""])  # one entry, whatever the number
            return
        if self.private and role == "references":
            self.items.setdefault(("reference_withheld", "references"), [""])
            return
        self.items.setdefault((kind, role), []).append(item)

    def count(self) -> int:
        return sum(len(v) for v in self.items.values())

    def __bool__(self) -> bool:
        return bool(self.items)

    def kinds(self) -> set[str]:
        return {kind for kind, _ in self.items}

    def render(self) -> str:
        order = list(KINDS)
        lines = []
        for (kind, role), entries in sorted(self.items.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
            where = self.where.get(role, role)
            template = KINDS[kind][0 if len(entries) == 1 else 1]
            head = template.format(n=len(entries), role=role, one=_ONE.get(role, role), where=where)
            shown = [e for e in entries[: self.max_listed] if e]
            more = f" ... and {len(entries) - len(shown)} more" if len(entries) > len(shown) and shown else ""
            lines.append(f"- {head}: {'; '.join(shown)}{more}" if shown else f"- {head}")
        total = self.count()
        noun = "problem" if total == 1 else "problems"
        return f"input validation failed ({total} {noun}); nothing was scored:\n" + "\n".join(lines)

    def raise_if_any(self) -> None:
        if self:
            raise ValidationError(self.render(), self)


class ValidationError(InputError):
    """All problems of the inputs, in one message. ``.problems`` holds them as data."""

    def __init__(self, message: str, problems: Problems):
        super().__init__(message)
        self.problems = problems


# -- reading ----------------------------------------------------------------------------------------------------
@dataclass
class Record:
    study_id: str
    value: Any  # the raw report value: checked by check_values, so it may be anything here
    where: str  # "line 4", "key 'x'" -- for messages
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReportFile:
    """What one file held: records in file order (duplicates kept, so they can be reported)."""

    path: Path
    records: list[Record]
    ok: bool  # False when the file could not be read at all (size, format, decoding of its structure)


def format_of(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    for suffix in reversed(suffixes):
        if suffix in (".json",):
            return "json"
        if suffix in (".jsonl", ".ndjson"):
            return "jsonl"
        if suffix in (".csv",):
            return "csv"
    return "unknown"


def read_report_file(path: str | os.PathLike, role: str, problems: Problems, *,
                     pick: Callable[[str, dict[str, Any], str], tuple[Any, str | None]],
                     text_fields: tuple[str, ...],
                     max_file_size_mb: float = DEFAULT_MAX_FILE_SIZE_MB) -> ReportFile:
    """Read ``path`` into records, adding file-level problems to ``problems``.

    ``pick(study_id, entry, where)`` chooses the report value of a JSON object entry and returns (value, missing
    field name or None); ``text_fields`` are the CSV/JSONL columns that may hold the report, in preference order.
    """
    path = Path(path)
    problems.where[role] = path.name
    if not path.is_file():
        problems.add("file", role, f"{path} does not exist" if not path.exists() else f"{path} is not a file")
        return ReportFile(path, [], False)
    size = path.stat().st_size
    if size > megabytes(max_file_size_mb):
        problems.add("file", role, f"it is {size / megabytes(1):.3g} MB, over the {max_file_size_mb:g} MB limit "
                                   "(raise it with --max-file-size-mb)")
        return ReportFile(path, [], False)
    raw = path.read_bytes()
    # surrogateescape keeps undecodable bytes as lone surrogates, so they can be traced to the study that holds them
    # instead of failing the whole file at the first bad byte.
    text = raw.decode("utf-8", errors="surrogateescape")
    if text.startswith("\ufeff"):
        text = text[1:]
    kind = format_of(path)
    if kind == "unknown":
        kind = "json" if text.lstrip()[:1] == "{" and _is_json(text) else "jsonl" if text.lstrip()[:1] == "{" else ""
        if not kind:
            problems.add("format", role, "use .json ({study_id: report} or ReXrank JSON), .jsonl or .csv")
            return ReportFile(path, [], False)
    reader = {"json": _read_json, "jsonl": _read_jsonl, "csv": _read_csv}[kind]
    records, ok = reader(text, role, problems, pick, text_fields)
    return ReportFile(path, records, ok)


def parse_json(text: str, *, position: bool = True, **options: Any) -> tuple[Any, str | None]:
    """``json.loads(text)`` as (value, None), or (None, what is wrong): every way a hostile file can make the parser
    fail is a problem to report, not a traceback. Every JSON input of scoring is parsed here. ``position``: name
    the line and column of a syntax error (not for one JSONL line, which names its line itself)."""
    try:
        return json.loads(text, **options), None
    except json.JSONDecodeError as exc:
        if not position:
            return None, f"invalid JSON ({exc.msg})"
        return None, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
    except RecursionError:  # the parser recurses once per nesting level
        return None, "JSON nested too deeply to read"
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python's guard against quadratic int parsing
            return None, f"a number over {sys.get_int_max_str_digits()} digits long, which no report holds"
        return None, f"unreadable JSON: {exc}"


def _is_json(text: str) -> bool:
    return parse_json(text)[1] is None


def _read_json(text, role, problems, pick, text_fields):
    pairs, error = parse_json(text, object_pairs_hook=_Pairs)
    if error:
        problems.add("format", role, error)
        return [], False
    if not isinstance(pairs, _Pairs):
        problems.add("format", role, f"expected a JSON object {{study_id: report}}, found a {_json_type(pairs)}")
        return [], False
    records, missing_fields = [], []
    for study_id, entry in pairs:
        where = f"key {study_id!r}"
        if isinstance(entry, _Pairs):
            entry_dict = dict(entry)
            value, missing = pick(study_id, entry_dict, where)
            if missing:
                missing_fields.append((study_id, missing))
                continue
            extra = {k: entry_dict[k] for k in EXTRA_FIELDS if k in entry_dict}
            records.append(Record(study_id, value, where, extra))
        else:
            records.append(Record(study_id, entry, where))
    for study_id, missing in missing_fields:
        problems.add("columns", role, f"study {_show(study_id)} has no {missing} field")
    return records, not missing_fields


class _Pairs(list):
    """A JSON object as its (key, value) pairs, so duplicate keys are seen rather than silently merged."""

    def __init__(self, pairs):
        super().__init__(pairs)


def _json_type(value) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "null")


# The C scanner json.loads runs underneath: a line that is one JSON object and nothing else ("{...}") is read with it
# directly, and gives what json.loads gives; every other line goes through parse_json (its errors, its messages).
_SCAN_JSON = json.JSONDecoder().scan_once


def _read_jsonl(text, role, problems, pick, text_fields):
    records, ok = [], True
    bad_lines, missing_field_lines = [], []
    scan = _SCAN_JSON
    # What a line's key set decides, worked out once per distinct key set (a file's lines share one or two):
    # (has the id field, section-bearing so `pick` chooses, the first text field present, extra fields present).
    shapes: dict[tuple[str, ...], tuple[bool, bool, str | None, tuple[str, ...]]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        entry = None
        if line[:1] == "{" and line[-1:] == "}":
            try:
                entry, end = scan(line, 0)
            except Exception:  # any failure: parse_json below reads the line again and names the problem
                entry = None
            else:
                if end != len(line):
                    entry = None
        if entry is None:
            if not line.strip():
                continue
            entry, error = parse_json(line, position=False)
            if error:
                bad_lines.append(f"line {lineno}: {error}")
                continue
            if not isinstance(entry, dict):
                bad_lines.append(f"line {lineno}: expected an object, found a {_json_type(entry)}")
                continue
        keys = tuple(entry)
        shape = shapes.get(keys)
        if shape is None:
            shape = shapes[keys] = (ID_FIELD in entry, _section_bearing(entry, pick),
                                    next((name for name in text_fields if name in entry), None),
                                    tuple(k for k in EXTRA_FIELDS if k in entry))
        has_id, sections, text_field, extra = shape
        where = f"line {lineno}"
        if not has_id:
            missing_field_lines.append(f"line {lineno} has no {ID_FIELD!r} field")
            continue
        if sections:
            value, missing = pick(str(entry[ID_FIELD]), entry, where)
        elif text_field is not None:
            value, missing = entry[text_field], None
        else:
            value, missing = None, " or ".join(repr(f) for f in text_fields)
        if missing:
            missing_field_lines.append(f"line {lineno} has no {missing} field")
            continue
        records.append(Record(_id(entry[ID_FIELD]), value, where, {k: entry[k] for k in extra} if extra else {}))
    for item in bad_lines:
        problems.add("format", role, item)
    for item in missing_field_lines:
        problems.add("columns", role, item)
    ok = not bad_lines and not missing_field_lines
    return records, ok


def _section_bearing(entry: dict, pick) -> bool:
    # Section-bearing records (ReXrank studies as JSONL) go through the same track-aware pick as ReXrank JSON.
    return pick is not None and any(k.startswith("section_") or k == MODEL_PREDICTION for k in entry)


def _read_csv(text, role, problems, pick, text_fields):
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        problems.add("columns", role, f"the file is empty; expected a header with {ID_FIELD!r} and "
                                      f"{' or '.join(repr(f) for f in text_fields)}")
        return [], False
    except csv.Error as exc:
        problems.add("format", role, f"invalid CSV: {exc}")
        return [], False
    columns = [c.strip() for c in header]
    text_column = next((f for f in text_fields if f in columns), None)
    if ID_FIELD not in columns or text_column is None:
        needed = f"{ID_FIELD!r} and {' or '.join(repr(f) for f in text_fields)}"
        problems.add("columns", role, f"needs the columns {needed}; found: {', '.join(map(repr, columns)) or 'none'}")
        return [], False
    id_at, text_at = columns.index(ID_FIELD), columns.index(text_column)
    extra_at = {name: columns.index(name) for name in EXTRA_FIELDS if name in columns}
    records, bad = [], []
    try:
        for row in reader:
            lineno = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(columns):
                bad.append(f"line {lineno}: {len(row)} fields, the header has {len(columns)}")
                continue
            # A CSV cannot hold null: an empty cell is what pandas writes for NaN, and it is reported as empty.
            records.append(Record(_id(row[id_at]), row[text_at], f"line {lineno}",
                                  {name: row[i] for name, i in extra_at.items()}))
    except csv.Error as exc:
        bad.append(f"line {reader.line_num}: {exc}")
    for item in bad:
        problems.add("format", role, item)
    return records, not bad


def _id(value: Any) -> str:
    # Integer ids in JSONL/CSV are common; every id is a string in the per-study table.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def _show(study_id: str) -> str:
    return repr(_SURROGATE.sub("\ufffd", study_id))


# -- validation -------------------------------------------------------------------------------------------------
def check_values(file: ReportFile, role: str, problems: Problems) -> dict[str, str]:
    """Per-record checks (duplicates, null/NaN, type, undecodable bytes and lone surrogates in the report or its
    study id, empty or invisible-only); returns the good {id: text}. Lengths: ``check_lengths``."""
    records = file.records
    counts = Counter(record.study_id for record in records)
    if len(counts) < len(records):  # some id repeats: list each one's places, in the order of first sight
        seen: dict[str, list[str]] = {}
        for record in records:
            if counts[record.study_id] > 1:
                seen.setdefault(record.study_id, []).append(record.where)
        for study_id, places in seen.items():
            problems.add("duplicate", role, f"{_show(study_id)} ({', '.join(places)})")
    # One scan of every id and text for a surrogate (C speed); only when it finds one is each searched on its own.
    # "\n" joins them: no surrogate, so a match is always inside one of them.
    surrogates = _ANY_SURROGATE.search("\n".join([record.study_id for record in records]
                                                  + [r.value for r in records if isinstance(r.value, str)])) is not None
    search = _ANY_SURROGATE.search if surrogates else _no_match
    blank = _BLANK.fullmatch
    good: dict[str, str] = {}
    for record in records:
        value = record.value
        if (bad := search(record.study_id)) is not None:  # no table or file could hold the id
            _add_surrogate(problems, role, record.study_id, bad, "in the study id")
        elif value is None or (isinstance(value, float) and math.isnan(value)):
            problems.add("null", role, _show(record.study_id))
        elif not isinstance(value, str):
            problems.add("not_string", role, f"{_show(record.study_id)} ({_json_type(value)} {_brief(value)})")
        elif (bad := search(value)) is not None:
            _add_surrogate(problems, role, record.study_id, bad, f"at character {bad.start()}")
        elif blank(value):  # whitespace or invisible characters only
            problems.add("empty", role, _show(record.study_id))
        elif counts[record.study_id] == 1:
            good[record.study_id] = value
    return good


def _no_match(text: str) -> None:
    return None


def _add_surrogate(problems: Problems, role: str, study_id: str, found: re.Match, place: str) -> None:
    code = ord(found.group())
    if _SURROGATE.fullmatch(found.group()):  # a byte that is not UTF-8 (surrogateescape), or its JSON escape
        problems.add("undecodable", role, f"{_show(study_id)} (byte 0x{code - 0xDC00:02x} {place})")
    else:  # a JSON escape \ud800-\udfff not paired into a character
        problems.add("surrogate", role, f"{_show(study_id)} (\\u{code:04x} {place})")


def count_words(text: str) -> int:
    """Words as the length limit counts them: runs of letters/digits, and each punctuation mark on its own."""
    return sum(1 for _ in _WORD.finditer(text))


def check_lengths(texts: dict[str, str], role: str, problems: Problems, *,
                  max_words: int = DEFAULT_MAX_REPORT_WORDS, max_chars: int = DEFAULT_MAX_REPORT_CHARS,
                  show_ids: bool = True) -> None:
    """The per-report length limit: one problem per report over ``max_words`` words or ``max_chars`` characters.

    ``show_ids=False`` (references of a private test set): neither the study id nor the length is named.
    """
    for study_id, text in texts.items():
        if len(text) > max_chars:  # checked first: words are then not counted (a huge text costs no regex pass)
            over = f"{len(text):,} characters, limit {max_chars:,}"
        elif len(text) > max_words and (words := count_words(text)) > max_words:  # fewer characters: fewer words
            over = f"{words:,} words, limit {max_words:,}"
        else:
            continue
        problems.add("too_long", role, f"{_show(study_id)} ({over})" if show_ids else
                     "a study of the private test set (id and length withheld)")


def _brief(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 30 else text[:27] + "..."


def check_ids(predicted: list[str], referenced: list[str], problems: Problems, *, allow_missing: bool,
              ignored: set[str] | frozenset[str] = frozenset()) -> tuple[list[str], dict[str, int]]:
    """Compare the id sets. Returns (ids to score in reference order, counts of what was dropped).

    ``ignored``: ids the track excludes (e.g. studies without findings on the findings track); predictions for them
    are dropped and counted rather than reported as extra. A private set passes none: there, an id the track
    excludes is treated exactly like an id that is not in the set (``Problems(private=True)``).
    """
    pred_set, ref_set = set(predicted), set(referenced)
    missing = [i for i in referenced if i not in pred_set]
    extra = [i for i in predicted if i not in ref_set and i not in ignored]
    excluded = [i for i in predicted if i not in ref_set and i in ignored]
    if not allow_missing:
        for study_id in missing:
            problems.add("missing_id", "references", _show(study_id))
        for study_id in dict.fromkeys(extra):
            problems.add("extra_id", "predictions", _show(study_id))
    keep = [i for i in referenced if i in pred_set]
    return keep, {"missing_prediction": len(missing) if allow_missing else 0,
                  "extra_prediction": len(set(extra)) if allow_missing else 0,
                  "excluded_by_track": len(set(excluded))}
