"""BERTScore (ReXrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

import datasets
import evaluate

import rexrank.evaluate_modules.common as support
import rexrank.evaluate_modules.conventions as conventions
import rexrank.metrics
from rexrank.data.catalog import REXRANK_BIBTEX

_CITATION = """\
@inproceedings{zhang2020bertscore,
  title = {BERTScore: Evaluating Text Generation with BERT},
  author = {Zhang, Tianyi and Kishore, Varsha and Wu, Felix and Weinberger, Kilian Q. and Artzi, Yoav},
  booktitle = {International Conference on Learning Representations},
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


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class BertScore(evaluate.Metric):
    """BERTScore (ReXrank)."""

    def __init__(self, model=None, device=None, batch_size=None, idf=None, options=None, **evaluate_options):
        # evaluate.load forwards its extra keyword arguments here; evaluate's own options go to the base class,
        # and anything else is refused rather than silently ignored.
        super().__init__(**support.init_kwargs("rexrank/bertscore", evaluate_options, owner=type(self)))
        self.metric_config = support.metric_config(
            model=model, device=device, batch_size=batch_size, idf=idf, **(options or {}))

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            codebase_urls=['https://github.com/Tiiiger/bert_score',
                           'https://github.com/rajpurkarlab/CXR-Report-Metric'],
            reference_urls=["https://rexrank.ai"],
        )

    def _download_and_prepare(self, dl_manager):
        # Weights load here, once; compute() reuses them.
        self.metric = rexrank.metrics.get("bertscore", **self.metric_config)
        self.fingerprint = self.metric.fingerprint

    def _compute(self, predictions, references):
        return support.compute(self.metric, predictions, references, fingerprint=self.fingerprint,
                               processes=self.num_process, field_keys=conventions.bertscore)
