"""Right-padded batches of token-id lists, shared by the encoder-based metrics (BERTScore, CheXbert, RaTEScore).

Each caller chooses the order (length-sorted, so padding stays small) and the batch size; padded positions are
masked, so the batch a text lands in never changes its outputs beyond float rounding.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def padded_batches(encoded: Sequence[Sequence[int]], order: Sequence[int], batch_size: int,
                   pad_id: int) -> Iterator[tuple[list[int], torch.Tensor, torch.Tensor]]:
    """Yield (indices into ``encoded``, input_ids, attention_mask) for consecutive chunks of ``order``."""
    # Imported here, as the metrics that call this do: importing a metric module (ce_f1's label names and corpus
    # rule, read by every summary and comparison of its counts) must not load torch.
    import torch

    for begin in range(0, len(order), batch_size):
        chunk = list(order[begin:begin + batch_size])
        width = max(len(encoded[i]) for i in chunk)
        input_ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, i in enumerate(chunk):
            input_ids[row, :len(encoded[i])] = torch.tensor(encoded[i], dtype=torch.long)
            mask[row, :len(encoded[i])] = 1
        yield chunk, input_ids, mask
