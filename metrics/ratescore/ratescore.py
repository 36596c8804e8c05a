"""RaTEScore (ReXrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

from rexrank.data.catalog import REXRANK_BIBTEX
from rexrank.evaluate_modules import citations, metric

_CITATION = citations.cite("""@inproceedings{zhao2024ratescore,
  title = {RaTEScore: A Metric for Radiology Report Generation},
  author = {Zhao, Weike and Wu, Chaoyi and Zhang, Xiaoman and others},
  booktitle = {Proceedings of the 2024 Conference on Empirical Methods in Natural Language Processing},
  year = {2024}
}""", REXRANK_BIBTEX)

_DESCRIPTION = """\
RaTEScore: entity-level, synonym-aware, negation-aware similarity of radiology reports (NER + BioLORD entity
embeddings), as the ReXrank leaderboard computes its RaTEScore column.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/ratescore", ...)` (loaded once, kept for every compute call):
    model (optional): local path or Hub id of the weights (default: the official ones, see the card).
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): texts per forward pass (default: the metric's own).
    ner_model (optional): the NER model folder or Hub id alone (instead of model=).
    embed_model (optional): the entity-embedding model folder or Hub id alone (instead of model=).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("ratescore", **options)`); see the card.
    config_name: the RaTEScore variant, 'v0.5', 'v0.6-long', 'v0.6-short' (the first is the default: ratescore 0.5.0's behaviour).
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    ratescore (`float`): mean over the pairs without NaN.
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for the mean (a NaN mean: no pair has a
        score); empty when there is none.
    warning (`str` or None): the flags and any pairs without a score, in words; None when all is well.
    scores (`list` of `float`): one value per pair, in input order (NaN where a pair has no score).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> ratescore = evaluate.load(str(module_path("ratescore")), device="cpu")
    >>> results = ratescore.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> sorted(results)
    ['fingerprint', 'leaderboard_flags', 'n_nan', 'ratescore', 'scores', 'warning']
    >>> len(results["scores"])
    2
"""


class RaTEScore(metric.RexrankMetric):
    """RaTEScore (ReXrank)."""

    slug, description, inputs_description, citation = "ratescore", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("model", "device", "batch_size", "ner_model", "embed_model", "options")
    codebase_urls, reference_urls = ("https://github.com/MAGIC-AI4Med/RaTEScore",), ("https://rexrank.ai",)

    def configure(self, **options):
        config = super().configure(**options)
        if self.config_name != "default":  # evaluate.load("rexrank/ratescore", "v0.6-long")
            config["variant"] = self.config_name
        return config

    def _compute(self, predictions, references):
        return self.score(predictions, references)
