"""Data parallelism for generation: shard the prompts by process, generate, gather the results in input order.

Launched with ``accelerate launch`` (or torchrun) every process runs the same scoring call; each generates only its
contiguous shard and ``accelerate.utils.gather_object`` hands every process the full, ordered list. With one
process this is a plain function call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def shard_bounds(n_items: int, world_size: int, rank: int) -> tuple[int, int]:
    """[start, stop) of ``rank``'s contiguous shard; the first ``n_items % world_size`` ranks get one extra item."""
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in a world of {world_size} processes")
    base, extra = divmod(n_items, world_size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def merge_shards(gathered: Sequence[tuple[int, Sequence[T]]], n_items: int) -> list[T]:
    """Reassemble (start, results) pieces from all processes into one list of ``n_items``, checking coverage."""
    out: list[Any] = [None] * n_items
    seen = [False] * n_items
    for start, results in gathered:
        for offset, value in enumerate(results):
            index = start + offset
            if index >= n_items or seen[index]:
                raise RuntimeError(f"shard results overlap or overflow at item {index} of {n_items}")
            out[index] = value
            seen[index] = True
    if not all(seen):
        raise RuntimeError(f"shard results are missing {seen.count(False)} of {n_items} items")
    return out


def _state():
    try:
        from accelerate import PartialState
    except ImportError:  # pragma: no cover - accelerate is a core dependency
        return None
    return PartialState()


def sharded_map(fn: Callable[[list[T]], Sequence[Any]], items: Sequence[T], state: Any = None) -> list[Any]:
    """``fn(items)`` computed across all processes of the current accelerate/torch.distributed world."""
    items = list(items)
    state = state if state is not None else _state()
    world = getattr(state, "num_processes", 1) if state is not None else 1
    if world <= 1:
        return list(fn(items))
    from accelerate.utils import gather_object

    start, stop = shard_bounds(len(items), world, state.process_index)
    local = list(fn(items[start:stop])) if stop > start else []
    if len(local) != stop - start:
        raise RuntimeError(f"process {state.process_index} produced {len(local)} results for {stop - start} items")
    return merge_shards(gather_object([(start, local)]), len(items))
