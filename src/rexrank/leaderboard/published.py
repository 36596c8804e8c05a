"""The published ReXrank tables (what rexrank.ai shows) into the store: read as upstream publishes them, synced.

Reading (``read_tables``): a folder or files named as upstream names them, ``findings_result_<key>.csv`` /
``result_<key>.csv`` (the track's table prefix from ``data/tracks.py``, the key from ``data/catalog.py``), with or
without the ``gh-pages_`` of copies taken from upstream's gh-pages branch. Columns are found by header name: each
metric's ``MetricSpec.leaderboard_column`` (CRIMSON, 1/RadCliQ-v1, ...) and upstream's five details columns; spaces
around headers and cells, rows shorter than the header, CRLF line ends and a UTF-8 BOM are all read. A column no
metric claims is named in one note, never dropped silently. Bad input is one ``InputError`` line, raised before the
store is opened, so a failed import writes nothing (not even an empty store file): a cell longer than the csv
module reads (``field larger than field limit``), a file over ``MAX_TABLE_BYTES``, one model on two rows of a table
(compared by ``records.name_key``, as the store compares names). A row's name, institution, URL and year pass the
rules a submission's do (``records.ModelInfo.from_dict``: ``clean_text``, ``markup_characters``, ``clean_url``); a
row that fails them is not imported and named in a note (its model, if the board lists it, stays listed).

Published rows are point estimates only: source "published", no CI. A reciprocal column (1/RadCliQ-v1,
1/FineRadScore) is stored as the underlying mean, so every result in the store has the same meaning; the board
recomputes the published numbers from it (``metrics.aggregation.leaderboard_values``, its own inverse).

Re-import is a sync (``import_tables``), per (dataset, split, track) table read: an unchanged row adds nothing; a
changed row is added and shown instead of the old one (both stay in the log); a model the table no longer lists
leaves the board through a ``listing`` event of the store's log (its rows stay, shown on its model page). A row is
changed only when its numbers are, compared as numbers (``0.1160`` is ``0.116``); cells are stored as read, never
rounded. A sync that would withdraw more than half of the models a table lists now (``WITHDRAW_GUARD``) is refused
unless allowed; ``dry_run`` computes the whole sync, says what it would do, and writes nothing.

Honest consistency marks (``radcliq_check``): a published 1/RadCliQ-v1 is compared, at import, with the interval
that its row's 3-decimal component cells allow (interval arithmetic through RadCliQ-v1's linear formula,
``metrics.radcliq.RADCLIQ_V1``) widened by its own 3-decimal rounding. A row outside it keeps the published value
(what ReXrank ranked by) and carries the components' value in ``extra["radcliq_components"]``; the board marks it.

When a store gets the bundled tables is decided here, once (``seed_store``); the host's own import is
authoritative: a store ever imported from the host's tables is never seeded on top.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from rexrank.data.catalog import DATASETS, canonical_dataset, dataset_for_published_table, leaderboard_split
from rexrank.data.tracks import TRACKS, canonical_track
from rexrank.errors import InputError
from rexrank.leaderboard.records import MetricValue, ModelInfo, Provenance, ResultRecord, name_key
from rexrank.leaderboard.store import Store
from rexrank.metrics import REGISTRY
from rexrank.metrics import boards as board_editions

SEED_KEY = "published_seed"  # the store's meta entry: whether (and from which tables) it was seeded or imported
# Upstream's details columns (rajpurkarlab/ReXrank results/*.csv headers); every other column is a metric's.
RANK, DATE, MODEL, INSTITUTION, URL = "Rank", "Date", "Model Name", "Institution", "Model URL"
DETAIL_COLUMNS = (RANK, DATE, MODEL, INSTITUTION, URL)
# Copies of upstream's gh-pages branch carry this before upstream's own file name.
BRANCH_COPY_PREFIX = "gh-pages_"
# Every published value is a mean rounded to 3 decimals (shared/data/leaderboard_published/README.md).
PUBLISHED_DECIMALS = 3
# A published table is a few kB (31 rows of names, URLs and 3-decimal numbers); a file far larger is no such table,
# and is refused before it is read into memory.
MAX_TABLE_BYTES = 4 * 1024 * 1024
# A host's sync that would withdraw more than this share of a table's listed models needs allow_withdraw
# (--allow-withdraw): a truncated or header-only file would otherwise empty the board with exit 0.
WITHDRAW_GUARD = 0.5
QUIRK_NOTES = {
    "missing": "not reported in the published table",
}
# What readers are told about the published tables (the About tab's list).
KNOWN_QUIRKS = (
    "The UniRG-CXR rows (added 2025) lack the 1/FineRadScore cell in most Findings + Impression tables, and the "
    "2025 CheXpert Plus findings table has 0 there: both are shown as not reported.",
    "Model names differ in punctuation across tables (CheXpertPlus_MIMIC vs CheXpertPlus-MIMIC); the board uses the "
    "findings tables' spelling.",
    "Every published value is a mean rounded to 3 decimals, and 1/RadCliQ-v1 is the reciprocal of the mean "
    "RadCliQ-v1, a linear combination of RadGraph, BertScore, SembScore and BLEU: so a row's 1/RadCliQ-v1 can be "
    "checked against the range its own rounded components allow (rounding is amplified by the reciprocal: for "
    "1/RadCliQ-v1 = 4.8 the range is about ±0.05). Every Findings row lies in its range. In the Findings + "
    "Impression tables 12 of 28 rows do not, e.g. GPT4V on ReXGradient: 0.605 published, 0.659 from its "
    "components; three of them (RadFM on MIMIC-CXR and CheXpert Plus, CheXpertPlus-MIMIC on CheXpert Plus) by less "
    "than 0.001. "
    "Those rows keep the published value (what ReXrank ranked by) and are marked † with both values in the Source "
    "column. A row scored by rexrank always has its components' value, so it is not comparable one to one with a "
    "marked row.",
)


def metric_columns() -> dict[str, str]:
    """Published header -> registry metric: every metric's ``leaderboard_column`` (the specs own the header text)."""
    return {spec.leaderboard_column: name for name in REGISTRY.names()
            if (spec := REGISTRY.spec(name)).leaderboard_column}


