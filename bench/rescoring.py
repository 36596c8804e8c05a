#!/usr/bin/env python
"""Re-scoring a second model on the 590 IU-Xray references: how much the persistent cache saves.

Workload: the 590 IU-Xray test findings (ReXrank split) as references. Model A's report for study i is the
reference of study i+1 with its sentences in reverse order, each ending " ."; model B's is the reference of study
i+2 with its first sentence moved to the end and each sentence starting lower-case — realistic report texts of the
references' own length, whose sentences differ from every reference's and from each other's, so no per-text or
per-sentence result is shared by accident and run 2's hypothesis-side work equals run 1's.

For each model-backed metric in this build (stand-in weights: plumbing and timing only, never real numbers):
1. first run:  model A, empty cache;
2. second run: model B, the cache left by run 1 (reference-side per-text results are reused);
3. control:    model B, empty cache (what the second run would cost without the cache).
Each run is its own process (fresh imports, models loaded inside the timed region, as a user's run does).
Reported: CPU time of `evaluate()` (model load + scoring + statistics, after an untimed warm-up run has paid the imports; CPU time because this shared machine's
wall clock depends on its other tenants; wall time is printed too) and the ratios run2/run1 and run2/control.

Usage: .venv/bin/python bench/rescoring.py [--size small|real] [--metrics bertscore,semb,ratescore,radgraph]
       [--threads 2] [--device cpu] [--standins DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rexrank.evaluation.defaults import DEFAULT_RESAMPLES

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"
CANDIDATES = ("bertscore", "semb", "radgraph", "ratescore", "green")


def workload(path: Path):
    data = json.loads(path.read_text())
    ids = [i for i in data if data[i].get("section_findings")]
    refs = [data[i]["section_findings"] for i in ids]
    n = len(ids)

    def sentences(text: str) -> list[str]:
        return [p.strip() for p in text.split(".") if p.strip()]

    # Both models' reports keep the reference texts' length (same words, so the same tokens give or take case), and
    # every sentence differs from the references' and the other model's (RaTEScore works sentence by sentence, so a
    # reused sentence would be reused work): A reverses the sentence order and writes " ." endings; B moves the first
    # sentence last and lower-cases each sentence's first letter.
    model_a = [" ".join(s + " ." for s in reversed(sentences(refs[(k + 1) % n]))) for k in range(n)]
    model_b = [" ".join(s[:1].lower() + s[1:] + "." for s in sentences(refs[(k + 2) % n])[1:]
                        + sentences(refs[(k + 2) % n])[:1]) for k in range(n)]
    return ids, refs, {"a": model_a, "b": model_b}


def model_args(name: str, paths: dict[str, str]) -> tuple[dict, dict]:
    if name == "semb":
        return {"semb": paths["semb"]}, {"semb": {"backbone": paths["semb_backbone"]}}
    if name == "ratescore":
        return {"ratescore": str(Path(paths["ratescore_ner"]).parent)}, {}
    return {name: paths[name]}, {}


def worker(args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    from rexrank.evaluation.harness import ScoreOptions, evaluate
    from rexrank.evaluation.inputs import Inputs

    ids, refs, models = workload(Path(args.data))
    paths = json.loads(Path(args.paths).read_text())
    model_paths, configs = model_args(args.worker, paths)
    inputs = Inputs(ids, models[args.model], refs)
    # Imports (transformers' lazy modules above all) are a per-process constant that no cache can save: a warm-up on
    # two throwaway pairs, uncached, pays them before the timed run, which still loads its models from disk.
    warm = ScoreOptions(metrics=[args.worker], model_paths=model_paths, metric_configs=configs, device=args.device,
                        use_cache=False, resamples=10)
    evaluate(Inputs(["w1", "w2"], ["warm up one.", "warm up two."], ["warm up three.", "warm up four."]),
             model="warm-up", track="findings", options=warm)
    options = ScoreOptions(metrics=[args.worker], model_paths=model_paths, metric_configs=configs,
                           device=args.device, cache_dir=args.cache, resamples=DEFAULT_RESAMPLES)
    start, cpu = time.perf_counter(), time.process_time()
    result = evaluate(inputs, model=args.model, track="findings", options=options)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    from rexrank.evaluation.cache import ScoreCache

    texts = ScoreCache(args.cache).stats()["texts"]  # per-text results in the cache after this run
    print(json.dumps({"seconds": elapsed, "cpu_seconds": cpu, "texts_after": texts, "stats": result.stats[args.worker],
                      "mean": result.results["metrics"][args.worker]["mean"]}))


def run_worker(metric: str, model: str, cache: Path, paths_file: Path, args) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, __file__, "--worker", metric, "--model", model, "--cache", str(cache), "--paths",
           str(paths_file), "--threads", str(args.threads), "--device", args.device, "--data", str(args.data)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{metric}/{model} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="small", choices=("small", "real"))
    parser.add_argument("--metrics", default=None, help="comma-separated; default: every model-backed metric "
                                                        "present except green")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--standins", default=None, help="reuse stand-ins built here (else a temp dir)")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--paths", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    from rexrank.metrics import REGISTRY
    from rexrank.testing import standins

    present = []
    for name in CANDIDATES:
        try:
            REGISTRY.cls(name)
            present.append(name)
        except (ImportError, AttributeError):
            print(f"skipped {name}: not implemented in this checkout", file=sys.stderr)
    metrics = args.metrics.split(",") if args.metrics else [m for m in present if m != "green"]
    root = Path(args.standins or tempfile.mkdtemp(prefix="rexrank-standins-"))
    paths: dict[str, str] = {}
    for name in metrics:
        paths.update(standins.build(root / f"{args.size}-{name}", args.size, [name], seed=0))
    paths_file = root / "paths.json"
    paths_file.write_text(json.dumps(paths))
    n = len(workload(Path(args.data))[0])
    print(f"{n} IU-Xray references; stand-ins: {args.size}; device {args.device}; {args.threads} threads; "
          f"median of {args.repeats}\n")
    print("| Metric | First run (A, empty cache) | Second run (B, warm cache) | Control (B, empty cache) "
          "| Second / first | Second / control |")
    print("|---|---:|---:|---:|---:|---:|")
    totals = {k: [0.0, 0.0] for k in ("first", "second", "control")}
    work: dict[str, tuple[int, int, int]] = {}
    for metric in metrics:
        runs = {k: [] for k in totals}
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as shared, tempfile.TemporaryDirectory() as fresh:
                runs["first"].append(run_worker(metric, "a", Path(shared), paths_file, args))
                runs["second"].append(run_worker(metric, "b", Path(shared), paths_file, args))
                runs["control"].append(run_worker(metric, "b", Path(fresh), paths_file, args))
                assert runs["second"][-1]["stats"]["cached"] == 0, "model B's pairs must be new"
        med = {k: (statistics.median(r["cpu_seconds"] for r in v), statistics.median(r["seconds"] for r in v))
               for k, v in runs.items()}
        # Per-text results computed by each run (deterministic, unlike the clock): what the cache saves in work.
        work[metric] = (runs["first"][0]["texts_after"],
                        runs["second"][0]["texts_after"] - runs["first"][0]["texts_after"],
                        runs["control"][0]["texts_after"])
        for k in totals:
            totals[k][0] += med[k][0]
            totals[k][1] += med[k][1]
        print(_row(metric, med))
    print(_row("**all**", totals))
    print("\nPer-text results computed (cache entries written: CheXbert outputs, BERTScore reference embeddings, "
          "RadGraph annotations, RaTEScore entities and entity embeddings):\n")
    print("| Metric | First run | Second run | Control | Second / first |")
    print("|---|---:|---:|---:|---:|")
    for metric, (first, second, control) in work.items():
        print(f"| {metric} | {first} | {second} | {control} | {second / first:.2f} |" if first else
              f"| {metric} | {first} | {second} | {control} | n/a |")


def _row(label: str, med) -> str:
    cells = [f"{med[k][0]:.1f} s CPU ({med[k][1]:.1f} s wall)" for k in ("first", "second", "control")]
    return (f"| {label} | " + " | ".join(cells) + f" | {med['second'][0] / med['first'][0]:.2f} | "
            f"{med['second'][0] / med['control'][0]:.2f} |")

if __name__ == "__main__":
    main()
