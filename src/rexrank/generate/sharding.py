"""Which process generates which studies, and putting the results back in input order.

Batches are formed over the pending studies in input order *before* they are dealt to processes by the one
sharding rule of ``rexrank.parallel`` over batch positions (batch k goes to process k mod world_size). So a study lands in the same batch, next to the same neighbours, whatever the number of
processes: 1 and N processes run identical batches and give identical reports (padding included), and a resumed run
re-forms the same batches when whole batches were lost.

Order is restored from each record's study id against the input list, never from the order results arrive in
(accelerate's `gather_object` after `split_between_processes(apply_padding=True)` returns padded, interleaved
lists: slicing them back is only right for up to two processes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from rexrank.parallel import Context, shard

T = TypeVar("T")


def make_batches(items: Sequence[T], batch_size: int) -> list[list[T]]:
    return [list(items[i:i + batch_size]) for i in range(0, len(items), batch_size)]


def batches_for_process(batches: Sequence[list[T]], rank: int, world_size: int) -> list[list[T]]:
    return [batches[k] for k in shard(len(batches), Context(rank, world_size))]


def in_input_order(study_ids: Sequence[str], records_by_id: dict[str, dict]) -> list[dict | None]:
    """Records aligned with study_ids (None where a study has no record)."""
    return [records_by_id.get(study_id) for study_id in study_ids]
