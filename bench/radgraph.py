"""RadGraph annotation speed: rexrank vs radgraph 0.1.18 on IU-Xray test reports, real-sized stand-in archive.

    .venv/bin/python bench/radgraph.py [--subset 60] [--repeats 3] [--threads 2] [--standin DIR] [--device cuda]

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
- The BERT forwards of both sides are timed and their FLOPs counted; on CPU the fp32 matrix-multiply peak of this
  machine at the same thread count is measured too, which bounds what any exact implementation (same fp32
  encoder FLOPs per report) can gain over the reference here.
- ``--device cuda``: both sides on the first GPU (the reference with ``RadGraph(cuda=0)``).

Committed results: bench/results/radgraph.md (``--threads 1``) and bench/results/radgraph-2threads.md
(``--threads 2 --out bench/results/radgraph-2threads.md``).
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


def _encoder_clock():
    """The reference runner's BertModel timer (tests/reference/radgraph_ref.py), so both sides count alike."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("radgraph_ref", REPO / "tests" / "reference" / "radgraph_ref.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EncoderClock()


def gemm_peak(threads: int) -> float:
    """Best fp32 GFLOP/s of this CPU on the encoder's largest matrix multiply (128 rows x 768 -> 3072)."""
    import torch

    torch.set_num_threads(threads)
    x, w = torch.randn(128, 768), torch.randn(3072, 768)
    best = float("inf")
    with torch.inference_mode():
        for _ in range(5):
            torch.nn.functional.linear(x, w)
        for _ in range(7):
            start = time.perf_counter()
            for _ in range(20):
                torch.nn.functional.linear(x, w)
            best = min(best, (time.perf_counter() - start) / 20)
    return 2 * 128 * 768 * 3072 / best / 1e9


def worker(args) -> None:
    """Child process: load our annotator, time one annotation pass, print JSON."""
    import torch

    torch.set_num_threads(args.threads)
    if args.mode == "gemm":
        print(json.dumps({"gflops": gemm_peak(args.threads)}))
        return
    reports = json.loads(Path(args.reports).read_text())
    clock = _encoder_clock()
    if args.mode == "metric":  # the metric path: per_text deduplicates identical reports
        from rexrank.metrics.radgraph import RadGraphCombined

        metric = RadGraphCombined(model=args.archive, device=args.device, batch_size=args.batch_size)
        metric._annotator()  # load outside the timed region
        clock.reset()
        start = time.perf_counter()
        annotations = metric.annotate(reports)
    else:
        from rexrank.metrics.radgraph.inference import Annotator

        annotator = Annotator(args.archive, device=args.device)
        # "bf16": what lower precision would buy and break (not an option of rexrank: annotations change)
        low = torch.autocast(args.device.split(":")[0], dtype=torch.bfloat16, enabled=args.mode == "bf16")
        clock.reset()
        start = time.perf_counter()
        with low:
            annotations = annotator.annotate(reports, batch_size=args.batch_size)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "n": len(reports), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "encoder": {"seconds": clock.seconds, "flops": clock.flops, "wordpieces": clock.wordpieces}}
    if args.dump:
        Path(args.dump).write_text(json.dumps(annotations))
    print(json.dumps(out))