# metrics.aggregation imports numpy: imported where a table is read, so `leaderboard add --no-seed` stays light.
def _reciprocal(metric: str) -> bool:
    from rexrank.metrics.aggregation import RECIPROCAL_OF_MEAN, aggregation_name

    return aggregation_name(REGISTRY.spec(metric)) == RECIPROCAL_OF_MEAN


def _stored(metric: str, value: float) -> float:
    """The mean the store keeps for a published cell: the cell, or the inverse of a reciprocal column's rule."""
    from rexrank.metrics.aggregation import leaderboard_values

    return float(leaderboard_values(value, REGISTRY.spec(metric)))


def radcliq_interval(cells: dict[str, float]) -> tuple[float, float] | None:
    """(low, high) of 1/RadCliQ-v1 that a row's published component cells allow (``cells``: registry metric ->
    published value, each a mean rounded to ``PUBLISHED_DECIMALS``). RadCliQ-v1 is linear in its components
    (``metrics.radcliq.RADCLIQ_V1``: ((x - mean) / scale) @ coefs + intercept), so each component's half-unit moves
    it by |coef / scale| / 2000 at most; the reciprocal of that range, when it excludes 0. None when a component
    is missing or the range reaches 0."""
    from rexrank.metrics.aggregation import leaderboard_values
    from rexrank.metrics.radcliq import COMPONENTS, RADCLIQ_V1, radcliq_v1

    if any(cells.get(name) is None for name in COMPONENTS):
        return None
    centre = float(radcliq_v1(*(cells[name] for name in COMPONENTS)))
    half = 0.5 / 10 ** PUBLISHED_DECIMALS
    spread = sum(abs(c / s) * half for c, s in zip(RADCLIQ_V1.coefs, RADCLIQ_V1.scaler_scale))
    low, high = centre - spread, centre + spread
    if low <= 0 <= high:
        return None
    shown = sorted(float(leaderboard_values(v, REGISTRY.spec("radcliq_v1"))) for v in (low, high))
    return shown[0], shown[1]


