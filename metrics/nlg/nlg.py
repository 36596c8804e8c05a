"""Corpus BLEU-1..4, ROUGE-L and CIDEr-D as pycocoevalcap computes them (rexrank), as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics.nlg` (this file only declares the module).
"""

from rexrank.evaluate_modules import citations, metric
from rexrank.metrics.aggregation import MEAN, leaderboard_flags

_CITATION = citations.cite(citations.COCO_CAPTIONS_BIBTEX, citations.BLEU_BIBTEX, """@inproceedings{lin2004rouge,
  title = {ROUGE: A Package for Automatic Evaluation of Summaries},
  author = {Lin, Chin-Yew},
  booktitle = {Text Summarization Branches Out},
  year = {2004}
}""", """@inproceedings{vedantam2015cider,
  title = {CIDEr: Consensus-based Image Description Evaluation},
  author = {Vedantam, Ramakrishna and Zitnick, C. Lawrence and Parikh, Devi},
  booktitle = {Proceedings of the IEEE Conference on Computer Vision and Pattern Recognition},
  year = {2015}
}""")

_DESCRIPTION = """\
The NLG metrics of the report-generation literature exactly as pycocoevalcap 1.2 computes them: PTB tokenisation
(lower-cased, punctuation dropped), then corpus BLEU-1..4 (summed clipped n-gram counts, corpus brevity penalty),
ROUGE-L (mean per-report LCS F-measure, beta 1.2) and CIDEr-D (tf-idf n-gram cosine with document frequencies from
all references, length penalty, x10, mean over reports). Not ReXrank leaderboard columns.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/nlg", ...)`:
    tokenizer (optional): "ptb" (pycocoevalcap's PTB tokenisation, the default) or "none" (texts as given, e.g.
        reports already cleaned and tokenised the way R2Gen does).
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
Returns:
    nlg (`float`): corpus BLEU-4 (the headline value, as rexrank's results report it).
    Bleu_1, Bleu_2, Bleu_3, Bleu_4, ROUGE_L, CIDEr (`float`): pycocoevalcap's COCOEvalCap keys and values.
    values (`dict`): the same as rexrank names them (bleu_1 ... bleu_4, rouge_l, cider).
    scores (`list` of `float`): each report's ROUGE-L. cider_scores (`list` of `float`): each report's CIDEr-D.
    tokenizer (`str`), leaderboard_flags (`list`), warning (None), fingerprint (`str`): as every rexrank module.
Examples:
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> nlg = evaluate.load(str(module_path("nlg")))
    >>> results = nlg.compute(
    ...     predictions=["No acute cardiopulmonary process.", "Small left pleural effusion."],
    ...     references=["No acute cardiopulmonary abnormality.", "Large right pleural effusion."],
    ... )
    >>> [round(results[key], 4) for key in ("Bleu_1", "Bleu_2", "ROUGE_L")]
    [0.625, 0.559, 0.625]
    >>> sorted(results["values"])
    ['bleu_1', 'bleu_2', 'bleu_3', 'bleu_4', 'cider', 'rouge_l']
"""


class NLG(metric.RexrankMetric):
    """Corpus BLEU-1..4, ROUGE-L and CIDEr-D (pycocoevalcap's, rexrank)."""

    slug, description, inputs_description, citation = "nlg", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("tokenizer",)
    codebase_urls = ("https://pypi.org/project/pycocoevalcap/", "https://github.com/tylin/coco-caption")
    reference_urls = ("https://rexrank.ai",)

    def _compute(self, predictions, references):
        from rexrank.metrics import nlg

        # CIDEr-D's document frequencies are this call's references (pinned before scoring, named by the fingerprint).
        fingerprint = self.metric.use_corpus(references).fingerprint
        statistics = self.metric.statistics(predictions, references)
        values = dict(zip(nlg.OUTPUTS, map(float, nlg.corpus_values(statistics.sum(axis=0), len(statistics)))))
        flags = list(leaderboard_flags(values["bleu_4"], MEAN))  # NaN only when there is no pair
        coco = {f"Bleu_{k}": values[f"bleu_{k}"] for k in range(1, 5)}
        coco.update(ROUGE_L=values["rouge_l"], CIDEr=values["cider"])
        return {"nlg": values["bleu_4"], **coco, "values": {k: values[k] for k in nlg.SHOWN},
                "scores": statistics[:, nlg.STATISTICS.index("nlg_rouge_l")].tolist(),
                "cider_scores": statistics[:, nlg.STATISTICS.index("nlg_cider")].tolist(),
                "tokenizer": self.metric.tokenizer, "leaderboard_flags": flags, "warning": "; ".join(flags) or None,
                "fingerprint": fingerprint}
