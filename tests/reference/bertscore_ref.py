"""Reference BERTScore: bert-score 0.3.13 on transformers 4.x, called as ReXrank calls it.

CXR-Report-Metric @9c9ecad (CXRMetric/run_eval.py, add_bertscore_col): both sides go through
re.sub(r' +', ' ', text); BERTScorer(model_type="distilroberta-base", batch_size=256, lang="en",
rescale_with_baseline=True, idf=use_idf, idf_sents=test_reports); scorer.score(method_reports, test_reports)
(score's own batch_size default, 64). Here model_type is the stand-in folder, so num_layers=5 (bert-score's
model2layers entry for distilroberta-base) and baseline_path = bert-score's own distilroberta-base table are
passed explicitly: the same numbers the package would pick for the Hub name.

stdin: {"model": dir, "hyps": [...], "refs": [...], "idf": false, "num_layers": 5, "rescale": true}
stdout (last line): {"P": [...], "R": [...], "F": [...], "baseline": [P, R, F] the package read for the layer (null
                     with rescale false), "versions": {...}}
"""

import importlib.metadata
import json
import os
import re
import sys

import bert_score
import transformers
from bert_score import BERTScorer


def main():
    payload = json.loads(sys.stdin.read())
    refs = [re.sub(r" +", " ", t) for t in payload["refs"]]
    hyps = [re.sub(r" +", " ", t) for t in payload["hyps"]]
    baseline = os.path.join(os.path.dirname(bert_score.__file__), "rescale_baseline", "en", "distilroberta-base.tsv")
    scorer = BERTScorer(model_type=payload["model"], num_layers=payload.get("num_layers", 5), batch_size=256,
                        lang="en", rescale_with_baseline=payload.get("rescale", True), baseline_path=baseline,
                        idf=payload.get("idf", False), idf_sents=refs, nthreads=0, device="cpu")
    P, R, F = scorer.score(hyps, refs)
    baseline = scorer.baseline_vals.tolist() if scorer.rescale_with_baseline else None
    print(json.dumps({"P": P.tolist(), "R": R.tolist(), "F": F.tolist(), "baseline": baseline,
                      "versions": {"bert_score": importlib.metadata.version("bert-score"),  # its __version__ says 0.3.12
                                   "transformers": transformers.__version__}}))


if __name__ == "__main__":
    main()
