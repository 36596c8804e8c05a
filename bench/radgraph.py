"""RadGraph annotation speed: rexrank vs radgraph 0.1.18 on IU-Xray test reports, real-sized stand-in archive.

    .venv/bin/python bench/radgraph.py [--subset 60] [--repeats 3] [--threads 2] [--standin DIR]

- Reports: the 590 studies of ../shared/data/iu_xray/ReXRank_IUXray_test.json, field "report"
  (findings + impression, as the findings+impression track scores them).
- Model: a BERT-base-sized random-weight RadGraph archive (rexrank.testing.standin_radgraph, size "real").
- Same run, alternating: each repeat starts a fresh reference process (radgraph 0.1.18 in .venv-ref, batch 1 as
  it always runs) and a fresh rexrank process on the same reports; the median of the repeats is reported.
  The reference is timed on an evenly spaced subset (every k-th report) because it needs seconds per report on
  this machine; rexrank is timed on the same subset (the ratio) and once on all 590 reports.
- Both sides: torch.set_num_threads(threads), OMP_NUM_THREADS=threads; model loading excluded from the time;
  peak memory = ru_maxrss of each process (model loading included). On a shared machine prefer --threads 1:
  with 2 threads and other jobs on the cores, both sides (the package's batch-1 small matrices most) lose
  several-fold to thread contention and the ratio measures the contention, not the code.
- Annotations of both sides are compared on the subset (parity at real size).
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

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"


def worker(args) -> None:
    """Child process: load our annotator, time one annotation pass, print JSON."""
    import torch

    torch.set_num_threads(args.threads)
    reports = json.loads(Path(args.reports).read_text())
    if args.mode == "metric":  # the metric path: per_text deduplicates identical reports
        from rexrank.metrics.radgraph import RadGraphCombined

        metric = RadGraphCombined(model=args.archive, device="cpu", batch_size=args.batch_size)
        metric._annotator()  # load outside the timed region
        start = time.perf_counter()
        annotations = metric.annotate(reports)
    else:
        from rexrank.metrics.radgraph.inference import Annotator

        annotator = Annotator(args.archive, device="cpu")
        start = time.perf_counter()
        annotations = annotator.annotate(reports, batch_size=args.batch_size)
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "n": len(reports), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if args.dump:
        Path(args.dump).write_text(json.dumps(annotations))
    print(json.dumps(out))


def _env(threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def run_ours(archive, reports_file, threads, batch_size, mode="annotator", dump=None) -> dict:
    cmd = [sys.executable, __file__, "--worker", "--mode", mode, "--archive", archive, "--reports", reports_file,
           "--threads", str(threads), "--batch-size", str(batch_size)] + (["--dump", dump] if dump else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(threads), check=False)
    if proc.returncode:
        raise SystemExit(f"rexrank worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_reference(archive, reports, threads) -> dict:
    python = REPO / ".venv-ref" / "bin" / "python"
    payload = {"jobs": [{"archive": archive, "model_type": "radgraph", "reports": reports}], "threads": threads}
    proc = subprocess.run([str(python), str(REPO / "tests" / "reference" / "radgraph_ref.py")],
                          input=json.dumps(payload), capture_output=True, text=True, env=_env(threads), check=False)
    if proc.returncode:
        raise SystemExit(f"reference failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"seconds": out["results"][0]["seconds"], "n": len(reports), "peak_rss_mb": out["peak_rss_mb"],
            "annotations": out["results"][0]["annotations"]}


def _secs(runs) -> str:
    return ", ".join(f"{run['seconds']:.1f}" for run in runs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="annotator", help=argparse.SUPPRESS)
    parser.add_argument("--archive", help=argparse.SUPPRESS)
    parser.add_argument("--reports", help=argparse.SUPPRESS)
    parser.add_argument("--dump", help=argparse.SUPPRESS)
    parser.add_argument("--subset", type=int, default=60, help="reports timed on both sides (evenly spaced)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--standin", help="existing stand-in folder (built with size real) to reuse")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "radgraph.md"))
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0

    studies = json.loads(REPORTS.read_text())
    reports = [study["report"] for study in studies.values()]
    step = max(1, len(reports) // args.subset)
    subset = reports[::step][:args.subset]
    with tempfile.TemporaryDirectory() as tmp:
        if args.standin:
            archive = str(Path(args.standin) / "radgraph")
        else:
            from rexrank.testing.standin_radgraph import build

            t = time.perf_counter()
            archive = build(Path(tmp) / "standin", "real", 0)["radgraph"]
            print(f"built real-size stand-in in {time.perf_counter() - t:.0f} s", flush=True)
        subset_file, all_file = Path(tmp) / "subset.json", Path(tmp) / "all.json"
        subset_file.write_text(json.dumps(subset))
        all_file.write_text(json.dumps(reports))

        ref_runs, our_runs = [], []
        for r in range(args.repeats):
            ref_runs.append(run_reference(archive, subset, args.threads))
            dump = str(Path(tmp) / f"ours{r}.json")
            our_runs.append(run_ours(archive, str(subset_file), args.threads, args.batch_size, dump=dump))
            print(f"repeat {r + 1}: reference {ref_runs[-1]['seconds']:.1f} s, rexrank {our_runs[-1]['seconds']:.1f} s",
                  flush=True)
        ours_annotations = json.loads(Path(dump).read_text())
        compared = [(a, b) for a, b in zip(ref_runs[-1]["annotations"], ours_annotations) if "error" not in a]
        identical = sum(a == b for a, b in compared)
        full = run_ours(archive, str(all_file), args.threads, args.batch_size)
        full_metric = run_ours(archive, str(all_file), args.threads, args.batch_size, mode="metric")
        bs1 = run_ours(archive, str(subset_file), args.threads, 1)

    def rate(run):
        return run["n"] / run["seconds"]

    ref_rate = statistics.median(rate(x) for x in ref_runs)
    our_rate = statistics.median(rate(x) for x in our_runs)
    entities = sum(len(a["entities"]) for a in ours_annotations) / len(ours_annotations)
    lines = [
        "# RadGraph annotation: rexrank vs radgraph 0.1.18",
        "",
        f"Command: `.venv/bin/python bench/radgraph.py --subset {args.subset} --repeats {args.repeats} "
        f"--threads {args.threads} --batch-size {args.batch_size}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores shared with other jobs while measured; "
        f"{args.threads} torch threads on both sides.  ",
        "Model: BERT-base-sized random-weight RadGraph archive (`rexrank.testing.standin_radgraph`, size real; "
        f"{entities:.1f} entities per report). Random weights: this measures speed and parity, not RadGraph's "
        "real annotations.  ",
        "Reports: IU-Xray test, field `report` (findings + impression).",
        "",
        f"| run | reports | reports/s (median of {args.repeats}) | all runs (s) | peak RSS MiB |",
        "|---|---|---|---|---|",
        f"| radgraph 0.1.18 (batch 1) | {len(subset)} (every {step}th) | {ref_rate:.3f} | "
        f"{_secs(ref_runs)} | {max(x['peak_rss_mb'] for x in ref_runs):.0f} |",
        f"| rexrank, batch {args.batch_size} | {len(subset)} (same) | {our_rate:.3f} | "
        f"{_secs(our_runs)} | {max(x['peak_rss_mb'] for x in our_runs):.0f} |",
        f"| rexrank, batch 1 | {len(subset)} (same) | {rate(bs1):.3f} | {bs1['seconds']:.1f} | {bs1['peak_rss_mb']:.0f} |",
        f"| rexrank, batch {args.batch_size} | all {len(reports)} | {rate(full):.3f} | {full['seconds']:.1f} | "
        f"{full['peak_rss_mb']:.0f} |",
        f"| rexrank metric path (`annotate`, once per distinct text: {len(set(reports))} of {len(reports)}) | "
        f"all {len(reports)} | {rate(full_metric):.3f} | {full_metric['seconds']:.1f} | {full_metric['peak_rss_mb']:.0f} |",
        "",
        f"**Speed-up, same reports, same run: {our_rate / ref_rate:.1f}x** (rexrank batch {args.batch_size} vs "
        f"radgraph 0.1.18, reports/s). Through the metric on all {len(reports)} reports, where each distinct text "
        f"is annotated once: {rate(full_metric) / ref_rate:.1f}x the reference's reports/s.",
        "",
        f"rexrank at batch 1 runs at {rate(bs1) / ref_rate:.2f}x the reference: per report both compute the same "
        "BERT-base forward pass, which dominates. Batching adds what bigger matrix multiplies gain on this CPU "
        "(little on one thread, more with several threads); annotating duplicate reports once adds the rest.",
        "",
        f"Parity at real size: {identical} of {len(compared)} subset annotations identical to radgraph 0.1.18 "
        f"(reports the package cannot annotate: {len(ref_runs[-1]['annotations']) - len(compared)}).",
        "",
        "reports/s = reports / annotation time in a fresh process after the model is loaded. The two sides run "
        "alternately so background load hits both alike; absolute numbers move with that load, the ratio less so.",
    ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
