"""Reference BLEU-2: fast_bleu (what ReXrank runs) and NLTK sentence_bleu with method1 (what it equals).

CXR-Report-Metric @9c9ecad (CXRMetric/run_eval.py): prep_reports tokenises each report as
[t for t in str(r).lower().replace(".", " .").split(" ") if t != ""]; add_bleu_col scores each pair with
BLEU([gt_tokens], {"bigram": (1/2., 1/2.)}).get_score([pred_tokens])["bigram"][0].

stdin: {"hyps": [...], "refs": [...]}
stdout (last line): {"fast_bleu": [...], "nltk": [...], "versions": {...}}
"""

import json
import sys
import warnings
from importlib.metadata import version

from fast_bleu import BLEU
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu


def tokens(report):
    return list(filter(lambda t: t != "", str(report).lower().replace(".", " .").split(" ")))


def main():
    payload = json.loads(sys.stdin.read())
    fast, nltk_scores = [], []
    method1 = SmoothingFunction().method1
    for hyp, ref in zip(payload["hyps"], payload["refs"]):
        h, r = tokens(hyp), tokens(ref)
        fast.append(BLEU([r], {"bigram": (1 / 2.0, 1 / 2.0)}).get_score([h])["bigram"][0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NLTK warns on zero bigram overlap; the value is what we compare
            nltk_scores.append(float(sentence_bleu([r], h, weights=(0.5, 0.5), smoothing_function=method1)))
    print(json.dumps({"fast_bleu": fast, "nltk": nltk_scores,
                      "versions": {"fast_bleu": version("fast_bleu"), "nltk": version("nltk")}}))


if __name__ == "__main__":
    main()
