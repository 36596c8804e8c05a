"""Pure scoring: lists of strings in, one number per report out.

``rexrank.metrics.get(name, **config)`` returns a metric object with ``.spec`` and ``.score(hyps, refs)``.
"""

from __future__ import annotations

from typing import Any

from rexrank.metrics.registry import PLUGIN_GROUP, MetricSpec, Registry

# rexrank's metrics, registered below, and those of installed plugins (entry points in PLUGIN_GROUP; registry.py).
REGISTRY = Registry("metric", plugin_group=PLUGIN_GROUP)
_R = "rexrank.metrics"
# value_range: what each metric's values can be (MetricSpec.value_range). Proportions, F1s and overlap scores lie in
# [0, 1]; SembScore is a cosine; BERTScore is rescaled with a baseline, (F - b) / (1 - b), so it never exceeds 1 but
# has no fixed floor; RaTEScore is the F1 of two weighted cosine means, unbounded when they differ in sign; the
# RadCliQ composites are regressions; FineRadScore sums non-negative severity weights.
_UNIT = (0.0, 1.0)

# Leaderboard column names follow the published ReXrank tables (rajpurkarlab/ReXrank results CSVs: the header text
# import-published matches; CRIMSON since 2026);
# per-report column names follow CXR-Report-Metric's output CSV (CXRMetric/run_eval.py).
REGISTRY.register(
    MetricSpec("bleu2", "bleu_score", True, "1", "Sentence BLEU-2 (fast_bleu / NLTK method1), CXR-Report-Metric tokenisation",
               leaderboard_column="BLEU", value_range=_UNIT),
    f"{_R}.bleu:Bleu2", aliases=("bleu", "bleu-2", "bleu_score"))
REGISTRY.register(
    MetricSpec("bertscore", "bertscore", True, "1", "BERTScore F1, distilroberta-base layer 5, baseline-rescaled",
               needs_model=True, across_processes="shard", leaderboard_column="BertScore", value_range=(None, 1.0)),
    f"{_R}.bertscore:BertScore", aliases=("bert_score",))
REGISTRY.register(
    MetricSpec("semb", "semb_score", True, "1", "SembScore: cosine of CheXbert [CLS] embeddings",
               needs_model=True, across_processes="shard", leaderboard_column="SembScore", value_range=(-1.0, 1.0)),
    f"{_R}.semb:SembScore", aliases=("semb_score", "sembscore", "chexbert"))
REGISTRY.register(
    MetricSpec("radgraph", "radgraph_combined", True, "1",
               "RadGraph-F1 as ReXrank computes it: (entity F1 + relation F1) / 2 on RadGraph annotations",
               needs_model=True, across_processes="shard", leaderboard_column="RadGraph", value_range=_UNIT),
    f"{_R}.radgraph:RadGraphCombined", aliases=("radgraph_combined", "radgraph-f1", "radgraph_f1"))
for _level, _desc in (("simple", "RG_E: entities only"), ("partial", "RG_ER: entities and relations"),
                      ("complete", "RG_ER-bar: entities with all their relations")):
    REGISTRY.register(
        MetricSpec(f"radgraph_{_level}", f"radgraph_{_level}", True, "1",
                   f"radgraph package F1RadGraph reward, level {_level!r} ({_desc}); not the ReXrank RadGraph column",
                   needs_model=True, across_processes="shard", value_range=_UNIT),
        f"{_R}.radgraph:RadGraphReward{_level.capitalize()}")
REGISTRY.register(
    MetricSpec("radcliq_v1", "radcliq_v1", False, "1", "RadCliQ-v1 composite of RadGraph, BERTScore, SembScore, BLEU-2",
               needs_model=True, across_processes="shard", components=("radgraph", "bertscore", "semb", "bleu2"),
               leaderboard_aggregation="reciprocal_of_mean", leaderboard_column="1/RadCliQ-v1"),
    f"{_R}.radcliq:RadCliQv1", aliases=("radcliq", "radcliq-v1"))
REGISTRY.register(
    MetricSpec("radcliq_v0", "radcliq_v0", False, "1", "RadCliQ-v0 composite (the 2023 leaderboard's)",
               needs_model=True, across_processes="shard", components=("radgraph", "bertscore", "semb", "bleu2"),
               leaderboard_column="RadCliQ-v0"),
    f"{_R}.radcliq:RadCliQv0", aliases=("radcliq-v0",))
REGISTRY.register(
    MetricSpec("ratescore", "ratescore", True, "1", "RaTEScore: entity-level, affinity-weighted, negation-aware",
               needs_model=True, across_processes="shard", leaderboard_column="RaTEScore"),
    f"{_R}.ratescore:RaTEScore", aliases=("rate_score", "ratescore_v05"))
REGISTRY.register(
    MetricSpec("green", "green_score", True, "1", "GREEN: fine-tuned LLM judge, matched / (matched + significant errors)",
               needs_model=True, across_processes="shard", leaderboard_column="GREEN", value_range=_UNIT),
    f"{_R}.green:Green", aliases=("green_score",))
REGISTRY.register(
    MetricSpec("fineradscore", "fineradscore", False, "1",
               "FineRadScore: LLM line-by-line severity judge (rexrank's documented aggregation; published numbers are not reproducible)",
               needs_model=True, across_processes="shard", leaderboard_aggregation="reciprocal_of_mean", leaderboard_column="1/FineRadScore",
               value_range=(0.0, None)),
    f"{_R}.fineradscore:FineRadScore", aliases=("finerad", "fine_rad_score"))
