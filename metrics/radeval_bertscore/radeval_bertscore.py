"""RadEval-BERTScore (radeval 2.2.1) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

import datasets
import evaluate

import rexrank.evaluate_modules.common as support
import rexrank.metrics

_CITATION = """\
@inproceedings{xu-etal-2025-radeval,
  title = {RadEval: A framework for radiology text evaluation},
  author = {Xu, Justin and Zhang, Xi and Abderezaei, Javid and Bauml, Julie and Boodoo, Roger and Haghighi, Fatemeh
            and Ganjizadeh, Ali and Brattain, Eric and Van Veen, Dave and Meng, Zaiqiao and Eyre, David W and
            Delbrouck, Jean-Benoit},
  booktitle = {Proceedings of the 2025 Conference on Empirical Methods in Natural Language Processing: System Demonstrations},
  year = {2025},
  pages = {546--557}
}
@inproceedings{zhang2020bertscore,
  title = {BERTScore: Evaluating Text Generation with BERT},
  author = {Zhang, Tianyi and Kishore, Varsha and Wu, Felix and Weinberger, Kilian Q. and Artzi, Yoav},
  booktitle = {International Conference on Learning Representations},
  year = {2020}
}
"""

_DESCRIPTION = """\
RadEval-BERTScore: BERTScore F1 (no idf, no baseline rescaling) with RadEval's radiology ModernBERT
(IAMJB/RadEvalModernBERT, all 22 layers), exactly as radeval 2.2.1 computes its radeval_bertscore. Not a ReXrank
leaderboard column.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/radeval_bertscore", ...)` (loaded once, kept for every compute call):
    model (optional): local path or Hub id of the weights (default: IAMJB/RadEvalModernBERT, see the card).
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): texts per forward pass (default: the metric's own).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("radeval_bertscore", **options)`); see the card.
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    radeval_bertscore (`float`): mean F1 over the pairs without NaN (radeval's own key and aggregate).
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for the mean (a NaN mean: no pair has a
        score); empty when there is none.
    warning (`str` or None): the flags and any pairs without a score, in words; None when all is well.
    scores (`list` of `float`): F1 per pair, in input order (radeval's per_sample list).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> radeval_bertscore = evaluate.load(str(module_path("radeval_bertscore")), device="cpu")
    >>> results = radeval_bertscore.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> sorted(results)
    ['fingerprint', 'leaderboard_flags', 'n_nan', 'radeval_bertscore', 'scores', 'warning']
    >>> len(results["scores"])
    2
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RadEvalBertScore(evaluate.Metric):
    """RadEval-BERTScore."""

    def __init__(self, model=None, device=None, batch_size=None, options=None, **evaluate_options):
        # evaluate.load forwards its extra keyword arguments here; evaluate's own options go to the base class,
        # and anything else is refused rather than silently ignored.
        super().__init__(**support.init_kwargs("rexrank/radeval_bertscore", evaluate_options, owner=type(self)))
        self.metric_config = support.metric_config(model=model, device=device, batch_size=batch_size,
                                                   **(options or {}))

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            codebase_urls=["https://github.com/jbdel/RadEval", "https://github.com/Tiiiger/bert_score"],
            reference_urls=["https://huggingface.co/IAMJB/RadEvalModernBERT",
                            "https://aclanthology.org/2025.emnlp-demos.40/"],
        )

    def _download_and_prepare(self, dl_manager):
        # Weights load here, once; compute() reuses them.
        self.metric = rexrank.metrics.get("radeval_bertscore", **self.metric_config)
        self.fingerprint = self.metric.fingerprint

    def _compute(self, predictions, references):
        return support.compute(self.metric, predictions, references, fingerprint=self.fingerprint,
                               processes=self.num_process)
