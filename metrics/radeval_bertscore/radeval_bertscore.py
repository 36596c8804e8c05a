"""RadEval-BERTScore (radeval 2.2.1) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

from rexrank.evaluate_modules import citations, metric

_CITATION = citations.cite(citations.RADEVAL_BIBTEX, citations.BERTSCORE_BIBTEX)

_DESCRIPTION = """\
RadEval-BERTScore: BERTScore F1 (no idf, no baseline rescaling) with RadEval's radiology ModernBERT
(IAMJB/RadEvalModernBERT, all 22 layers), exactly as radeval 2.2.1 computes its radeval_bertscore. Not a ReXrank
leaderboard column.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/radeval_bertscore", ...)` (loaded once, kept for every compute call):
    model (optional): local path or Hub id of the weights (default: IAMJB/RadEvalModernBERT, see the card).
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): texts per forward pass (default: the metric's own).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("radeval_bertscore", **options)`); see the card.
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    radeval_bertscore (`float`): mean F1 over the pairs without NaN (radeval's own key and aggregate).
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for the mean (a NaN mean: no pair has a
        score); empty when there is none.
    warning (`str` or None): the flags and any pairs without a score, in words; None when all is well.
    scores (`list` of `float`): F1 per pair, in input order (radeval's per_sample list).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> radeval_bertscore = evaluate.load(str(module_path("radeval_bertscore")), device="cpu")
    >>> results = radeval_bertscore.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> sorted(results)
    ['fingerprint', 'leaderboard_flags', 'n_nan', 'radeval_bertscore', 'scores', 'warning']
    >>> len(results["scores"])
    2
"""


class RadEvalBertScore(metric.RexrankMetric):
    """RadEval-BERTScore."""

    slug, description, inputs_description = "radeval_bertscore", _DESCRIPTION, _KWARGS_DESCRIPTION
    citation, own_options = _CITATION, ("model", "device", "batch_size", "options")
    codebase_urls = ("https://github.com/jbdel/RadEval", "https://github.com/Tiiiger/bert_score")
    reference_urls = ("https://huggingface.co/IAMJB/RadEvalModernBERT", "https://aclanthology.org/2025.emnlp-demos.40/")

    def _compute(self, predictions, references):
        return self.score(predictions, references)
