#!/usr/bin/env python
"""Reward-call latency: a rexrank reward on 64 completions with a warm reference cache vs the reference packages.

Workload (one GRPO step's reward call): 16 prompts x 4 generations = 64 completions, so 16 distinct references,
each repeated 4 times; the completions are 64 other IU-Xray reports, new at every timed call (completions of a
training run rarely recur). Models: random stand-ins (``--size real``: distilroberta-base and BERT-base shapes).

- ours: ``rexrank.rewards.reward(metric, model=..., device="cpu")``, warmed by one call on other completions for
  the same references (that call loads the model and fills the reference cache; it is reported as "cold"), then
  timed calls, each on 64 completions it has not seen;
- reference: the same pairs scored the way the packages offer it, model already loaded, nothing cached between
  calls: bert-score 0.3.13 ``BERTScorer.score`` (built as ReXrank builds it) for ``bertscore``; radgraph 0.1.18
  ``F1RadGraph(reward_level="partial")``, the package's own RL reward, for ``radgraph_partial``.

Each side runs in its own process (fresh imports), sides alternate between repeats, OMP/MKL/torch threads pinned
equally, medians over every timed call. Usage:

    .venv/bin/python bench/rewards.py [--repeats 3] [--calls 3] [--threads 1] [--size real] [--only bertscore,radgraph]

The same file is the worker in either virtualenv (``--worker``), so it imports only the standard library at module
level.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The virtualenv of each side and the stand-in cache are classic_metrics.py's (same folder; stdlib-only imports).
from classic_metrics import _build_standins, _python  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"
METRICS = ("bertscore", "radgraph")
# What each row compares: (rexrank registry name, reference package and entry point).
ROWS = {"bertscore": ("bertscore", "bert-score 0.3.13 BERTScorer.score"),
        "radgraph": ("radgraph_partial", "radgraph 0.1.18 F1RadGraph(reward_level='partial')")}
PROMPTS, GENERATIONS = 16, 4


# --------------------------------------------------------------------------------------------- worker side
def _ours(metric: str, models: dict, refs: list[str], batches: list[list[str]]):
    from rexrank import rewards

    fn = rewards.reward(ROWS[metric][0], model=models[metric], device="cpu")
    latencies, values = [], []
    for completions in batches:
        out = fn(prompts=[""] * len(completions), completions=completions, reference=refs)
        latencies.append(fn.stats.last_latency_s)
        values.append(out)
    return latencies, values


def _reference(metric: str, models: dict, refs: list[str], batches: list[list[str]]):
    import contextlib
    import io
    import re
    import warnings

    warnings.simplefilter("ignore")
    latencies, values = [], []
    if metric == "bertscore":
        import bert_score
        from bert_score import BERTScorer

        baseline = os.path.join(os.path.dirname(bert_score.__file__), "rescale_baseline", "en", "distilroberta-base.tsv")
        scorer = BERTScorer(model_type=models[metric], num_layers=5, batch_size=64, lang="en",
                            rescale_with_baseline=True, baseline_path=baseline, idf=False)
        # The model loads at construction; the first call still pays one-time lazy work, like our cold call.
        for completions in batches:
            start = time.perf_counter()
            _, _, f1 = scorer.score([re.sub(r" +", " ", t) for t in completions], [re.sub(r" +", " ", t) for t in refs])
            latencies.append(time.perf_counter() - start)
            values.append(f1.tolist())
        return latencies, values
    from radgraph import F1RadGraph

    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(models[metric]), os.path.join(tmp, "radgraph"))
        with contextlib.redirect_stdout(io.StringIO()):
            scorer = F1RadGraph(reward_level="partial", model_type="radgraph", model_cache_dir=tmp, cuda=-1)
            for completions in batches:
                start = time.perf_counter()
                _, rewards_, _, _ = scorer(refs=refs, hyps=completions)
                latencies.append(time.perf_counter() - start)
                values.append([float(v) for v in rewards_])
    return latencies, values


def worker(side: str, metric: str, job: Path) -> None:
    # Python put bench/ first on sys.path; bench scripts named like packages (bench/radgraph.py) must not shadow them.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    spec = json.loads(job.read_text())
    import torch

    torch.set_num_threads(spec["threads"])
    fn = _ours if side == "ours" else _reference
    latencies, values = fn(metric, spec["models"], spec["refs"], spec["batches"])
    Path(spec["out"]).write_text(json.dumps({"latencies": latencies, "values": values,
                                             "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


# --------------------------------------------------------------------------------------------- driver side
def _measure(side: str, metric: str, models: dict, refs: list[str], batches: list[list[str]], threads: int,
             workdir: Path) -> dict:
    job, out = workdir / f"job-{side}-{metric}.json", workdir / f"out-{side}-{metric}.json"
    job.write_text(json.dumps({"models": models, "refs": refs, "batches": batches, "threads": threads,
                               "out": str(out)}))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run([_python(side), str(Path(__file__).resolve()), "--worker", side, metric, str(job)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{side} {metric} failed:\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def workload(data: Path, calls: int) -> tuple[list[str], list[list[str]]]:
    """(64 references: 16 distinct x 4 generations, [warm-up batch, then one batch per timed call])."""
    reports = list(dict.fromkeys(study["report"] for study in json.loads(data.read_text()).values()))
    distinct_refs = reports[:PROMPTS]
    refs = [r for r in distinct_refs for _ in range(GENERATIONS)]
    pool = reports[PROMPTS:]
    size = PROMPTS * GENERATIONS
    if len(pool) < size * (calls + 1):
        raise SystemExit(f"{data} has {len(pool)} spare distinct reports; {size * (calls + 1)} are needed for "
                         f"{calls} timed calls: lower --calls")
    return refs, [pool[i * size:(i + 1) * size] for i in range(calls + 1)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--repeats", type=int, default=3, help="processes per side (sides alternate)")
    parser.add_argument("--calls", type=int, default=3, help="timed reward calls per process, after the warm-up")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default=",".join(METRICS))
    parser.add_argument("--size", default="real", choices=("real", "small"), help="small: a quick smoke run only")
    parser.add_argument("--standins", default=str(Path(tempfile.gettempdir()) / "rexrank-bench-standins"))
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "rewards.md"))
    parser.add_argument("--worker", nargs=3, metavar=("SIDE", "METRIC", "JOB"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker[0], args.worker[1], Path(args.worker[2]))
        return 0

    refs, batches = workload(Path(args.data), args.calls)
    models = _build_standins(Path(args.standins), list(METRICS), args.size)
    metrics = [m.strip() for m in args.only.split(",") if m.strip()]
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for metric in metrics:
            runs = {"ours": [], "reference": []}
            for rep in range(args.repeats):
                for side in (("ours", "reference") if rep % 2 == 0 else ("reference", "ours")):
                    result = _measure(side, metric, models, refs, batches, args.threads, Path(tmp))
                    runs[side].append(result)
                    print(f"{metric:10s} {side:9s} rep {rep}: cold {result['latencies'][0]:7.3f}s  warm "
                          + " ".join(f"{s:7.3f}s" for s in result["latencies"][1:]), flush=True)
            ours, ref = runs["ours"][0]["values"], runs["reference"][0]["values"]
            diff = max(abs(a - b) for x, y in zip(ours, ref) for a, b in zip(x, y))
            rows[metric] = {"runs": runs, "max_abs_diff": diff}
    text = render(rows, args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


def render(rows: dict, args) -> str:
    lines = [
        "# Reward call latency: rexrank.rewards vs the reference packages",
        "",
        f"One GRPO reward call: {PROMPTS} prompts x {GENERATIONS} generations = {PROMPTS * GENERATIONS} completions "
        f"(IU-Xray reports, new at every call) against {PROMPTS} distinct references. Ours: warm reference cache "
        "(one earlier call on other completions for the same references); reference: the package scoring the same "
        "pairs, model loaded, nothing kept between calls. Random stand-ins, size "
        f"`{args.size}`; {args.threads} thread(s) per side, pinned; {args.repeats} processes per side, alternating; "
        f"{args.calls} timed calls each; medians over all timed calls. Machine: {platform.machine()}, "
        f"{os.cpu_count()} CPU cores shared with other jobs while measured (noisy). Generated by `bench/rewards.py`.",
        "",
        "| metric (ours) | reference | ours warm call s | ref call s | speed-up | ours cold call s | ours peak MB "
        "| ref peak MB | max abs diff |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for metric, row in rows.items():
        warm = [s for r in row["runs"]["ours"] for s in r["latencies"][1:]]
        cold = [r["latencies"][0] for r in row["runs"]["ours"]]
        ref = [s for r in row["runs"]["reference"] for s in r["latencies"][1:]]
        peak = {side: statistics.median(r["peak_rss_mb"] for r in row["runs"][side]) for side in row["runs"]}
        w, c, r = statistics.median(warm), statistics.median(cold), statistics.median(ref)
        lines.append(f"| `{ROWS[metric][0]}` | {ROWS[metric][1]} | {w:.3f} | {r:.3f} | {r / w:.2f}x | {c:.3f} | "
                     f"{peak['ours']:,.0f} | {peak['reference']:,.0f} | {row['max_abs_diff']:.1e} |")
    lines.append("")
    for metric, row in rows.items():
        lines.append(f"- raw latencies of `{ROWS[metric][0]}`, s per call (per process; first = cold): ours "
                     + json.dumps([[round(s, 3) for s in r["latencies"]] for r in row["runs"]["ours"]])
                     + "; reference "
                     + json.dumps([[round(s, 3) for s in r["latencies"]] for r in row["runs"]["reference"]]))
    lines += [
        "- cold: our first call (loads the model, computes the 16 references' artefacts); every later call computes "
        "only the completions' side. The reference packages have no cache: every call runs both sides.",
        "- max abs diff: largest difference between the two sides' rewards (first process, every call): the same "
        "numbers, so the speed-up is not bought with different values.",
        "- Stand-ins have random weights: timings reflect model shapes, not real scores.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
