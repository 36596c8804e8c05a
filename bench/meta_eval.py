#!/usr/bin/env python
"""Meta-evaluation statistics after scoring: ReXVal's shape (200 pairs = 50 studies x 4, 6 raters, 6 categories),
the 8 ReXrank metrics, 1,000 study resamples; rexrank's vectorised statistics vs a scipy loop, same run.

Both compute the same taus: every metric against every target (all errors, significant errors, 6 categories x
{all, significant}) on the data and on each resample (a resample's pairs: each drawn study's 4 pairs, repeated as
often as drawn), plus the inter-rater ceiling. They differ only in how:

- rexrank: ``rexrank.evaluation.meta_eval.agreement`` (tau-b as quadratic forms in the study multiplicities, every
  resample of a (metric, target) in one matrix product), which also does the paired tests of all 28 metric pairs;
- scipy loop: per resample, index the repeated pairs and call ``scipy.stats.kendalltau`` per (metric, target) and
  per rater (the straightforward loop); it does no paired test, so it gets the easier job. Timed on
  `--loop-resamples` resamples and scaled linearly to 1,000 (each resample costs the same).

Process CPU time (time.process_time), median of `--repeats`, one thread (OMP/BLAS threads pinned to 1 before numpy
is imported) so the number does not depend on how busy the machine is. Scores are synthetic (scoring is not timed).
Usage: .venv/bin/python bench/meta_eval.py [--resamples 1000] [--loop-resamples 50] [--repeats 3]
Prints a Markdown table (copied into bench/results/meta_eval.md).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import kendalltau  # noqa: E402

from rexrank.data.expert_sets import ExpertSet  # noqa: E402
from rexrank.evaluation import meta_eval as me  # noqa: E402
from rexrank.evaluation.defaults import DEFAULT_RESAMPLES, DEFAULT_SEED  # noqa: E402
from rexrank.metrics import boards  # noqa: E402


def rexval_like(seed: int = 0) -> tuple[ExpertSet, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    errors = rng.poisson(0.25, size=(200, 6, 6, 2)).astype(float)
    expert = ExpertSet("rexval", [str(i // 4) for i in range(200)], ["c"] * 200, ["r"] * 200, ["h"] * 200,
                       [str(r) for r in range(6)], list(range(1, 7)), errors, "synthetic")
    total = errors.sum(axis=(1, 2, 3))
    scores = {name: -total + rng.normal(scale=1 + k, size=200)
              for k, name in enumerate(boards.edition().all_metrics())}
    return expert, scores


def rexrank_run(expert, scores, resamples: int) -> None:
    me.agreement(scores, expert, resamples=resamples, seed=DEFAULT_SEED)


def scipy_loop(expert, scores, resamples: int) -> None:
    from rexrank.metrics import REGISTRY

    goals = me.targets(expert)
    oriented = {n: -v if REGISTRY.spec(n).higher_is_better else v for n, v in scores.items()}
    own, others = me.rater_targets(expert, False)
    own_s, others_s = me.rater_targets(expert, True)
    groups = expert.groups
    members = [np.flatnonzero(groups == g) for g in range(groups.max() + 1)]
    rows = np.vstack([np.ones((1, len(members))), me.study_resamples(len(members), resamples, 0)])
    for row in rows:
        index = np.concatenate([members[g] for g in range(len(members)) for _ in range(int(row[g]))])
        for values in oriented.values():
            for goal in goals.values():
                kendalltau(values[index], goal[index])
        for r in range(own.shape[0]):
            kendalltau(own[r, index], others[r, index])
            kendalltau(own_s[r, index], others_s[r, index])


def cpu(fn, *args) -> float:
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    parser.add_argument("--loop-resamples", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    expert, scores = rexval_like()
    ours = statistics.median(cpu(rexrank_run, expert, scores, args.resamples) for _ in range(args.repeats))
    loop = statistics.median(cpu(scipy_loop, expert, scores, args.loop_resamples) for _ in range(args.repeats))
    loop_full = loop * (args.resamples + 1) / (args.loop_resamples + 1)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores visible, 1 thread; "
          f"numpy {np.__version__}")
    print(f"200 pairs (50 studies x 4), 8 metrics, 14 targets, 6 raters, {args.resamples:,} resamples; "
          f"CPU seconds, median of {args.repeats}\n")
    print("| variant | CPU s | vs rexrank |")
    print("|---|---:|---:|")
    print(f"| rexrank `meta_eval.agreement` (taus, CIs, 28 paired tests, rater ceiling) | {ours:.3f} | 1.0x |")
    print(f"| scipy.stats.kendalltau loop (taus and rater ceiling only; {args.loop_resamples} resamples timed, scaled "
          f"to {args.resamples:,}) | {loop_full:.1f} | {loop_full / ours:.0f}x |")


if __name__ == "__main__":
    main()
