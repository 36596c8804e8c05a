"""Seed the store with the published ReXrank tables (rajpurkarlab/ReXrank gh-pages results CSVs).

Published rows are point estimates only: they are marked source "published" with no CI. 1/RadCliQ-v1 and
1/FineRadScore are stored as the underlying means (the reciprocal of the published value) so every result in
the store has the same meaning; the board recomputes the published numbers from them.

Known upstream quirks, handled here: ``KNOWN_QUIRKS`` (the About tab lists them, word for word).

When a store gets these tables is decided here, once (``seed_store``): every command that opens a store for the
board (`leaderboard add`, `serve`, `worker`, the Space) seeds a store that was never seeded, unless the host opted
out (``--no-seed``); both outcomes are recorded in the store's meta table, so the choice holds for later commands.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import time
from pathlib import Path
from typing import Any

from rexrank.data.catalog import dataset_for_published_table, leaderboard_split
from rexrank.data.tracks import TRACKS
from rexrank.errors import InputError
from rexrank.leaderboard.records import MetricValue, ModelInfo, Provenance, ResultRecord
from rexrank.leaderboard.store import Store

# Published column -> (registry metric, whether the column is the reciprocal of the metric's mean).
COLUMNS = {
    "BLEU": ("bleu2", False), "BertScore": ("bertscore", False), "SembScore": ("semb", False),
    "RadGraph": ("radgraph", False), "1/RadCliQ-v1": ("radcliq_v1", True), "RaTEScore": ("ratescore", False),
    "GREEN": ("green", False), "1/FineRadScore": ("fineradscore", True),
}
SEED_KEY = "published_seed"  # the store's meta entry recording whether (and with which tables) it was seeded
QUIRK_NOTES = {
    "missing": "not reported in the published table",
}
# How far a published 1/RadCliQ-v1 may be from the value its row's component means give (3-decimal rounding of the
# four components and of the value itself; tests/test_radcliq.py: the findings tables stay within it).
RADCLIQ_TOLERANCE = 0.004
# What readers are told about the published tables (the About tab's list).
KNOWN_QUIRKS = (
    "The UniRG-CXR rows (added 2025) lack the 1/FineRadScore cell in most tables, and the CheXpert Plus findings "
    "table has 0 there: both are shown as not reported.",
    "Model names differ in punctuation across tables (CheXpertPlus_MIMIC vs CheXpertPlus-MIMIC); the board uses the "
    "findings tables' spelling.",
    "In the Findings + Impression tables, 1/RadCliQ-v1 disagrees with the value the row's own component means give "
    "(RadCliQ-v1 is a linear combination of RadGraph, BertScore, SembScore and BLEU, so the mean of per-report "
    f"values is RadCliQ-v1 of the means) by more than rounding allows ({RADCLIQ_TOLERANCE}) in 9 of 28 rows, e.g. "
    "GPT4V on ReXGradient: 0.605 published, 0.659 from its components; the findings tables agree everywhere. Those "
    "rows keep the published value (what ReXrank ranked by) and are marked † with both values in the Source "
    "column. A row scored by rexrank always has its components' value, so it is not comparable one to one with a "
    "marked row.",
)


def radcliq_from_components(means: dict[str, float | None]) -> float | None:
    """1/RadCliQ-v1 as a published row's own component means give it (``means``: registry metric -> mean, as
    stored), when it differs from the row's published 1/RadCliQ-v1 by more than ``RADCLIQ_TOLERANCE``; None when it
    agrees or a value is missing."""
    from rexrank.metrics.radcliq import COMPONENTS, radcliq_v1

    parts = [means.get(name) for name in COMPONENTS]
    stored = means.get("radcliq_v1")  # the mean RadCliQ-v1: the reciprocal of the published value
    if stored is None or not stored or any(p is None for p in parts):
        return None
    recomputed = 1.0 / float(radcliq_v1(*parts))
    return recomputed if abs(recomputed - 1.0 / stored) > RADCLIQ_TOLERANCE else None


def _canonical_name(name: str) -> str:
    return re.sub(r"^CheXpertPlus_", "CheXpertPlus-", name.strip()).replace("CheX_MIMIC", "CheX-MIMIC")


def parse_table(text: str, dataset: str, split: str, track: str) -> tuple[list[ResultRecord], list[str]]:
    """Parse one published CSV. Returns records and human-readable notes about quirks met."""
    records, notes = [], []
    reader = csv.DictReader(io.StringIO(text))
    published = [column for column in COLUMNS if column in (reader.fieldnames or ())]
    for line_no, row in enumerate(reader, start=2):
        name = _canonical_name(row.get("Model Name") or "")
        if not name:
            continue
        metrics: dict[str, MetricValue] = {}
        missing = []
        for column in published:
            metric, reciprocal = COLUMNS[column]
            raw = (row.get(column) or "").strip()
            try:
                value = float(raw)
            except ValueError:
                value = None
            if value is None or (reciprocal and value == 0):
                missing.append(column)
                continue
            metrics[metric] = MetricValue(1.0 / value if reciprocal else value)
        if missing:
            notes.append(f"{dataset}/{track}: {name} (line {line_no}) lacks {', '.join(missing)}")
        model = ModelInfo(name=name, institution=(row.get("Institution") or "").strip() or None,
                          url=(row.get("Model URL") or "").strip() or None,
                          year=int(row["Date"]) if (row.get("Date") or "").strip().isdigit() else None)
        note = "published, no CI" + (f"; {', '.join(missing)} {QUIRK_NOTES['missing']}" if missing else "")
        records.append(ResultRecord(model=model, dataset=dataset, split=split, track=track, source="published",
                                    metrics=metrics, note=note,
                                    extra={"published_rank": row.get("Rank"), "published_columns": {
                                        c: row.get(c) for c in COLUMNS}}))
    return records, notes


def import_published(store: Store, directory: str | Path) -> dict[str, object]:
    """Import every gh-pages_{findings_,}result_*.csv of ``directory``. Idempotent (content-hashed rows).

    ``notes``: tables skipped, names taken, and one summary of the published cells missing from the rows this
    import added (nothing about rows already stored: a re-import has nothing new to say). A table without a
    column at all is no quirk: its rows simply lack that metric, without a note.
    """
    directory = Path(directory)
    added, seen, tables, notes = 0, 0, 0, []
    missing: dict[tuple[str, str], int] = {}  # (model, column) -> tables whose newly added row lacks that cell
    files = sorted(directory.glob("gh-pages_*result_*.csv"))
    if not files:
        raise FileNotFoundError(f"no published ReXrank tables (gh-pages_*result_*.csv) in {directory}")
    with store.transaction() as conn:
        for path in files:
            table = table_of(path.name)
            if table is None:
                notes.append(f"skipped unknown table {path.name}")
                continue
            dataset, split, track = table
            tables += 1
            text = path.read_text(encoding="utf-8")
            columns = [c for c in COLUMNS if c in (next(csv.reader(io.StringIO(text)), None) or ())]
            records, _ = parse_table(text, dataset, split, track)  # per-row notes: summarised below instead
            for record in records:
                seen += 1
                try:  # the host's rows; a name someone else registered first, or an impossible cell, is skipped
                    new = store.add_result(record, conn, provenance=Provenance(via="published"))[1]
                except InputError as exc:  # NameTaken, or records.check_numbers (nothing of the row was written)
                    notes.append(f"{dataset}/{track}: {record.model.name} not imported: {exc}")
                    continue
                added += new
                for column in columns if new else ():
                    if COLUMNS[column][0] not in record.metrics:
                        missing[(record.model.name, column)] = missing.get((record.model.name, column), 0) + 1
        store.set_meta(SEED_KEY, {"state": "seeded", "tables": tables_digest(directory), "at": time.time()}, conn)
    if missing:
        cells = "; ".join(f"{model} {column} ({count} of {tables} tables)"
                          for (model, column), count in missing.items())
        notes.append(f"published cells missing or 0, stored as {QUIRK_NOTES['missing']!r} (a known upstream quirk, "
                     f"listed in the About tab): {cells}")
    return {"files": len(files), "rows": seen, "added": added, "notes": notes}


def seed_store(store: Store, *, seed: bool = True) -> dict[str, Any]:
    """The one rule for when a store gets the published ReXrank tables (the bundled copy).

    A store never seeded is seeded now, unless ``seed`` is False (the host's ``--no-seed``): then the opt-out is
    recorded and later opens leave the store unseeded too, until the host runs `rexrank leaderboard import-published`.
    A seeded store is seeded again only when the bundled tables changed (a newer rexrank): the import is idempotent,
    so that adds just the new published rows. Returns ``{"state": "seeded" | "declined" | "unchanged" | "opted-out",
    "report": import_published's report or None}``.
    """
    recorded = store.meta(SEED_KEY) or {}
    state = recorded.get("state")
    if state == "declined":
        return {"state": "opted-out", "report": None}
    if not seed and state is None:
        store.set_meta(SEED_KEY, {"state": "declined", "at": time.time()})
        return {"state": "declined", "report": None}
    if state == "seeded" and (not seed or recorded.get("tables") == tables_digest(bundled_tables())):
        return {"state": "unchanged", "report": None}
    return {"state": "seeded", "report": import_published(store, bundled_tables())}


def seed_message(outcome: dict[str, Any]) -> str | None:
    """One line for the host about what ``seed_store`` did (None: nothing worth saying)."""
    if outcome["state"] == "opted-out":
        return ("this store was opened with --no-seed before, so it stays without the published ReXrank tables; "
                "add them with `rexrank leaderboard import-published`")
    report = outcome["report"]
    if outcome["state"] == "seeded" and report and report["added"]:
        return f"seeded with the published ReXrank tables: {report['added']} rows from {report['files']} tables"
    return None


def tables_digest(directory: str | Path) -> str:
    """sha256 over the published tables of ``directory`` (names and contents): which tables a store was seeded from."""
    digest = hashlib.sha256()
    for path in sorted(Path(directory).glob("gh-pages_*result_*.csv")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def table_of(file_name: str) -> tuple[str, str, str] | None:
    """(dataset, split, track) of a published table file, from the catalog (table key, the split the
    leaderboard scores) and the tracks (table prefix); None for a file that is not one of them."""
    for track in TRACKS.values():
        match = re.fullmatch(re.escape(track.leaderboard_table_prefix) + r"_(\w+)\.csv", file_name)
        dataset = dataset_for_published_table(match.group(1)) if match else None
        if dataset is not None:
            return dataset, leaderboard_split(dataset), track.name
    return None


def bundled_tables() -> Path:
    """The copy of the published tables shipped with rexrank (so a fresh install can seed a board)."""
    return Path(__file__).with_name("published_tables")
