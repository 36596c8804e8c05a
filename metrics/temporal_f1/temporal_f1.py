"""Temporal entity F1 (radeval 2.2.1) as a Hugging Face `evaluate` module.

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
@inproceedings{bannur2023biovilt,
  title = {Learning to Exploit Temporal Structure for Biomedical Vision-Language Processing},
  author = {Bannur, Shruthi and Hyland, Stephanie and Liu, Qianchu and P{\\'e}rez-Garc{\\'i}a, Fernando and Ilse,
            Maximilian and Castro, Daniel C. and Boecking, Benedikt and Sharma, Harshita and Bouzid, Kenza and
            Thieme, Anja and Schwaighofer, Anton and Wetscherek, Maria and Lungren, Matthew P. and Nori, Aditya and
            Alvarez-Valle, Javier and Oktay, Ozan},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year = {2023}
}
"""

_DESCRIPTION = """\
Temporal entity F1: whether a generated report names change over time as its reference does. A report's temporal
entities are 44 temporal keywords (BioViL-T, CVPR 2023) found by stanza's radiology NER (OBSERVATION and
OBSERVATION_MODIFIER entities) or as whole words; per report, the F1 of the two sets, exactly as radeval 2.2.1
computes it. Not a ReXrank leaderboard column.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/temporal_f1", ...)` (loaded once, kept for every compute call):
    model (optional): stanza resources folder holding the en radiology pipeline (default: stanza's own,
        $STANZA_RESOURCES_DIR or ~/stanza_resources, as stanza.download fills it).
    device (optional): "cpu", "cuda", ... (default: stanza's choice, CUDA when available).
    batch_size (optional): reports per stanza call (default: the metric's own).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("temporal_f1", **options)`); see the card.
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    temporal_f1 (`float`): radeval's key: mean of the per-report F1 over the pairs without NaN.
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for that mean; empty when there is none.
    warning (`str` or None): the flags and any pairs without a score, in words; None when all is well.
    scores (`list` of `float`): F1 per pair, in input order (radeval's per_sample values).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> temporal_f1 = evaluate.load(str(module_path("temporal_f1")), device="cpu")
    >>> results = temporal_f1.compute(
    ...     predictions=["Stable cardiomegaly. New left effusion.", "No acute process."],
    ...     references=["Unchanged cardiomegaly, new left effusion.", "No acute cardiopulmonary abnormality."],
    ... )
    >>> sorted(results)
    ['fingerprint', 'leaderboard_flags', 'n_nan', 'scores', 'temporal_f1', 'warning']
    >>> results["scores"][1]  # neither report names a change: radeval's 1.0
    1.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class TemporalF1(evaluate.Metric):
    """Temporal entity F1."""

    def __init__(self, model=None, device=None, batch_size=None, options=None, **evaluate_options):
        # evaluate.load forwards its extra keyword arguments here; evaluate's own options go to the base class,
        # and anything else is refused rather than silently ignored.
        super().__init__(**support.init_kwargs("rexrank/temporal_f1", evaluate_options, owner=type(self)))
        self.metric_config = support.metric_config(model=model, device=device, batch_size=batch_size,
                                                   **(options or {}))

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            codebase_urls=["https://github.com/jbdel/RadEval", "https://github.com/stanfordnlp/stanza"],
            reference_urls=["https://arxiv.org/abs/2301.04558", "https://aclanthology.org/2025.emnlp-demos.40/"],
        )

    def _download_and_prepare(self, dl_manager):
        # The stanza pipeline loads on the first compute, once; compute() reuses it.
        self.metric = rexrank.metrics.get("temporal_f1", **self.metric_config)
        self.fingerprint = self.metric.fingerprint

    def _compute(self, predictions, references):
        return support.compute(self.metric, predictions, references, fingerprint=self.fingerprint,
                               processes=self.num_process)
