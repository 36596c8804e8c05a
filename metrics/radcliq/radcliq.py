"""RadCliQ-v1 / RadCliQ-v0 as Hugging Face `evaluate` modules.

The computation lives in `rexrank.metrics.radcliq` (this file only declares the module).
"""

import rexrank.errors
from rexrank.data.catalog import REXRANK_BIBTEX
from rexrank.evaluate_modules import citations, metric
from rexrank.metrics import aggregation

_CITATION = citations.cite(citations.RADCLIQ_BIBTEX, REXRANK_BIBTEX)

_DESCRIPTION = """\
RadCliQ: the radiologist-aligned composite of RadGraph F1, BERTScore, SembScore and BLEU-2 (Yu et al., 2023), with
the exact constants of CXR-Report-Metric. RadCliQ-v1 (default) ranks the ReXrank leaderboard as 1/RadCliQ-v1 =
1 / mean(per-report RadCliQ-v1); config_name "v0" gives the 2023 composite. Lower is better.
"""

_KWARGS_DESCRIPTION = """
Options of `evaluate.load("rexrank/radcliq", ...)` (the three models load once, kept for every compute call):
    radgraph (`dict`, optional): options of the RadGraph component, e.g. {"model": "/path/radgraph.tar.gz"}.
    bertscore (`dict`, optional): options of the BERTScore component, e.g. {"model": "/path/distilroberta-base"}.
    semb (`dict`, optional): options of the SembScore component, e.g. {"model": "/path/chexbert.pth"}.
    device (optional): "cpu", "cuda", ... for every model-backed component (a component's own value wins).
    batch_size (optional): texts per forward pass for every model-backed component.
    config_name: "v1" (default) or "v0".
Args:
    predictions (`list` of `str`): generated reports, one per study.
    references (`list` of `str`): reference reports, same length and order as `predictions`.
    return_details (`bool`, default False): add the four per-pair component scores under "details".
Returns:
    radcliq_v1 (`float`): mean per-report RadCliQ-v1 (or radcliq_v0 with config_name "v0"); lower is better.
    inverse_radcliq_v1 (`float`): 1 / mean, the leaderboard's 1/RadCliQ-v1 column (v1 only; NaN if the mean is 0).
    leaderboard_flags (`list` of `str`): rexrank's aggregation flags (v0: only a NaN mean): a negative mean (its
        1/mean is returned but not meaningful), a zero mean (1/mean undefined), a NaN mean (no pair has a score);
        else empty.
    warning (`str` or None): the flags and any pairs without a score, in words, with the numbers they
        concern; None when all is well.
    scores (`list` of `float`): per-report RadCliQ, in input order (NaN if a component is NaN).
    n_nan (`int`): pairs without a score.
    fingerprint (`str`): hash of the composite and every component's configuration.
    details (`dict` of `list`, with return_details=True): radgraph_combined, bertscore, semb_score, bleu_score.
Examples:
    The composite itself, from component values (the published check of CXR-Report-Metric):
    >>> from rexrank.metrics.radcliq import radcliq_v0, radcliq_v1
    >>> print(round(radcliq_v1(0.273, 0.43, 0.315, 0.193), 4), round(radcliq_v0(0.273, 0.43, 0.315, 0.193), 4))
    1.087 3.3358

    The evaluate module scores reports (it loads RadGraph, BERTScore and CheXbert weights once):
    >>> import evaluate
    >>> from rexrank.evaluate_modules import module_path
    >>> radcliq = evaluate.load(str(module_path("radcliq")), device="cpu")
    >>> report = "Mild cardiomegaly with small bilateral pleural effusions and bibasilar atelectasis."
    >>> results = radcliq.compute(predictions=[report], references=[report], return_details=True)
    >>> print(round(results["radcliq_v1"], 4))  # identical reports: the best possible RadCliQ-v1
    -1.4407
    >>> print(round(results["inverse_radcliq_v1"], 4), results["leaderboard_flags"][0].split(":")[0])
    -0.6941 negative mean
    >>> print(results["warning"].split(": ")[0])  # the warning names the numbers it is about
    radcliq_v1 = -1.441, inverse_radcliq_v1 = -0.6941
    >>> sorted(results["details"])
    ['bertscore', 'bleu_score', 'radgraph_combined', 'semb_score']
"""

# config_name -> registry name.
_CONFIGS = {"default": "radcliq_v1", "v1": "radcliq_v1", "v0": "radcliq_v0"}

# RadCliQ runs three models, so it has no single `model=`: each component's weights go in that component's dict.
_COMPONENT_WEIGHTS = ("radgraph={'model': PATH}, bertscore={'model': PATH}, "
                      "semb={'model': PATH, 'backbone': PATH}")
_HINTS = {"model": f"RadCliQ runs three models; give each its weights in its component's dict: {_COMPONENT_WEIGHTS}."}


class RadCliQ(metric.RexrankMetric):
    """RadCliQ-v1 (default) or RadCliQ-v0."""

    slug, description, inputs_description, citation = "radcliq", _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    own_options = ("radgraph", "bertscore", "semb", "device", "batch_size")
    configs, config_choices, hints = _CONFIGS, ("v1", "v0"), _HINTS
    codebase_urls = ("https://github.com/rajpurkarlab/CXR-Report-Metric",)
    reference_urls = ("https://rexrank.ai", "https://doi.org/10.1016/j.patter.2023.100802")

    def _download_and_prepare(self, dl_manager):
        # The component models (RadGraph, BERTScore, CheXbert) load here, once; compute() reuses them.
        try:
            super()._download_and_prepare(dl_manager)
        except rexrank.errors.ModelNotAvailableError as exc:
            # A component's message says "pass model=/path", which is how that metric alone takes it; this
            # module takes it inside the component's dict.
            raise rexrank.errors.ModelNotAvailableError(
                f"{exc} In evaluate.load(\"rexrank/radcliq\", ...) pass it as {_COMPONENT_WEIGHTS}") from None

    def _compute(self, predictions, references, return_details=False):
        reciprocal = self.metric.spec.leaderboard_aggregation == aggregation.RECIPROCAL_OF_MEAN
        return self.score(predictions, references, return_details=return_details, reciprocal=reciprocal)
