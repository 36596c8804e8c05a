#!/usr/bin/env python
"""`rexrank compare` at PSB scale (issue 25): the one-pass statistics against the pairwise code they replaced.

Synthetic runs built from IU-Xray: every study is one of the 590 test reports (study i: report i mod 590); each
model's hypothesis for it is the report with words dropped at a noise level drawn around the model's own quality
(six levels, NLG statistics computed once per (report, level) with rexrank's nlg, tokenizer "none"). The eight
leaderboard metrics (BLEU, BertScore, SembScore, RadGraph, 1/RadCliQ-v1, RaTEScore, GREEN, 1/FineRadScore) are
per-report columns derived from that study's ROUGE-L with their own scale and per-model Gaussian noise (RadCliQ-v1
and FineRadScore lower-is-better, positive means, so 1/mean is the leaderboard value); nlg (CE-style corpus
statistics: summed BLEU counts, ROUGE-L, CIDEr-D) is the corpus metric.

Both sides run ``compare_runs`` (rankings with rank CIs, all pairwise tests, subgroups, agreement) with 1,000
resamples and 10,000 permutations, threads pinned to 1 (OMP/OpenBLAS/MKL set before numpy loads):
- old: ``evaluation/compare.py`` as it was before ``evaluation/statistics.py`` existed (``git show``, loaded as a
  temporary module), one pair and metric at a time. At 24 runs it would take about half an hour, so it is timed on
  2 and 3 runs and its 24-run time extrapolated: the 2-run time plus the 3-run row's added cost per (pair, metric)
  for every further pair (each pair redraws the same streams, so the cost is linear in pairs);
- new: this checkout's ``compare_runs``.
CPU seconds (time.process_time) are the figure that counts on a shared machine; medians of ``--repeats``. Peak RSS
comes from a fresh process per variant (data built, a small warm-up compare, then one compare), reported as its
growth over the process's RSS before that compare.

Usage: .venv/bin/python bench/compare.py [--n 10000] [--runs 24] [--repeats 3]
Prints a Markdown table (recorded in bench/results/compare.md).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy loads: both sides single-threaded
os.environ.setdefault("REXRANK_PROGRESS", "0")

import argparse  # noqa: E402
import functools  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rexrank.evaluation.defaults import DEFAULT_PERMUTATIONS, DEFAULT_RESAMPLES  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
IU_XRAY = ROOT.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"
LEADERBOARD = ("bleu2", "bertscore", "semb", "radgraph", "radcliq_v1", "ratescore", "green", "fineradscore")
LEVELS = (0.95, 0.85, 0.75, 0.65, 0.55, 0.45)  # share of a report's words a hypothesis keeps
# (offset, scale, noise) of each per-report column as a function of ROUGE-L; negative scale: lower is better.
SHAPES = {"bleu2": (0.0, 0.6, 0.05), "bertscore": (0.1, 0.7, 0.05), "semb": (0.3, 0.6, 0.08),
          "radgraph": (0.0, 0.8, 0.07), "radcliq_v1": (2.2, -2.5, 0.3), "ratescore": (0.2, 0.6, 0.05),
          "green": (0.0, 0.9, 0.15), "fineradscore": (3.0, -2.0, 0.4)}


@functools.lru_cache(maxsize=None)
def pool(seed: int = 0):
    """NLG statistics of every (report, noise level): (reports, levels, statistics), and the reports."""
    from rexrank.metrics import get

    rng = np.random.default_rng(seed)
    data = json.loads(IU_XRAY.read_text())
    refs = [s["report"] for s in data.values() if s.get("report")]
    metric = get("nlg", tokenizer="none").use_corpus(refs)
    stats = []
    for keep in LEVELS:
        hyps = [" ".join(w for w in ref.split() if rng.random() < keep) or "normal" for ref in refs]
        stats.append(metric.statistics(hyps, refs))
    return np.stack(stats, axis=1), refs


def build_runs(n: int, models: int, metrics: tuple[str, ...], seed: int = 0):
    """``models`` Run objects (this checkout's dataclass) of n studies with the given metrics' columns."""
    from rexrank.evaluation.compare import Run
    from rexrank.metrics import nlg

    stats, refs = pool(seed)
    rng = np.random.default_rng(seed + 1)
    report = np.arange(n) % len(refs)
    ids = [f"s{i}" for i in range(n)]
    runs = []
    for k in range(models):
        quality = 1.0 + 3.0 * k / max(models - 1, 1)  # mean noise level index of the model
        level = np.clip(np.rint(quality + rng.standard_normal(n)), 0, len(LEVELS) - 1).astype(int)
        rows = stats[report, level]  # (n, statistics)
        rouge = rows[:, 0]
        columns: dict[str, np.ndarray] = {"study_id": ids, "ref_sha256": [f"r{i}" for i in report]}
        for name in metrics:
            if name == "nlg":
                columns.update(zip(nlg.STATISTICS, rows.T))
                continue
            offset, scale, noise = SHAPES[name]
            columns[name_column(name)] = offset + scale * rouge + noise * rng.standard_normal(n)
        runs.append(Run(f"model-{k:02d}", pd.DataFrame(columns), None, "bench"))
    return runs


def name_column(name: str) -> str:
    from rexrank.metrics import REGISTRY

    return REGISTRY.spec(name).column


def old_module():
    """compare.py as it was before statistics.py was added, as a module of its own."""
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", "src/rexrank/evaluation/statistics.py"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()[-1]
    source = subprocess.run(["git", "show", f"{added}~1:src/rexrank/evaluation/compare.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "compare_before_issue25.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("compare_before_issue25", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module, added[:7]


def timed(fn, repeats: int):
    """Median (CPU, wall) seconds, and the last result."""
    cpus, walls = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return statistics.median(cpus), statistics.median(walls), result


def largest_gap(one: dict, other: dict) -> float:
    """Largest difference between two compare reports' pairwise numbers (they must have the same fields)."""
    gap = 0.0
    for a, b in zip(one["pairwise"], other["pairwise"]):
        for name, test in a["tests"].items():
            for key in ("difference", "ci_low", "ci_high", "p_bootstrap", "p_randomization"):
                gap = max(gap, abs(test[key] - b["tests"][name][key]))
    return gap


def rss_mb() -> float:
    """Peak RSS of this process so far, MB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_child(n: int, models: int, metrics: tuple[str, ...], side: str = "new") -> dict[str, float]:
    """Peak RSS growth of one compare in a fresh process."""
    out = subprocess.run([sys.executable, __file__, "--rss-child", side, "--n", str(n), "--runs", str(models),
                          "--metrics", ",".join(metrics)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def rss_child(side: str, n: int, models: int, metrics: tuple[str, ...]) -> None:
    if side == "old":
        compare_runs = old_module()[0].compare_runs
    else:
        from rexrank.evaluation.compare import compare_runs

    runs = build_runs(n, models, metrics)
    compare_runs(build_runs(200, 3, metrics), resamples=20, permutations=20)  # imports outside the figure
    before = current_rss_mb()
    compare_runs(runs, resamples=DEFAULT_RESAMPLES, permutations=DEFAULT_PERMUTATIONS)
    print(json.dumps({"before_mb": before, "peak_mb": rss_mb(), "growth_mb": rss_mb() - before}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--metrics", default=",".join(LEADERBOARD))
    parser.add_argument("--rss-child", choices=("old", "new"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        rss_child(args.rss_child, args.n, args.runs, tuple(args.metrics.split(",")))
        return
    from rexrank.evaluation.compare import compare_runs

    old, before = old_module()
    boot = {"resamples": 1000, "permutations": 10_000, "seed": 0}
    eight = LEADERBOARD
    nine = LEADERBOARD + ("nlg",)
    rows = []

    def row(label, side, models, metrics, repeats, fn_module):
        runs = build_runs(args.n, models, metrics)
        cpu, wall, report = timed(lambda: fn_module.compare_runs(runs, **boot), repeats)
        pairs = models * (models - 1) // 2
        rows.append({"label": label, "side": side, "models": models, "metrics": len(metrics), "pairs": pairs,
                     "cpu": cpu, "wall": wall, "per_pair_metric": cpu / (pairs * len(metrics)), "report": report})
        print(f"  {label}: {cpu:.2f} s CPU, {wall:.2f} s wall", file=sys.stderr, flush=True)
        return rows[-1]

    import rexrank.evaluation.compare as new

    compare_runs(build_runs(300, 3, nine), resamples=20, permutations=20)  # warm imports on both sides
    old.compare_runs(build_runs(300, 3, nine), resamples=20, permutations=20)
    old2 = row("old, 2 runs x 8 metrics", "old", 2, eight, args.repeats, old)
    new2 = row("new, 2 runs x 8 metrics", "new", 2, eight, args.repeats, new)
    old3 = row("old, 3 runs x 8 metrics", "old", 3, eight, args.repeats, old)
    new24 = row(f"new, {args.runs} runs x 8 metrics", "new", args.runs, eight, args.repeats, new)
    new24c = row(f"new, {args.runs} runs x 8 metrics + nlg (corpus)", "new", args.runs, nine, args.repeats, new)
    old_nlg = row("old, 2 runs x nlg", "old", 2, ("nlg",), args.repeats, old)
    pairs24 = args.runs * (args.runs - 1) // 2
    # The old cost is a fixed part (rankings, subgroups, agreement) plus a cost per (pair, metric): the 2- and 3-run
    # rows give both, and the 24-run figure adds the pairs the 2-run row lacks.
    per_test = (old3["cpu"] - old2["cpu"]) / (2 * len(eight))
    extrapolated = old2["cpu"] + per_test * (pairs24 - 1) * len(eight)
    extrapolated_c = extrapolated + old_nlg["cpu"] * pairs24
    peak = peak_child(args.n, args.runs, eight)
    peak_c = peak_child(args.n, args.runs, nine)
    peak_old = peak_child(args.n, 2, eight, "old")
    peak_new2 = peak_child(args.n, 2, eight)

    print(f"{args.n:,} studies, 1,000 resamples, 10,000 permutations, seed 0; {platform.machine()}, "
          f"{os.cpu_count()} CPUs (shared), 1 thread (OMP/OpenBLAS/MKL=1); old = compare.py at {before}~1; "
          f"median of {args.repeats}\n")
    print("| Variant | Pairs | CPU (s) | Wall (s) | CPU per (pair, metric) (s) |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['label']} | {r['pairs']} | {r['cpu']:.2f} | {r['wall']:.2f} | {r['per_pair_metric']:.3f} |")
    print(f"| old, {args.runs} runs x 8 metrics (extrapolated: 2-run row + {pairs24 - 1} pairs x 8 metrics x "
          f"{per_test:.3f} s, the 3-run row's added cost per (pair, metric)) | {pairs24} | {extrapolated:.0f} | | |")
    print(f"| old, {args.runs} runs x 8 metrics + nlg (extrapolated: + {pairs24} x the 2-run nlg row) | {pairs24} | "
          f"{extrapolated_c:.0f} | | |")
    print()
    print(f"- 2 runs: new/old CPU = {new2['cpu'] / old2['cpu']:.2f}x (no slower: <= 1); largest difference of any "
          f"pairwise number between the two sides: {largest_gap(old2['report'], new2['report']):.1e}")
    print(f"- {args.runs} runs x 8 metrics: {new24['cpu']:.2f} s CPU (target <= 10 s); old extrapolated "
          f"{extrapolated:.0f} s: {extrapolated / new24['cpu']:.0f}x")
    print(f"- {args.runs} runs x 8 metrics + nlg: {new24c['cpu']:.2f} s CPU; old extrapolated {extrapolated_c:.0f} s: "
          f"{extrapolated_c / new24c['cpu']:.0f}x")
    print(f"- old: {per_test:.3f} s CPU per added (pair, metric) at {args.n:,} studies")
    print(f"- peak RSS growth of one new compare, {args.runs} runs x 8 metrics: {peak['growth_mb']:.0f} MB "
          f"(process peak {peak['peak_mb']:.0f} MB, {peak['before_mb']:.0f} MB before the compare); with nlg: "
          f"{peak_c['growth_mb']:.0f} MB (peak {peak_c['peak_mb']:.0f} MB); 2 runs x 8 metrics: old "
          f"{peak_old['growth_mb']:.0f} MB, new {peak_new2['growth_mb']:.0f} MB")


if __name__ == "__main__":
    main()