def _env(threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def run_ours(archive, reports_file, threads, batch_size, mode="annotator", dump=None, device="cpu") -> dict:
    cmd = [sys.executable, __file__, "--worker", "--mode", mode, "--archive", str(archive), "--reports",
           str(reports_file), "--threads", str(threads), "--batch-size", str(batch_size), "--device", device]
    cmd += ["--dump", dump] if dump else []
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(threads), check=False)
    if proc.returncode:
        raise SystemExit(f"rexrank worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_reference(archive, reports, threads, device="cpu") -> dict:
    python = REPO / ".venv-ref" / "bin" / "python"
    payload = {"jobs": [{"archive": archive, "model_type": "radgraph", "reports": reports}], "threads": threads,
               "cuda": 0 if device.startswith("cuda") else -1, "time_encoder": True}
    proc = subprocess.run([str(python), str(REPO / "tests" / "reference" / "radgraph_ref.py")],
                          input=json.dumps(payload), capture_output=True, text=True, env=_env(threads), check=False)
    if proc.returncode:
        raise SystemExit(f"reference failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    result = out["results"][0]
    return {"seconds": result["seconds"], "n": len(reports), "peak_rss_mb": out["peak_rss_mb"],
            "annotations": result["annotations"], "encoder": result["encoder"]}


def _threads(n: int) -> str:
    return f"{n} torch thread" + ("s" if n != 1 else "")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name(0)


def _encoder_row(name: str, run: dict) -> str:
    enc = run["encoder"]
    return (f"| {name} | {enc['wordpieces'] / run['n']:.1f} | {enc['seconds'] / run['seconds']:.0%} | "
            f"{enc['flops'] / enc['seconds'] / 1e9:.0f} |")


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
    parser.add_argument("--device", default="cpu", help="cpu or cuda (both sides)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "radgraph.md"))
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0

    if args.device != "cpu":
        import torch

        if not args.device.startswith("cuda") or not torch.cuda.is_available():
            parser.error(f"--device {args.device}: use cpu, or cuda on a machine where torch sees a GPU")
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
            ref_runs.append(run_reference(archive, subset, args.threads, args.device))
            dump = str(Path(tmp) / f"ours{r}.json")
            our_runs.append(run_ours(archive, subset_file, args.threads, args.batch_size, dump=dump,
                                     device=args.device))
            print(f"repeat {r + 1}: reference {ref_runs[-1]['seconds']:.1f} s, rexrank {our_runs[-1]['seconds']:.1f} s",
                  flush=True)
        ours_annotations = json.loads(Path(dump).read_text())
        compared = [(a, b) for a, b in zip(ref_runs[-1]["annotations"], ours_annotations) if "error" not in a]
        identical = sum(a == b for a, b in compared)
        full = run_ours(archive, all_file, args.threads, args.batch_size, device=args.device)
        full_metric = run_ours(archive, all_file, args.threads, args.batch_size, mode="metric", device=args.device)
        bs1 = run_ours(archive, subset_file, args.threads, 1, device=args.device)
        bf16_dump = str(Path(tmp) / "bf16.json")
        bf16 = run_ours(archive, subset_file, args.threads, args.batch_size, mode="bf16", dump=bf16_dump,
                        device=args.device)
        bf16_same = sum(a == b for a, b in zip(json.loads(Path(bf16_dump).read_text()), ours_annotations))
        cpu = args.device == "cpu"
        peak = statistics.median(run_ours(archive, subset_file, args.threads, 1, mode="gemm")["gflops"]
                                 for _ in range(3)) if cpu else None

    def rate(run):
        return run["n"] / run["seconds"]

    ref_rate = statistics.median(rate(x) for x in ref_runs)
    our_rate = statistics.median(rate(x) for x in our_runs)
    entities = sum(len(a["entities"]) for a in ours_annotations) / len(ours_annotations)
    ref_mid = sorted(ref_runs, key=lambda run: run["seconds"])[len(ref_runs) // 2]
    our_mid = sorted(our_runs, key=lambda run: run["seconds"])[len(our_runs) // 2]
    distinct = len(set(reports))
    lines = [
        "# RadGraph annotation: rexrank vs radgraph 0.1.18",
        "",
        f"Command: `.venv/bin/python bench/radgraph.py --subset {args.subset} --repeats {args.repeats} "
        f"--threads {args.threads} --batch-size {args.batch_size}"
        + ("" if cpu else f" --device {args.device}") + "`  ",
        f"Machine: {platform.machine()} ({_cpu_name()}), {os.cpu_count()} CPU cores"
        + ("" if cpu else f", {_gpu_name()}") + f"; {_threads(args.threads)} on both sides.  ",
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
        "",
        "## Where the time goes (median run of each side, same reports)",
        "",
        "| side | wordpieces/report through the encoder | encoder share of the time | encoder GFLOP/s |",
        "|---|---|---|---|",
        _encoder_row("radgraph 0.1.18", ref_mid), _encoder_row(f"rexrank, batch {args.batch_size}", our_mid),
        "",
        "(rexrank's count includes the padding of its batches.)",
    ]
    if peak:
        floor = ref_mid["encoder"]["flops"] / (peak * 1e9)  # the reference's encoder work at this CPU's best rate
        bound = ref_mid["seconds"] / floor
        lines += [
            "",
            f"This CPU's best fp32 matrix multiply at {_threads(args.threads)} (128 x 768 -> 3072, best of 7x20): "
            f"**{peak:.0f} GFLOP/s**. Identical annotations need the reference's encoder FLOPs per distinct report "
            "(every word's last-layer vector feeds the span scorer) in fp32 (see the bf16 check below), so no "
            "exact implementation can beat the reference here by more than "
            f"**{bound:.1f}x** per report (its whole time over its encoder work at that peak), or "
            f"{bound * len(reports) / distinct:.1f}x on these {len(reports)} reports when the {distinct} distinct "
            "texts are annotated once each.",
        ]
    lines += [
        "",
        f"Lower precision is not a way out: the same rexrank run under bf16 autocast took {bf16['seconds']:.1f} s "
        f"({our_mid['seconds'] / bf16['seconds']:.1f}x faster than fp32) but only {bf16_same} of {len(subset)} "
        "annotations stayed identical to fp32 (stand-in weights; rexrank has no such option for that reason).",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
