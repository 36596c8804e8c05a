"""Encoder passes of token-id lists, shared by the encoder-based metrics (BERTScore, CheXbert, RaTEScore, SRR-BERT).

``single_text_batches``, for every output that is a number or a decision without a margin: one text per forward
pass, unpadded: a text's outputs are then a function of the text and the weights alone,
never of which other texts a call happens to compute. Matrix-multiply kernels are not batch-invariant (a kernel
and its summation order are picked by the whole batch's shape), so the same text came out up to ~2e-7 apart
alone, padded beside a longer text, or beside another text of its own length (distilroberta layout, CPU). A
metric computes only what the cache lacks, so with batches a value depended on what another run had left in
the cache, and warm differed from cold (issue 35 point 7); ``tests/test_evaluation_cache.py`` checks them byte
for byte. On CPU one text per pass was also faster than padded length-sorted batches of 64 (no padding; 150
IU-Xray reports, distilroberta-sized stand-in: 36 s against 75 s of CPU); on a GPU it costs kernel launches.

``padded_batches``: right-padded, length-sorted batches, for RaTEScore's NER tags only. Its tags are argmax
decisions, and a token whose two best logits are closer than ``NER_TIE_MARGIN`` is run again alone (as the
official code runs every sentence): a tag therefore never depends on the batch either, and the margin stays a
checked parity fact (ratescore/entities.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def single_text_batches(encoded: Sequence[Sequence[int]],
                        order: Sequence[int]) -> Iterator[tuple[list[int], torch.Tensor, torch.Tensor]]:
    """Yield ([index into ``encoded``], input_ids (1, length), attention_mask (1, length)) for each of ``order``."""
    # Imported here, as the metrics that call this do: importing a metric module (ce_f1's label names and corpus
    # rule, read by every summary and comparison of its counts) must not load torch.
    import torch

    for i in order:
        input_ids = torch.tensor([list(encoded[i])], dtype=torch.long)
        yield [i], input_ids, torch.ones_like(input_ids)


def padded_batches(encoded: Sequence[Sequence[int]], order: Sequence[int], batch_size: int,
                   pad_id: int) -> Iterator[tuple[list[int], torch.Tensor, torch.Tensor]]:
    """Yield (indices into ``encoded``, input_ids, attention_mask) for consecutive chunks of ``order``; padded
    positions are masked."""
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