REGISTRY.register(
    MetricSpec("ce_f1", "ce_exact_match_5", True, "1",
               "Clinical-efficacy F1 from CheXbert labels (f1chexbert's convention): micro/macro F1, precision, "
               "recall over 14 and 5 conditions, per-condition F1; corpus-level, from per-study TP/FP/FN",
               needs_model=True, across_processes="shard", level="corpus", shares=("semb",), value_range=_UNIT),
    f"{_R}.ce_f1:CEF1", aliases=("ce-f1", "chexbert_f1", "f1chexbert", "clinical_efficacy"))
REGISTRY.register(
    MetricSpec("nlg", "nlg_rouge_l", True, "1",
               "The NLG metrics as pycocoevalcap computes them (PTB tokenisation): corpus BLEU-1..4, ROUGE-L, "
               "CIDEr-D; corpus-level, from per-study n-gram counts and scores",
               level="corpus", value_range=_UNIT),  # the headline is corpus BLEU-4
    f"{_R}.nlg:NLG", aliases=("coco", "pycocoevalcap", "coco_caption"))
REGISTRY.register(
    MetricSpec("meteor", "meteor", True, "1",
               "METEOR 1.5 as pycocoevalcap runs it (Java; -l en -norm, PTB-tokenised text); corpus score from summed "
               "segment statistics", level="corpus", value_range=_UNIT),
    f"{_R}.meteor:Meteor", aliases=("meteor_1.5",))

# RadEval's chest X-ray metrics that the ReXrank leaderboard does not show (docs/radeval_metrics.md): model pages
# and rewards only, no leaderboard_column. RadEval-BERTScore's F1 is not rescaled and, like any F1 of cosines that
# may be negative, has no fixed bound.
REGISTRY.register(
    MetricSpec("radeval_bertscore", "radeval_bertscore", True, "1",
               "RadEval-BERTScore: BERTScore F1 with RadEval's radiology ModernBERT (IAMJB/RadEvalModernBERT), as radeval 2.2.1",
               needs_model=True, across_processes="shard"),
    f"{_R}.radeval_bertscore:RadEvalBertScore", aliases=("radevalbertscore", "radeval-bertscore"))
REGISTRY.register(
    MetricSpec("srrbert", "srrbert", True, "1",
               "SRR-BERT: structured-report findings per sentence (StanfordAIMI/SRR-BERT-Leaves-with-Statuses), "
               "per-report F1 over the union of predicted findings, as radeval 2.2.1",
               needs_model=True, across_processes="shard", value_range=_UNIT),
    f"{_R}.srrbert:SRRBert", aliases=("srr_bert", "srr-bert"))
REGISTRY.register(
    MetricSpec("temporal_f1", "temporal_f1", True, "1",
               "Temporal entity F1: temporal keywords found by stanza's radiology NER and by whole-word match, "
               "per-report F1 of the two sets, as radeval 2.2.1",
               needs_model=True, across_processes="shard", value_range=_UNIT),
    f"{_R}.temporal_f1:TemporalF1", aliases=("temporal", "f1temporal", "temporal-f1"))
# CRIMSON: the board's column follows the authors' package crimson-score 0.2.2 (version 2: its decoding and reader);
# radeval 2.2.1's copy stays available by name (docs/radeval_metrics.md lists every difference).
REGISTRY.register(
    MetricSpec("crimson", "crimson", True, "2",
               "CRIMSON: LLM judge of clinically weighted errors (rajpurkarlab/medgemma-4b-it-crimson), signed "
               "score in (-1, 1], as the authors' crimson-score 0.2.2 (the board's); an answer without the four "
               "top-level keys is NaN, not crimson-score's number, and counted",
               needs_model=True, across_processes="shard", leaderboard_column="CRIMSON",
               value_range=(-1.0, 1.0)),
    f"{_R}.crimson:Crimson")
REGISTRY.register(
    MetricSpec("crimson_radeval", "crimson_radeval", True, "1",
               "CRIMSON as radeval 2.2.1 computes it: the same judge, prompt and formula, radeval's decoding "
               "(repetition penalty 1.1) and its reader of the judge's answer; not a board column",
               needs_model=True, across_processes="shard", value_range=(-1.0, 1.0)),
    f"{_R}.crimson:CrimsonRadeval", aliases=("crimson-radeval",))

# Which metrics the board shows, per track and edition: rexrank.metrics.boards (EDITIONS, DEFAULT_EDITION).


def __getattr__(name: str) -> Any:
    # Metric and check_pairs live in metrics.base, which imports numpy: loaded when first asked for, so reading the
    # registry (the leaderboard store's checks, `rexrank leaderboard add`) costs no numpy import.
    if name in ("Metric", "check_pairs"):
        from rexrank.metrics import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get(name: str, **config: Any) -> Metric:
    """Instantiate metric ``name`` with its configuration (model=, device=, batch_size=, ...)."""
    return REGISTRY.cls(name)(**config)


def spec(name: str) -> MetricSpec:
    return REGISTRY.spec(name)


def available() -> list[str]:
    return REGISTRY.names()


__all__ = ["Metric", "MetricSpec", "REGISTRY", "available", "check_pairs", "get", "spec"]
