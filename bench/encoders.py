#!/usr/bin/env python
"""Encoder metrics against their reference packages, and operator dispatches per text (issue 52).

    .venv/bin/python bench/encoders.py [--pairs 16] [--repeats 3] [--threads 1] [--only bertscore,semb,radgraph]
    .venv/bin/python bench/encoders.py --dispatch [--src OTHER_TREE/src]   # aten calls per text, small stand-ins

**Timings** (the default): random-weight stand-ins of the real sizes, in the real file layouts
(``rexrank.testing.standins``, size "real", from the stand-in cache): distilroberta-base-sized for BERTScore,
BERT-base-sized for CheXbert (SembScore) and for RadGraph's encoder (its DyGIE heads calibrated as in the tests).
Each side scores the same ``--pairs`` pairs of distinct IU-Xray test reports ("report" field) on the same files:

| metric | rexrank side | reference side (.venv-ref, transformers 4.57) |
|---|---|---|
| bertscore | ``metrics.get("bertscore").score(hyps, refs)`` | bert-score 0.3.13 ``BERTScorer(...).score`` as CXR-Report-Metric calls it (tests/reference/bertscore_ref.py) |
| semb | ``metrics.get("semb").score(hyps, refs)`` | f1chexbert 0.0.2 ``get_label`` per distinct text (its one pass per report), [CLS] read by a hook, cosine per pair (tests/reference/semb_f1chexbert_ref.py) |
| radgraph | ``metrics.get("radgraph").annotate(texts)`` | radgraph 0.1.18 ``RadGraph(...)([report])`` per distinct text (tests/reference/radgraph_ref.py) |

Every side runs in a fresh process with ``torch.set_num_threads(--threads)`` and ``OMP_NUM_THREADS`` /
``MKL_NUM_THREADS`` at the same value, loads its model and makes one warm-up call on other reports outside the
timed region, then times one call: the process's CPU seconds (all threads) and wall seconds. Sides alternate
(rexrank first on even repeats, the reference first on odd ones); medians of ``--repeats`` are printed with the
ratio rexrank / reference. These are CPU numbers on stand-ins: speed and memory are real-sized, values are not.

**Dispatches** (``--dispatch``): the aten operator calls (torch profiler, CPU) of one ``score()`` over 128 pairs of
256 distinct IU-Xray reports at ``batch_size`` 64 (the CUDA default), per text, on the small stand-ins (the size the
issue-52 counts used; the encoder's share grows with its layers). ``--src`` runs the rexrank side from another
tree's ``src`` (e.g. ``git archive d7d1e7e src | tar -x -C /tmp/before``) for before/after counts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"
REFERENCE_PYTHON = REPO / ".venv-ref" / "bin" / "python"
METRICS = ("bertscore", "semb", "radgraph")
WARM_UP = 4  # reports of the warm-up call (never among the timed ones)


def _reports() -> list[str]:
    data = json.loads(REPORTS.read_text())
    return list(dict.fromkeys(e["report"] for e in data.values() if e.get("report", "").strip()))


def _env(threads: int, src: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_EVALUATE_OFFLINE="1")
    if src:
        env["PYTHONPATH"] = src
    return env


# -- the sides, each run in a child process ---------------------------------------------------------------------------
def _peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM: Linux carries the parent's high-water mark into ru_maxrss across
    fork+exec; rexrank.testing.memory says the same, but the reference side cannot import rexrank)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(call, warm, timed) -> dict:
    call(warm)
    cpu, wall = time.process_time(), time.perf_counter()
    call(timed)
    return {"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall, "peak_rss_mb": _peak_rss_mb()}


def _ours(metric_name: str, paths: dict, warm: dict, timed: dict, batch_size: int | None) -> dict:
    import rexrank
    from rexrank import metrics

    options = {"bertscore": {"model": paths.get("bertscore")},
               "semb": {"model": paths.get("semb"), "backbone": paths.get("semb_backbone")},
               "radgraph": {"model": paths.get("radgraph")}}[metric_name]
    metric = metrics.get(metric_name, device="cpu", batch_size=batch_size, **options)
    if metric_name == "radgraph":
        out = _timed(lambda p: metric.annotate(list(dict.fromkeys(p["hyps"] + p["refs"]))), warm, timed)
    else:
        out = _timed(lambda p: metric.score(p["hyps"], p["refs"]), warm, timed)
    return {**out, "code": str(Path(rexrank.__file__).parent), "batching": metric.config().get("batching")}


def _reference(metric_name: str, paths: dict, warm: dict, timed: dict) -> dict:
    import contextlib
    import importlib.util
    import io

    def script(name):
        spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "reference" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    # This script's folder is first on sys.path, and bench/radgraph.py would shadow the package.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    if metric_name == "bertscore":
        import re

        import bert_score
        from bert_score import BERTScorer

        # tests/reference/bertscore_ref.py: CXR-Report-Metric's call, the stand-in folder as model_type.
        baseline = os.path.join(os.path.dirname(bert_score.__file__), "rescale_baseline", "en", "distilroberta-base.tsv")
        scorer = BERTScorer(model_type=paths["bertscore"], num_layers=5, batch_size=256, lang="en",
                            rescale_with_baseline=True, baseline_path=baseline, idf=False, nthreads=0, device="cpu")

        def call(p):
            scorer.score([re.sub(r" +", " ", t) for t in p["hyps"]], [re.sub(r" +", " ", t) for t in p["refs"]])
        return _timed(call, warm, timed)
    if metric_name == "semb":
        import numpy as np
        import torch

        labeler = script("semb_f1chexbert_ref").load_labeler(paths["semb"], paths["semb_backbone"])
        seen = {}
        labeler.model.dropout.register_forward_hook(lambda m, inputs, output: seen.__setitem__("cls", inputs[0]))

        def call(p):
            vectors = {}
            with torch.no_grad():
                for text in dict.fromkeys(p["refs"] + p["hyps"]):
                    labeler.get_label(text, mode="classification")
                    vectors[text] = seen["cls"][0].numpy()
            return [float((vectors[r] * vectors[h]).sum() / (np.linalg.norm(vectors[r]) * np.linalg.norm(vectors[h])))
                    for h, r in zip(p["hyps"], p["refs"])]
        return _timed(call, warm, timed)
    from radgraph import RadGraph

    folder = tempfile.mkdtemp(prefix="radgraph-ref-")
    os.symlink(os.path.abspath(paths["radgraph"]), os.path.join(folder, "radgraph"))
    with contextlib.redirect_stdout(io.StringIO()):
        model = RadGraph(model_type="radgraph", model_cache_dir=folder, cuda=-1)

    def call(p):
        with contextlib.redirect_stdout(io.StringIO()):
            for text in dict.fromkeys(p["hyps"] + p["refs"]):  # radgraph_ref.py: one report per call
                model([text])
    return _timed(call, warm, timed)


def _dispatches(metric_name: str, paths: dict, texts: list[str]) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile

    import rexrank
    from rexrank import metrics

    options = {"bertscore": {"model": paths.get("bertscore")},
               "semb": {"model": paths.get("semb"), "backbone": paths.get("semb_backbone")},
               "radgraph": {"model": paths.get("radgraph")}}[metric_name]
    metric = metrics.get(metric_name, device="cpu", batch_size=64, **options)
    metric.score(["Lungs clear."], ["Heart size normal."])  # loads the model outside the count
    half = len(texts) // 2
    with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU]) as prof:
        metric.score(texts[:half], texts[half:])
    calls = sum(1 for e in prof.events() if e.name.startswith("aten::"))
    return {"aten_calls": calls, "texts": len(texts), "per_text": calls / len(texts),
            "code": str(Path(rexrank.__file__).parent)}


def worker(args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    payload = json.loads(Path(args.payload).read_text())
    metric_name, side = args.worker.split(":")
    if side == "dispatch":
        out = _dispatches(metric_name, payload["paths"], payload["texts"])
    else:
        if side == "rexrank":
            out = _ours(metric_name, payload["paths"], payload["warm"], payload["timed"], payload["batch_size"])
        else:
            out = _reference(metric_name, payload["paths"], payload["warm"], payload["timed"])
    print(json.dumps(out))


def _run(python: str | Path, role: str, payload_file: Path, threads: int, src: str | None = None) -> dict:
    proc = subprocess.run([str(python), __file__, "--worker", role, "--payload", str(payload_file),
                           "--threads", str(threads)], capture_output=True, text=True,
                          env=_env(threads, src), check=False)
    if proc.returncode:
        raise SystemExit(f"{role} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- the parent ---------------------------------------------------------------------------------------------------------
def _standins(size: str, names) -> dict[str, str]:
    from rexrank.testing import standins

    root = standins.cache_root() or Path(tempfile.mkdtemp(prefix="standins-"))
    paths: dict[str, str] = {}
    for name in names:
        paths.update(standins.cached(root, name, size, 0))
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--payload", help=argparse.SUPPRESS)
    parser.add_argument("--pairs", type=int, default=16, help="pairs of distinct reports timed (2x as many texts)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default=",".join(METRICS), help="comma-separated: " + ", ".join(METRICS))
    parser.add_argument("--dispatch", action="store_true", help="count aten calls per text instead of timing")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="rexrank side's batch_size (default: the device's, 8 rows on CPU)")
    parser.add_argument("--src", help="the rexrank side's code: another tree's src folder (default: this one)")
    parser.add_argument("--reference-python", default=str(REFERENCE_PYTHON))
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(names) - set(METRICS))
    if unknown:
        parser.error(f"--only: unknown metric(s) {', '.join(unknown)}; choose from {', '.join(METRICS)}")
    reports = _reports()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-encoders-") as tmp:
        payload_file = Path(tmp) / "payload.json"
        if args.dispatch:
            paths = _standins("small", names)
            payload_file.write_text(json.dumps({"paths": paths, "texts": reports[:256]}))
            print(f"aten calls per text, score() over 128 pairs of 256 distinct IU-Xray reports, batch_size 64, "
                  f"small stand-ins, {args.threads} thread(s)")
            for name in names:
                out = _run(sys.executable, f"{name}:dispatch", payload_file, args.threads, args.src)
                rows.append({"metric": name, **out})
                print(f"  {name:10s} {out['per_text']:8.1f}  ({out['aten_calls']} calls; code {out['code']})")
        else:
            if not Path(args.reference_python).exists():
                raise SystemExit(f"no reference interpreter at {args.reference_python}: run `make setup-ref` or pass "
                                 "--reference-python")
            paths = _standins("real", names)
            timed = reports[WARM_UP:WARM_UP + 2 * args.pairs]
            payload_file.write_text(json.dumps({
                "paths": paths, "warm": {"hyps": reports[:WARM_UP // 2], "refs": reports[WARM_UP // 2:WARM_UP]},
                "timed": {"hyps": timed[:args.pairs], "refs": timed[args.pairs:]}, "batch_size": args.batch_size}))
            print(f"{args.pairs} pairs ({2 * args.pairs} distinct IU-Xray reports), real-size stand-ins, "
                  f"{args.threads} thread(s), {args.repeats} repeats alternated; CPU and wall seconds of one call; "
                  f"rexrank batch_size {args.batch_size or 'default'}")
            for name in names:
                runs: dict[str, list[dict]] = {"rexrank": [], "reference": []}
                for repeat in range(args.repeats):
                    order = ("rexrank", "reference") if repeat % 2 == 0 else ("reference", "rexrank")
                    for side in order:
                        python = sys.executable if side == "rexrank" else args.reference_python
                        runs[side].append(_run(python, f"{name}:{side}", payload_file, args.threads,
                                               args.src if side == "rexrank" else None))
                med = {side: {k: statistics.median(r[k] for r in found) for k in ("cpu", "wall", "peak_rss_mb")}
                       for side, found in runs.items()}
                ratio = med["rexrank"]["cpu"] / med["reference"]["cpu"]
                rows.append({"metric": name, "threads": args.threads, "pairs": args.pairs, "runs": runs,
                             "median": med, "cpu_ratio": ratio})
                for side in ("rexrank", "reference"):
                    m = med[side]
                    print(f"  {name:10s} {side:9s} CPU {m['cpu']:7.2f} s  wall {m['wall']:7.2f} s  "
                          f"peak RSS {m['peak_rss_mb']:6.0f} MB  (CPU per run: "
                          + ", ".join(f"{r['cpu']:.2f}" for r in runs[side]) + ")")
                print(f"  {name:10s} rexrank / reference CPU: {ratio:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
