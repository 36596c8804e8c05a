"""GREEN (ReXrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

import rexrank.evaluate_modules.conventions as conventions
from rexrank.data.catalog import REXRANK_BIBTEX
from rexrank.evaluate_modules import citations, metric

_CITATION = citations.cite("""@inproceedings{ostmeier2024green,
  title = {GREEN: Generative Radiology Report Evaluation and Error Notation},
  author = {Ostmeier, Sophie and Xu, Justin and Chen, Zhihong and others},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2024},
  year = {2024}
}""", REXRANK_BIBTEX)

_DESCRIPTION = """\
GREEN: a fine-tuned LLM judge counts clinically significant errors and matched findings; score = matched / (matched
+ significant errors).
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/green", ...)` (loaded once, kept for every compute call):
    model (optional): local path or Hub id of the weights (default: the official ones, see the card).
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): texts per forward pass (default: the metric's own).
    backend (optional): "transformers" (default; batched, left padding) or "vllm" (optional extra).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("green", **options)`); see the card.
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
    return_details (`bool`, default False): add the per-pair extra columns under "details".
Returns:
    green (`float`): mean over the pairs without NaN (radeval's `green`).
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for the mean (a NaN mean: no pair has a
        score); empty when there is none.
    warning (`str` or None): the flags and any pairs without a score, in words; None when all is well.
    scores (`list` of `float`): one value per pair, in input order (NaN where the output could not be parsed).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
    green_std (`float`): standard deviation of the scores without NaN (radeval's `green_std`).
    summary (`dict`): n, n_scored, n_parse_failures, mean, std, error_free_rate and error_free_rate_by_category
        (share of reports without each clinically significant error (a)-(f): GREEN's error summary).
    details (`dict` of `list`, with return_details=True): per-pair extra columns.
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> green = evaluate.load(str(module_path("green")), device="cpu")
    >>> results = green.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> sorted(results)
    ['fingerprint', 'green', 'green_std', 'leaderboard_flags', 'n_nan', 'scores', 'summary', 'warning']
    >>> len(results["scores"])
    2
"""


class Green(metric.RexrankMetric):
    """GREEN (ReXrank)."""

    slug, description, inputs_description, citation = "green", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("model", "device", "batch_size", "backend", "options")
    codebase_urls, reference_urls = ("https://github.com/Stanford-AIMI/GREEN",), ("https://rexrank.ai",)

    def _compute(self, predictions, references, return_details=False):
        return self.score(predictions, references, return_details=return_details, field_keys=conventions.green)