def radcliq_check(cells: dict[str, float]) -> float | None:
    """The value a row's components give 1/RadCliQ-v1 when its published cell cannot come from them (the
    published value's own rounding interval misses ``radcliq_interval``); None when it can or a cell is missing."""
    from rexrank.metrics.aggregation import leaderboard_values
    from rexrank.metrics.radcliq import COMPONENTS, radcliq_v1

    published = cells.get("radcliq_v1")
    interval = radcliq_interval(cells)
    if published is None or interval is None:
        return None
    half = 0.5 / 10 ** PUBLISHED_DECIMALS
    if published + half >= interval[0] and published - half <= interval[1]:
        return None
    return float(leaderboard_values(radcliq_v1(*(cells[name] for name in COMPONENTS)), REGISTRY.spec("radcliq_v1")))


def _canonical_name(name: str) -> str:
    return re.sub(r"^CheXpertPlus_", "CheXpertPlus-", name.strip()).replace("CheX_MIMIC", "CheX-MIMIC")


def _rows(text: str, name: str = "the table") -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(header, [(line, cells)]) of a CSV text, every header and cell stripped; a BOM and CRLF line ends are read.
    A text the csv module cannot read (a cell over its field limit, ...) is one ``InputError`` naming the line."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    try:
        header = [h.strip() for h in next(reader, [])]
        rows = [(reader.line_num, [cell.strip() for cell in row]) for row in reader if any(c.strip() for c in row)]
    except csv.Error as exc:
        limit = csv.field_size_limit()
        why = (f"a cell longer than {limit:,} characters" if "field limit" in str(exc) else f"not CSV ({exc})")
        raise InputError(f"{name}: line {reader.line_num}: {why}; a published table's cells are names, URLs and "
                         "numbers: not a published ReXrank table") from None
    return header, rows


def unknown_columns(header: Iterable[str]) -> list[str]:
    """The columns of a published header that are neither upstream's details nor a known metric's."""
    known = set(DETAIL_COLUMNS) | set(metric_columns())
    return [column for column in header if column and column not in known]


def parse_table(text: str, dataset: str, split: str, track: str,
                name: str = "the table") -> tuple[list[ResultRecord], list[str]]:
    """Parse one published CSV. Returns records and human-readable notes about quirks met (rows not imported
    included). Raises ``InputError`` for an unreadable CSV or one model on two rows."""
    records, notes, _ = _parse(text, dataset, split, track, name)
    return records, notes


def _parse(text: str, dataset: str, split: str, track: str,
           name: str) -> tuple[list[ResultRecord], list[str], list[tuple[str, str]]]:
    """``parse_table``'s records and notes, and (name, note) of each row whose details failed the rules."""
    records, notes, refused = [], [], []
    header, rows = _rows(text, name)
    by_header = metric_columns()
    published = [column for column in header if column in by_header]
    first_line: dict[str, tuple[int, str]] = {}  # name_key -> (line, name): one row per model
    for line_no, cells in rows:
        row = dict(zip(header, cells))  # a row shorter than the header lacks its last cells
        name_cell = _canonical_name(row.get(MODEL) or "")
        if not name_cell:
            continue
        key = name_key(name_cell)
        if key in first_line:
            line, seen = first_line[key]
            same = f"{seen!r}" if seen == name_cell else f"{seen!r} and {name_cell!r} (the same name to the board)"
            raise InputError(f"{name}: {same} on lines {line} and {line_no}: keep one row per model")
        first_line[key] = (line_no, name_cell)
        try:  # the rules a submission's details pass (a published name is shown beside submitted ones)
            model = ModelInfo.from_dict({"name": name_cell, "institution": row.get(INSTITUTION),
                                         "url": row.get(URL), "year": row.get(DATE) if (row.get(DATE) or "")
                                         .isdigit() else None})
        except InputError as exc:
            notes.append(f"{dataset}/{track}: line {line_no} not imported: {exc}")
            refused.append((name_cell, notes[-1]))
            continue
        values: dict[str, float] = {}
        missing = []
        for column in published:
            metric = by_header[column]
            try:  # the cell as written: never rounded here (a sync compares the numbers themselves)
                value = float(row.get(column) or "")
            except ValueError:
                value = None
            if value is None or value != value or (_reciprocal(metric) and value == 0):
                missing.append(column)
                continue
            values[metric] = value
        if missing:
            notes.append(f"{dataset}/{track}: {model.name} (line {line_no}) lacks {', '.join(missing)}")
        metrics = {metric: MetricValue(_stored(metric, value)) for metric, value in values.items()}
        note = "published, no CI" + (f"; {', '.join(missing)} {QUIRK_NOTES['missing']}" if missing else "")
        extra: dict[str, Any] = {"published_columns": {c: row.get(c) for c in published}}
        recomputed = radcliq_check(values)
        if recomputed is not None:
            extra["radcliq_components"] = recomputed
        records.append(ResultRecord(model=model, dataset=dataset, split=split, track=track, source="published",
                                    metrics=metrics, note=note, extra=extra))
    return records, notes, refused


