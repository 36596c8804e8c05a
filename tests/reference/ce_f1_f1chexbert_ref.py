"""Reference clinical-efficacy F1 from f1chexbert 0.0.2 (PyPI) and scikit-learn, run in .venv-ref.

- ``F1CheXbert.forward(hyps, refs)`` itself, on the stand-in chexbert.pth (loaded as semb_f1chexbert_ref.py loads it:
  f1chexbert's own class, strict key check, nothing downloaded): its accuracy, per-example accuracy and the two
  classification_report dicts (14 conditions, and its target_names_5). This is the "uncertain is positive" convention
  (its default mode "rrg").
- The other convention, which f1chexbert does not offer: its ``get_label(mode="classification")`` codes with only 1
  counted as positive, through the same sklearn classification_report calls.
- sklearn precision/recall/f1 (micro and macro, zero_division default) on the given 0/1 label matrices.

One shim, no number changes: f1chexbert 0.0.2 unpacks sklearn's private ``_check_targets`` into 3 values
(y_type, y_true, y_pred), and the sklearn of .venv-ref returns 5 (y_type, unique labels, y_true, y_pred,
sample_weight), so forward raises as published; the script rebinds the name in f1chexbert's module to a wrapper
returning those 3. forward uses them only for pe_accuracy.

stdin: {"model", "backbone", "hyps", "refs", "random": [{"y_true": [[..14]], "y_pred": [[..14]]}, ...]}
stdout (last line): {"rrg": {...}, "negative": {...}, "random": [...], "versions": {...}}
"""

import importlib.metadata
import json
import os
import sys

import numpy as np
import sklearn
from sklearn.metrics import accuracy_score, classification_report, precision_recall_fscore_support

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from semb_f1chexbert_ref import load_labeler  # noqa: E402  (same loading as the SembScore parity run)


def _three(result):
    return result if len(result) == 3 else (result[0], result[2], result[3])


def main():
    payload = json.loads(sys.stdin.read())
    import torch

    torch.manual_seed(0)
    labeler = load_labeler(payload["model"], payload["backbone"])
    import f1chexbert.f1chexbert as upstream

    check_targets = upstream._check_targets
    upstream._check_targets = lambda *args, **kwargs: _three(check_targets(*args, **kwargs))
    with torch.no_grad():
        accuracy, pe_accuracy, cr, cr_5 = labeler.forward(payload["hyps"], payload["refs"])
        codes = {side: [labeler.get_label(t.strip(), mode="classification") for t in payload[side]]
                 for side in ("hyps", "refs")}
    strict = {side: [[1 if v == 1 else 0 for v in row] for row in rows] for side, rows in codes.items()}
    index = labeler.target_names_5_index
    ref5 = [np.array(r)[index] for r in strict["refs"]]
    hyp5 = [np.array(h)[index] for h in strict["hyps"]]
    negative = {
        "accuracy": float(accuracy_score(ref5, hyp5)),
        "cr": classification_report(strict["refs"], strict["hyps"], target_names=labeler.target_names,
                                    output_dict=True),
        "cr_5": classification_report(ref5, hyp5, target_names=labeler.target_names_5, output_dict=True),
    }
    random = []
    for case in payload["random"]:
        y_true, y_pred = np.array(case["y_true"]), np.array(case["y_pred"])
        entry = {}
        for average in ("micro", "macro"):
            p, r, f, _ = precision_recall_fscore_support(y_true, y_pred, average=average)
            entry[average] = {"precision": float(p), "recall": float(r), "f1": float(f)}
        entry["per_class_f1"] = precision_recall_fscore_support(y_true, y_pred, average=None)[2].tolist()
        random.append(entry)
    print(json.dumps({"rrg": {"accuracy": float(accuracy), "pe_accuracy": np.asarray(pe_accuracy).tolist(),
                              "cr": cr, "cr_5": cr_5},
                      "negative": negative, "random": random,
                      "target_names": list(labeler.target_names), "target_names_5": list(labeler.target_names_5),
                      "versions": {"f1chexbert": importlib.metadata.version("f1chexbert"),
                                   "sklearn": sklearn.__version__}}))


if __name__ == "__main__":
    main()
