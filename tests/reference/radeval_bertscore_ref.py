"""Reference RadEval-BERTScore: radeval 2.2.1's own RadEvalBERTScorer on transformers 4.x, as its adapter builds it.

radeval/metrics/radevalbertscore/adapter.py (RadEvalBertScoreMetric): RadEvalBERTScorer(model_type=
"IAMJB/RadEvalModernBERT", num_layers=22, use_fast_tokenizer=True, rescale_with_baseline=False) and
``score(refs=refs, hyps=hyps)`` (batches of 64 pairs through its vendored bert-score). Here model_type is the
stand-in folder and device is the CPU; nothing else changes. P and R are what the same vendored BERTScorer's
``score`` returned in those very calls (the adapter keeps only F): its calls are recorded, not made a second time,
which would double the reference's run for the same numbers.

stdin: {"model": dir, "hyps": [...], "refs": [...]}
stdout (last line): {"F": [...], "P": [...], "R": [...], "mean": float, "versions": {...}}
"""

import contextlib
import importlib.metadata
import io
import json
import sys

import torch
import transformers

from radeval.metrics.radevalbertscore.radevalbertscore import RadEvalBERTScorer


def main():
    payload = json.loads(sys.stdin.read())
    scorer = RadEvalBERTScorer(model_type=payload["model"], num_layers=22, use_fast_tokenizer=True,
                               rescale_with_baseline=False, device="cpu")
    hyps, refs = payload["hyps"], payload["refs"]
    calls = []
    package_score = scorer.bert_scorer.score

    def recorded(*args, **kwargs):  # the package's own call, its (P, R, F) kept as it returns them
        result = package_score(*args, **kwargs)
        calls.append((kwargs.get("cands"), result))
        return result

    scorer.bert_scorer.score = recorded
    with contextlib.redirect_stdout(io.StringIO()):
        mean, f1 = scorer.score(refs=refs, hyps=hyps)
    assert [c for cands, _ in calls for c in cands] == hyps, "the adapter's batches did not cover the pairs in order"
    p = [x for _, (P, _, _) in calls for x in P.tolist()]
    r = [x for _, (_, R, _) in calls for x in R.tolist()]
    assert torch.equal(torch.cat([F for _, (_, _, F) in calls]), f1)  # the recorded calls made the adapter's F
    print(json.dumps({"F": f1.tolist(), "P": p, "R": r, "mean": mean,
                      "versions": {"radeval": importlib.metadata.version("radeval"),
                                   "transformers": transformers.__version__, "torch": torch.__version__}}))


if __name__ == "__main__":
    main()
