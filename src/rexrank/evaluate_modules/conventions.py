"""The keys the field's usual module for a metric returns, so a rexrank module is a drop-in for it.

Each function takes (metric, predictions, references, per-pair table from ``metric.score_details``) and returns
the extra keys; ``common.compute(field_keys=...)`` adds them next to rexrank's own (mean under the metric's key,
``scores``, ``n_nan``, ``fingerprint``, ``leaderboard_flags``, ``warning``). What each key means, and why a metric
has none, is on each module's card (metrics/<slug>/README.md) and in docs/evaluate_modules.md.

- BERTScore — huggingface/evaluate ``bertscore``: ``precision``, ``recall``, ``f1`` (per-pair lists) and
  ``hashcode`` (bert-score's setting string).
- BLEU — huggingface/evaluate ``bleu``: ``bleu``, ``precisions``, ``brevity_penalty``, ``length_ratio``,
  ``translation_length``, ``reference_length``: corpus-level, as that module computes them (tensorflow/nmt
  ``compute_bleu``, no smoothing), at order 2 on ReXrank's tokens. The leaderboard's BLEU is the mean of
  sentence-level BLEU-2 (``bleu2``), a different number.
- RadGraph — the radgraph package's ``F1RadGraph`` returns (mean_reward, reward_list,
  hypothesis_annotation_lists, reference_annotation_lists): the annotations always; the rewards for its reward
  levels (configs simple/partial/complete), not for ReXrank's combined score, which is no level of that package.
- GREEN — radeval's GREEN returns mean, std, per-report scores and a table of error counts; Stanford-AIMI's
  adds a summary of error-free rates per category: ``green_std`` (radeval's name) and ``summary``.
- CE F1 — f1chexbert 0.0.2's ``F1CheXbert.forward`` returns (accuracy, pe_accuracy, cr, cr_5): exact-match
  accuracy on the 5 conditions, its per-report 0/1 values, and sklearn ``classification_report`` dicts for the 14 and
  the 5 (per condition precision / recall / f1-score / support, "micro avg", "macro avg"); ``ce_f1_keys`` builds
  them from the per-study counts (weighted and samples averages are not reproduced).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from rexrank.metrics import bertscore as bertscore_metric
from rexrank.metrics import bleu as bleu_metric
from rexrank.metrics import green as green_metric


def bertscore(metric, predictions, references, frame) -> dict[str, Any]:
    """huggingface/evaluate ``bertscore`` keys: per-pair precision, recall, f1 (rescaled like the F1) and hashcode."""
    return {
        "precision": _floats(frame[bertscore_metric.PRECISION_COLUMN]),
        "recall": _floats(frame[bertscore_metric.RECALL_COLUMN]),
        "f1": _floats(frame[metric.spec.name]),
        "hashcode": bertscore_hashcode(metric.config()),
    }


def bertscore_hashcode(config: dict[str, Any]) -> str:
    """bert-score's ``get_hash`` string for this setting (model, layers, idf, rescaling), with rexrank's version in
    the place of bert-score's (rexrank computes, bert-score does not run)."""
    import transformers

    idf = "_idf" if config.get("idf") else "_no-idf"
    text = (f"{config.get('model')}_L{config.get('num_layers')}{idf}_version=rexrank-{installed_version()}"
            f"(hug_trans={transformers.__version__})")
    return text + ("-rescaled" if config.get("baseline") else "")


def bleu(metric, predictions, references, frame) -> dict[str, Any]:
    """huggingface/evaluate ``bleu`` keys at order 2 on ReXrank's tokenisation (corpus level, unsmoothed)."""
    order = len(bleu_metric.WEIGHTS)
    matches, possible = [0] * order, [0] * order
    translation_length = reference_length = 0
    for prediction, reference in zip(predictions, references):
        hyp, ref = bleu_metric.tokenize(prediction), bleu_metric.tokenize(reference)
        translation_length += len(hyp)
        reference_length += len(ref)
        for n in range(1, order + 1):
            hyp_grams = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
            ref_grams = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
            matches[n - 1] += sum((hyp_grams & ref_grams).values())  # counts clipped by the reference
            possible[n - 1] += max(0, len(hyp) - n + 1)
    precisions = [m / p if p else 0.0 for m, p in zip(matches, possible)]
    geo_mean = math.exp(sum(math.log(p) for p in precisions) / order) if min(precisions) > 0 else 0.0
    # evaluate divides by zero on an empty side; here an empty corpus side gives NaN/0 instead of an exception.
    ratio = translation_length / reference_length if reference_length else math.nan
    if translation_length == 0:
        penalty = 0.0
    else:  # exp(1 - r/c), the brevity penalty (= evaluate's exp(1 - 1/ratio))
        penalty = 1.0 if not reference_length or ratio > 1.0 else math.exp(1 - reference_length / translation_length)
    return {"bleu": geo_mean * penalty, "precisions": precisions, "brevity_penalty": penalty,
            "length_ratio": ratio, "translation_length": translation_length, "reference_length": reference_length}


