"""Peak memory of RadGraph annotation on one long synthetic report (a report at the validation limit).

    .venv/bin/python bench/radgraph_memory.py [--words 1000 2000 5000] [--size small|real] [--standin DIR]
                                              [--cap-gb 12] [--threads 1] [--all-pairs] [--text corpus|iu_xray]

- Report: sentences of the built-in corpus (rexrank.testing.corpus), or with ``--text iu_xray`` the IU-Xray test
  split's findings sections in file order (../shared/data/iu_xray, issue 35 point 6's long report), repeated up to
  N whitespace-separated words (about 1.2 RadGraph words per word: punctuation is split off).
- Each line also gives a sha256 of the annotation (JSON, sorted keys): equal digests before and after a change of
  the annotator mean it changed no entity, label or relation.
- Model: the random-weight RadGraph stand-in (rexrank.testing.standin_radgraph), small (tests) or real (BERT-base)
  size; built into a temporary folder unless --standin names one.
- Each length runs in a fresh process; peak = that process's own VmHWM (rexrank.testing.memory), baseline = its
  RSS after the model loaded (before annotating), so peak - baseline is what the report itself costs.
- ``--all-pairs``: every relation pair of the report scored at once, as before the row blocks (the "before" column
  of docs/radgraph.md, "Memory"; annotations are the same either way).
- A watchdog kills a process whose RSS passes --cap-gb (a shared machine must not be driven out of memory); such a
  run is reported as "> cap".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, os, sys, time
import torch
torch.set_num_threads(int(sys.argv[3]))
from rexrank.metrics.radgraph.inference import Annotator
import hashlib
from rexrank.testing.corpus import SENTENCES
from rexrank.testing.memory import peak_rss_mib, rss_mib

if sys.argv[5] == "iu_xray":
    studies = json.load(open(sys.argv[6]))
    words = " ".join(s["section_findings"] for s in studies.values() if s.get("section_findings")).split()
else:
    words = SENTENCES.split()
n = int(sys.argv[2])
report = " ".join(words[i % len(words)] for i in range(n))
annotator = Annotator(sys.argv[1], device="cpu")
if sys.argv[4] == "1":
    annotator.relation_block_floats = 1 << 62
annotator.annotate(["The lungs are clear."])  # warm-up: lazy allocations of the runtime not counted as the report's
base = rss_mib()
start = time.perf_counter()
out = annotator.annotate([report])[0]
seconds = time.perf_counter() - start
peak = peak_rss_mib()
n_relations = sum(len(e["relations"]) for e in out["entities"].values())
print(json.dumps({"words": n, "radgraph_words": len(out["text"].split()), "baseline_mb": round(base),
                  "peak_mb": round(peak), "seconds": round(seconds, 1), "entities": len(out["entities"]),
                  "relations": n_relations,
                  "annotation_sha256": hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()[:16]}))
"""


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


IU_XRAY = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"


def run(archive: str, words: int, threads: int, cap_mb: float, all_pairs: bool = False, text: str = "corpus") -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-c", CHILD, archive, str(words), str(threads), str(int(all_pairs)), text,
               str(IU_XRAY)]
    proc = subprocess.Popen(command, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = 0.0
    while proc.poll() is None:
        seen = max(seen, rss_mb(proc.pid))
        if seen > cap_mb:
            proc.kill()
            proc.wait()
            return {"words": words, "peak_mb": f"> {cap_mb:.0f} (killed)"}
        time.sleep(0.005)
    out, err = proc.communicate()
    if proc.returncode != 0:
        return {"words": words, "error": err.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, nargs="+", default=[1000, 2000, 5000])
    parser.add_argument("--size", choices=("small", "real"), default="small")
    parser.add_argument("--standin", help="folder holding radgraph/ (rexrank.testing.standins output)")
    parser.add_argument("--cap-gb", type=float, default=12.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--all-pairs", action="store_true", help="score all relation pairs at once (the old way)")
    parser.add_argument("--text", choices=("corpus", "iu_xray"), default="corpus")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.standin
        if root is None:
            from rexrank.testing import standins

            root = standins.build(Path(tmp) / "standins", args.size, ["radgraph"], seed=0)["radgraph"]
        archive = str(Path(root) / "radgraph") if (Path(root) / "radgraph").is_dir() else str(root)
        for n in args.words:
            print(json.dumps(run(archive, n, args.threads, args.cap_gb * 1024, args.all_pairs, args.text)), flush=True)


if __name__ == "__main__":
    main()
