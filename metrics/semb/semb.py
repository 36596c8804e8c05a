"""SembScore (ReXrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

from rexrank.data.catalog import REXRANK_BIBTEX
from rexrank.evaluate_modules import citations, metric

_CITATION = citations.cite(citations.CHEXBERT_BIBTEX, citations.RADCLIQ_BIBTEX, REXRANK_BIBTEX)

_DESCRIPTION = """\
SembScore: cosine similarity of CheXbert [CLS] embeddings of the generated and the reference report, as the ReXrank
leaderboard computes its SembScore column.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/semb", ...)` (loaded once, kept for every compute call):
    model (optional): local path or Hub id of the weights (default: the official ones, see the card).
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): texts per forward pass (default: the metric's own).
    backbone (optional): local folder (or Hub id) with the BERT config and tokenizer (default bert-base-uncased).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("semb", **options)`); see the card.
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    semb (`float`): mean over the pairs without NaN.
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for the mean (a NaN mean: no pair has a
        score); empty when there is none.
    warning (`str` or None): the flags and any pairs without a score, in words; None when all is well.
    scores (`list` of `float`): one value per pair, in input order (NaN where a pair has no score).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> semb = evaluate.load(str(module_path("semb")), device="cpu")
    >>> results = semb.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> sorted(results)
    ['fingerprint', 'leaderboard_flags', 'n_nan', 'scores', 'semb', 'warning']
    >>> len(results["scores"])
    2
"""


class SembScore(metric.RexrankMetric):
    """SembScore (ReXrank)."""

    slug, description, inputs_description, citation = "semb", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("model", "device", "batch_size", "backbone", "options")
    codebase_urls = ("https://github.com/stanfordmlgroup/CheXbert", "https://github.com/rajpurkarlab/CXR-Report-Metric")
    reference_urls = ("https://rexrank.ai",)

    def _compute(self, predictions, references):
        return self.score(predictions, references)
