#!/usr/bin/env python
"""Classic ReXrank metrics, rexrank vs the reference packages, measured in the same run.

Workload: the 590 IU-Xray test reports (ReXrank split); hypothesis i = the reference of study i+1 (another study's
report). Models: real-sized random stand-ins (distilroberta-base and bert-base-uncased shapes), built offline.

Rows (ours = rexrank in .venv on transformers 5; reference = .venv-ref on transformers 4.57):
- BLEU-2: rexrank vs fast_bleu, pair by pair as CXR-Report-Metric's add_bleu_col does;
- BERTScore: rexrank vs bert-score 0.3.13 BERTScorer as ReXrank builds it (score() with its default batch);
- SembScore: rexrank vs the official CheXbert procedure in plain transformers (each side encoded in batches of 18,
  every row, as encode.py runs on the prediction CSV and on the ground-truth CSV), then cosine per pair;
- RadGraph: rexrank vs radgraph 0.1.18 annotating every report of both sides (batch 1, as the package runs),
  only if ``rexrank.metrics.get("radgraph")`` exists; otherwise the row is skipped with a note.

Every measurement is its own process (fresh imports, fresh caches), sides alternate between repeats, thread counts
are pinned equally (OMP/MKL env + torch.set_num_threads), and the table reports medians: scoring time (model
already loaded) as reports/s, end-to-end process time, and peak RSS. Usage:

    .venv/bin/python bench/classic_metrics.py [--repeats 3] [--threads 1] [--n 590] [--only bleu,bertscore,semb,radgraph]

The same file runs as the worker in either virtualenv (``--worker``), so it imports only the standard library at
module level.
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
DEFAULT_DATA = REPO.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"
METRICS = ("bleu", "bertscore", "semb", "radgraph")
LABELS = {"bleu": ("BLEU-2", "fast_bleu"), "bertscore": ("BERTScore", "bert-score 0.3.13"),
          "semb": ("SembScore", "CheXbert official procedure"), "radgraph": ("RadGraph", "radgraph 0.1.18")}


# --------------------------------------------------------------------------------------------- worker side
def _official_tokens(report):
    # CXR-Report-Metric run_eval.prep_reports
    return [t for t in str(report).lower().replace(".", " .").split(" ") if t != ""]


def _work_ours(metric: str, hyps, refs, models):
    from rexrank.metrics import get

    if metric == "bleu":
        m = get("bleu2")
    elif metric == "bertscore":
        m = get("bertscore", model=models["bertscore"], device="cpu")
    elif metric == "semb":
        m = get("semb", model=models["semb"], backbone=models["semb_backbone"], device="cpu")
    else:
        m = get("radgraph", model=models["radgraph"], device="cpu")
    for warm in ("_load", "_annotator"):  # model loading belongs to neither side's scoring time
        if hasattr(m, warm):
            getattr(m, warm)()
    m.config()  # weight hashing belongs to loading, not scoring
    start = time.perf_counter()
    values = m.score(hyps, refs)
    return time.perf_counter() - start, [float(v) for v in values]


def _work_reference(metric: str, hyps, refs, models):
    if metric == "bleu":
        from fast_bleu import BLEU

        start = time.perf_counter()
        values = [BLEU([_official_tokens(r)], {"bigram": (1 / 2.0, 1 / 2.0)}).get_score([_official_tokens(h)])["bigram"][0]
                  for h, r in zip(hyps, refs)]
        return time.perf_counter() - start, values
    if metric == "bertscore":
        import re

        import bert_score
        from bert_score import BERTScorer

        refs = [re.sub(r" +", " ", t) for t in refs]
        hyps = [re.sub(r" +", " ", t) for t in hyps]
        baseline = os.path.join(os.path.dirname(bert_score.__file__), "rescale_baseline", "en", "distilroberta-base.tsv")
        scorer = BERTScorer(model_type=models["bertscore"], num_layers=5, batch_size=256, lang="en",
                            rescale_with_baseline=True, baseline_path=baseline, idf=False, idf_sents=refs)
        start = time.perf_counter()
        _, _, f1 = scorer.score(hyps, refs)
        return time.perf_counter() - start, f1.tolist()
    if metric == "semb":
        return _reference_semb(hyps, refs, models)
    return _reference_radgraph(hyps, refs, models)


def _reference_semb(hyps, refs, models):
    import numpy as np
    import torch
    from transformers import BertConfig, BertTokenizer

    sys.path.insert(0, str(REPO / "tests" / "reference"))
    from semb_ref import BATCH, PAD_IDX, Labeler, encode  # the official procedure, written for the parity test

    tokenizer = BertTokenizer.from_pretrained(models["semb_backbone"])
    model = Labeler(BertConfig.from_pretrained(models["semb_backbone"]))
    state = torch.load(models["semb"], map_location="cpu")["model_state_dict"]
    model.load_state_dict({k[len("module."):]: v for k, v in state.items()})
    model.eval()
    start = time.perf_counter()

    def embed_side(texts):  # encode.py: one CSV, every row, batches of 18 in file order
        encoded = [torch.LongTensor(encode(tokenizer, t)) for t in texts]
        out = []
        with torch.no_grad():
            for i in range(0, len(encoded), BATCH):
                batch = encoded[i:i + BATCH]
                ids = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=PAD_IDX)
                mask = (torch.arange(ids.shape[1])[None, :] < torch.tensor([len(b) for b in batch])[:, None]).long()
                out.append(model.bert(ids, attention_mask=mask)[0][:, 0, :])
        return torch.cat(out).numpy()

    pred, gt = embed_side(hyps), embed_side(refs)
    values = [float((a * b).sum() / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in zip(gt, pred)]
    return time.perf_counter() - start, values


def _reference_radgraph(hyps, refs, models):
    import contextlib
    import io
    import warnings

    warnings.simplefilter("ignore")
    from radgraph import RadGraph

    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(models["radgraph"]), os.path.join(tmp, "radgraph"))
        with contextlib.redirect_stdout(io.StringIO()):
            radgraph = RadGraph(model_type="radgraph", model_cache_dir=tmp, cuda=-1)
        start = time.perf_counter()
        for report in refs + hyps:  # CXR-Report-Metric annotates the whole GT file and the whole prediction file
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    radgraph([report])
            except Exception:  # noqa: BLE001 - a failing report still cost its time
                pass
        return time.perf_counter() - start, None


def worker(side: str, metric: str, job: Path) -> None:
    # Python put bench/ first on sys.path; bench scripts named like packages (bench/radgraph.py) must not shadow them.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    spec = json.loads(job.read_text())
    threads = spec["threads"]
    import torch

    torch.set_num_threads(threads)
    started = spec["t0"]
    fn = _work_ours if side == "ours" else _work_reference
    score_s, values = fn(metric, spec["hyps"], spec["refs"], spec["models"])
    result = {"score_s": score_s, "total_s": time.time() - started, "values": values,
              "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    Path(spec["out"]).write_text(json.dumps(result))


# --------------------------------------------------------------------------------------------- driver side
def _python(side: str) -> str:
    venv = ".venv" if side == "ours" else ".venv-ref"
    return str(REPO / venv / "bin" / "python")


def _measure(side, metric, hyps, refs, models, threads, workdir: Path) -> dict:
    job = workdir / f"job-{side}-{metric}.json"
    out = workdir / f"out-{side}-{metric}.json"
    job.write_text(json.dumps({"hyps": hyps, "refs": refs, "models": models, "threads": threads,
                               "out": str(out), "t0": time.time()}))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run([_python(side), str(Path(__file__).resolve()), "--worker", side, metric, str(job)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{side} {metric} failed:\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def _radgraph_available() -> tuple[bool, str]:
    probe = ("import rexrank.metrics as m, sys\n"
             "try:\n    m.REGISTRY.cls('radgraph')\nexcept Exception as e:\n    print(type(e).__name__, e); sys.exit(1)\n")
    proc = subprocess.run([_python("ours"), "-c", probe], capture_output=True, text=True)
    last = (proc.stdout + proc.stderr).strip().splitlines()
    return proc.returncode == 0, last[-1] if last else ""


def _build_standins(directory: Path, metrics: list[str], size: str) -> dict:
    only = [m for m in ("bertscore", "semb", "radgraph") if m in metrics]
    if not only:
        return {}
    directory = directory / size
    marker = directory / "paths.json"
    paths = json.loads(marker.read_text()) if marker.exists() else {}
    missing = [m for m in only if m not in paths]
    if missing:
        proc = subprocess.run([_python("ours"), "-m", "rexrank.testing.standins", str(directory), "--size", size,
                               "--only", ",".join(missing)], capture_output=True, text=True, check=True)
        paths.update(json.loads(proc.stdout))
        marker.write_text(json.dumps(paths))
    return paths


def _fmt_mb(x):
    return f"{x:,.0f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--n", type=int, default=590)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default=",".join(METRICS), help='metrics to measure; "" re-renders saved rows')
    parser.add_argument("--standins", default=str(Path(tempfile.gettempdir()) / "rexrank-bench-standins"),
                        help="folder for the stand-ins (built once per size, reused)")
    parser.add_argument("--size", default="real", choices=("real", "small"), help="small: a quick smoke run only")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "classic_metrics.md"))
    parser.add_argument("--fresh", action="store_true", help="forget rows saved by earlier invocations")
    parser.add_argument("--worker", nargs=3, metavar=("SIDE", "METRIC", "JOB"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker[0], args.worker[1], Path(args.worker[2]))
        return 0

    data = json.loads(Path(args.data).read_text())
    refs = [study["report"] for study in data.values()][: args.n]
    hyps = refs[1:] + refs[:1]
    metrics = [m.strip() for m in args.only.split(",") if m.strip()]
    notes = []
    if "radgraph" in metrics:
        ok, why = _radgraph_available()
        if not ok:
            metrics.remove("radgraph")
            notes.append(f"RadGraph row skipped: rexrank.metrics.get('radgraph') is not available yet ({why}).")
            print(notes[-1], flush=True)
    models = _build_standins(Path(args.standins), metrics, args.size)

    results_json = Path(args.out).with_suffix(".json")
    saved = json.loads(results_json.read_text()) if results_json.exists() and not args.fresh else {"rows": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for metric in metrics:
            runs = {"ours": [], "reference": []}
            for rep in range(args.repeats):
                order = ("ours", "reference") if rep % 2 == 0 else ("reference", "ours")
                for side in order:
                    result = _measure(side, metric, hyps, refs, models, args.threads, Path(tmp))
                    runs[side].append(result)
                    print(f"{metric:10s} {side:9s} rep {rep}: score {result['score_s']:8.2f}s  "
                          f"total {result['total_s']:8.2f}s  peak {result['peak_rss_mb']:8.0f} MB", flush=True)
            ours_values, ref_values = runs["ours"][0]["values"], runs["reference"][0]["values"]
            diff = (max(abs(a - b) for a, b in zip(ours_values, ref_values)) if ref_values is not None else None)
            unique = len(set(refs) | set(hyps))
            saved["rows"][metric] = {
                "n": len(refs), "repeats": args.repeats, "threads": args.threads, "size": args.size,
                # texts each side runs through its model: ours once per unique text; bert-score dedupes too; the
                # official CheXbert and RadGraph runs process every row of both files
                "texts": {"ours": unique, "reference": unique if metric == "bertscore" else 2 * len(refs)},
                "max_abs_diff": diff, "when": time.strftime("%Y-%m-%d %H:%M"),
                "runs": {side: [{k: r[k] for k in ("score_s", "total_s", "peak_rss_mb")} for r in runs[side]]
                         for side in runs},
            }
            saved["machine"] = {"arch": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()}
            results_json.parent.mkdir(parents=True, exist_ok=True)
            results_json.write_text(json.dumps(saved, indent=1) + "\n")  # after every metric: partial runs count
    text = render(saved, notes)
    Path(args.out).write_text(text)
    print(text)
    return 0


def render(saved: dict, notes: list[str]) -> str:
    """The Markdown table from every saved row (rows may come from separate invocations, e.g. --only radgraph)."""
    machine = saved.get("machine", {})
    lines = [
        "# Classic metrics: rexrank vs the reference packages",
        "",
        "IU-Xray test pairs (hypothesis = another study's reference), random stand-ins of the real model sizes, CPU. "
        "Each measurement is a fresh process; sides alternate between repeats; OMP/MKL/torch threads pinned equally; "
        "medians. `score` = scoring with the model already loaded (reports/s = pairs / score time); `end-to-end` = "
        "process start to finish (imports, model load, scoring); peak = max RSS of the process.",
        "",
        f"Machine: {machine.get('arch')}, {machine.get('cpus')} CPU cores shared with other work (load was high: "
        f"treat differences under ~15% as noise); Python {machine.get('python')}. Generated by "
        "`bench/classic_metrics.py`; raw runs in `classic_metrics.json`.",
        "",
        "| metric | reference | pairs | threads | repeats | ours reports/s | ref reports/s | speed-up (score) "
        "| ours end-to-end s | ref end-to-end s | speed-up (end-to-end) | ours peak MB | ref peak MB | max abs diff |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    total = {"ours": [0.0, 0.0], "reference": [0.0, 0.0]}
    shown = [m for m in METRICS if m in saved["rows"]]
    per_text = []
    for metric in shown:
        row = saved["rows"][metric]
        med = {side: {k: statistics.median(r[k] for r in row["runs"][side]) for k in ("score_s", "total_s", "peak_rss_mb")}
               for side in ("ours", "reference")}
        o, r, n = med["ours"], med["reference"], row["n"]
        for side, m in (("ours", o), ("reference", r)):
            total[side][0] += m["score_s"]
            total[side][1] += m["total_s"]
        name, ref_name = LABELS[metric]
        diff = row["max_abs_diff"]
        if metric != "bleu" and "texts" in row:
            texts = row["texts"]
            rate = (r["score_s"] / texts["reference"]) / (o["score_s"] / texts["ours"])
            per_text.append(f"{name} {rate:.2f}x ({texts['ours']} texts ours, {texts['reference']} reference)")
        lines.append(
            f"| {name} | {ref_name} | {n} | {row['threads']} | {row['repeats']} | {n / o['score_s']:,.1f} | "
            f"{n / r['score_s']:,.1f} | {r['score_s'] / o['score_s']:.2f}x | {o['total_s']:.1f} | {r['total_s']:.1f} | "
            f"{r['total_s'] / o['total_s']:.2f}x | {_fmt_mb(o['peak_rss_mb'])} | {_fmt_mb(r['peak_rss_mb'])} | "
            f"{'n/a' if diff is None else f'{diff:.1e}'} |")
    if len(shown) > 1:
        lines.append(
            f"| **classic set, one after another** | {', '.join(LABELS[m][1] for m in shown)} | | | | | | "
            f"{total['reference'][0] / total['ours'][0]:.2f}x | {total['ours'][1]:.1f} | {total['reference'][1]:.1f} | "
            f"{total['reference'][1] / total['ours'][1]:.2f}x | | | |")
    if "radgraph" not in saved["rows"]:
        notes = notes or ["RadGraph row not measured yet (rexrank.metrics.get('radgraph') was not available)."]
    lines += ["", *(f"- {note}" for note in notes)]
    lines += [
        "- Stand-ins have random weights: the timings reflect real model shapes, not real scores. Their small "
        "offline tokenizer vocabularies split IU-Xray reports into more tokens than the real ones would "
        "(~77 RoBERTa / ~93 BERT tokens per report), equally for both sides.",
        "- IU-Xray has duplicate reports (425 unique of 590) and here every hypothesis is also a reference, so "
        "running each unique text once (bert-score does this too; the official CheXbert and RadGraph runs do not) "
        "saves more for SembScore and RadGraph than it would on real model outputs, where mostly only the "
        "references repeat. Per text run through the model: " + "; ".join(per_text) + ".",
        "- max abs diff: largest per-pair difference between the two sides' values in the first repeat "
        "(RadGraph: values not compared here, see its parity tests).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
