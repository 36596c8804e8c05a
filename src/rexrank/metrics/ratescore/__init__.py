"""RaTEScore: entity-level, affinity-weighted, negation-aware report similarity (official package 0.5.0/0.6.0).

``rexrank.metrics.get("ratescore", ner_model=..., embed_model=..., variant="v0.5")``; see metric.py and
docs/ratescore.md. Modules: constants (matrices, weights, variants), sentences (medspaCy PyRuSH), entities (NER +
the official IOB decoding), embedding ([CLS] vectors), score (the formula), metric (the object).
"""

from rexrank.metrics.ratescore.metric import RaTEScore

__all__ = ["RaTEScore"]
