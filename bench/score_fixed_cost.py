#!/usr/bin/env python
"""What `rexrank score` costs besides the metric itself (issue 25, point 3): start-up and the warm re-score.

    .venv/bin/python bench/score_fixed_cost.py [--repeats 3] [--pairs 59000] [--before /tmp/old]

Rows, each the median of --repeats runs of the real CLI (`python -m rexrank score ... --metrics bleu2`) in a fresh
process, CPU seconds of that process (user + system, RUSAGE_CHILDREN; the wall clock of this shared machine mostly
measures its other tenants), threads pinned to 1 (OMP/MKL/OpenBLAS):

- `bleu2, 590 pairs`: the 590 IU-Xray test studies (impression as the prediction, findings as the reference,
  ../shared/data/iu_xray), a fresh cache folder each run (the default, cache on);
- `bleu2, N pairs cold` / `warm`: N synthetic studies (default 59,000: IU-Xray findings with a study number, every
  pair distinct), first into an empty cache, then again from the cache it left: the same files under the same
  settings, so the run memo answers (harness.RunMemo: the outputs written back, no line or pair row read); the
  ratio warm/cold is the re-score's share of a first run;
- `warm, pair rows only`: the same re-score after the run memos are deleted from the cache (its `runs` table), so
  every line is read and checked and every pair row read back: what a re-score costs when only some pairs are
  cached, or for code without the memo.

`--before DIR`: run the same rows with the code of another checkout too (`git worktree add DIR <commit>`; its
`src/` goes first on PYTHONPATH), alternating with this checkout's, so both are measured under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IU_XRAY = REPO.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"
THREADS = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


def write_inputs(folder: Path, pairs: int) -> dict[str, tuple[Path, Path]]:
    data = json.loads(IU_XRAY.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    preds = folder / "iu_preds.jsonl"
    preds.write_text("".join(json.dumps({"study_id": k, "report": v.get("section_impression") or "No acute disease."})
                             + "\n" for k, v in data.items()))
    findings = [v["section_findings"] for v in data.values() if v.get("section_findings")]
    big_refs, big_preds = folder / "big_refs.jsonl", folder / "big_preds.jsonl"
    n = len(findings)
    big_refs.write_text("".join(json.dumps({"study_id": f"s{k}", "report": f"{findings[k % n]} Study {k}."}) + "\n"
                                for k in range(pairs)))
    big_preds.write_text("".join(json.dumps({"study_id": f"s{k}", "report": f"{findings[(k + 1) % n]} Compared with "
                                             f"{k}."}) + "\n" for k in range(pairs)))
    return {"iu": (preds, IU_XRAY), "big": (big_preds, big_refs)}


def cpu_of(src: Path, preds: Path, refs: Path, cache: Path, out: Path) -> float:
    """CPU seconds of one `rexrank score --metrics bleu2` process running the code in ``src``."""
    env = {**os.environ, **THREADS, "HF_HUB_OFFLINE": "1", "REXRANK_PROGRESS": "0",
           "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "rexrank", "score", "-p", str(preds), "-r", str(refs), "-m", "bleu2",
                    "--cache-dir", str(cache), "-o", str(out)], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def forget_runs(cache: Path) -> None:
    """Delete the run memos (an older checkout's cache has no such table: nothing to delete)."""
    conn = sqlite3.connect(cache / "scores.sqlite")
    try:
        with conn:
            conn.execute("DELETE FROM runs")
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=59_000)
    parser.add_argument("--before", default=None, help="another checkout to measure alongside (its src/)")
    parser.add_argument("--now", default=str(REPO), help="the checkout measured as 'now' (default: this one; a "
                        "worktree of a commit keeps other people's unsaved edits out of the measurement)")
    args = parser.parse_args(argv)
    codes = {"now": Path(args.now) / "src"} | ({"before": Path(args.before) / "src"} if args.before else {})
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="rexrank-fixed-") as tmp:
        root = Path(tmp)
        files = write_inputs(root / "inputs", args.pairs)
        for repeat in range(args.repeats):
            for code, src in codes.items():
                run = root / f"{code}-{repeat}"
                times.setdefault((code, "iu"), []).append(cpu_of(src, *files["iu"], run / "c1", run / "o1"))
                times.setdefault((code, "cold"), []).append(cpu_of(src, *files["big"], run / "c2", run / "o2"))
                times.setdefault((code, "warm"), []).append(cpu_of(src, *files["big"], run / "c2", run / "o3"))
                forget_runs(run / "c2")
                times.setdefault((code, "rows"), []).append(cpu_of(src, *files["big"], run / "c2", run / "o4"))
                print(f"repeat {repeat + 1} {code}: " + ", ".join(f"{k} {v[-1]:.2f} s" for (c, k), v in times.items()
                                                                 if c == code), file=sys.stderr, flush=True)
    med = {key: statistics.median(values) for key, values in times.items()}
    print(f"| row (CPU s, median of {args.repeats}, threads 1) | " + " | ".join(codes) + " |")
    print("|---|" + "---|" * len(codes))
    for kind, label in (("iu", "bleu2, 590 IU-Xray pairs (cache on, empty)"),
                        ("cold", f"bleu2, {args.pairs:,} pairs, cold (empty cache)"),
                        ("warm", f"bleu2, {args.pairs:,} pairs, warm (same files again)"),
                        ("rows", f"bleu2, {args.pairs:,} pairs, warm, pair rows only (run memos deleted)")):
        print(f"| {label} | " + " | ".join(f"{med[(c, kind)]:.2f}" for c in codes) + " |")
    print("| warm / cold | " + " | ".join(f"{med[(c, 'warm')] / med[(c, 'cold')]:.2f}" for c in codes) + " |")
    print("| warm, pair rows only / cold | " + " | ".join(f"{med[(c, 'rows')] / med[(c, 'cold')]:.2f}"
                                                         for c in codes) + " |")
    ratios = {c: [w / k for w, k in zip(times[(c, "warm")], times[(c, "cold")])] for c in codes}
    print("\nwarm / cold per repeat: " + "; ".join(f"{c} " + ", ".join(f"{r:.3f}" for r in v)
                                                   for c, v in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
