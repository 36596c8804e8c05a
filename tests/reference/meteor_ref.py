"""Reference METEOR: pycocoevalcap 1.2's own ``Meteor().compute_score`` (meteor-1.5.jar, Java), and its PTBTokenizer.

pycocoevalcap's Meteor starts ``java -jar -Xmx2G meteor-1.5.jar ...`` with cwd = its own package folder (the jar name
is relative), so this script needs no chdir. One Meteor() (one Java process, ~15 s to load the paraphrase table) serves
every corpus and subset of the payload.

stdin: {"corpora": [{"hyps": [...], "refs": [...], "tokenize": true|false, "subsets": [[index, ...], ...]}, ...]}
  tokenize: run pycocoevalcap's PTBTokenizer first, as its COCOEvalCap does; false: score the texts as given.
  subsets: also score these index lists (a bootstrap resample may repeat an index: each occurrence is its own image).
stdout (last line): {"corpora": [{"score": corpus, "scores": [per segment], "tokens": {"hyps": [...], "refs": [...]},
  "subsets": [{"score": ..., "scores": [...]}, ...]}, ...], "versions": {...}}
"""

import json
import sys
from importlib.metadata import version

from pycocoevalcap.meteor.meteor import Meteor
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer


def score(meteor, gts, res):
    corpus, segments = meteor.compute_score(gts, res)
    return {"score": float(corpus), "scores": [float(s) for s in segments]}


def main():
    payload = json.loads(sys.stdin.read())
    meteor = Meteor()
    out = []
    for corpus in payload["corpora"]:
        hyps, refs = corpus["hyps"], corpus["refs"]
        gts = {str(i): [r] for i, r in enumerate(refs)}
        res = {str(i): [h] for i, h in enumerate(hyps)}
        if corpus.get("tokenize", True):
            tok = PTBTokenizer()
            gts = tok.tokenize({k: [{"caption": v[0]}] for k, v in gts.items()})
            res = tok.tokenize({k: [{"caption": v[0]}] for k, v in res.items()})
        result = score(meteor, gts, res)
        result["tokens"] = {"hyps": [res[str(i)][0] for i in range(len(hyps))],
                            "refs": [gts[str(i)][0] for i in range(len(refs))]}
        result["subsets"] = []
        for subset in corpus.get("subsets", []):
            sub_gts = {str(j): gts[str(i)] for j, i in enumerate(subset)}
            sub_res = {str(j): res[str(i)] for j, i in enumerate(subset)}
            result["subsets"].append(score(meteor, sub_gts, sub_res))
        out.append(result)
    print(json.dumps({"corpora": out, "versions": {"pycocoevalcap": version("pycocoevalcap")}}))


if __name__ == "__main__":
    main()
