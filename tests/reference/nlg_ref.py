"""Reference corpus BLEU-1..4, ROUGE-L and CIDEr: pycocoevalcap 1.2's own scorers (and its PTBTokenizer).

stdin: {"hyps": [...], "refs": [...], "tokenize": true|false, "subsets": [[index, ...], ...] (optional)}
  tokenize: run pycocoevalcap's PTBTokenizer (Java) first, as its COCOEvalCap does; false: score the texts as given.
  subsets: also score these index lists (a bootstrap resample may repeat an index: each occurrence is its own image).
stdout (last line): {"bleu": [4 corpus values], "rouge_l": corpus, "cider": corpus, "rouge_l_each": [...],
  "cider_each": [...], "tokens": {"hyps": [...], "refs": [...]}, "subsets": [{"bleu": ..., ...}], "versions": {...}}
"""

import contextlib
import io
import json
import sys
from importlib.metadata import version

from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer


def score(gts, res):
    with contextlib.redirect_stdout(io.StringIO()):  # Bleu.compute_score prints its totals (verbose=1)
        bleu, _ = Bleu(4).compute_score(gts, res)
    rouge, rouge_each = Rouge().compute_score(gts, res)
    cider, cider_each = Cider().compute_score(gts, res)
    return {"bleu": [float(b) for b in bleu], "rouge_l": float(rouge), "cider": float(cider),
            "rouge_l_each": [float(x) for x in rouge_each], "cider_each": [float(x) for x in cider_each]}


def main():
    payload = json.loads(sys.stdin.read())
    hyps, refs = payload["hyps"], payload["refs"]
    gts = {str(i): [r] for i, r in enumerate(refs)}
    res = {str(i): [h] for i, h in enumerate(hyps)}
    if payload.get("tokenize", True):
        tok = PTBTokenizer()
        gts = tok.tokenize({k: [{"caption": v[0]}] for k, v in gts.items()})
        res = tok.tokenize({k: [{"caption": v[0]}] for k, v in res.items()})
    out = score(gts, res)
    out["tokens"] = {"hyps": [res[str(i)][0] for i in range(len(hyps))],
                     "refs": [gts[str(i)][0] for i in range(len(refs))]}
    out["subsets"] = []
    for subset in payload.get("subsets", []):
        sub_gts = {str(j): gts[str(i)] for j, i in enumerate(subset)}
        sub_res = {str(j): res[str(i)] for j, i in enumerate(subset)}
        out["subsets"].append(score(sub_gts, sub_res))
    out["versions"] = {"pycocoevalcap": version("pycocoevalcap")}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
