"""METEOR 1.5 as pycocoevalcap computes it (rexrank), as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics.meteor` (this file only declares the module). It runs Java.
"""

from rexrank.evaluate_modules import citations, metric
from rexrank.metrics.aggregation import MEAN, leaderboard_flags

_CITATION = citations.cite("""@inproceedings{denkowski2014meteor,
  title = {Meteor Universal: Language Specific Translation Evaluation for Any Target Language},
  author = {Denkowski, Michael and Lavie, Alon},
  booktitle = {Proceedings of the Ninth Workshop on Statistical Machine Translation},
  year = {2014}
}""", citations.COCO_CAPTIONS_BIBTEX)

_DESCRIPTION = """\
METEOR 1.5 exactly as pycocoevalcap 1.2 runs it: PTB-tokenised text (rexrank's pure-Python copy of its tokenizer),
meteor-1.5.jar with `-l en -norm` (exact, stem, synonym and paraphrase matches; alpha 0.85, beta 0.2, gamma 0.6,
delta 0.75), one corpus score from the summed segment statistics (not a mean of segment scores). Needs Java 8+.
Not a ReXrank leaderboard column.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/meteor", ...)`:
    jar (optional): path of meteor-1.5.jar with data/paraphrase-en.gz beside it (default: the one the installed
        pycocoevalcap package ships; `pip install pycocoevalcap`).
    tokenizer (optional): "ptb" (pycocoevalcap's PTB tokenisation, the default) or "none" (texts as given).
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    meteor (`float`): the corpus METEOR score; METEOR (`float`): the same under pycocoevalcap's COCOEvalCap key.
    scores (`list` of `float`): each report's segment score.
    tokenizer (`str`), leaderboard_flags (`list`), warning (None), fingerprint (`str`): as every rexrank module.
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> meteor = evaluate.load(str(module_path("meteor")))
    >>> results = meteor.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> results["meteor"] == results["METEOR"], len(results["scores"])
    (True, 2)
    >>> 0 < results["meteor"] < 1
    True
"""


class Meteor(metric.RexrankMetric):
    """METEOR 1.5 (pycocoevalcap's, rexrank)."""

    slug, description, inputs_description, citation = "meteor", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("jar", "tokenizer")
    codebase_urls = ("https://pypi.org/project/pycocoevalcap/", "https://github.com/cmu-mtlab/meteor")
    reference_urls = ("https://rexrank.ai",)

    def prepare(self, loaded):
        # The jar is located (and Java checked) before the first compute; the Java process starts then and stays.
        loaded.locate_weights()

    def _compute(self, predictions, references):
        from rexrank.metrics import meteor

        statistics = self.metric.statistics(predictions, references)
        value = float(meteor.corpus_values(statistics.sum(axis=0), len(statistics))[0])
        flags = list(leaderboard_flags(value, MEAN))  # NaN only when there is no pair
        return {"meteor": value, "METEOR": value, "scores": statistics[:, 0].tolist(),
                "tokenizer": self.metric.tokenizer, "leaderboard_flags": flags, "warning": "; ".join(flags) or None,
                "fingerprint": self.fingerprint}
