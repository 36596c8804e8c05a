#!/usr/bin/env python
"""Bootstrap CIs for 10,000 studies x 8 metrics x 1,000 resamples: vectorised vs per-resample loops, same run.

All variants compute the same thing: for each resample (studies drawn with replacement), the mean of each of the
8 metric columns, then the 2.5/97.5 percentiles per metric (and, for the RadCliQ-v1-like column, the percentiles
of 1/mean). They differ only in how the resample means are computed:

- vectorised (rexrank): ``rexrank.evaluation.bootstrap.confidence_intervals`` — count matrices built with one
  bincount per block, all 8 columns in one matrix product, reused for every metric;
- numpy loop: per resample, draw the indices with numpy and take ``values[idx, j].mean()`` for each metric
  (the straightforward loop a careful user writes);
- pandas loop: per resample, ``df.sample(n, replace=True).mean()`` (common in notebooks);
- python loop: per resample, draw indices with ``random`` and average each column in plain Python (what a
  per-study loop without numpy costs; timed on 20 resamples and scaled to 1,000).

Usage: .venv/bin/python bench/bootstrap.py [--n 10000] [--metrics 8] [--resamples 1000] [--repeats 3]
Writes nothing; prints a Markdown table (copy into bench/results/harness.md).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time

import numpy as np
import pandas as pd

from rexrank.evaluation.defaults import DEFAULT_RESAMPLES, DEFAULT_SEED


def data(n: int, m: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.beta(2, 3, size=(n, m))
    values[:, -1] = 1.5 - 2.5 * values[:, 0] + 0.2 * rng.standard_normal(n)  # a RadCliQ-v1-like column
    return values


def vectorised(values: np.ndarray, resamples: int):
    from rexrank.evaluation.bootstrap import confidence_intervals

    m = values.shape[1]
    columns = {f"m{j}": values[:, j] for j in range(m)}
    aggregations = {f"m{m - 1}": "reciprocal_of_mean"}
    return confidence_intervals(columns, aggregations=aggregations, resamples=resamples, seed=DEFAULT_SEED)


def numpy_loop(values: np.ndarray, resamples: int):
    rng = np.random.default_rng(0)
    n, m = values.shape
    means = np.empty((resamples, m))
    for b in range(resamples):
        idx = rng.integers(0, n, size=n)
        for j in range(m):
            means[b, j] = values[idx, j].mean()
    out = {}
    for j in range(m):
        out[f"m{j}"] = np.quantile(means[:, j], [0.025, 0.975])
    out["recip"] = np.quantile(1 / means[:, m - 1], [0.025, 0.975])
    return out


def pandas_loop(values: np.ndarray, resamples: int):
    frame = pd.DataFrame(values)
    rows = [frame.sample(n=len(frame), replace=True, random_state=b).mean() for b in range(resamples)]
    means = pd.DataFrame(rows)
    return means.quantile([0.025, 0.975]), (1 / means.iloc[:, -1]).quantile([0.025, 0.975])


def python_loop(values: np.ndarray, resamples: int):
    columns = [values[:, j].tolist() for j in range(values.shape[1])]
    n = len(columns[0])
    rand = random.Random(0)
    means = []
    for _ in range(resamples):
        idx = [rand.randrange(n) for _ in range(n)]
        means.append([sum(col[i] for i in idx) / n for col in columns])
    return means


def timed(fn, *args, repeats: int = 1) -> tuple[float, float]:
    """Median (wall, CPU) seconds. CPU time is the steadier number on a shared machine."""
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        fn(*args)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--metrics", type=int, default=8)
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--python-resamples", type=int, default=20, help="resamples timed for the python loop")
    args = parser.parse_args()
    values = data(args.n, args.metrics)
    vectorised(values, 10)  # warm up imports
    t_vec = timed(vectorised, values, args.resamples, repeats=args.repeats)
    t_np = timed(numpy_loop, values, args.resamples, repeats=args.repeats)
    t_pd = timed(pandas_loop, values, args.resamples, repeats=1)
    scale = args.resamples / args.python_resamples
    t_py = tuple(t * scale for t in timed(python_loop, values, args.python_resamples))
    # Same statistic: the vectorised CI and the numpy loop's CI differ only by resampling noise.
    vec = vectorised(values, args.resamples)
    loop = numpy_loop(values, args.resamples)
    gap = max(abs(vec[f"m{j}"]["ci_low"] - loop[f"m{j}"][0]) for j in range(args.metrics))
    print(f"{args.n:,} studies x {args.metrics} metrics x {args.resamples:,} resamples; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; median of {args.repeats}\n")
    print("| Variant | Wall (s) | CPU (s) | Vectorised speed-up (CPU) |")
    print("|---|---:|---:|---:|")
    rows = (("vectorised (rexrank)", t_vec), ("numpy per-resample loop", t_np), ("pandas df.sample loop", t_pd),
            (f"pure-Python loop (scaled from {args.python_resamples} resamples)", t_py))
    for label, (wall, cpu) in rows:
        print(f"| {label} | {wall:.3f} | {cpu:.3f} | {cpu / t_vec[1]:.1f}x |")
    print(f"\nlargest |CI low (vectorised) - CI low (numpy loop)| over metrics: {gap:.5f} (different random draws)")


if __name__ == "__main__":
    main()
