#!/usr/bin/env python
"""The score cache's warm path: what reading typed, checksummed rows costs against the pickled rows before.

Workload: N synthetic pairs (default 3000, 6-12 words each from a radiology vocabulary, distinct texts), scored
with BLEU-2 (pair rows of eight floats) and a BERTScore stand-in registered here: per pair precision/recall/F1 (three
floats, as bertscore's rows), and per reference text the artefact BERTScore caches, (token ids int32, token
embeddings float32 of --dim columns), built from a hash so it costs little to compute.

Timed, each a median of --repeats (default 3), after one cold run that fills an empty cache:
- warm re-score: `evaluate()` of the same inputs again (every pair row from the cache; --resamples bootstrap);
- pair rows: `ScoreCache.get_pairs` of both metrics' rows alone;
- artefacts: `ScoreCache.get_many` of every reference's embedding (what a second model against the same
  references reads).
`--before REV` runs the same with the cache module of git revision REV (loaded in place of
rexrank.evaluation.cache), for the before/after comparison. Times are CPU seconds of this process
(time.process_time): on a shared machine the wall clock mostly measures the other tenants.

Usage: .venv/bin/python bench/score_cache.py [--pairs 3000] [--dim 128] [--repeats 3] [--before 3b7a29e]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rexrank.evaluation.defaults import DEFAULT_RESAMPLES

REPO = Path(__file__).resolve().parents[1]
WORDS = ("lungs clear effusion normal heart size no pneumothorax cardiomegaly mild stable left right basilar "
         "opacity atelectasis consolidation silhouette mediastinal contour unremarkable").split()


def use_cache_module(rev: str) -> None:
    """Import git revision `rev`'s cache.py as rexrank.evaluation.cache (the harness imports it lazily)."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:src/rexrank/evaluation/cache.py"],
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="rexrank-cache-before-")) / "cache.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("rexrank.evaluation.cache", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["rexrank.evaluation.cache"] = module
    spec.loader.exec_module(module)


def register_standin(dim: int) -> None:
    import pandas as pd

    from rexrank.metrics import REGISTRY
    from rexrank.metrics.base import Metric
    from rexrank.metrics.registry import MetricSpec

    def embed(text: str):
        tokens = text.split()
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        emb = np.random.default_rng(seed).standard_normal((len(tokens) + 2, dim)).astype(np.float32)
        return np.arange(len(tokens) + 2, dtype=np.int32), emb / np.linalg.norm(emb, axis=1, keepdims=True)

    class BertScoreStandIn(Metric):
        spec = MetricSpec("bench_bertscore", "bench_bertscore", True, "1", "bench: BERTScore-shaped cache use",
                          leaderboard_column="BenchBERTScore")

        def __init__(self, **_):
            pass

        def config(self):
            return {"dim": dim}

        def _details(self, hyps, refs):
            ref_out = self.per_text("tokens", refs, lambda texts: [embed(t) for t in texts])
            out = np.zeros((len(hyps), 3))
            for k, (hyp, (_, r_emb)) in enumerate(zip(hyps, ref_out)):
                sim = embed(hyp)[1] @ r_emb.T
                p, r = sim.max(axis=1).mean(), sim.max(axis=0).mean()
                out[k] = p, r, 2 * p * r / (p + r)
            return out

        def _score(self, hyps, refs):
            return self._details(hyps, refs)[:, 2]

        def _score_details(self, hyps, refs):
            values = self._details(hyps, refs)
            return pd.DataFrame({"bench_bertscore": values[:, 2], "bench_precision": values[:, 0],
                                 "bench_recall": values[:, 1]})

    REGISTRY.register(BertScoreStandIn.spec, BertScoreStandIn)


def workload(n: int):
    from rexrank.evaluation.inputs import Inputs

    rng = np.random.default_rng(0)
    refs = [" ".join(rng.choice(WORDS, rng.integers(6, 13))) + f" study {i}." for i in range(n)]
    hyps = [" ".join(rng.choice(WORDS, rng.integers(6, 13))) + f" report {i}." for i in range(n)]
    return Inputs([f"s{i}" for i in range(n)], hyps, refs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    parser.add_argument("--before", default=None, help="git revision whose cache.py to time instead")
    args = parser.parse_args()
    if args.before:
        use_cache_module(args.before)
    register_standin(args.dim)
    from rexrank.evaluation.cache import ScoreCache
    from rexrank.evaluation.harness import ScoreOptions, evaluate, expand_metrics
    from rexrank.evaluation.runner import build_metrics
    from rexrank.metrics.base import text_key

    inputs = workload(args.pairs)
    folder = Path(tempfile.mkdtemp(prefix="rexrank-bench-cache-")) / "cache"
    options = ScoreOptions(metrics=["bleu2", "bench_bertscore"], cache_dir=folder, resamples=args.resamples)
    start = time.process_time()
    cold = evaluate(inputs, model="A", track="findings", options=options)
    cold_s = time.process_time() - start

    warm, results = [], None
    for _ in range(args.repeats):
        start = time.process_time()
        result = evaluate(inputs, model="A", track="findings", options=options)
        warm.append(time.process_time() - start)
        assert all(s["computed"] == 0 for s in result.stats.values()), result.stats
        results = result.results["metrics"]
    identical = json.dumps(results, sort_keys=True) == json.dumps(cold.results["metrics"], sort_keys=True)

    metrics = build_metrics(expand_metrics(options.metrics))
    keys = list(dict.fromkeys((text_key(h), text_key(r)) for h, r in zip(inputs.hyps, inputs.refs)))
    ref_keys = list(dict.fromkeys(text_key(r) for r in inputs.refs))
    stand_in = metrics["bench_bertscore"]
    namespace = f"{stand_in.spec.name}:tokens:{stand_in.fingerprint}"
    pair_reads, text_reads = [], []
    for _ in range(args.repeats):
        cache = ScoreCache(folder)
        cache.stats()  # open the connection outside the timed region
        start = time.process_time()
        rows = sum(len(cache.get_pairs(m.fingerprint, keys)) for m in metrics.values())
        pair_reads.append(time.process_time() - start)
        start = time.process_time()
        texts = cache.get_many(namespace, ref_keys)
        text_reads.append(time.process_time() - start)
        cache.close()
    size = sum(p.stat().st_size for p in folder.iterdir())
    report = {"cache_module": args.before or "working tree", "pairs": args.pairs, "dim": args.dim,
              "cold_s": round(cold_s, 3), "warm_rescore_s": round(statistics.median(warm), 3),
              "warm_rescore_runs_s": [round(x, 3) for x in warm], "warm_equals_cold": identical,
              "pair_rows": rows, "pair_rows_read_s": round(statistics.median(pair_reads), 4),
              "artefacts": len(texts), "artefacts_read_s": round(statistics.median(text_reads), 4),
              "cache_mb": round(size / 1e6, 1)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
