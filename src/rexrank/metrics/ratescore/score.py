"""The RaTEScore formula (functional core): affinity-weighted, negation-aware, bidirectional, F1.

Official (RaTEScore 0.5.0/0.6.0 ``utils.compute`` / ``topk_similarity`` and ``scorer.compute_score``):
- ``directional(A, B)``: A's and B's float32 embedding matrices are L2-normalised (``F.normalize``); for each
  entity a of A, in order, ``torch.topk(torch.matmul(B, a), k=1)`` gives its nearest entity b of B and the cosine
  s (a Python float of the float32 value); w = W[(type a, type b)], p = neg_weight if the pair contradicts in
  polarity else 1; result = sum(s * w * p) / sum(w), summed left to right (0 if sum(w) == 0).
- pair score = F1 of directional(ref, hyp) and directional(hyp, ref) (0 if both are 0); 0.5 if either side has
  no entity.

Ties decide scores. A report often holds one entity text twice with different types ("effusion" present in one
sentence, negated in another). Its copies have bitwise-equal embeddings, yet the official cosines to them are not
always equal: ``torch.matmul(B, a)`` is a matrix-vector product whose kernel rounds rows differently by position
(with the CPU kernels here the last row of B often comes out 1 ulp higher). When they are equal, ``torch.topk``
picks among them by its selection algorithm, which depends on the row length and on every other value in the row
(not "first" or "last"). Either way the pick needs the official floats bit for bit.

Two paths:
- ``pair_score(..., official=False)`` (fast): one similarity matrix product per direction. It also reports whether
  the pick is decided: for every entity of A, all candidates of B within ``SIMILARITY_TIE_MARGIN`` of its best
  cosine have one type. Then the official pick has that type too (our cosines differ from the official ones by float
  noise, far below the margin), weight and polarity are the same, and the cosine is the same maximum up to noise.
- ``pair_score(..., official=True)``: the official computation order above, on the official embeddings
  (embedding.EntityEncoder.report_batch): the official floats, hence the official pick and score, bit for bit.
The metric runs the fast path and redoes the undecided pairs on the official path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from rexrank.metrics.ratescore.constants import NEGATION_PAIRS, NO_ENTITY_SCORE, SIMILARITY_TIE_MARGIN


class PairScore(NamedTuple):
    score: float
    ref_to_hyp: float  # NaN where a side has no entity
    hyp_to_ref: float
    decided: bool  # False: some nearest-neighbour pick is a near tie between types (fast path only)


def weighted_mean(cosines: Sequence[float], types_a: Sequence[str], matched: Sequence[str],
                  matrix: Mapping[tuple[str, str], float], neg_weight: float) -> float:
    """sum(s * w * p) / sum(w) in Python floats, left to right, as utils.compute sums."""
    total = 0.0
    weight_sum = 0.0
    for s, ta, tb in zip(cosines, types_a, matched):
        w = matrix[(ta, tb)]
        total += s * w * (neg_weight if (ta, tb) in NEGATION_PAIRS else 1)
        weight_sum += w
    return total / weight_sum if weight_sum != 0 else 0.0


def official_nearest(emb_a: torch.Tensor, emb_b: torch.Tensor) -> tuple[list[int], list[float]]:
    """utils.topk_similarity(k=1): index and cosine of each A row's nearest B row, in the official order."""
    a = F.normalize(emb_a, p=2, dim=1)
    b = F.normalize(emb_b, p=2, dim=1)
    indices, values = [], []
    for row in a:
        top = torch.topk(torch.matmul(b, row), 1, largest=True)
        indices.append(int(top.indices[0]))
        values.append(float(top.values[0]))
    return indices, values


def fast_nearest(emb_a: torch.Tensor, types_b: Sequence[str], emb_b: torch.Tensor,
                 ) -> tuple[list[int], list[float], bool]:
    """Index and cosine of each A row's nearest B row in one matrix product; and whether every pick is decided."""
    similarity = F.normalize(emb_a, p=2, dim=1) @ F.normalize(emb_b, p=2, dim=1).T
    values, indices = similarity.max(dim=1)
    near = (similarity >= values[:, None] - SIMILARITY_TIE_MARGIN).numpy()
    kinds, kind_of = np.unique(np.asarray(types_b, dtype=object), return_inverse=True)
    if len(kinds) > 1:
        kinds_near = np.zeros((near.shape[0], len(kinds)), dtype=bool)
        for k in range(len(kinds)):
            kinds_near[:, k] = near[:, kind_of == k].any(axis=1)
        decided = bool((kinds_near.sum(axis=1) <= 1).all())
    else:
        decided = True
    return indices.tolist(), values.tolist(), decided


def pair_score(ref_emb: np.ndarray, ref_types: Sequence[str], hyp_emb: np.ndarray, hyp_types: Sequence[str],
               matrix: Mapping[tuple[str, str], float], neg_weight: float, official: bool = False) -> PairScore:
    """Score of one pair from its entities' embeddings (rows in entity order, duplicates included) and types."""
    if len(ref_types) == 0 or len(hyp_types) == 0:
        return PairScore(NO_ENTITY_SCORE, float("nan"), float("nan"), True)
    ref_t = torch.from_numpy(np.ascontiguousarray(ref_emb, dtype=np.float32))
    hyp_t = torch.from_numpy(np.ascontiguousarray(hyp_emb, dtype=np.float32))
    directional = []
    decided = True
    for emb_a, types_a, emb_b, types_b in ((ref_t, ref_types, hyp_t, hyp_types), (hyp_t, hyp_types, ref_t, ref_types)):
        if official:
            indices, cosines = official_nearest(emb_a, emb_b)
        else:
            indices, cosines, ok = fast_nearest(emb_a, types_b, emb_b)
            decided = decided and ok
        directional.append(weighted_mean(cosines, types_a, [types_b[j] for j in indices], matrix, neg_weight))
    ref_to_hyp, hyp_to_ref = directional
    if ref_to_hyp + hyp_to_ref == 0:
        return PairScore(0.0, ref_to_hyp, hyp_to_ref, decided)
    return PairScore(2 * ref_to_hyp * hyp_to_ref / (ref_to_hyp + hyp_to_ref), ref_to_hyp, hyp_to_ref, decided)