def radgraph(metric, predictions, references, frame) -> dict[str, Any]:
    """radgraph ``F1RadGraph`` names: annotations always, rewards only for the package's own reward levels."""
    out: dict[str, Any] = {}
    if getattr(metric, "level", None):  # radgraph_simple / _partial / _complete
        rewards = frame[metric.spec.name].to_numpy(dtype=np.float64)
        out["mean_reward"] = float(np.mean(rewards)) if rewards.size else math.nan
        out["reward_list"] = [float(v) for v in rewards]
    # Annotated once per distinct text while scoring (the metric's text cache): this reads them back.
    out["hypothesis_annotation_lists"] = metric.annotate(predictions)
    out["reference_annotation_lists"] = metric.annotate(references)
    return out


def green(metric, predictions, references, frame) -> dict[str, Any]:
    """GREEN's std and summary (error-free rates overall and per error category), from the per-pair table."""
    # Column by column: a row of mixed dtypes would turn an unreadable count (pandas NA) into a float NaN.
    significant = [[_none(v) for v in frame[c].tolist()]
                   for c in green_metric.detail_columns() if c.startswith("green_sig_")]
    error_free = [_none(v) for v in frame["green_error_free"].tolist()]
    parsed = [{"score": float(score), "significant_errors": [column[i] for column in significant],
               "error_free": error_free[i]}
              for i, score in enumerate(frame[metric.spec.name].tolist())]
    summary = green_metric.summarize(parsed)
    return {"green_std": summary["std"], "summary": summary}


def installed_version() -> str:
    """rexrank's version as installed (its metadata, from pyproject.toml)."""
    from importlib.metadata import version

    return version("rexrank")


def _floats(column) -> list[float]:
    return [float(v) for v in column.to_numpy(dtype=np.float64)]


def _none(value):
    """pandas' missing value (an unreadable count) -> None, as the parser reports it."""
    import pandas as pd

    return None if value is pd.NA or value is None else (value.item() if isinstance(value, np.generic) else value)


__all__ = ["bertscore", "bertscore_hashcode", "bleu", "green", "radgraph"]


def ce_f1_keys(statistics) -> dict[str, Any]:
    """f1chexbert's (accuracy, pe_accuracy, cr, cr_5) as keys, from the (n, statistics) table of ``ce_f1``."""
    from rexrank.metrics import ce_f1

    statistics = np.asarray(statistics, dtype=np.float64)
    sums = statistics.sum(axis=0)
    k = len(ce_f1.CONDITIONS)
    tp, fp, fn = sums[1:1 + k], sums[1 + k:1 + 2 * k], sums[1 + 2 * k:]
    values = dict(zip(ce_f1.OUTPUTS, map(float, ce_f1.corpus_values(sums, len(statistics)))))

    def ratio(a, b):
        return float(a / b) if b else 0.0  # sklearn's zero_division default

    def report(indices, suffix):
        out = {}
        for i in indices:
            name = ce_f1.CONDITIONS[i]
            out[name] = {"precision": ratio(tp[i], tp[i] + fp[i]), "recall": ratio(tp[i], tp[i] + fn[i]),
                         "f1-score": ratio(2 * tp[i], 2 * tp[i] + fp[i] + fn[i]), "support": int(tp[i] + fn[i])}
        support = int(sum(tp[i] + fn[i] for i in indices))
        for avg in ("micro", "macro"):
            out[f"{avg} avg"] = {"precision": values[f"{avg}_precision_{suffix}"],
                                 "recall": values[f"{avg}_recall_{suffix}"],
                                 "f1-score": values[f"{avg}_f1_{suffix}"], "support": support}
        return out

    return {"accuracy": values["accuracy_5"], "pe_accuracy": [float(v) for v in statistics[:, 0]],
            "cr": report(range(k), "14"), "cr_5": report(ce_f1.TOP5_INDEX, "5"), "values": values}
