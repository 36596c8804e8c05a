"""SRR-BERT (radeval 2.2.1) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

from rexrank.evaluate_modules import citations, metric

_CITATION = citations.cite(citations.RADEVAL_BIBTEX)

_DESCRIPTION = """\
SRR-BERT: each sentence of a report is classified into structured-report findings (StanfordAIMI/SRR-BERT-Leaves-
with-Statuses, 163 finding/status labels); a report's findings are the union over its sentences; scored as F1 over
the findings, per report and as radeval 2.2.1's weighted averages. Not a ReXrank leaderboard column.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/srrbert", ...)` (loaded once, kept for every compute call):
    model (optional): local path or Hub id of the classifier (default: StanfordAIMI/SRR-BERT-Leaves-with-Statuses).
    tokenizer (optional): local path or Hub id of the tokenizer (default: microsoft/BiomedVLP-CXR-BERT-general).
    punkt (optional): folder of nltk's punkt_tab english parameters (default: nltk's installed punkt_tab).
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): sentences per forward pass (default: the metric's own).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("srrbert", **options)`, e.g. variant); see the card.
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    srrbert_weighted_f1 (`float`): radeval's key: scikit-learn weighted-average F1 over labels (corpus-level).
    srrbert_weighted_precision (`float`), srrbert_weighted_recall (`float`): the same for precision and recall.
    srrbert (`float`): mean of the per-report F1 over the pairs without NaN.
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for that mean; empty when there is none.
    warning (`str` or None): the flags and any pairs without a score, in words; None when all is well.
    scores (`list` of `float`): F1 per pair, in input order (radeval's per_sample srrbert_weighted_f1).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> srrbert = evaluate.load(str(module_path("srrbert")), device="cpu")
    >>> results = srrbert.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> sorted(results)  # doctest: +NORMALIZE_WHITESPACE
    ['fingerprint', 'leaderboard_flags', 'n_nan', 'scores', 'srrbert', 'srrbert_weighted_f1',
     'srrbert_weighted_precision', 'srrbert_weighted_recall', 'warning']
    >>> len(results["scores"])
    2
"""


class SRRBert(metric.RexrankMetric):
    """SRR-BERT."""

    slug, description, inputs_description, citation = "srrbert", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("model", "tokenizer", "punkt", "device", "batch_size", "options")
    codebase_urls = ("https://github.com/jbdel/RadEval",)
    reference_urls = ("https://huggingface.co/StanfordAIMI/SRR-BERT-Leaves-with-Statuses",
                      "https://aclanthology.org/2025.emnlp-demos.40/")

    def _compute(self, predictions, references):
        result = self.score(predictions, references)
        # radeval's corpus-level keys; every sentence's labels are in the metric's per-text cache by now.
        result.update(self.metric.weighted(predictions, references))
        return result
