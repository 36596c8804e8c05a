#!/usr/bin/env python
"""Encoder metrics against their reference packages, and operator dispatches per text (issue 52).

    .venv/bin/python bench/encoders.py [--pairs 16] [--repeats 3] [--threads 1] [--only bertscore,semb,...]
        [--old /tmp/wt-d7d1e7e/src --old /tmp/wt-afc171f/src]   # also time other trees' rexrank, same texts
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
| ratescore | ``metrics.get("ratescore").score(hyps, refs)`` | none (the RaTEScore package is not in .venv-ref): rexrank trees only |

Every side (this tree's rexrank, each ``--old`` tree's rexrank, the reference) is one process with
``torch.set_num_threads(--threads)`` and ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` at the same value; all are
started together, load their model and make one warm-up call on other reports, then wait. Repeat r hands every side
the same block r of ``--pairs`` distinct pairs (a new block each repeat, so no per-text cache helps), one side at a
time, the order rotated each repeat (alternated), and reads the CPU seconds (all threads) and wall seconds of that
call. Medians over the repeats are printed with each side's ratio to the reference and this tree's ratio to each
old tree; peak RSS is each process's VmHWM after its last call (model included). These are CPU numbers on
stand-ins: speed and memory are real-sized, values are not.

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
METRICS = ("bertscore", "semb", "radgraph", "ratescore")
NO_REFERENCE = {"ratescore"}  # no reference package in .venv-ref
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


def _serve(call, warm) -> None:
    """Warm up, say ready, then time one call per line of stdin (a JSON block of pairs) until it closes."""
    call(warm)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        block = json.loads(line)
        cpu, wall = time.process_time(), time.perf_counter()
        call(block)
        print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                          "peak_rss_mb": _peak_rss_mb()}), flush=True)


def _options(metric_name: str, paths: dict) -> dict:
    return {"bertscore": {"model": paths.get("bertscore")},
            "semb": {"model": paths.get("semb"), "backbone": paths.get("semb_backbone")},
            "radgraph": {"model": paths.get("radgraph")},
            "ratescore": {"ner_model": paths.get("ratescore_ner"), "embed_model": paths.get("ratescore_embed")},
            }[metric_name]


def _ours(metric_name: str, paths: dict, batch_size: int | None):
    from rexrank import metrics

    metric = metrics.get(metric_name, device="cpu", batch_size=batch_size, **_options(metric_name, paths))
    if metric_name == "radgraph":
        return lambda p: metric.annotate(list(dict.fromkeys(p["hyps"] + p["refs"])))
    return lambda p: metric.score(p["hyps"], p["refs"])


def _reference(metric_name: str, paths: dict):
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
        return call
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
        return call
    from radgraph import RadGraph

    folder = tempfile.mkdtemp(prefix="radgraph-ref-")
    os.symlink(os.path.abspath(paths["radgraph"]), os.path.join(folder, "radgraph"))
    with contextlib.redirect_stdout(io.StringIO()):
        model = RadGraph(model_type="radgraph", model_cache_dir=folder, cuda=-1)

    def call(p):
        with contextlib.redirect_stdout(io.StringIO()):
            for text in dict.fromkeys(p["hyps"] + p["refs"]):  # radgraph_ref.py: one report per call
                model([text])
    return call


def _dispatches(metric_name: str, paths: dict, texts: list[str]) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile

    import rexrank
    from rexrank import metrics

    metric = metrics.get(metric_name, device="cpu", batch_size=64, **_options(metric_name, paths))
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
        print(json.dumps(out))
    elif side == "reference":
        _serve(_reference(metric_name, payload["paths"]), payload["warm"])
    else:
        _serve(_ours(metric_name, payload["paths"], payload["batch_size"]), payload["warm"])


def _alternated(name: str, sides: dict, payload_file: Path, threads: int, blocks: list[list[str]]) -> dict:
    """Start every side's server, then time each block on each side in turn, rotating the order per block."""
    def role(side):
        return f"{name}:{'reference' if side == 'reference' else 'rexrank'}"

    procs = {side: subprocess.Popen([str(python), __file__, "--worker", role(side), "--payload", str(payload_file),
                                     "--threads", str(threads)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=_env(threads, src))
             for side, (python, src) in sides.items()}

    def answer(side):
        line = procs[side].stdout.readline()
        if not line:
            raise SystemExit(f"{name} {side} failed:\n{procs[side].stderr.read()[-3000:]}")
        return json.loads(line)

    runs: dict[str, list[dict]] = {side: [] for side in sides}
    try:
        for side in sides:
            answer(side)  # loaded and warmed up
        order = list(sides)
        for r, block in enumerate(blocks):
            half = len(block) // 2
            for side in order[r % len(order):] + order[:r % len(order)]:
                procs[side].stdin.write(json.dumps({"hyps": block[:half], "refs": block[half:]}) + "\n")
                procs[side].stdin.flush()
                runs[side].append(answer(side))
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait()
    return runs


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
                        help="rexrank side's batch_size (default: the device's, one text per pass on CPU)")
    parser.add_argument("--src", help="the rexrank side's code: another tree's src folder (default: this one)")
    parser.add_argument("--old", action="append", default=[],
                        help="also time this tree's src (repeatable), e.g. a worktree of an older commit")
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
            blocks = [reports[WARM_UP + 2 * args.pairs * r:WARM_UP + 2 * args.pairs * (r + 1)]
                      for r in range(args.repeats)]
            if len(blocks[-1]) < 2 * args.pairs:
                parser.error(f"{args.repeats} x {args.pairs} pairs need {2 * args.pairs * args.repeats} distinct "
                             f"reports; there are {len(reports) - WARM_UP}")
            payload_file.write_text(json.dumps({
                "paths": paths, "warm": {"hyps": reports[:WARM_UP // 2], "refs": reports[WARM_UP // 2:WARM_UP]},
                "batch_size": args.batch_size}))
            sides = {"rexrank": (sys.executable, args.src)}
            for old in args.old:
                sides[f"rexrank@{old}"] = (sys.executable, old)
            print(f"{args.repeats} blocks of {args.pairs} pairs (distinct IU-Xray test reports, a new block each "
                  f"repeat), real-size stand-ins, {args.threads} thread(s), sides alternated; CPU and wall seconds "
                  f"of one call, medians; rexrank batch_size {args.batch_size or 'default'}")
            for name in names:
                mine = dict(sides)
                if name not in NO_REFERENCE:
                    mine["reference"] = (args.reference_python, None)
                runs = _alternated(name, mine, payload_file, args.threads, blocks)
                med = {side: {k: statistics.median(r[k] for r in found) for k in ("cpu", "wall", "peak_rss_mb")}
                       for side, found in runs.items()}
                row = {"metric": name, "threads": args.threads, "pairs": args.pairs, "runs": runs, "median": med}
                rows.append(row)
                for side in mine:
                    m = med[side]
                    print(f"  {name:10s} {side:28s} CPU {m['cpu']:7.2f} s  wall {m['wall']:7.2f} s  "
                          f"peak RSS {m['peak_rss_mb']:6.0f} MB  (CPU per block: "
                          + ", ".join(f"{r['cpu']:.2f}" for r in runs[side]) + ")")
                for side in mine:
                    if side != "rexrank":
                        ratio = med["rexrank"]["cpu"] / med[side]["cpu"]
                        row[f"cpu_ratio_vs_{side}"] = ratio
                        print(f"  {name:10s} rexrank / {side} CPU: {ratio:.2f}")
                    if side not in ("rexrank", "reference") and "reference" in mine:
                        print(f"  {name:10s} {side} / reference CPU: {med[side]['cpu'] / med['reference']['cpu']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
