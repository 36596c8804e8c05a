"""Reference SembScore embeddings and CheXbert labels from the upstream package f1chexbert 0.0.2 (PyPI), run in
.venv-ref on transformers 4.57.

Everything that decides a number is f1chexbert's own code: ``F1CheXbert.__init__`` (its ``bert_labeler`` built from
the ``bert-base-uncased`` config, its ``model_state_dict`` loading with the ``module.`` prefix stripped, its tokenizer),
``F1CheXbert.get_label(report, mode="classification")`` (its ``tokenize``: strip, newline -> space, collapsed
whitespace, ``encode_plus``, > 512 ids -> ids[:511] + [SEP], an empty report -> [CLS] [SEP]; one report per forward
pass; the class -> code mapping 0 -> "" (blank), 1 -> 1, 2 -> 0, 3 -> -1) and ``F1CheXbert.target_names`` (the 14
condition names in head order).

What this script adds, and nothing else:
- Pointing f1chexbert at the stand-in files. F1CheXbert takes no path arguments: it loads
  ``BertTokenizer.from_pretrained('bert-base-uncased')`` / ``AutoConfig.from_pretrained('bert-base-uncased')`` and
  ``os.path.join(CACHE_DIR, "chexbert.pth")``, downloading the latter from StanfordAIMI/RRG_scorers only when it is
  absent. The script makes a folder holding ``bert-base-uncased`` and ``chexbert.pth`` (symlinks to the stand-in),
  runs from that folder (so the relative name resolves to the local folder) and sets the module global
  ``f1chexbert.f1chexbert.CACHE_DIR`` to it; ``download_model`` is replaced by a function that raises, so nothing is
  ever fetched.
- Strict loading: f1chexbert calls ``load_state_dict(strict=False)``; the script asserts afterwards that the model's
  state-dict keys are exactly the checkpoint's (prefix stripped) and every tensor equals the checkpoint's.
- Observation only: forward hooks record the [CLS] vector (the input of ``bert_labeler.dropout``, which is what the
  heads read; dropout is inactive) and the 14 heads' logits during ``get_label``. f1chexbert 0.0.2 has no
  embedding API.
- The per-pair cosine of CXR-Report-Metric run_eval.py add_semb_col, (a * b).sum() / (|a| |b|) on the reference
  (a) and candidate (b) float32 vectors (f1chexbert computes labels, not SembScore).

stdin: {"model": chexbert.pth, "backbone": bert-base-uncased dir, "hyps": [...], "refs": [...]}
stdout (last line): {"cosine": [...], "texts": [...], "embeddings": [[...]], "logits": [[[...] x 14]],
                     "classes": [[14 ints]], "codes": [[14 of 1/0/-1/null]], "target_names": [14 names],
                     "versions": {...}}
"""

import importlib.metadata
import json
import os
import sys
import tempfile
from collections import OrderedDict

import numpy as np
import torch
import transformers


def _no_download(*args, **kwargs):
    raise RuntimeError(f"f1chexbert tried to download {args} {kwargs}: the stand-in files were not found")


def load_labeler(model_path, backbone):
    import f1chexbert.f1chexbert as upstream

    folder = tempfile.mkdtemp(prefix="f1chexbert-")
    os.symlink(os.path.abspath(backbone), os.path.join(folder, "bert-base-uncased"))
    os.symlink(os.path.abspath(model_path), os.path.join(folder, "chexbert.pth"))
    os.chdir(folder)
    upstream.CACHE_DIR = folder
    upstream.download_model = _no_download
    labeler = upstream.F1CheXbert(device="cpu")

    # Strict: the keys f1chexbert's bert_labeler has are exactly the checkpoint's, and every weight was loaded.
    state = torch.load(model_path, map_location="cpu")["model_state_dict"]
    state = OrderedDict((k.replace("module.", ""), v) for k, v in state.items())
    loaded = labeler.model.state_dict()
    assert set(loaded) == set(state), (sorted(set(loaded) ^ set(state)))[:8]
    assert all(torch.equal(loaded[k], state[k]) for k in state)
    assert not labeler.model.training
    return labeler


def main():
    payload = json.loads(sys.stdin.read())
    torch.manual_seed(0)
    labeler = load_labeler(payload["model"], payload["backbone"])
    net = labeler.model

    seen = {}
    net.dropout.register_forward_hook(lambda m, inputs, output: seen.__setitem__("cls", inputs[0].detach().clone()))
    for k, head in enumerate(net.linear_heads):
        head.register_forward_hook(lambda m, inputs, output, k=k: seen.__setitem__(k, output.detach().clone()))

    texts = list(dict.fromkeys(payload["refs"] + payload["hyps"]))  # per-text work; order kept
    embeddings, logits, classes, codes = [], [], [], []
    with torch.no_grad():
        for text in texts:
            seen.clear()
            values = labeler.get_label(text, mode="classification")
            assert seen["cls"].shape[0] == 1
            embeddings.append(seen["cls"][0].numpy().astype(np.float32))
            heads = [seen[k][0].tolist() for k in range(len(net.linear_heads))]
            logits.append([h + [None] * (4 - len(h)) for h in heads])
            classes.append([int(np.argmax(h)) for h in heads])
            codes.append([None if v == "" else int(v) for v in values])
    index = {t: i for i, t in enumerate(texts)}
    cosine = []
    for h, r in zip(payload["hyps"], payload["refs"]):
        a, b = embeddings[index[r]], embeddings[index[h]]
        cosine.append(float((a * b).sum() / (np.linalg.norm(a) * np.linalg.norm(b))))
    print(json.dumps({"cosine": cosine, "texts": texts, "embeddings": [e.tolist() for e in embeddings],
                      "logits": logits, "classes": classes, "codes": codes,
                      "target_names": list(labeler.target_names),
                      "versions": {"f1chexbert": importlib.metadata.version("f1chexbert"),
                                   "transformers": transformers.__version__, "torch": torch.__version__}}))


if __name__ == "__main__":
    main()
