"""Reference RaTEScore (PyPI RaTEScore 0.5.0 and/or 0.6.0), run in .venv-ref on CPU.

Both versions are installed side by side with ``pip install --no-deps --target .venv-ref/ratescore-<version>``
(scripts/setup_ref.sh). Each job imports its version afresh (purging the other from sys.modules), so one process
serves both: interpreter and torch start-up dominate at stand-in sizes.

stdin JSON: {"ner": dir, "embed": dir, "batch_size": 1 (optional),
             "jobs": [{"version": "0.5.0"|"0.6.0", "affinity": null|"long"|"short", "runs": [[hyps, refs], ...]}],
             "entities": {"version": "0.5.0", "texts": [...]} (optional), "constants": ["0.5.0", ...] (optional),
             "ner_gaps": {"version": "0.5.0", "texts": [...]} (optional)}
stdout (last line) JSON: {"jobs": [[[score, ...] per run] per job], "entities": [[[text, type], ...] per text],
                          "ner_gaps": {"sentences": [...], "gaps": [smallest top-two logit gap per sentence]},
                          "constants": {version: {"matrices": {name: {key: value}}, "neg_weight": float|null}},
                          "versions": {"RaTEScore": "0.5.0, 0.6.0" (those imported), "transformers": ...}}
"""

import importlib
import importlib.metadata
import json
import os
import re
import sys

from loguru import logger

logger.disable("PyRuSH")  # PyRuSH logs every token at DEBUG level


def load(version):
    """Import RaTEScore <version> from its --target folder, dropping any other version already imported."""
    target = os.path.join(sys.prefix, f"ratescore-{version}")
    if not os.path.isdir(target):
        raise SystemExit(f"RaTEScore {version} is not installed at {target} (run scripts/setup_ref.sh)")
    for name in [m for m in sys.modules if m == "RaTEScore" or m.startswith("RaTEScore.")]:
        del sys.modules[name]
    sys.path[:] = [p for p in sys.path if not os.path.basename(p).startswith("ratescore-")]
    sys.path.insert(0, target)
    package = importlib.import_module("RaTEScore")
    assert os.path.dirname(package.__file__).startswith(target), package.__file__
    LOADED.add(importlib.metadata.distribution("RaTEScore").version)  # the first on sys.path: this target's
    return package


LOADED: set[str] = set()  # the RaTEScore versions this run imported, reported as its "versions"


payload = json.load(sys.stdin)
models = {"bert_model": payload["ner"], "eval_model": payload["embed"], "use_gpu": False,
          "batch_size": payload.get("batch_size", 1)}
out = {"jobs": []}
for job in payload.get("jobs", []):
    package = load(job["version"])
    kwargs = dict(models)
    if job.get("affinity") is not None:
        kwargs["affinity_matrix"] = job["affinity"]
    scorer = package.RaTEScore(**kwargs)
    out["jobs"].append([[float(x) for x in scorer.compute_score(hyps, refs)] for hyps, refs in job["runs"]])
if payload.get("entities"):
    package = load(payload["entities"]["version"])
    scorer = package.RaTEScore(**models)
    pairs = package.score.run_ner(payload["entities"]["texts"], scorer.idx2label, scorer.tokenizer, scorer.model,
                                  scorer.device, scorer.batch_size)
    out["entities"] = [[list(p) for p in report] for report in pairs]
if payload.get("ner_gaps"):
    # The package's own run_ner, one sentence per forward pass (batch_size 1); a forward hook only records the
    # logits it computes, and sentence_split gives the sentences in the order run_ner runs them.
    import torch

    package = load(payload["ner_gaps"]["version"])
    scorer = package.RaTEScore(**{**models, "batch_size": 1})
    seen = []
    hook = scorer.model.register_forward_hook(lambda module, args, output: seen.append(output.logits[0].float()))
    package.score.run_ner(payload["ner_gaps"]["texts"], scorer.idx2label, scorer.tokenizer, scorer.model,
                          scorer.device, 1)
    hook.remove()
    sentences = importlib.import_module("RaTEScore.utils").sentence_split(payload["ner_gaps"]["texts"])[0]
    assert len(sentences) == len(seen), (len(sentences), len(seen))
    top = [torch.topk(logits, 2, dim=-1).values for logits in seen]
    out["ner_gaps"] = {"sentences": sentences, "gaps": [float((t[:, 0] - t[:, 1]).min()) for t in top]}
out["constants"] = {}
for version in payload.get("constants", []):
    package = load(version)
    scorer_module = importlib.import_module("RaTEScore.scorer")
    utils_module = importlib.import_module("RaTEScore.utils")
    matrices = {name: value for name, value in vars(scorer_module).items()
                if name.startswith("DEFAULT_MATRIX") and isinstance(value, dict)}
    with open(utils_module.__file__) as fh:
        hard_coded = re.search(r"neg_weight\s*=\s*([0-9.]+)\s*$", fh.read(), re.M)
    out["constants"][version] = {"matrices": matrices, "neg_weight": float(hard_coded.group(1)) if hard_coded else None}
import transformers  # noqa: E402 - the version RaTEScore ran on

out["versions"] = {"RaTEScore": ", ".join(sorted(LOADED)), "transformers": transformers.__version__}
print(json.dumps(out))
