"""FineRadScore (rexrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

from rexrank.data.catalog import REXRANK_BIBTEX
from rexrank.evaluate_modules import citations, metric

_CITATION = citations.cite("""@article{huang2024fineradscore,
  title = {FineRadScore: A Radiology Report Line-by-Line Evaluation Technique Generating Corrections with Severity Scores},
  author = {Huang, Alyssa and Banerjee, Oishi and Wu, Kay and Pontes Reis, Eduardo and Rajpurkar, Pranav},
  journal = {arXiv preprint arXiv:2405.20613},
  year = {2024}
}""", REXRANK_BIBTEX)

_DESCRIPTION = """\
FineRadScore: an LLM judges each candidate sentence (correction, clinical severity, error category); rexrank's
documented aggregation turns severities into one number per report. Lower is better.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/fineradscore", ...)` (loaded once, kept for every compute call):
    model (optional): local path or Hub id of the weights (default: the official ones, see the card).
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): texts per forward pass (default: the metric's own).
    backend (optional): "openai" (default: any OpenAI-compatible chat endpoint) or "transformers" (a local chat
        model).
    base_url (optional): the endpoint's base URL (OpenAI, Azure, a local vLLM server).
    api_key_env (optional): name of the environment variable holding the API key (default OPENAI_API_KEY).
    aggregation (optional): "sum" (default) or "max" of the per-sentence severity weights.
    severity_weights (optional): dict severity -> weight, overriding rexrank's defaults.
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("fineradscore", **options)`); see the card.
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
    return_details (`bool`, default False): add the per-pair extra columns under "details".
Returns:
    fineradscore (`float`): mean over the pairs without NaN.
    inverse_fineradscore (`float`): 1 / mean, the leaderboard column (NaN if the mean is NaN or 0).
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags: a negative mean (its 1/mean is returned
        but not meaningful), a zero mean (1/mean undefined), a NaN mean (no pair has a score); else empty.
    warning (`str` or None): the flags and any pairs without a score, in words, with the numbers they
        concern; None when all is well.
    scores (`list` of `float`): one value per pair, in input order (NaN where a pair has no score).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
    details (`dict` of `list`, with return_details=True): per-pair extra columns.
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> fineradscore = evaluate.load(str(module_path("fineradscore")), device="cpu")
    >>> results = fineradscore.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> sorted(results)  # doctest: +NORMALIZE_WHITESPACE
    ['fineradscore', 'fingerprint', 'inverse_fineradscore', 'leaderboard_flags', 'n_nan', 'scores', 'warning']
    >>> len(results["scores"])
    2
"""


class FineRadScore(metric.RexrankMetric):
    """FineRadScore (rexrank)."""

    slug, description, inputs_description, citation = "fineradscore", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("model", "device", "batch_size", "backend", "base_url", "api_key_env", "aggregation",
                   "severity_weights", "options")
    codebase_urls = ("https://github.com/rajpurkarlab/FineRadScore",)
    reference_urls = ("https://rexrank.ai",)

    def _compute(self, predictions, references, return_details=False):
        return self.score(predictions, references, return_details=return_details, reciprocal=True)
