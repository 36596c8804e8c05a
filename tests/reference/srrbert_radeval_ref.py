"""Reference SRR-BERT: radeval 2.2.1's own SRRBertMetric (adapter) and SRRBert, on transformers 4.x.

Everything that decides a number is radeval's code: ``SRRBertMetric()`` builds ``SRRBert(model_type=
"leaves_with_statuses")``: its label map JSON, ``BertForSequenceClassification.from_pretrained(MODEL_CONFIGS[...]
["model_path"], num_labels=163)``, ``BertTokenizer.from_pretrained("microsoft/BiomedVLP-CXR-BERT-general")``, batch
size 4; ``_compute_raw(refs, hyps)`` runs ``srr_bert_parse_sentences`` (regexes + ``nltk.sent_tokenize``), the
classifier, the union per report, scikit-learn's ``classification_report`` and ``multilabel_prf_per_sample``.

What this script changes, nothing else: ``SRRBert.MODEL_CONFIGS["leaves_with_statuses"]["model_path"]`` (a public
class attribute) is the stand-in folder; the working directory is the stand-in root, where
``microsoft/BiomedVLP-CXR-BERT-general`` is a local folder, so the hard-coded tokenizer id loads it; the stand-in's
nltk_data root is put first on ``nltk.data.path`` (punkt_tab); ``nltk.download`` is stubbed (no network here;
radeval calls it at import and in the adapter, only to fetch punkt_tab); the device is the CPU (no GPU here).

stdin: {"root": dir, "model": dir, "nltk_data": dir, "hyps": [...], "refs": [...], "texts": [...]}
stdout (last line): {"per_sample": {key: [...]}, "aggregate": {key: float}, "formatted": {...},
                     "sentences": [[...]], "labels": [[...]], "versions": {...}}
"""

import importlib.metadata
import json
import os
import sys

import nltk

nltk.download = lambda *args, **kwargs: True  # see the docstring: radeval only fetches punkt_tab with it

import transformers  # noqa: E402

from radeval.metrics.SRRBert.adapter import SRRBertMetric  # noqa: E402
from radeval.metrics.SRRBert.srr_bert import SRRBert, srr_bert_parse_sentences  # noqa: E402


def main():
    payload = json.loads(sys.stdin.read())
    nltk.data.path.insert(0, payload["nltk_data"])
    SRRBert.MODEL_CONFIGS["leaves_with_statuses"]["model_path"] = payload["model"]
    os.chdir(payload["root"])
    metric = SRRBertMetric()
    raw = metric._compute_raw(payload["refs"], payload["hyps"])
    per_sample = {k: v["per_sample"] for k, v in raw.items() if k != "srrbert_label_scores"}
    aggregate = {k: v["aggregate"] for k, v in raw.items() if k != "srrbert_label_scores"}
    formatted = metric._format_output(raw, per_sample=False, detailed=False)
    sentences = [srr_bert_parse_sentences(t) for t in payload["texts"]]
    flat = [s for group in sentences for s in group]
    _, labels = metric._scorer(flat)
    print(json.dumps({"per_sample": per_sample, "aggregate": aggregate, "formatted": formatted,
                      "sentences": sentences, "labels": labels,
                      "versions": {"radeval": importlib.metadata.version("radeval"),
                                   "transformers": transformers.__version__, "nltk": nltk.__version__}}))


if __name__ == "__main__":
    main()
