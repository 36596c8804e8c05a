"""RadGraph F1 (ReXrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

import rexrank.evaluate_modules.conventions as conventions
from rexrank.data.catalog import REXRANK_BIBTEX
from rexrank.evaluate_modules import citations, metric

_CITATION = citations.cite("""@inproceedings{jain2021radgraph,
  title = {RadGraph: Extracting Clinical Entities and Relations from Radiology Reports},
  author = {Jain, Saahil and Agrawal, Ashwin and Saporta, Adriel and others},
  booktitle = {Thirty-fifth Conference on Neural Information Processing Systems Datasets and Benchmarks Track},
  year = {2021}
}""", citations.RADCLIQ_BIBTEX, REXRANK_BIBTEX)

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


class RadGraph(metric.RexrankMetric):
    """RadGraph F1 (ReXrank)."""

    slug, description, inputs_description, citation = "radgraph", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options, configs = ("model", "device", "batch_size", "encoder", "model_type", "options"), _CONFIGS
    codebase_urls = ("https://github.com/Stanford-AIMI/radgraph", "https://github.com/rajpurkarlab/CXR-Report-Metric")
    reference_urls = ("https://rexrank.ai",)

    def _compute(self, predictions, references, return_details=False):
        return self.score(predictions, references, return_details=return_details, field_keys=conventions.radgraph)
