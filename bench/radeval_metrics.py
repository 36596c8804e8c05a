#!/usr/bin/env python
"""RadEval's chest X-ray metrics in rexrank vs radeval 2.2.1's own implementation, measured in the same run.

Workload: the first ``--n`` IU-Xray test reports (ReXrank split); hypothesis i = the reference of study i+1.
Models: the stand-ins (rexrank.testing.standin_modernbert, standin_srrbert; ``--size``), built offline; the same
files for both sides. Rows (ours = rexrank in .venv on transformers 5; reference = radeval 2.2.1 in .venv-ref on 4.57):
- RadEval-BERTScore: rexrank's ``radeval_bertscore`` vs radeval's ``RadEvalBERTScorer`` as its adapter builds it;
- SRR-BERT: rexrank's ``srrbert`` (per-report values and the weighted aggregates) vs radeval's ``SRRBertMetric``
  ``_compute_raw`` (run from the stand-in root, as tests/reference/srrbert_radeval_ref.py does);
- temporal entity F1: rexrank's ``temporal_f1`` vs radeval's ``TemporalF1Metric._compute_raw`` on the stanza stand-in
  (rexrank.testing.standin_temporal; radeval's import-time Pipeline reads it through STANZA_RESOURCES_DIR and a
  loopback STANZA_RESOURCES_URL, as tests/reference/temporal_f1_radeval_ref.py does);
- CRIMSON: rexrank's ``crimson_radeval`` (transformers backend, bfloat16) vs radeval's ``CRIMSONScore(provider="hf")``
  on the Gemma-3 judge stand-in (rexrank.testing.standin_gemma3), the first ``--crimson-n`` pairs.

Every measurement is its own process (fresh imports), sides alternate between repeats, threads are pinned equally
(OMP/MKL env + torch.set_num_threads); medians of scoring time with the model loaded. Usage:

    .venv/bin/python bench/radeval_metrics.py [--repeats 3] [--threads 1] [--n 200] [--size small|real]
                                              [--only radeval_bertscore,srrbert,temporal_f1,crimson]

The file is also the worker in either virtualenv (``--worker``): it imports only the standard library at top level.
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

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"


def _worker(side: str, payload: dict) -> dict:
    import torch

    torch.set_num_threads(payload["threads"])
    hyps, refs, model, metric_name = payload["hyps"], payload["refs"], payload["model"], payload["metric"]
    if side == "ours":
        from rexrank.metrics import get

        # radeval's CRIMSON is rexrank's crimson_radeval (the board's crimson follows crimson-score)
        metric = get("crimson_radeval" if metric_name == "crimson" else metric_name, device="cpu", **payload["options"])
        # model loading belongs to neither side's scoring time
        metric._local_generator() if metric_name == "crimson" else metric._load()
        metric.config()
        start = time.perf_counter()
        values = metric.score(hyps, refs)
        if metric_name == "srrbert":
            metric.weighted(hyps, refs)  # radeval computes its aggregates in the same call
    elif metric_name == "crimson":
        import nltk

        nltk.download = lambda *args, **kwargs: True  # radeval.utils fetches punkt_tab at import; CRIMSON needs none
        from radeval.metrics.crimson.crimson import CRIMSONScore

        scorer = CRIMSONScore(provider="hf", model_name=model)  # a local path: radeval puts the guidelines in
        start = time.perf_counter()
        values = scorer(refs, hyps)[2]
    elif metric_name == "temporal_f1":
        os.environ.update(STANZA_RESOURCES_DIR=payload["options"]["model"], STANZA_RESOURCES_URL=payload["root"])
        from radeval.metrics.f1temporal.adapter import TemporalF1Metric

        metric = TemporalF1Metric()  # stanza.download (every md5 matches: nothing fetched) and the Pipeline
        start = time.perf_counter()
        values = metric._compute_raw(refs, hyps)["temporal_f1"]["per_sample"]
    elif metric_name == "radeval_bertscore":
        import contextlib
        import io

        from radeval.metrics.radevalbertscore.radevalbertscore import RadEvalBERTScorer

        scorer = RadEvalBERTScorer(model_type=model, num_layers=22, use_fast_tokenizer=True,
                                   rescale_with_baseline=False, device="cpu")
        start = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):
            values = scorer.score(refs=refs, hyps=hyps)[1]
    else:
        import nltk

        nltk.download = lambda *args, **kwargs: True  # no network: punkt_tab is the stand-in's
        nltk.data.path.insert(0, payload["options"]["punkt"])
        from radeval.metrics.SRRBert.adapter import SRRBertMetric
        from radeval.metrics.SRRBert.srr_bert import SRRBert

        SRRBert.MODEL_CONFIGS["leaves_with_statuses"]["model_path"] = model
        os.chdir(payload["root"])
        metric = SRRBertMetric()
        start = time.perf_counter()
        values = metric._compute_raw(refs, hyps)["srrbert_weighted_f1"]["per_sample"]
    return {"seconds": time.perf_counter() - start, "values": [float(v) for v in values]}


def _serve(folder: str):
    """A loopback HTTP server of ``folder`` in a thread (stopped by the caller)."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=folder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _run(side: str, payload: dict, threads: int) -> dict:
    python = REPO / (".venv" if side == "ours" else ".venv-ref") / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    proc = subprocess.run([str(python), __file__, "--worker", side], input=json.dumps(payload), text=True,
                          capture_output=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{side} worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", choices=("ours", "reference"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--size", default="small", choices=("small", "real"))
    parser.add_argument("--only", default="radeval_bertscore,srrbert,temporal_f1,crimson")
    parser.add_argument("--crimson-n", type=int, default=16, help="pairs for CRIMSON (a generation per pair)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "radeval_metrics.md"))
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker, json.loads(sys.stdin.read()))))
        return 0
    sys.path.insert(0, str(REPO / "src"))
    from rexrank.testing import standin_gemma3, standin_modernbert, standin_srrbert, standin_temporal

    refs = [s["report"] for s in json.loads(DATA.read_text()).values()][: args.n]
    hyps = refs[1:] + refs[:1]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only.split(","):
            if name == "temporal_f1":
                model = standin_temporal.build(Path(tmp) / "temporal", args.size, 0)["temporal_f1"]
                # radeval's Pipeline fetches resources_<version>.json: served from the stand-in on loopback
                server = _serve(model)
                options, root = {"model": model}, f"http://127.0.0.1:{server.server_address[1]}"
                label = "Temporal entity F1 | radeval 2.2.1 TemporalF1Metric"
            elif name == "crimson":
                model = standin_gemma3.build(Path(tmp), args.size, 0)["crimson"]
                options, root = {"model": model, "guidelines": True}, tmp  # radeval's prompt for a local path
                label = "CRIMSON | radeval 2.2.1 CRIMSONScore (hf)"
            elif name == "radeval_bertscore":
                model = standin_modernbert.build(Path(tmp), args.size, 0)["radeval_bertscore"]
                options, root, label = {"model": model}, tmp, "RadEval-BERTScore | radeval 2.2.1 RadEvalBERTScorer"
            else:
                paths = standin_srrbert.build(Path(tmp) / "srr", args.size, 0)
                model, root = paths["srrbert"], str(Path(tmp) / "srr")
                options = {"model": model, "tokenizer": paths["srrbert_tokenizer"], "punkt": paths["srrbert_punkt"]}
                label = "SRR-BERT | radeval 2.2.1 SRRBertMetric"
            n = args.crimson_n if name == "crimson" else args.n
            payload = {"hyps": hyps[:n], "refs": refs[:n], "model": model, "threads": args.threads, "metric": name,
                       "options": options, "root": root}
            runs = {"ours": [], "reference": []}
            for i in range(args.repeats):
                for side in (("ours", "reference") if i % 2 == 0 else ("reference", "ours")):
                    runs[side].append(_run(side, payload, args.threads))
            if name == "temporal_f1":
                server.shutdown()
                server.server_close()
            ours = statistics.median(r["seconds"] for r in runs["ours"])
            ref = statistics.median(r["seconds"] for r in runs["reference"])
            diff = max(0.0 if a != a and b != b else abs(a - b)  # NaN on both sides: an unparsable answer each
                       for a, b in zip(runs["ours"][0]["values"], runs["reference"][0]["values"]))
            rows.append(f"| {label} | {n} | {args.threads} | {args.repeats} | {ours:.2f} | {ref:.2f} | "
                        f"{n / ours:,.1f} | {n / ref:,.1f} | {ref / ours:.2f}x | {diff:.1e} |")
    table = "\n".join(rows)
    text = f"""# RadEval metrics: rexrank vs radeval 2.2.1

Generated by `bench/radeval_metrics.py --n {args.n} --repeats {args.repeats} --threads {args.threads} --size {args.size}`.
IU-Xray test pairs (hypothesis = another study's reference), random-weight stand-ins ({args.size}: a 22-layer
ModernBERT; a BERT classifier with 163 labels), CPU, each measurement a fresh process, sides alternating, threads
pinned equally; medians of scoring time with the models loaded. Machine: 2 CPU cores shared with other work (treat
differences under ~15% as noise).

| metric | reference | pairs | threads | repeats | ours s | radeval s | ours reports/s | radeval reports/s | speed-up | max abs diff |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
{table}

- RadEval-BERTScore: both sides embed each distinct text once per call; radeval scores in chunks of 64 pairs and
  re-embeds a text that recurs in another chunk, rexrank caches per text across the whole call.
- SRR-BERT: radeval classifies every sentence of both sides in batches of 4 in input order; rexrank classifies each
  distinct sentence once, in length-sorted batches of 32; the time includes the weighted aggregates on both sides.
- Temporal entity F1: radeval runs stanza on both reports of every pair, one report per call; rexrank runs each
  distinct report once, in bulk calls of 64 (stanza batches their sentences).
- CRIMSON (the random Gemma-3 judge, {args.crimson_n} pairs, guidelines in as radeval puts them for a local path):
  radeval generates one pair at a time and asks again, up to 3 times, while an answer does not parse (every stand-in
  answer is gibberish, so every pair costs it 3 generations; a real judge's answers mostly parse); rexrank generates
  in left-padded batches of 8 and asks a greedy local judge once (the same answer each time).
"""
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
