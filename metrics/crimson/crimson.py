"""CRIMSON (the ReXrank board's, as the authors' crimson-score 0.2.2) as a Hugging Face `evaluate` module.

The computation lives in `rexrank.metrics` (this file only declares the module).
"""

from rexrank.evaluate_modules import citations, metric
from rexrank.metrics.crimson import summarize

_CITATION = citations.cite("""@article{baharoon2026crimson,
  title = {CRIMSON: A Clinically-Grounded LLM-Based Metric for Generative Radiology Report Evaluation},
  author = {Baharoon, Mohammed and Heintz, Thibault and Raissi, Siavash and Alabbad, Mahmoud and Alhammad, Mona
            and AlOmaish, Hassan and Kim, Sung Eun and Banerjee, Oishi and Rajpurkar, Pranav},
  journal = {arXiv preprint arXiv:2603.06183},
  year = {2026}
}""")

_DESCRIPTION = """\
CRIMSON: an LLM judge (rajpurkarlab/medgemma-4b-it-crimson, a MedGemma fine-tune) lists the abnormal findings of the
reference and the generated report, matches them and names false, missing and attribute errors; findings are
weighted by clinical significance (urgent 1.0 ... benign 0.0) and the score lies in (-1, 1]: 1 a perfect report,
0 no better than a normal template, below 0 more weighted errors than correct findings. As the authors' package
crimson-score 0.2.2 computes it (the CRIMSON column of the ReXrank board): its decoding and its reader of the judge's
answer, except that an answer without the four top-level keys (e.g. `{}`, which crimson-score scores 1.0) is NaN
and counted (summary["n_deviations"]). radeval 2.2.1's variant: `rexrank.metrics.get("crimson_radeval")`.
"""

_KWARGS_DESCRIPTION = metric.describe(options="""\
Options of `evaluate.load("rexrank/crimson", ...)` (loaded once, kept for every compute call):
    model (optional): local path or Hub id of the judge (default: rajpurkarlab/medgemma-4b-it-crimson); with
        backend="openai", the model name at the endpoint.
    device (optional): "cpu", "cuda", "cuda:1", ... (default: CUDA when available, else CPU).
    batch_size (optional): prompts per generate call (default: the metric's own).
    backend (optional): "transformers" (default), "vllm" (optional extra) or "openai" (an OpenAI-compatible
        endpoint: pass base_url and api_key_env in options).
    options (`dict`, optional): any other option of the rexrank metric
        (`rexrank.metrics.get("crimson", **options)`, e.g. guidelines, dtype, base_url); see the card.
""", args="""\
    return_details (`bool`, default False): add the per-pair extra columns under "details".
""", returns="""\
    crimson (`float`): mean over the pairs whose answer could be read.
    crimson_std (`float`): their population standard deviation.
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags for the mean; empty when there is none.
{warning}
    scores (`list` of `float`): one value per pair, in input order (NaN where the answer could not be parsed).
{n_nan}
    fingerprint (`str`): hash of everything that can change the numbers (judge files, options, prompt, parser).
    summary (`dict`): n, n_scored, n_parse_failures, n_deviations, crimson and crimson_std.
    details (`dict` of `list`, with return_details=True): per-pair error counts, weighted errors, the formula's
        terms, parse errors, deviations from crimson-score and the judge's answers.
""", examples="""\
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> generated = ["No acute cardiopulmonary process.", "Small left pleural effusion."]
    >>> written = ["No acute cardiopulmonary abnormality.", "Large right pleural effusion."]
    >>> crimson = evaluate.load(str(module_path("crimson")), device="cpu")
    >>> results = crimson.compute(predictions=generated, references=written)
    >>> sorted(results)  # doctest: +NORMALIZE_WHITESPACE
    ['crimson', 'crimson_std', 'fingerprint', 'leaderboard_flags', 'n_nan', 'scores', 'summary', 'warning']
    >>> len(results["scores"])
    2
""")


def _summary_keys(metric, predictions, references, frame):
    """crimson_std and the counts, from this call's per-pair table (nothing judged twice)."""
    name = metric.spec.name
    summary = summarize(frame[name], frame[f"{name}_deviation"].notna().tolist(), name)
    return {"crimson_std": summary["crimson_std"], "summary": summary}


class Crimson(metric.RexrankMetric):
    slug, description, inputs_description, citation = "crimson", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("model", "device", "batch_size", "backend", "options")
    codebase_urls = ("https://github.com/rajpurkarlab/CRIMSON", "https://github.com/jbdel/RadEval")
    reference_urls = ("https://arxiv.org/abs/2603.06183",)

    def _compute(self, predictions, references, return_details=False):
        return self.score(predictions, references, return_details=return_details, field_keys=_summary_keys)
