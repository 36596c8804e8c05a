"""Run radgraph 0.1.18 (reference venv) on stand-in or real archives.

stdin JSON: {"jobs": [{"archive": dir, "model_type": "radgraph"|"radgraph-xl", "reports": [...],
                       "pairs": {"hyps": [...], "refs": [...]} (optional)}], "threads": int|null,
            "cuda": device index (default -1, CPU), "time_encoder": bool (benchmarks: time the BERT forwards)}
stdout (last line) JSON: {"results": [{"annotations": [per report: {"text", "entities"} or {"error": "..."}],
                                       "seconds": wall time of the annotation loop,
                                       "encoder": {"seconds", "flops", "wordpieces"} (with time_encoder),
                                       "rewards": {"simple": [...], "partial": [...], "complete": [...]},
                                       "combined": [...]}], "peak_rss_mb": float,
                   "versions": {"radgraph": ..., "transformers": ...}}

- The archive folder is linked as <tmp>/<model_type>: RadGraph(model_cache_dir=D) reads D/<model_type>/.
- Each report is annotated by its own RadGraph call (the package runs batch 1 anyway), so one failing report
  (whitespace only crashes the package) is recorded instead of aborting the run.
- rewards: F1RadGraph(reward_level="all") on the pairs, with the already loaded model.
- combined: ReXrank's radgraph_combined per pair, computed here from the package's annotations following
  CXR-Report-Metric @9c9ecad (CXRMetric/radgraph_evaluate_model.py: parse_entity_relation, compute_f1), with
  F1RadGraph's handling of empty strings (no annotation -> empty sets, as CXR-Report-Metric skips NaN reports).
"""

import contextlib
import importlib.metadata
import io
import json
import os
import resource
import sys
import tempfile
import time
import warnings


def cxr_sets(annotation):
    entities = {(e["tokens"], e["label"]) for e in annotation["entities"].values()}
    relations = set()
    for e in annotation["entities"].values():
        for rel in e["relations"]:
            other = annotation["entities"][rel[1]]
            relations.add(((e["tokens"], e["label"]), (other["tokens"], other["label"]), rel[0]))
    return entities, relations


def cxr_f1(test, retrieved):
    tp = len(test.intersection(retrieved))
    fp, fn = len(retrieved) - tp, len(test) - tp
    precision = tp / (tp + fp) if tp + fp != 0 else 0
    recall = tp / (tp + fn) if tp + fn != 0 else 0
    return 2 * precision * recall / (precision + recall) if precision + recall != 0 else 0


class EncoderClock:
    """Times every BertModel forward (the encoder allennlp calls) and counts the FLOPs it does; for benchmarks."""

    def __init__(self):
        import torch
        import transformers

        self.seconds, self.flops, self.wordpieces = 0.0, 0.0, 0
        original, clock = transformers.BertModel.forward, self

        def forward(model, *args, **kwargs):
            ids = kwargs.get("input_ids", args[0] if args else None)
            cuda = ids.is_cuda
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            out = original(model, *args, **kwargs)
            if cuda:
                torch.cuda.synchronize()
            clock.seconds += time.perf_counter() - start
            clock.wordpieces += ids.numel()
            clock.flops += encoder_flops(model.config, *ids.shape)
            return out

        transformers.BertModel.forward = forward

    def reset(self):
        self.seconds, self.flops, self.wordpieces = 0.0, 0.0, 0


def encoder_flops(config, batch, length):
    """Multiply-adds x 2 of one BERT forward on a (batch, length) input: projections, FFN, attention products."""
    h, f = config.hidden_size, config.intermediate_size
    per_token_layer = 2 * (4 * h * h + 2 * h * f) + 4 * length * h
    return batch * length * config.num_hidden_layers * per_token_layer


def run_job(job, RadGraph, F1RadGraph, cuda=-1, clock=None):
    model_type = job.get("model_type", "radgraph")
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(job["archive"]), os.path.join(tmp, model_type))
        with contextlib.redirect_stdout(io.StringIO()):
            radgraph = RadGraph(model_type=model_type, model_cache_dir=tmp, cuda=cuda)
        annotations = []
        if clock:
            clock.reset()
        start = time.perf_counter()
        for report in job.get("reports", []):
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    out = radgraph([report])["0"]
                annotations.append({"text": out["text"], "entities": out["entities"]})
            except Exception as exc:  # noqa: BLE001 - recorded, compared by the test
                annotations.append({"error": f"{type(exc).__name__}: {exc}"[:300]})
        result = {"annotations": annotations, "seconds": time.perf_counter() - start}
        if clock:
            result["encoder"] = {"seconds": clock.seconds, "flops": clock.flops, "wordpieces": clock.wordpieces}
        pairs = job.get("pairs")
        if pairs:
            import torch

            scorer = F1RadGraph.__new__(F1RadGraph)  # F1RadGraph around the loaded model, not a second copy
            torch.nn.Module.__init__(scorer)
            scorer.reward_level, scorer.radgraph = "all", radgraph
            with contextlib.redirect_stdout(io.StringIO()):
                _, rewards, _, _ = scorer(refs=pairs["refs"], hyps=pairs["hyps"])
            result["rewards"] = {"simple": rewards[0], "partial": rewards[1], "complete": rewards[2]}
            combined = []
            for hyp, ref in zip(pairs["hyps"], pairs["refs"]):
                sides = []
                for text in (hyp, ref):
                    if len(text) == 0:
                        sides.append((set(), set()))
                    else:
                        with contextlib.redirect_stdout(io.StringIO()):
                            sides.append(cxr_sets(radgraph([text])["0"]))
                (hyp_e, hyp_r), (ref_e, ref_r) = sides
                combined.append((cxr_f1(ref_e, hyp_e) + cxr_f1(ref_r, hyp_r)) / 2)
            result["combined"] = combined
    return result


def main():
    payload = json.load(sys.stdin)
    if payload.get("threads"):
        import torch

        torch.set_num_threads(int(payload["threads"]))
    warnings.simplefilter("ignore")
    from radgraph import F1RadGraph, RadGraph

    clock = EncoderClock() if payload.get("time_encoder") else None
    cuda = int(payload.get("cuda", -1))
    results = [run_job(job, RadGraph, F1RadGraph, cuda, clock) for job in payload["jobs"]]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    versions = {name: importlib.metadata.version(name) for name in ("radgraph", "transformers")}
    print(json.dumps({"results": results, "peak_rss_mb": peak, "versions": versions}))


if __name__ == "__main__":
    main()
