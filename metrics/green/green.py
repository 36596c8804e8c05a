"""GREEN (ReXrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

import datasets
import evaluate

import rexrank.evaluate_modules.common as support
import rexrank.evaluate_modules.conventions as conventions
import rexrank.metrics
from rexrank.data.catalog import REXRANK_BIBTEX

_CITATION = """\
@inproceedings{ostmeier2024green,
  title = {GREEN: Generative Radiology Report Evaluation and Error Notation},
  author = {Ostmeier, Sophie and Xu, Justin and Chen, Zhihong and others},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2024},
  year = {2024}
}
""" + REXRANK_BIBTEX + "\n"

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


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Green(evaluate.Metric):
    """GREEN (ReXrank)."""

    def __init__(self, model=None, device=None, batch_size=None, backend=None, options=None, **evaluate_options):
        # evaluate.load forwards its extra keyword arguments here; evaluate's own options go to the base class,
        # and anything else is refused rather than silently ignored.
        super().__init__(**support.init_kwargs("rexrank/green", evaluate_options, owner=type(self)))
        self.metric_config = support.metric_config(
            model=model, device=device, batch_size=batch_size, backend=backend, **(options or {}))

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            codebase_urls=['https://github.com/Stanford-AIMI/GREEN'],
            reference_urls=["https://rexrank.ai"],
        )

    def _download_and_prepare(self, dl_manager):
        # Weights load here, once; compute() reuses them.
        self.metric = rexrank.metrics.get("green", **self.metric_config)
        self.fingerprint = self.metric.fingerprint

    def _compute(self, predictions, references, return_details=False):
        return support.compute(self.metric, predictions, references, return_details=return_details,
                               fingerprint=self.fingerprint, processes=self.num_process, field_keys=conventions.green)
