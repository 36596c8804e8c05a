"""Many processes, one result: shard studies across `torchrun`/`accelerate launch` processes, gather on rank 0.

Both launchers export RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. Each process scores its shard
(filling the shared cache as it goes); the finished rows travel to rank 0 over torch.distributed (gloo, so it
works on CPU and beside any GPU backend), and rank 0 alone aggregates and writes the result files. Gathering the
rows themselves, rather than re-reading them from the cache, keeps ``--no-cache`` and multi-node runs without a
shared disk correct.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

# Ranks wait for the slowest shard inside the gather; scoring a large set with an LLM judge can take hours.
_TIMEOUT_HOURS = float(os.environ.get("REXRANK_DIST_TIMEOUT_HOURS", "48"))


@dataclass(frozen=True)
class Context:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def context() -> Context:
    """This process's place in a launched job (rank 0 of 1 when not launched)."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world <= 1:
        return Context()
    return Context(int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0")))


def setup(ctx: Context) -> bool:
    """Join the process group if the launcher did not; returns True when this call created it."""
    if not ctx.distributed:
        return False
    import torch.distributed as dist

    if dist.is_initialized():
        return False
    dist.init_process_group(backend="gloo", init_method="env://", rank=ctx.rank, world_size=ctx.world_size,
                            timeout=timedelta(hours=_TIMEOUT_HOURS))
    return True


def teardown(created: bool) -> None:
    if created:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


def shard(n: int, ctx: Context) -> list[int]:
    """Positions of the studies this process scores: every world_size-th, so shards differ by at most one."""
    return list(range(ctx.rank, n, ctx.world_size))


def gather(obj: Any, ctx: Context) -> list[Any] | None:
    """Every rank's object on rank 0 (in rank order); None on the other ranks."""
    if not ctx.distributed:
        return [obj]
    import torch.distributed as dist

    out: list[Any] | None = [None] * ctx.world_size if ctx.is_main else None
    dist.gather_object(obj, out, dst=0)
    return out


def device_for(device: str | None, ctx: Context) -> str | None:
    """One accelerator per process: a bare "cuda" becomes "cuda:<local rank>" in a launched job."""
    if device is not None and ctx.distributed and device == "cuda":
        return f"cuda:{ctx.local_rank}"
    return device
