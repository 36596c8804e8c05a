#!/usr/bin/env python
"""The score cache's size on disk: bytes per cached float and per pair row of one metric (issue 35 point 12).

Workload (the issue's shape, scaled down): --runs runs (default 8) of --studies studies each (default 2,500), all
against the same references, every run with its own predictions; --metrics metrics (default 8) each storing a
pair row of one float per study (a BLEU-2-shaped row: `{"bleu_score": x}`, the worst case per float), written
through `ScoreCache.put_pairs` in chunks of 256 pairs as the harness commits them, tagged with a dataset as a
`--dataset` run's rows are (what `rexrank data purge` reads). Then the same with rows of three floats (BERTScore's
P/R/F1) and of twelve (NLG's statistics), one metric each. Sizes are the database and its -wal/-shm files after a
checkpoint (`PRAGMA wal_checkpoint(TRUNCATE)`), i.e. what the folder holds once the writers are done.

`--before REV` measures the cache module of git revision REV instead (loaded in place of
rexrank.evaluation.cache), for the before/after comparison.

Usage: .venv/bin/python bench/cache_size.py [--runs 8] [--studies 2500] [--metrics 8] [--before afc171f]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHUNK = 256  # the harness's default --chunk-size (pairs between commits)

sys.path.insert(0, str(REPO / "bench"))
from score_cache import use_cache_module  # noqa: E402  (one way to load an older cache.py: score_cache owns it)


def digest(label: str) -> str:
    """A text key as the metrics compute it (sha256 hex of a text); the texts themselves are never stored."""
    return hashlib.sha256(label.encode()).hexdigest()


def fill(folder: Path, runs: int, studies: int, columns: list[list[str]]) -> int:
    """Write the workload; returns the number of floats stored."""
    from rexrank.evaluation.cache import ScoreCache

    cache = ScoreCache(folder, dataset="iu_xray")
    refs = [digest(f"reference {i}") for i in range(studies)]
    floats = 0
    for run in range(runs):
        hyps = [digest(f"run {run} prediction {i}") for i in range(studies)]
        for m, names in enumerate(columns):
            fingerprint = hashlib.sha256(f"metric {m}".encode()).hexdigest()[:16]
            for start in range(0, studies, CHUNK):
                rows = {(hyps[i], refs[i]): {name: ((run * 7919 + i * 104729 + k) % 1000003) / 1000003.0
                                             for k, name in enumerate(names)}
                        for i in range(start, min(start + CHUNK, studies))}
                cache.put_pairs(fingerprint, rows)
                floats += sum(len(row) for row in rows.values())
    cache.close()
    conn = sqlite3.connect(folder / "scores.sqlite")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    return floats


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("scores.sqlite"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--studies", type=int, default=2500)
    parser.add_argument("--metrics", type=int, default=8)
    parser.add_argument("--before", default=None, help="git revision whose cache.py to measure instead")
    args = parser.parse_args(argv)
    if args.before:
        use_cache_module(args.before)
    shapes = {
        "1 float per row": [["bleu_score"]] * args.metrics,
        "3 floats per row": [["bertscore", "bertscore_precision", "bertscore_recall"]],
        "12 floats per row": [["nlg_rouge_l", "nlg_cider", "nlg_test_len", "nlg_ref_len"]
                              + [f"nlg_{kind}_{n}" for kind in ("guess", "correct") for n in range(1, 5)]],
    }
    report = {"cache_module": args.before or "working tree", "runs": args.runs, "studies": args.studies}
    for label, columns in shapes.items():
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "cache"
            floats = fill(folder, args.runs, args.studies, columns)
            total = size(folder)
        rows = args.runs * args.studies * len(columns)
        report[label] = {"metrics": len(columns), "floats": floats, "bytes": total,
                         "bytes_per_float": round(total / floats, 1), "bytes_per_pair_row": round(total / rows, 1)}
        print(f"{label}: {len(columns)} metric(s), {floats:,} floats, {total / 1e6:.2f} MB: "
              f"{total / floats:.1f} bytes per float, {total / rows:.1f} per pair row of one metric", flush=True)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
