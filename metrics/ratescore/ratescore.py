"""RaTEScore (ReXrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

import datasets
import evaluate

import rexrank.evaluate_modules.common as support
import rexrank.metrics
from rexrank.data.catalog import REXRANK_BIBTEX

_CITATION = """\
@inproceedings{zhao2024ratescore,
  title = {RaTEScore: A Metric for Radiology Report Generation},
  author = {Zhao, Weike and Wu, Chaoyi and Zhang, Xiaoman and others},
  booktitle = {Proceedings of the 2024 Conference on Empirical Methods in Natural Language Processing},
  year = {2024}
}
""" + REXRANK_BIBTEX + "\n"

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


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RaTEScore(evaluate.Metric):
    """RaTEScore (ReXrank)."""

    def __init__(self, model=None, device=None, batch_size=None, ner_model=None, embed_model=None, options=None,
                 **evaluate_options):
        # evaluate.load forwards its extra keyword arguments here; evaluate's own options go to the base class,
        # and anything else is refused rather than silently ignored.
        super().__init__(**support.init_kwargs("rexrank/ratescore", evaluate_options, owner=type(self)))
        self.metric_config = support.metric_config(
            model=model, device=device, batch_size=batch_size, ner_model=ner_model,
            embed_model=embed_model, **(options or {}))
        if self.config_name != "default":  # evaluate.load("rexrank/ratescore", "v0.6-long")
            self.metric_config["variant"] = self.config_name

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            codebase_urls=['https://github.com/MAGIC-AI4Med/RaTEScore'],
            reference_urls=["https://rexrank.ai"],
        )

    def _download_and_prepare(self, dl_manager):
        # Weights load here, once; compute() reuses them.
        self.metric = rexrank.metrics.get("ratescore", **self.metric_config)
        self.fingerprint = self.metric.fingerprint

    def _compute(self, predictions, references):
        return support.compute(self.metric, predictions, references, fingerprint=self.fingerprint,
                               processes=self.num_process)
