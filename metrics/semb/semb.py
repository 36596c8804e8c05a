"""SembScore (ReXrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

import datasets
import evaluate

import rexrank.evaluate_modules.common as support
import rexrank.metrics
from rexrank.data.catalog import REXRANK_BIBTEX

_CITATION = """\
@inproceedings{smit2020chexbert,
  title = {Combining Automatic Labelers and Expert Annotations for Accurate Radiology Report Labeling Using BERT},
  author = {Smit, Akshay and Jain, Saahil and Rajpurkar, Pranav and Pareek, Anuj and Ng, Andrew Y. and Lungren, Matthew P.},
  booktitle = {Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing},
  year = {2020}
}
@article{yu2023evaluating,
  title = {Evaluating progress in automatic chest X-ray radiology report generation},
  author = {Yu, Feiyang and Endo, Mark and Krishnan, Rayan and others},
  journal = {Patterns},
  volume = {4},
  number = {9},
  year = {2023}
}
""" + REXRANK_BIBTEX + "\n"

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


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SembScore(evaluate.Metric):
    """SembScore (ReXrank)."""

    def __init__(self, model=None, device=None, batch_size=None, backbone=None, options=None, **evaluate_options):
        # evaluate.load forwards its extra keyword arguments here; evaluate's own options go to the base class,
        # and anything else is refused rather than silently ignored.
        super().__init__(**support.init_kwargs("rexrank/semb", evaluate_options, owner=type(self)))
        self.metric_config = support.metric_config(
            model=model, device=device, batch_size=batch_size, backbone=backbone, **(options or {}))

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            codebase_urls=['https://github.com/stanfordmlgroup/CheXbert',
                           'https://github.com/rajpurkarlab/CXR-Report-Metric'],
            reference_urls=["https://rexrank.ai"],
        )

    def _download_and_prepare(self, dl_manager):
        # Weights load here, once; compute() reuses them.
        self.metric = rexrank.metrics.get("semb", **self.metric_config)
        self.fingerprint = self.metric.fingerprint

    def _compute(self, predictions, references):
        return support.compute(self.metric, predictions, references, fingerprint=self.fingerprint,
                               processes=self.num_process)