def table_of(file_name: str) -> tuple[str, str, str] | None:
    """(dataset, split, track) of a published table file, from the catalog (table key, the split the leaderboard
    scores) and the tracks (table prefix), with or without ``BRANCH_COPY_PREFIX``; None for any other name."""
    stem = file_name[len(BRANCH_COPY_PREFIX):] if file_name.startswith(BRANCH_COPY_PREFIX) else file_name
    for track in TRACKS.values():
        match = re.fullmatch(re.escape(track.leaderboard_table_prefix) + r"_(\w+)\.csv", stem)
        dataset = dataset_for_published_table(match.group(1)) if match else None
        if dataset is not None:
            return dataset, leaderboard_split(dataset), track.name
    return None


def _expected_names() -> str:
    keys = [spec.published_table for spec in DATASETS.values() if spec.published_table]
    prefixes = [track.leaderboard_table_prefix for track in TRACKS.values()]
    return f"{' or '.join(f'{p}_<key>.csv' for p in prefixes)} (key: {', '.join(keys)})"


@dataclass
class PublishedTable:
    """One published table as read: where from, which board table it is, its rows and what was noticed."""

    name: str
    dataset: str
    split: str
    track: str
    text: str
    records: list[ResultRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    # (name, note) of each row whose details failed the rules: not imported, its model kept as it was
    refused: list[tuple[str, str]] = field(default_factory=list)


def read_tables(sources: Iterable[str | Path], *, dataset: str | None = None,
                track: str | None = None) -> tuple[list[PublishedTable], list[str]]:
    """(the tables, notes) of ``sources``: folders (their ``*.csv``) and files. A folder's file whose name says
    no test set and track is skipped with a note; a file named on its own must say it, or come with ``dataset`` and
    ``track``. Raises one ``InputError`` line for a missing source, an unreadable file, two tables of one board
    table, or no table at all."""
    sources = [Path(s) for s in sources]
    if (dataset is None) != (track is None):
        raise InputError("--dataset and --track go together: give both for a table whose file name says neither")
    files: list[tuple[Path, bool]] = []  # (path, named on its own)
    for source in sources:
        if source.is_dir():
            files += [(path, False) for path in sorted(source.glob("*.csv"))]
        elif source.is_file():
            files.append((source, True))
        else:
            raise InputError(f"{source} does not exist: give a folder of published ReXrank tables or table files")
    if dataset is not None and (len(files) != 1 or not files[0][1]):
        raise InputError("--dataset and --track name the board table of ONE table file: give a single file")
    tables, notes, seen = [], [], {}
    for path, alone in files:
        table = table_of(path.name)
        if table is None and dataset is not None:
            dataset_name = canonical_dataset(dataset)
            table = dataset_name, leaderboard_split(dataset_name), canonical_track(track)
        if table is None:
            problem = f"{path.name}: its name does not say which test set and track it is ({_expected_names()})"
            if alone:
                raise InputError(f"{problem}; rename it, or give --dataset and --track")
            notes.append(f"skipped {problem}")
            continue
        if table in seen:
            raise InputError(f"{seen[table]} and {path.name} are both the {table[0]}/{table[2]} table: import one")
        seen[table] = path.name
        try:
            size = path.stat().st_size
            if size > MAX_TABLE_BYTES:
                raise InputError(f"{path.name}: {size:,} bytes, over the {MAX_TABLE_BYTES:,} a published table can be "
                                 "(they are a few kB): not a published ReXrank table")
            text = path.read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: not a readable UTF-8 CSV table ({type(exc).__name__})") from None
        header, _ = _rows(text, path.name)
        if MODEL not in header:
            raise InputError(f"{path.name}: no {MODEL!r} column in its header: not a published ReXrank table")
        records, row_notes, refused = _parse(text, *table, path.name)
        tables.append(PublishedTable(path.name, *table, text, records, row_notes, unknown_columns(header), refused))
    if not tables:
        where = ", ".join(str(s) for s in sources)
        raise InputError(f"no published ReXrank tables in {where}: expected files named {_expected_names()}, "
                         "optionally prefixed gh-pages_")
    return tables, notes


def tables_digest(tables: Iterable[PublishedTable]) -> str:
    """sha256 over tables' names and contents: which tables a store was seeded or imported from."""
    return _digest((table.name, table.text) for table in tables)


def files_digest(paths: Iterable[Path]) -> str:
    """``tables_digest`` of table files, without parsing them (a seeded store's open compares it)."""
    return _digest((path.name, path.read_bytes().decode("utf-8-sig")) for path in paths)


def _digest(named_texts: Iterable[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for name, text in sorted(named_texts):
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


def _disclosed(record: ResultRecord) -> ResultRecord:
    """``record`` as the store keeps it (a private set's numbers rounded as shown)."""
    from rexrank.evaluation.disclosure import disclose_record

    return ResultRecord.from_json(disclose_record(record.to_json()))


def _numbers(item: dict[str, Any] | ResultRecord) -> dict[str, tuple] | None:
    """What a published row says, as numbers: metric -> (mean, ci_low, ci_high); None for a stored row an older
    rexrank wrote without its record. Two rows with equal numbers are the same row, however their cells were
    written (``0.116`` and ``0.1160``)."""
    try:
        record = item if isinstance(item, ResultRecord) else ResultRecord.from_json(item["record"])
    except (KeyError, TypeError, ValueError, InputError):
        return None
    return {metric: (value.mean, value.ci_low, value.ci_high) for metric, value in record.metrics.items()}


def _add_shown(store: Store, conn: Any, record: ResultRecord, table: PublishedTable) -> None:
    """Add ``record`` so that the board shows it (the newest row of its model, table and source). A table that goes
    back to values a model had before would find that older row (stored once) and leave the newer one shown: the
    row is then added again, marked ``republished`` with how many published rows of it came before."""
    if store.add_result(record, conn, provenance=Provenance(via="published"))[1]:
        return
    earlier = [r for r in store.results(table.dataset, table.track, model=record.model.name, latest=False,
                                        withdrawn=True) if r["source"] == "published" and r["split"] == table.split]
    again = ResultRecord.from_json({**record.to_json(), "extra": {**record.extra, "republished": len(earlier)}})
    store.add_result(again, conn, provenance=Provenance(via="published"))


class _DryRun(Exception):
    """Raised inside a dry run's transaction so that the store rolls back everything the sync wrote."""


def import_tables(store: Store, tables: list[PublishedTable], *, notes: Iterable[str] = (),
                  seeded: bool = False, dry_run: bool = False, allow_withdraw: bool = False) -> dict[str, Any]:
    """Sync the store with ``tables`` (one transaction): per table, rows added, changed, unchanged, and the models
    it no longer lists withdrawn (a ``listing`` event). ``seeded``: the bundled tables (``seed_store``), else the
    host's own, after which the store is never seeded again. A sync that would withdraw more than
    ``WITHDRAW_GUARD`` of a table's listed models raises ``InputError`` (nothing written) unless ``allow_withdraw``
    (or ``seeded``: rexrank's own tables). ``dry_run``: the same sync, rolled back; the report says what it would
    do and, under "refused", why the real run would refuse. Returns counts, notes and "changes" (table, what, model).
    """
    report: dict[str, Any] = {}
    try:
        with store.transaction() as conn:
            report = _sync(store, conn, tables, notes, seeded)
            if report["refused"] and not (allow_withdraw or seeded or dry_run):
                raise InputError(report["refused"])
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    return {**report, "dry_run": dry_run}


def _sync(store: Store, conn: Any, tables: list[PublishedTable], notes: Iterable[str],
          seeded: bool) -> dict[str, Any]:
    counts = {"added": 0, "changed": 0, "withdrawn": 0, "unchanged": 0}
    notes = list(notes)
    changes: list[tuple[str, str, str]] = []  # (dataset/track, "add" | "change" | "withdraw", model)
    too_many: list[str] = []
    missing: dict[tuple[str, str], int] = {}  # (model, column) -> tables whose newly added row lacks that cell
    unknown: dict[str, list[str]] = {}
    rows = 0
    for table in tables:
        board_table = f"{table.dataset}/{table.track}"
        for column in table.unknown:
            unknown.setdefault(column, []).append(table.name)
        current = {name_key(item["model_name"]): item for item in store.results(
            table.dataset, table.track, withdrawn=True) if item["source"] == "published"
            and item["split"] == table.split}
        listed = {name_key(name) for name, _ in table.refused}  # a row not imported leaves its model as it was
        notes += [note for _, note in table.refused]
        rows += len(table.refused)
        for record in table.records:
            rows += 1
            key = name_key(record.model.name)
            listed.add(key)
            before = current.get(key)
            before_numbers = None if before is None else _numbers(before)
            same = before_numbers is not None and before_numbers == _numbers(_disclosed(record))
            gone = before is not None and bool(before.get("withdrawn"))
            if same and not gone:
                counts["unchanged"] += 1
                continue
            try:  # the host's rows; a name someone else registered first, or an impossible cell, is skipped
                if not same:  # (a withdrawn model back with the same values: its row is listed again)
                    _add_shown(store, conn, record, table)
            except InputError as exc:  # NameTaken, or records.check_numbers (nothing of the row was written)
                notes.append(f"{board_table}: {record.model.name} not imported: {exc}")
                continue
            if gone:
                store.set_listing(conn, before["model_name"], table.dataset, table.split, table.track, True)
            added = before is None or gone
            counts["added" if added else "changed"] += 1
            changes.append((board_table, "add" if added else "change", record.model.name))
            if not same:
                header = _rows(table.text, table.name)[0]
                for column, metric in metric_columns().items():
                    if column in header and metric not in record.metrics:
                        missing[(record.model.name, column)] = missing.get((record.model.name, column), 0) + 1
        shown = [item for item in current.values() if not item.get("withdrawn")]
        leaving = [item for key, item in current.items() if key not in listed and not item.get("withdrawn")]
        for item in leaving:
            store.set_listing(conn, item["model_name"], table.dataset, table.split, table.track, False)
            counts["withdrawn"] += 1
            changes.append((board_table, "withdraw", item["model_name"]))
        if len(leaving) > WITHDRAW_GUARD * len(shown):
            too_many.append(f"{table.name} would withdraw {len(leaving)} of the {len(shown)} models "
                            f"{board_table} lists")
    state = {"state": "seeded" if seeded else "imported", "tables": tables_digest(tables)}
    recorded = store.meta(SEED_KEY) or {}
    if {k: recorded.get(k) for k in state} != state:
        store.set_meta(SEED_KEY, {**state, "at": time.time()}, conn)
    for column, names in unknown.items():
        notes.append(f"column {column!r} ({', '.join(names)}) is no metric rexrank knows: not imported")
    if missing:
        cells = "; ".join(f"{model} {column} ({count} of {len(tables)} tables)"
                          for (model, column), count in missing.items())
        notes.append(f"published cells missing or 0, stored as {QUIRK_NOTES['missing']!r} (a known upstream quirk, "
                     f"listed in the About tab): {cells}")
    refused = None
    if too_many:
        refused = (f"{'; '.join(too_many)} (more than half): nothing written. Check the tables (a truncated or "
                   "header-only file withdraws every model it lacks); if those models really left the published "
                   "tables, run again with --allow-withdraw (--dry-run lists them)")
    return {"files": len(tables), "rows": rows, **counts, "notes": notes, "changes": changes, "refused": refused}


def import_published(store: Store, directory: str | Path | None = None, *, edition: str | None = None,
                     dry_run: bool = False, allow_withdraw: bool = False) -> dict[str, Any]:
    """Read the tables of ``directory`` (None: the bundled tables of ``edition``) and sync the store with them."""
    if directory is None:
        tables, notes = read_tables(bundled_files(edition))
        return import_tables(store, tables, notes=notes, seeded=True, dry_run=dry_run)
    tables, notes = read_tables([directory])
    return import_tables(store, tables, notes=notes, dry_run=dry_run, allow_withdraw=allow_withdraw)


def report_line(report: dict[str, Any]) -> str:
    """What `import-published` and a seed say: the counts of a sync (a dry run's: what it would do)."""
    counts = (f"{report['added']} added, {report['changed']} changed, {report['withdrawn']} withdrawn, "
              f"{report['unchanged']} unchanged ({report['rows']} rows from {report['files']} tables)")
    return f"dry run, nothing written: would be {counts}" if report.get("dry_run") else counts


def seed_store(store: Store, *, seed: bool = True, edition: str | None = None) -> dict[str, Any]:
    """The one rule for when a store gets the published ReXrank tables (the bundled copy of ``edition``'s).

    A store its host imported tables into (`rexrank leaderboard import-published`) is the host's: never seeded
    again. A store never seeded is seeded now, unless ``seed`` is False (the host's ``--no-seed``): then the opt-out
    is recorded and later opens leave the store unseeded too, until the host imports tables. A seeded store is
    synced again only when the bundled tables changed (a newer rexrank). Returns ``{"state": "seeded" | "declined" |
    "unchanged" | "opted-out" | "host-imported", "report": import_tables's report or None}``.
    """
    recorded = store.meta(SEED_KEY) or {}
    state = recorded.get("state")
    if state == "imported":
        return {"state": "host-imported", "report": None}
    if state == "declined":
        return {"state": "opted-out", "report": None}
    if not seed and state is None:
        store.set_meta(SEED_KEY, {"state": "declined", "at": time.time()})
        return {"state": "declined", "report": None}
    files = bundled_files(edition)
    if state == "seeded" and (not seed or recorded.get("tables") == files_digest(files)):
        return {"state": "unchanged", "report": None}
    tables, notes = read_tables(files)
    return {"state": "seeded", "report": import_tables(store, tables, notes=notes, seeded=True)}


def seed_message(outcome: dict[str, Any]) -> str | None:
    """One line for the host about what ``seed_store`` did (None: nothing worth saying)."""
    if outcome["state"] == "opted-out":
        return ("this store was opened with --no-seed before, so it stays without the published ReXrank tables; "
                "add them with `rexrank leaderboard import-published`")
    report = outcome["report"]
    if outcome["state"] == "seeded" and report and (report["added"] or report["changed"] or report["withdrawn"]):
        return f"seeded with the published ReXrank tables: {report_line(report)}"
    return None


def bundled_tables() -> Path:
    """The copy of the published tables shipped with rexrank (so a fresh install can seed a board)."""
    return Path(__file__).with_name("published_tables")


def bundled_files(edition: str | None = None) -> list[Path]:
    """The bundled tables ``edition`` (default: the current one) is seeded with."""
    folder = bundled_tables()
    return sorted(path for pattern in board_editions.edition(edition).seed_tables for path in folder.glob(pattern))


__all__ = ["KNOWN_QUIRKS", "PublishedTable", "SEED_KEY", "bundled_files", "bundled_tables",
           "import_published", "import_tables", "metric_columns", "parse_table", "radcliq_check", "radcliq_interval",
           "read_tables", "report_line", "seed_message", "seed_store", "table_of", "tables_digest", "files_digest"]
