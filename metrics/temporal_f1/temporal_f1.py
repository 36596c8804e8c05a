"""Temporal entity F1 (radeval 2.2.1) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

from rexrank.evaluate_modules import citations, metric

_CITATION = citations.cite(citations.RADEVAL_BIBTEX, """@inproceedings{bannur2023biovilt,
  title = {Learning to Exploit Temporal Structure for Biomedical Vision-Language Processing},
  author = {Bannur, Shruthi and Hyland, Stephanie and Liu, Qianchu and P{\\'e}rez-Garc{\\'i}a, Fernando and Ilse,
            Maximilian and Castro, Daniel C. and Boecking, Benedikt and Sharma, Harshita and Bouzid, Kenza and
            Thieme, Anja and Schwaighofer, Anton and Wetscherek, Maria and Lungren, Matthew P. and Nori, Aditya and
            Alvarez-Valle, Javier and Oktay, Ozan},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year = {2023}
}""")

_DESCRIPTION = """\
Temporal entity F1: whether a generated report names change over time as its reference does. A report's temporal
entities are 44 temporal keywords (BioViL-T, CVPR 2023) found by stanza's radiology NER (OBSERVATION and
OBSERVATION_MODIFIER entities) or as whole words; per report, the F1 of the two sets, exactly as radeval 2.2.1
computes it. Not a ReXrank leaderboard column.
"""

_KWARGS_DESCRIPTION = metric.describe(options="""\
Options of `evaluate.load("rexrank/temporal_f1", ...)` (loaded once, kept for every compute call):
    model (optional): stanza resources folder holding the en radiology pipeline (default: stanza's own,
        $STANZA_RESOURCES_DIR or ~/stanza_resources, as stanza.download fills it).
    device (optional): "cpu", "cuda", ... (default: stanza's choice, CUDA when available).
    batch_size (optional): reports per stanza call (default: the metric's own).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("temporal_f1", **options)`); see the card.
""", returns="""\
    temporal_f1 (`float`): radeval's key: mean of the per-report F1 over the pairs without NaN.
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for that mean; empty when there is none.
{warning}
    scores (`list` of `float`): F1 per pair, in input order (radeval's per_sample values).
{n_nan}
    fingerprint (`str`): hash of everything that can change the numbers (model files, options).
""", examples="""\
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> temporal_f1 = evaluate.load(str(module_path("temporal_f1")), device="cpu")
    >>> generated = ["Stable cardiomegaly. New left effusion.", "No acute process."]
    >>> written = ["Unchanged cardiomegaly, new left effusion.", "No acute cardiopulmonary abnormality."]
    >>> results = temporal_f1.compute(predictions=generated, references=written)
    >>> sorted(results)
    ['fingerprint', 'leaderboard_flags', 'n_nan', 'scores', 'temporal_f1', 'warning']
    >>> results["scores"][1]  # neither report names a change: radeval's 1.0
    1.0
""")


class TemporalF1(metric.RexrankMetric):
    """Temporal entity F1."""

    slug, description, inputs_description, citation = "temporal_f1", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("model", "device", "batch_size", "options")
    codebase_urls = ("https://github.com/jbdel/RadEval", "https://github.com/stanfordnlp/stanza")
    reference_urls = ("https://arxiv.org/abs/2301.04558", "https://aclanthology.org/2025.emnlp-demos.40/")

    def _compute(self, predictions, references):
        return self.score(predictions, references)
