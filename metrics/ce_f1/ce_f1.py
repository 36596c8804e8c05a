"""Clinical-efficacy F1 from CheXbert labels (rexrank) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

import rexrank.evaluate_modules.common as support
import rexrank.evaluate_modules.conventions as conventions
from rexrank.evaluate_modules import citations, metric
from rexrank.metrics.aggregation import MEAN, leaderboard_flags

_CITATION = citations.cite(citations.CHEXBERT_BIBTEX, """@inproceedings{miura2021improving,
  title = {Improving Factual Completeness and Consistency of Image-to-Text Radiology Report Generation},
  author = {Miura, Yasuhide and Zhang, Yuhao and Tsai, Emily Bao and Langlotz, Curtis P. and Jurafsky, Dan},
  booktitle = {Proceedings of NAACL-HLT 2021},
  year = {2021}
}""")

_DESCRIPTION = """\
Clinical-efficacy (CE) F1: CheXbert labels the 14 CheXpert conditions in the generated and the reference report;
precision, recall and F1 of the generated labels against the reference labels, micro and macro averaged over the 14
conditions and over the 5 most reported, and per condition, as f1chexbert 0.0.2 computes them.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/ce_f1", ...)` (loaded once, kept for every compute call):
    uncertain (optional): "positive" (f1chexbert's convention, the default) or "negative" (only confident
        positives count).
    model (optional): local path or Hub id of chexbert.pth (default: the official one, see the card).
    backbone (optional): local folder (or Hub id) with the BERT config and tokenizer (default bert-base-uncased).
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): texts per forward pass (default: SembScore's own).
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    ce_f1 (`float`): micro-averaged F1 over the 14 conditions (the headline value).
    accuracy, pe_accuracy, cr, cr_5: what f1chexbert's forward returns (exact-match accuracy on the 5 conditions,
        its per-report 0/1 values, classification_report-style dicts for the 14 and the 5).
    values (`dict`): every rexrank output (micro/macro F1, precision, recall over 14 and 5, accuracy_5, f1_<condition>).
    scores (`list` of `float`): each report's exact match on the 5 conditions (pe_accuracy).
    uncertain (`str`): the convention used. leaderboard_flags (`list`), warning (None): as every rexrank module.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> ce_f1 = evaluate.load(str(module_path("ce_f1")), device="cpu")
    >>> results = ce_f1.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> sorted(results)
    ['accuracy', 'ce_f1', 'cr', 'cr_5', 'fingerprint', 'leaderboard_flags', 'pe_accuracy', 'scores', 'uncertain', 'values', 'warning']
    >>> len(results["cr"]), len(results["cr_5"])
    (16, 7)
"""


class CEF1(metric.RexrankMetric):
    """Clinical-efficacy F1 from CheXbert labels (rexrank)."""

    slug, description, inputs_description, citation = "ce_f1", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("uncertain", "model", "backbone", "device", "batch_size")
    codebase_urls = ("https://pypi.org/project/f1chexbert/", "https://github.com/stanfordmlgroup/CheXbert")
    reference_urls = ("https://rexrank.ai",)

    def configure(self, uncertain=None, model=None, backbone=None, device=None, batch_size=None):
        # CE F1 reads SembScore's CheXbert labels: the labeller's weights are options of its `semb` entry.
        return support.metric_config(uncertain=uncertain, device=device, batch_size=batch_size,
                                     semb=support.metric_config(model=model, backbone=backbone))

    def _compute(self, predictions, references):
        statistics = self.metric.statistics(predictions, references)
        keys = conventions.ce_f1_keys(statistics)
        flags = list(leaderboard_flags(keys["values"]["micro_f1_14"], MEAN))  # NaN only when there is no pair
        return {"ce_f1": keys["values"]["micro_f1_14"], "leaderboard_flags": flags,
                "warning": "; ".join(flags) or None,
                "scores": keys["pe_accuracy"], **keys, "uncertain": self.metric.uncertain,
                "fingerprint": self.fingerprint}
