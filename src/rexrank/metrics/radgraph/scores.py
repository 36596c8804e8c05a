"""Scores computed from RadGraph annotations: ReXrank's combined F1 and the radgraph package's reward levels.

Two different families, kept apart on purpose:

ReXrank / CXR-Report-Metric (``radgraph_combined``; rajpurkarlab/CXR-Report-Metric @9c9ecad,
CXRMetric/radgraph_evaluate_model.py ``parse_entity_relation`` + ``compute_f1``):
  entities  = {(tokens, label)}; relations = {((tokens, label), (object tokens, object label), relation)}
  F1 on the sets (hyp vs ref); any zero denominator gives 0, so two empty sets give 0, not 1.
  combined  = (entity F1 + relation F1) / 2.

radgraph 0.1.18 F1RadGraph (``radgraph/rewards.py``), returned 0 when either report has no entity:
  simple   (RG_E)      candidates (tokens, label) per entity;
  partial  (RG_ER)     (tokens, label) for an entity without relations, (tokens, label, True) with some;
  complete (RG_ER-bar) (tokens, label) without relations, else one (tokens.lower(), label, relation,
                       object tokens.lower()) per relation (only this level lower-cases, and only there).
"""

from __future__ import annotations

from typing import Any

Annotation = dict[str, Any]


def entity_set(annotation: Annotation) -> set[tuple[str, str]]:
    return {(e["tokens"], e["label"]) for e in annotation["entities"].values()}


def relation_set(annotation: Annotation) -> set[tuple[tuple[str, str], tuple[str, str], str]]:
    entities = annotation["entities"]
    return {((e["tokens"], e["label"]), (entities[obj]["tokens"], entities[obj]["label"]), rel)
            for e in entities.values() for rel, obj in e["relations"]}


def set_f1(test: set, retrieved: set) -> float:
    """CXR-Report-Metric compute_f1 (same operation order, so the same floats)."""
    true_positives = len(test & retrieved)
    false_positives = len(retrieved) - true_positives
    false_negatives = len(test) - true_positives
    precision = true_positives / (true_positives + false_positives) if true_positives + false_positives != 0 else 0
    recall = true_positives / (true_positives + false_negatives) if true_positives + false_negatives != 0 else 0
    return 2 * precision * recall / (precision + recall) if precision + recall != 0 else 0


def combined_scores(hyp: Annotation, ref: Annotation) -> tuple[float, float, float]:
    """(entity F1, relation F1, combined) for one pair, ReXrank's radgraph_combined."""
    entity_f1 = float(set_f1(entity_set(ref), entity_set(hyp)))
    relation_f1 = float(set_f1(relation_set(ref), relation_set(hyp)))
    return entity_f1, relation_f1, (entity_f1 + relation_f1) / 2


def _candidates(annotation: Annotation, level: str) -> set[tuple]:
    entities = annotation["entities"]
    out: set[tuple] = set()
    for e in entities.values():
        if level == "simple" or not e["relations"]:
            out.add((e["tokens"], e["label"]))
        elif level == "partial":
            out.add((e["tokens"], e["label"], True))
        else:
            out.update((e["tokens"].lower(), e["label"], rel, entities[obj]["tokens"].lower())
                       for rel, obj in e["relations"])
    return out


def _reward_f1(hyp: set, ref: set) -> float:
    """rewards.py F1 (precision and recall as membership counts, same operation order)."""
    precision = sum(1 for x in hyp if x in ref) / len(hyp) if len(hyp) > 0 else 0.0
    recall = sum(1 for x in ref if x in hyp) / len(ref) if len(ref) > 0 else 0.0
    return (2 * precision * recall / (precision + recall)) if (precision + recall) > 0 else 0.0


REWARD_LEVELS = ("simple", "partial", "complete")


def reward(hyp: Annotation, ref: Annotation, level: str) -> float:
    """radgraph 0.1.18 compute_reward(hyp, ref, level): 0 when either side has no entity."""
    if level not in REWARD_LEVELS:
        raise ValueError(f"unknown reward level {level!r}; expected one of {REWARD_LEVELS}")
    if not hyp["entities"] or not ref["entities"]:
        return 0.0
    return float(_reward_f1(_candidates(hyp, level), _candidates(ref, level)))
