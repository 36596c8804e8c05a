#!/usr/bin/env python
"""The Arena's fit at scale (issue 28): Bradley-Terry and 1,000 bootstrap refits for 50 models and 100,000 votes.

Votes simulated from known strengths (normal, sd 1): each vote a uniform pair with random sides, the outcome drawn
so that P(A wins) + P(tie)/2 = sigmoid(s_A - s_B) with ties 30% of the closer side's chance. Timed: ``arena.fit``
(the ML fit plus ``--boot`` refits on resampled votes, strengths and rank intervals), CPU seconds
(time.process_time) with threads pinned to 1, median of ``--repeats``. Also printed: the correlation of the fitted
strengths with the truth and the share of strength intervals covering it (one draw: about 0.95 expected).

Second table (``--serve``): a store holding ``--models`` models' reports on the 590 IU-Xray-sized studies and the
simulated votes as vote events of its log; timed (wall, the page's wait): a fresh Arena reading the log, then
``next_pair`` and ``vote`` for one rater, medians of 50.

Usage: .venv/bin/python bench/arena.py [--models 50] [--votes 100000] [--boot 1000] [--repeats 3] [--serve]
Prints a Markdown table (recorded in bench/results/arena.md). Target: <= 5 s CPU.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy loads

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from rexrank.leaderboard.arena import Votes, fit  # noqa: E402


def simulate(m: int, n: int, seed: int = 1) -> tuple[Votes, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.normal(0.0, 1.0, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(truth[a] - truth[b])))
    tie = 0.3 * np.minimum(p, 1 - p)
    u = rng.random(n)
    score = np.where(u < p - tie / 2, 1.0, np.where(u < p + tie / 2, 0.5, 0.0))
    return Votes([f"m{i}" for i in range(m)], a, b, score), truth - truth.mean()


def serve_table(votes: Votes, m: int, n_studies: int = 590) -> None:
    import tempfile

    from rexrank.leaderboard.arena import Arena
    from rexrank.leaderboard.store import Store, make_vote

    choices = {1.0: "a", 0.0: "b", 0.5: "tie"}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"{tmp}/board.sqlite")
        for name in votes.models:
            store.keep_reports(dataset="iu_xray", split="test", track="findings", model=name, result_hash=name,
                               rows=[(f"s{k}", f"{name} report {k}", f"reference {k}", {"bleu2": 0.1})
                                     for k in range(n_studies)])
        events = [make_vote(at=1e9 + i, rater=f"hf:r{i % 400}", expert=False, dataset="iu_xray", split="test",
                            track="findings", study=f"s{i % n_studies}",
                            models=[votes.models[votes.a[i]], votes.models[votes.b[i]]],
                            choice=choices[float(votes.score_a[i])], tags={"a": [], "b": []}, version="bench")
                  for i in range(len(votes.a))]
        start = time.perf_counter()
        store.add_events(events)
        loaded = time.perf_counter() - start
        start = time.perf_counter()
        arena = Arena(store, n_boot=0)
        counted = len(arena.votes())
        first = time.perf_counter() - start
        start = time.perf_counter()
        arena.board()
        board = time.perf_counter() - start
        served, voted = [], []
        for _ in range(50):
            start = time.perf_counter()
            pair = arena.next_pair("hf:bench")
            served.append(time.perf_counter() - start)
            start = time.perf_counter()
            arena.vote("hf:bench", pair.ticket, "tie")
            voted.append(time.perf_counter() - start)
        store.close()
    print(f"\n| log votes (counted) | store load s | first read of the log s | board fit s (no bootstrap) | "
          "next pair ms (median of 50) | vote ms (median) |")
    print("|---|---|---|---|---|---|")
    print(f"| {len(votes.a):,} ({counted:,}) | {loaded:.1f} | {first:.2f} | {board:.2f} | "
          f"{1000 * statistics.median(served):.1f} | {1000 * statistics.median(voted):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--votes", type=int, default=100_000)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--serve", action="store_true")
    args = parser.parse_args()
    votes, truth = simulate(args.models, args.votes)
    times, result = [], None
    for _ in range(args.repeats):
        start = time.process_time()
        result = fit(votes, n_boot=args.boot)
        times.append(time.process_time() - start)
    covered = float(np.mean((result.low <= truth) & (truth <= result.high)))
    corr = float(np.corrcoef(result.strength, truth)[0, 1])
    print(f"| models | votes | bootstrap refits | CPU s (median of {args.repeats}) | runs | corr(fit, truth) | "
          "interval coverage |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.models} | {args.votes:,} | {args.boot:,} | {statistics.median(times):.2f} | "
          f"{', '.join(f'{t:.2f}' for t in times)} | {corr:.4f} | {covered:.2f} |")
    if args.serve:
        serve_table(votes, args.models)
    print(f"\n{platform.processor() or platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}, "
          "one thread")


if __name__ == "__main__":
    main()
