#!/usr/bin/env python
"""`rexrank score` end to end on 10,000 synthetic studies with BLEU-2: wall time, CPU time and peak memory.

Synthetic studies: each reference and prediction is 3-7 sentences drawn (seeded) from the built-in radiology corpus
(rexrank.testing.corpus), so reports look like findings sections and every pair differs. Files: predictions as
JSONL, references as {study_id: report} JSON — the user's route through validation, scoring, the per-study table,
1,000-resample bootstrap CIs, subgroups and all four output files.

Runs, each a fresh `rexrank score` process:
1. cold: empty cache directory;
2. warm: the same command again (every pair comes from the cache);
3. no cache: --no-cache.
Peak memory is the process's maximum resident set size (getrusage of the child).

Usage: .venv/bin/python bench/harness_e2e.py [--n 10000] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def synthetic(n: int, seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    from rexrank.testing.corpus import SENTENCES

    sentences = [s.strip() + "." for s in re.split(r"\.\s+", SENTENCES.replace("\n", " ")) if len(s.strip()) > 3]
    rng = random.Random(seed)

    def report() -> str:
        return " ".join(rng.sample(sentences, rng.randint(3, 7)))

    ids = [f"synthetic-{i:05d}" for i in range(n)]
    return ids, [report() for _ in ids], [report() for _ in ids]


def run(args_list: list[str]) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = dict(os.environ, REXRANK_PROGRESS="0", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "rexrank", *args_list], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-3000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: runs go from smallest expected to largest, and
    # each run's value is reported only when it grew; --isolate gives every run its own measuring process.
    return {"wall": wall, "cpu": cpu, "maxrss_mb": after.ru_maxrss / 1024}


def stages(preds: Path, refs: Path, out: Path) -> dict[str, float]:
    """CPU seconds of each stage in one process, imports paid beforehand (cold cache, BLEU-2)."""
    from rexrank.evaluation import harness
    from rexrank.evaluation.inputs import load_inputs

    times: dict[str, float] = {}
    clock = time.process_time()
    inputs = load_inputs(preds, references=refs, track="findings")
    times["read + validate"] = time.process_time() - clock
    options = harness.ScoreOptions(metrics=["bleu2"], cache_dir=out / "stage-cache")
    clock = time.process_time()
    evaluation = harness.evaluate(inputs, model="m", track="findings", options=options)
    times["score + statistics + subgroups"] = time.process_time() - clock
    clock = time.process_time()
    harness.write_outputs(evaluation, out / "stage-out")
    times["write outputs"] = time.process_time() - clock
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ids, refs, hyps = synthetic(args.n)
        preds = tmp / "synthetic_model.jsonl"
        preds.write_text("".join(json.dumps({"study_id": i, "report": h}) + "\n" for i, h in zip(ids, hyps)))
        ref_file = tmp / "refs.json"
        ref_file.write_text(json.dumps(dict(zip(ids, refs))))
        common = ["score", "-p", str(preds), "-r", str(ref_file), "-m", "bleu2", "-q"]
        rows = {}
        for label, extra in (("cold cache", ["--cache-dir", str(tmp / "cache")]),
                             ("warm cache", ["--cache-dir", str(tmp / "cache")]),
                             ("--no-cache", ["--no-cache"])):
            results = []
            for r in range(args.repeats):
                if label == "cold cache" and r:
                    for f in (tmp / "cache").glob("*"):
                        f.unlink()
                # Each run in its own measuring process, so ru_maxrss is that run's peak alone.
                code = ("import json,sys; sys.path.insert(0, %r); import harness_e2e as h; "
                        "print(json.dumps(h.run(%r)))" % (str(Path(__file__).parent), common + extra + ["-o", str(tmp / "out")]))
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
                if out.returncode != 0:
                    raise RuntimeError(out.stderr[-3000:])
                results.append(json.loads(out.stdout.strip().splitlines()[-1]))
            rows[label] = {k: statistics.median(r[k] for r in results) for k in results[0]}
        breakdown = stages(preds, ref_file, tmp)
        size = sum(p.stat().st_size for p in (tmp / "out").iterdir())
        per_study = (tmp / "out" / "per_study.parquet").stat().st_size
    print(f"{args.n:,} synthetic studies, BLEU-2, 1,000 bootstrap resamples; one `rexrank score` process per run "
          f"(OMP_NUM_THREADS=1); median of {args.repeats}\n")
    print("| Run | Wall (s) | CPU (s) | Peak RSS (MB) |")
    print("|---|---:|---:|---:|")
    for label, r in rows.items():
        print(f"| {label} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['maxrss_mb']:.0f} |")
    print(f"\noutput files: {size / 1e6:.2f} MB (per_study.parquet {per_study / 1e6:.2f} MB)")
    print("\nCPU seconds per stage (one process, imports paid beforehand, cold cache):\n")
    print("| Stage | CPU (s) |")
    print("|---|---:|")
    for stage, seconds in breakdown.items():
        print(f"| {stage} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
