"""BLEU-2 as the ReXrank leaderboard computes it, as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics.bleu` (this file only declares the module).
"""

import rexrank.evaluate_modules.conventions as conventions
from rexrank.data.catalog import REXRANK_BIBTEX
from rexrank.evaluate_modules import citations, metric

_CITATION = citations.cite(citations.BLEU_BIBTEX, citations.RADCLIQ_BIBTEX, REXRANK_BIBTEX)

_DESCRIPTION = """\
Sentence-level BLEU-2 of each generated report against its reference, exactly as CXR-Report-Metric and the ReXrank
leaderboard compute the BLEU column: tokens are the lower-cased report with periods detached, split on the space
character only; one reference; bigram BLEU with weights (1/2, 1/2) and NLTK smoothing method 1 (equal to fast_bleu).
The leaderboard value is the mean over reports. Higher is better; range [0, 1].
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    bleu2 (`float`): mean sentence-level BLEU-2 over the pairs (the leaderboard's BLEU column).
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for the mean (a NaN mean: no pair has a
        score); empty when there is none.
    warning (`str` or None): the flags and any pairs without a score, in words; None when all is well.
    scores (`list` of `float`): BLEU-2 of each pair, in input order.
    n_nan (`int`): number of pairs without a score (always 0 for BLEU-2).
    fingerprint (`str`): hash of the tokenisation and smoothing settings.
    What huggingface/evaluate's `bleu` returns, computed as it does (corpus level, no smoothing) with
    max_order=2 on the ReXrank tokens; `bleu` is corpus BLEU-2, NOT the leaderboard number `bleu2`:
    bleu (`float`), precisions (`list` of `float`: clipped 1-gram and 2-gram precision over the corpus),
    brevity_penalty (`float`), length_ratio (`float`), translation_length (`int`), reference_length (`int`).
Empty reports score 0.0 (no unigram can match). A missing report (None) is an error naming its index.
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> bleu2 = evaluate.load(str(module_path("bleu2")))
    >>> results = bleu2.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> print(round(results["bleu2"], 4), [round(s, 4) for s in results["scores"]])
    0.5901 [0.6325, 0.5477]
    >>> print(round(results["bleu"], 4), results["precisions"], results["brevity_penalty"])  # corpus BLEU-2
    0.5916 [0.7, 0.5] 1.0
    >>> print(bleu2.compute(predictions=["Heart size is normal."], references=["Heart size is normal."])["bleu2"])
    1.0
"""


class Bleu2(metric.RexrankMetric):
    """BLEU-2 (ReXrank / CXR-Report-Metric)."""

    slug, description, inputs_description, citation = "bleu2", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    codebase_urls = ("https://github.com/rajpurkarlab/CXR-Report-Metric",)
    reference_urls = ("https://rexrank.ai", "https://aclanthology.org/P02-1040/")

    def _compute(self, predictions, references):
        return self.score(predictions, references, field_keys=conventions.bleu)
