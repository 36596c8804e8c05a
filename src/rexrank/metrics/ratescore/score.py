"""The RaTEScore formula (functional core): affinity-weighted, negation-aware, bidirectional, F1.

Official (RaTEScore 0.5.0/0.6.0 ``utils.compute`` and ``scorer.compute_score``):
- ``directional(A, B)``: for each entity a of A, its cosine-nearest entity b of B (``torch.topk(k=1)`` over
  L2-normalised float32 vectors); s = cos(a, b), w = W[(type a, type b)], p = neg_weight if the pair contradicts in
  polarity else 1; result = sum(s * w * p) / sum(w) (0 if sum(w) == 0).
- pair score = F1 of directional(ref, hyp) and directional(hyp, ref) (0 if both are 0); 0.5 if either side has
  no entity.
We keep float32 for normalisation and similarity and float64 for the sums, as Python floats are in the official
loop.

Ties: entities of B with the same encoder input (same text, or texts the embedding tokenizer maps to the same ids,
e.g. "Effusion"/"effusion" for an uncased encoder) have the same embedding and tie exactly as nearest neighbours.
When their types differ, the choice matters. The official code gives each copy its own row of a per-report batch
and its own dot product, so its copies are usually bitwise equal and ``torch.topk`` breaks the tie by its internal
sort path; sometimes a copy comes out 1 ulp larger and wins by rounding. We compute one vector and one similarity
per distinct input and spread it over the copies, so the tie is always exact, and run ``torch.topk`` over the full
row in the official order: the same choice as the official whenever its copies tie exactly, deterministic always.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from rexrank.metrics.ratescore.constants import NEGATION_PAIRS, NO_ENTITY_SCORE


def group_by_key(keys: Sequence[Hashable]) -> tuple[list[int], list[int]]:
    """(index of the first entity of each distinct key, group number of every entity)."""
    first: dict[Hashable, int] = {}
    representatives: list[int] = []
    groups: list[int] = []
    for j, key in enumerate(keys):
        if key not in first:
            first[key] = len(representatives)
            representatives.append(j)
        groups.append(first[key])
    return representatives, groups


def directional(emb_a: torch.Tensor, types_a: Sequence[str], emb_b: torch.Tensor, types_b: Sequence[str],
                matrix: Mapping[tuple[str, str], float], neg_weight: float,
                keys_b: Sequence[Hashable] | None = None) -> float:
    """Score of A's entities against their nearest neighbours in B (both non-empty).

    ``keys_b``: the encoder input of each B entity; copies of one input get bitwise-equal similarities.
    """
    a = F.normalize(emb_a, p=2, dim=1)
    if keys_b is not None:
        representatives, groups = group_by_key(keys_b)
        b = F.normalize(emb_b[representatives], p=2, dim=1)
        similarity = (a @ b.T)[:, groups]
    else:
        similarity = a @ F.normalize(emb_b, p=2, dim=1).T
    values, indices = torch.topk(similarity, 1, dim=1, largest=True)
    cos = values[:, 0].double().numpy()
    matched = [types_b[j] for j in indices[:, 0].tolist()]
    weights = np.array([matrix[(ta, tb)] for ta, tb in zip(types_a, matched)], dtype=np.float64)
    polarity = np.array([neg_weight if (ta, tb) in NEGATION_PAIRS else 1.0 for ta, tb in zip(types_a, matched)])
    total = float(weights.sum())
    return float((cos * weights * polarity).sum() / total) if total != 0 else 0.0


def pair_score(ref_emb: np.ndarray, ref_types: Sequence[str], hyp_emb: np.ndarray, hyp_types: Sequence[str],
               matrix: Mapping[tuple[str, str], float], neg_weight: float,
               ref_keys: Sequence[Hashable] | None = None, hyp_keys: Sequence[Hashable] | None = None,
               ) -> tuple[float, float, float]:
    """(score, ref->hyp directional, hyp->ref directional). NaN directionals where a side has no entity."""
    if len(ref_types) == 0 or len(hyp_types) == 0:
        return NO_ENTITY_SCORE, float("nan"), float("nan")
    ref_t = torch.from_numpy(np.ascontiguousarray(ref_emb, dtype=np.float32))
    hyp_t = torch.from_numpy(np.ascontiguousarray(hyp_emb, dtype=np.float32))
    ref_to_hyp = directional(ref_t, ref_types, hyp_t, hyp_types, matrix, neg_weight, hyp_keys)
    hyp_to_ref = directional(hyp_t, hyp_types, ref_t, ref_types, matrix, neg_weight, ref_keys)
    if ref_to_hyp + hyp_to_ref == 0:
        return 0.0, ref_to_hyp, hyp_to_ref
    return 2 * ref_to_hyp * hyp_to_ref / (ref_to_hyp + hyp_to_ref), ref_to_hyp, hyp_to_ref
