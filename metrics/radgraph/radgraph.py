"""RadGraph F1 (ReXrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

import datasets
import evaluate

import rexrank.errors
import rexrank.evaluate_modules.common as support
import rexrank.evaluate_modules.conventions as conventions
import rexrank.metrics
from rexrank.data.catalog import REXRANK_BIBTEX

_CITATION = """\
@inproceedings{jain2021radgraph,
  title = {RadGraph: Extracting Clinical Entities and Relations from Radiology Reports},
  author = {Jain, Saahil and Agrawal, Ashwin and Saporta, Adriel and others},
  booktitle = {Thirty-fifth Conference on Neural Information Processing Systems Datasets and Benchmarks Track},
  year = {2021}
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
RadGraph F1 as the ReXrank leaderboard computes it: (entity F1 + relation F1) / 2 on RadGraph annotations of the
generated and reference reports.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/radgraph", ...)` (loaded once, kept for every compute call):
    model (optional): local path or Hub id of the weights (default: the official ones, see the card).
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): texts per forward pass (default: the metric's own).
    encoder (optional): local folder of the BERT encoder's config and tokenizer (default: the one the archive
        names).
    model_type (optional): the archive's vocabulary namespace, "radgraph" or "radgraph-xl" (default: read from the
        archive).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("radgraph", **options)`); see the card.
    config_name: 'combined', 'simple', 'partial', 'complete' (the first is the default).
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
    return_details (`bool`, default False): add the per-pair extra columns under "details".
Returns:
    radgraph (`float`): mean over the pairs without NaN (radgraph_simple/_partial/_complete with those configs).
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for the mean (a NaN mean: no pair has a
        score); empty when there is none.
    warning (`str` or None): the flags and any pairs without a score, in words; None when all is well.
    scores (`list` of `float`): one value per pair, in input order (NaN where a pair has no score).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
    The names of the radgraph package's F1RadGraph result:
    hypothesis_annotation_lists, reference_annotation_lists (`list` of `dict`): the RadGraph annotation of each
        prediction and reference, shaped like radgraph 0.1.18's.
    mean_reward (`float`), reward_list (`list` of `float`): configs simple/partial/complete only, which are that
        package's reward levels (the combined ReXrank score is none of them).
    details (`dict` of `list`, with return_details=True): per-pair extra columns.
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> radgraph = evaluate.load(str(module_path("radgraph")), device="cpu")
    >>> results = radgraph.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> sorted(results)  # doctest: +NORMALIZE_WHITESPACE
    ['fingerprint', 'hypothesis_annotation_lists', 'leaderboard_flags', 'n_nan', 'radgraph',
     'reference_annotation_lists', 'scores', 'warning']
    >>> len(results["scores"])
    2
"""

# config_name -> registry name.
_CONFIGS = {
    'default': 'radgraph',
    'combined': 'radgraph',
    'simple': 'radgraph_simple',
    'partial': 'radgraph_partial',
    'complete': 'radgraph_complete',
}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RadGraph(evaluate.Metric):
    """RadGraph F1 (ReXrank)."""

    def __init__(self, model=None, device=None, batch_size=None, encoder=None, model_type=None, options=None,
                 **evaluate_options):
        # evaluate.load forwards its extra keyword arguments here; evaluate's own options go to the base class,
        # and anything else is refused rather than silently ignored.
        super().__init__(**support.init_kwargs("rexrank/radgraph", evaluate_options, owner=type(self)))
        self.metric_config = support.metric_config(
            model=model, device=device, batch_size=batch_size, encoder=encoder, model_type=model_type,
            **(options or {}))
        if self.config_name not in _CONFIGS:
            raise rexrank.errors.ConfigError(
                f"rexrank/radgraph: unknown config_name {self.config_name!r}. Available: {', '.join(_CONFIGS)}")

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            codebase_urls=['https://github.com/Stanford-AIMI/radgraph',
                           'https://github.com/rajpurkarlab/CXR-Report-Metric'],
            reference_urls=["https://rexrank.ai"],
        )

    def _download_and_prepare(self, dl_manager):
        # Weights load here, once; compute() reuses them.
        self.metric = rexrank.metrics.get(_CONFIGS[self.config_name], **self.metric_config)
        self.fingerprint = self.metric.fingerprint

    def _compute(self, predictions, references, return_details=False):
        return support.compute(self.metric, predictions, references, return_details=return_details,
                               fingerprint=self.fingerprint, processes=self.num_process,
                               field_keys=conventions.radgraph)
