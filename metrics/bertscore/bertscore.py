"""BERTScore (ReXrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

import rexrank.evaluate_modules.conventions as conventions
from rexrank.data.catalog import REXRANK_BIBTEX
from rexrank.evaluate_modules import citations, metric

_CITATION = citations.cite(citations.BERTSCORE_BIBTEX, citations.RADCLIQ_BIBTEX, REXRANK_BIBTEX)

_DESCRIPTION = """\
BERTScore F1 with distilroberta-base (layer 5), rescaled with its baseline, exactly as the ReXrank leaderboard
computes its BertScore column.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/bertscore", ...)` (loaded once, kept for every compute call):
    model (optional): local path or Hub id of the weights (default: the official ones, see the card).
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): texts per forward pass (default: the metric's own).
    idf (optional): weight tokens by inverse document frequency (default False, as the leaderboard).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("bertscore", **options)`); see the card.
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    bertscore (`float`): mean F1 over the pairs without NaN (the leaderboard's BertScore column).
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for the mean (a NaN mean: no pair has a
        score); empty when there is none.
    warning (`str` or None): the flags and any pairs without a score, in words; None when all is well.
    scores (`list` of `float`): F1 per pair, in input order (NaN where a pair has no score).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
    What huggingface/evaluate's `bertscore` returns, rescaled with the same baseline as the F1:
    precision (`list` of `float`): BERTScore precision per pair.
    recall (`list` of `float`): BERTScore recall per pair.
    f1 (`list` of `float`): BERTScore F1 per pair (equal to `scores`).
    hashcode (`str`): bert-score's setting string (model, layers, idf, rescaling), with rexrank's version.
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> bertscore = evaluate.load(str(module_path("bertscore")), device="cpu")
    >>> results = bertscore.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> sorted(results)  # doctest: +NORMALIZE_WHITESPACE
    ['bertscore', 'f1', 'fingerprint', 'hashcode', 'leaderboard_flags', 'n_nan', 'precision', 'recall', 'scores',
     'warning']
    >>> len(results["precision"]), len(results["recall"]), results["f1"] == results["scores"]
    (2, 2, True)
"""


class BertScore(metric.RexrankMetric):
    """BERTScore (ReXrank)."""

    slug, description, inputs_description, citation = "bertscore", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("model", "device", "batch_size", "idf", "options")
    codebase_urls = ("https://github.com/Tiiiger/bert_score", "https://github.com/rajpurkarlab/CXR-Report-Metric")
    reference_urls = ("https://rexrank.ai",)

    def _compute(self, predictions, references):
        return self.score(predictions, references, field_keys=conventions.bertscore)
