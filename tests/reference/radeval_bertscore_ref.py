"""Reference RadEval-BERTScore: radeval 2.2.1's own RadEvalBERTScorer on transformers 4.x, as its adapter builds it.

radeval/metrics/radevalbertscore/adapter.py (RadEvalBertScoreMetric): RadEvalBERTScorer(model_type=
"IAMJB/RadEvalModernBERT", num_layers=22, use_fast_tokenizer=True, rescale_with_baseline=False) and
``score(refs=refs, hyps=hyps)`` (batches of 64 pairs through its vendored bert-score). Here model_type is the
stand-in folder and device is the CPU; nothing else changes. P and R come from the same vendored BERTScorer's
``score`` on the same batches (the adapter keeps only F).

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
    with contextlib.redirect_stdout(io.StringIO()):
        mean, f1 = scorer.score(refs=refs, hyps=hyps)
    p, r = [], []
    for i in range(0, len(refs), scorer.batch_size):
        P, R, _ = scorer.bert_scorer.score(cands=hyps[i:i + scorer.batch_size], refs=refs[i:i + scorer.batch_size],
                                           batch_size=scorer.batch_size)
        p += P.tolist()
        r += R.tolist()
    print(json.dumps({"F": f1.tolist(), "P": p, "R": r, "mean": mean,
                      "versions": {"radeval": importlib.metadata.version("radeval"),
                                   "transformers": transformers.__version__, "torch": torch.__version__}}))


if __name__ == "__main__":
    main()
