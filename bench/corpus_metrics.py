#!/usr/bin/env python
"""The metrics beyond ReXrank's columns: what CE F1 costs after SembScore, and NLG/METEOR against pycocoevalcap.

1. CE F1 adds no model forward when SembScore ran (`rexrank score` on the 590 IU-Xray test studies, each a fresh
   process, CheXbert's forward counted by wrapping ``rexrank.metrics.chexbert.run``):
   a. ``-m semb`` into an empty cache folder;
   b. ``-m semb,ce_f1`` on the same cache folder: CE F1's labels are SembScore's cached per-text entries;
   c. ``-m ce_f1`` on an empty cache folder (the control: CE F1 alone runs CheXbert itself).
2. Corpus BLEU-1..4, ROUGE-L, CIDEr-D (``rexrank.metrics.nlg``, pure Python) against pycocoevalcap 1.2 (its Java
   PTBTokenizer, then its Bleu/Rouge/Cider) on the same 590 pairs, each side in its own process, alternating,
   medians; and METEOR (both sides run the same meteor-1.5.jar, ours through ``rexrank.metrics.meteor``).

Usage: .venv/bin/python bench/corpus_metrics.py [--size small|real] [--repeats 3] [--only ce_f1,nlg,meteor]
Writes bench/results/corpus_metrics.md. The same file is the worker in either virtualenv (``--worker``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from classic_metrics import _build_standins, _python  # noqa: E402  (same folder; stdlib-only imports)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"
STANDINS = Path(tempfile.gettempdir()) / "rexrank-bench-standins"
PARTS = ("ce_f1", "nlg", "meteor")


def _env(threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore", REXRANK_PROGRESS="0")
    return env


def _worker(side: str, task: str, job_path: str) -> None:
    job = json.loads(Path(job_path).read_text())
    if task == "score":  # ours: `rexrank score` in this process, CheXbert's forward counted
        from rexrank.metrics import chexbert

        texts = []
        real_run = chexbert.run

        def counting_run(model, tokenizer, batch, **kwargs):
            texts.extend(batch)
            return real_run(model, tokenizer, batch, **kwargs)

        chexbert.run = counting_run
        from rexrank.cli import main

        start = time.perf_counter()
        code = main(job["argv"])
        out = {"code": code, "seconds": time.perf_counter() - start, "forwarded": len(texts)}
    elif side == "ours":
        from rexrank.metrics import get

        start = time.perf_counter()
        metric = get(task, **job.get("config", {}))
        values = metric.compute(job["hyps"], job["refs"])
        out = {"seconds": time.perf_counter() - start, "values": values}
    else:
        import contextlib
        import io

        from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

        start = time.perf_counter()
        tok = PTBTokenizer()
        gts = tok.tokenize({str(i): [{"caption": r}] for i, r in enumerate(job["refs"])})
        res = tok.tokenize({str(i): [{"caption": h}] for i, h in enumerate(job["hyps"])})
        if task == "nlg":
            from pycocoevalcap.bleu.bleu import Bleu
            from pycocoevalcap.cider.cider import Cider
            from pycocoevalcap.rouge.rouge import Rouge

            with contextlib.redirect_stdout(io.StringIO()):
                bleu, _ = Bleu(4).compute_score(gts, res)
            values = {f"bleu_{k + 1}": float(b) for k, b in enumerate(bleu)}
            values["rouge_l"] = float(Rouge().compute_score(gts, res)[0])
            values["cider"] = float(Cider().compute_score(gts, res)[0])
        else:
            from pycocoevalcap.meteor.meteor import Meteor

            scorer = Meteor()
            values = {"meteor": float(scorer.compute_score(gts, res)[0])}
            scorer.close() if hasattr(scorer, "close") else None
        out = {"seconds": time.perf_counter() - start, "values": values}
    Path(job["out"]).write_text(json.dumps(out))


def _run(side: str, task: str, job: dict, workdir: Path, threads: int) -> dict:
    path = workdir / f"job-{side}-{task}-{time.monotonic_ns()}.json"
    job = dict(job, out=str(path.with_suffix(".out.json")))
    path.write_text(json.dumps(job))
    start = time.perf_counter()
    proc = subprocess.run([_python(side), str(Path(__file__).resolve()), "--worker", side, task, str(path)],
                          capture_output=True, text=True, env=_env(threads), cwd=REPO)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{side} {task} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    out = json.loads(Path(job["out"]).read_text())
    out["process_seconds"] = wall  # with interpreter start and imports
    return out


def _ce_f1(data: dict, size: str, workdir: Path, threads: int) -> list[str]:
    paths = _build_standins(STANDINS, ["semb"], size)
    files = workdir / "ce"
    files.mkdir(exist_ok=True)
    ids = [i for i in data if data[i].get("section_findings")]
    (files / "refs.json").write_text(json.dumps({i: data[i] for i in ids}))
    (files / "preds.json").write_text(json.dumps({i: data[ids[(k + 1) % len(ids)]]["section_findings"]
                                                  for k, i in enumerate(ids)}))
    common = ["score", "-p", str(files / "preds.json"), "-r", str(files / "refs.json"), "-q", "--resamples", "1000",
              "--model-path", f"semb={paths['semb']}", "--option", f"semb.backbone={paths['semb_backbone']}",
              "--device", "cpu"]
    runs = {}
    for label, names, cache in (("a. semb (empty cache)", "semb", "shared"),
                                ("b. semb,ce_f1 (cache of a)", "semb,ce_f1", "shared"),
                                ("c. ce_f1 alone (empty cache)", "ce_f1", "control")):
        argv = [*common, "-m", names, "--cache-dir", str(workdir / f"cache-{cache}"), "-o", str(workdir / label[:1])]
        runs[label] = _run("ours", "score", {"argv": argv}, workdir, threads)
        assert runs[label]["code"] == 0, runs[label]
    b, c = runs["b. semb,ce_f1 (cache of a)"], runs["c. ce_f1 alone (empty cache)"]
    lines = [f"## 1. CE F1 after SembScore: no second CheXbert forward ({len(ids)} IU-Xray studies, `{size}` "
             "stand-in)", "",
             "| run | texts through CheXbert | `rexrank score` s (in process) |", "|---|---:|---:|"]
    lines += [f"| {label} | {r['forwarded']} | {r['seconds']:.1f} |" for label, r in runs.items()]
    lines += ["", f"Run b forwards {b['forwarded']} texts (CE F1 reads SembScore's cached labels); the control c, "
              f"with no cache, forwards {c['forwarded']}. b's time is the bootstrap, the outputs and SembScore's "
              "pair cache: " f"{b['seconds']:.1f} s against c's {c['seconds']:.1f} s.", ""]
    return lines


def _versus(task: str, data: dict, workdir: Path, threads: int, repeats: int, config: dict) -> list[str]:
    ids = list(data)
    refs = [data[i]["report"] for i in ids]
    hyps = [data[ids[(k + 1) % len(ids)]]["report"] for k in range(len(ids))]
    job = {"hyps": hyps, "refs": refs, "config": config}
    times = {"ours": [], "reference": []}
    values = {}
    for r in range(repeats):
        for side in (("ours", "reference") if r % 2 == 0 else ("reference", "ours")):
            out = _run("ours" if side == "ours" else "ref", task, job, workdir, threads)
            times[side].append(out["seconds"])
            values.setdefault(side, out["values"])
    ours, ref = statistics.median(times["ours"]), statistics.median(times["reference"])
    worst = max(abs(values["ours"][k] - values["reference"][k]) for k in values["reference"])
    title = {"nlg": "corpus BLEU-1..4, ROUGE-L, CIDEr-D", "meteor": "METEOR 1.5"}[task]
    return [f"## {2 if task == 'nlg' else 3}. {title}: rexrank vs pycocoevalcap 1.2 ({len(refs)} IU-Xray pairs)", "",
            "| side | s per corpus (median) | runs (s) |", "|---|---:|---|",
            f"| rexrank (`get({task!r}).compute`) | {ours:.2f} | {', '.join(f'{t:.2f}' for t in times['ours'])} |",
            f"| pycocoevalcap (Java PTBTokenizer + its scorers) | {ref:.2f} | "
            f"{', '.join(f'{t:.2f}' for t in times['reference'])} |", "",
            f"Speed-up {ref / ours:.1f}x; largest difference of any output between the two: {worst:.1e}. "
            "Times include tokenisation (and starting Java where a side runs it), not interpreter start.", ""]


def _meteor_jar() -> Path:
    found = sorted((REPO / ".venv-ref").glob("lib/python*/site-packages/pycocoevalcap/meteor/meteor-1.5.jar"))
    if not found:
        raise SystemExit("bench: pycocoevalcap's meteor-1.5.jar is not in .venv-ref (make setup-ref)")
    return found[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--size", default="small", choices=("small", "real"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default=",".join(PARTS))
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "corpus_metrics.md"))
    parser.add_argument("--worker", nargs=3, metavar=("SIDE", "TASK", "JOB"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(*args.worker)
        return 0
    parts = [p for p in args.only.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; available: {', '.join(PARTS)}")
    data = json.loads(Path(args.data).read_text())
    lines = ["# Corpus-level metrics beyond the ReXrank columns", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores shared with other jobs (noisy), "
             f"{args.threads} thread(s) per process. Generated by `bench/corpus_metrics.py --size {args.size} "
             f"--repeats {args.repeats}`.", ""]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if "ce_f1" in parts:
            lines += _ce_f1(data, args.size, workdir, args.threads)
        for task in ("nlg", "meteor"):
            if task in parts:
                # Both sides run the meteor-1.5.jar pycocoevalcap ships (installed in .venv-ref).
                config = {"jar": str(_meteor_jar())} if task == "meteor" else {}
                lines += _versus(task, data, workdir, args.threads, args.repeats, config)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
