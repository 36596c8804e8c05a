"""Which process does which work: the one owner of process parallelism in rexrank.

A job launched with ``torchrun`` or ``accelerate launch`` runs the same program in several processes. Work is
split in exactly one place per call path, always by the same rule (``shard``: every world_size-th item, so shards
differ by at most one and 1 and N processes see the same items in the same order):

- The scoring harness (``rexrank score``) shards *studies* and gathers the finished rows on rank 0. While it calls
  metrics it holds ``local()``: a metric then computes exactly the pairs it is given.
- Generation deals whole *batches* (formed before dealing, so padding neighbours do not depend on the number of
  processes) with the same ``shard`` rule over batch positions.
- A metric called directly (``rexrank.score``, an evaluate module, a user's script) inside a launched job whose
  process group is up shards the *distinct pairs* of the call when its spec says ``across_processes="shard"``
  (model-backed metrics): every rank must call it with the same inputs, and every rank gets the full result. Such a
  call makes the same collective calls on every rank whatever each rank's cache holds (one handshake, one
  all-gather), checks that all ranks passed the same inputs, and fails on every rank with one clear error when a
  rank failed, passed other inputs, or never called (the handshake times out) -- it never hands back another
  study's value. Metrics whose spec says ``"replicate"`` (cheap, pure: BLEU-2) compute everything in every process.

``local()`` is also how a caller that gathers inputs itself (evaluate's ``num_process`` mode, which computes on
process 0 only, or ``if rank == 0: metric.score(...)``) says "compute here, alone".
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from rexrank.errors import ConfigError, RexrankError

log = logging.getLogger("rexrank.parallel")
T = TypeVar("T")

# Ranks wait for the slowest shard inside a gather; scoring a large set with an LLM judge can take hours.
_GATHER_TIMEOUT_HOURS = float(os.environ.get("REXRANK_DIST_TIMEOUT_HOURS", "48"))
# How long a directly called metric waits for every rank to reach the same call before it calls the job broken.
HANDSHAKE_SECONDS_ENV = "REXRANK_PARALLEL_HANDSHAKE_S"
_DEFAULT_HANDSHAKE_SECONDS = 600.0

SHARD, REPLICATE = "shard", "replicate"
BEHAVIOURS = (SHARD, REPLICATE)

_caller_owns = contextvars.ContextVar("rexrank_parallel_local", default=False)


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


def _dist():
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a core dependency
        return None
    return dist if dist.is_available() else None


def group_ready() -> bool:
    """True when a torch.distributed process group is up (torchrun + init, or accelerate's state).

    Asking never imports torch (4 s of CPU and 200 MB, most of a BLEU-2 run): a group can only be up in a process
    that has already imported torch.distributed, so without it in ``sys.modules`` the answer is no."""
    if "torch.distributed" not in sys.modules:
        return False
    dist = _dist()
    return dist is not None and dist.is_initialized()


def context() -> Context:
    """This process's place in the job: from the process group when one is up, else from the launcher's
    environment (RANK, WORLD_SIZE, LOCAL_RANK), else rank 0 of 1."""
    local_rank = int(os.environ.get("LOCAL_RANK", "0") or 0)
    if group_ready():
        dist = _dist()
        return Context(dist.get_rank(), dist.get_world_size(), local_rank)
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world <= 1:
        return Context()
    return Context(int(os.environ.get("RANK", "0") or 0), world, local_rank)


# What a launcher asked for. torchrun and accelerate's multi-GPU launcher set WORLD_SIZE; MPI launchers their own.
_ASKED_SIZE_ENV = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
# accelerate's single-process launcher (no GPUs, or no --multi_gpu) sets no size, but it sets MASTER_ADDR only when
# --num_processes (or --num_machines) is above 1, and ACCELERATE_MIXED_PRECISION on every launch.
_ACCELERATE_LAUNCH_ENV = "ACCELERATE_MIXED_PRECISION"


def launch_shortfall(started: int) -> str | None:
    """A warning when the launcher asked for more processes than the ``started`` that took part, else None.

    The case it exists for: `accelerate launch --num_processes 2 ... --device cpu` on a machine without GPUs runs
    one process and says nothing, and the job then takes twice as long as the user planned.
    """
    for name in _ASKED_SIZE_ENV:
        raw = os.environ.get(name, "").strip()
        if raw.isdigit() and int(raw) > started:
            return (f"the launcher asked for {int(raw)} processes ({name}={raw}) but {started} took part: the work "
                    f"ran on {started}")
    if started == 1 and os.environ.get(_ACCELERATE_LAUNCH_ENV) and os.environ.get("MASTER_ADDR") \
            and not any(os.environ.get(name) for name in _ASKED_SIZE_ENV):
        return ("accelerate launch was asked for several processes (it set MASTER_ADDR) but started one: without "
                "GPUs, or without --multi_gpu, its simple launcher runs a single process. On CPU use "
                "`torchrun --standalone --nproc_per_node N -m rexrank ...`; on GPUs `accelerate launch --multi_gpu`")
    return None


def processes_line(started: int) -> str:
    """How many processes took part, as `rexrank generate` and `rexrank score` print it."""
    return f"{started} process{'' if started == 1 else 'es'} took part"


def setup(ctx: Context) -> bool:
    """Join the process group if the launcher did not; returns True when this call created it."""
    if not ctx.distributed or group_ready():
        return False
    dist = _dist()
    dist.init_process_group(backend="gloo", init_method="env://", rank=ctx.rank, world_size=ctx.world_size,
                            timeout=timedelta(hours=_GATHER_TIMEOUT_HOURS))
    return True


def teardown(created: bool) -> None:
    if created and group_ready():
        _dist().destroy_process_group()


def shard(n: int, ctx: Context) -> list[int]:
    """Positions of the items this process handles: every world_size-th, starting at its rank."""
    if not 0 <= ctx.rank < max(ctx.world_size, 1):
        raise ValueError(f"rank {ctx.rank} is not in a world of {ctx.world_size} processes")
    return list(range(ctx.rank, n, ctx.world_size))


def unshard(parts: Sequence[tuple[Sequence[int], Sequence[T]]], n: int) -> list[T]:
    """Put (positions, values) pieces from every process back in input order, checking exact coverage."""
    out: list[Any] = [None] * n
    seen = [False] * n
    for positions, values in parts:
        if len(positions) != len(values):
            raise RuntimeError(f"a shard returned {len(values)} values for {len(positions)} items")
        for index, value in zip(positions, values):
            if not 0 <= index < n or seen[index]:
                raise RuntimeError(f"shard results overlap or overflow at item {index} of {n}")
            out[index] = value
            seen[index] = True
    if not all(seen):
        raise RuntimeError(f"shard results are missing {seen.count(False)} of {n} items")
    return out


_object_group_cache: dict[int, Any] = {}


def _object_group():
    """The group used to move Python objects: the default one when it is gloo, else one gloo group made once
    (pickled objects over NCCL would need a CUDA device per rank and GPU memory for every payload)."""
    dist = _dist()
    if dist.get_backend() == "gloo":
        return None
    key = id(dist.group.WORLD)
    if key not in _object_group_cache:
        _object_group_cache[key] = dist.new_group(backend="gloo", timeout=timedelta(hours=_GATHER_TIMEOUT_HOURS))
    return _object_group_cache[key]


def gather(obj: Any, ctx: Context) -> list[Any] | None:
    """Every rank's object on rank 0 (in rank order); None on the other ranks."""
    if not ctx.distributed:
        return [obj]
    dist = _dist()
    out: list[Any] | None = [None] * ctx.world_size if ctx.is_main else None
    dist.gather_object(obj, out, dst=0, group=_object_group())
    return out


def all_gather(obj: Any, ctx: Context) -> list[Any]:
    """Every rank's object on every rank (in rank order)."""
    if not ctx.distributed:
        return [obj]
    dist = _dist()
    out: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(out, obj, group=_object_group())
    return out


def device_for(device: str | None, ctx: Context) -> str | None:
    """One accelerator per process: a bare "cuda" becomes "cuda:<local rank>" in a launched job."""
    if device is not None and ctx.distributed and device == "cuda":
        return f"cuda:{ctx.local_rank}"
    return device


@contextlib.contextmanager
def local() -> Iterator[None]:
    """Within this block the caller owns process parallelism: metrics compute exactly what they are given."""
    token = _caller_owns.set(True)
    try:
        yield
    finally:
        _caller_owns.reset(token)


def caller_owns() -> bool:
    return _caller_owns.get()


def portable(exc: BaseException, rank: int) -> Exception:
    """An exception that survives pickling to another rank: rexrank's own errors as they are, others as text."""
    if isinstance(exc, RexrankError):
        return exc
    return RuntimeError(f"process {rank} failed: {type(exc).__name__}: {exc}")


class ParallelCallError(RexrankError):
    """A directly called metric could not run as one call across the job's processes."""


def would_shard(behaviour: str) -> bool:
    """Whether a direct metric call with this ``across_processes`` shares its pairs with the other processes."""
    return behaviour == SHARD and not caller_owns() and group_ready() and context().distributed


_warned_no_group = False
_handshakes = 0


def _handshake(name: str, ctx: Context) -> None:
    """Every rank reaches this call, or every rank that did gets a clear error after the timeout (no hang)."""
    global _handshakes
    _handshakes += 1
    timeout = float(os.environ.get(HANDSHAKE_SECONDS_ENV, _DEFAULT_HANDSHAKE_SECONDS))
    store = _dist().distributed_c10d._get_default_store()
    key = f"rexrank/parallel/{_handshakes}"
    if store.add(key, 1) == ctx.world_size:
        store.set(key + "/all", "1")
    try:
        store.wait([key + "/all"], timedelta(seconds=timeout))
    except Exception:  # noqa: BLE001 - the store raises its own timeout types across torch versions
        raise ParallelCallError(
            f"{name} was called in process {ctx.rank} of a {ctx.world_size}-process job, but not every process "
            f"called it within {timeout:g} s. Inside a launched job a model-backed metric splits its pairs across "
            "the processes, so call it on every process with the same inputs; to score on one process alone, call "
            "it inside `with rexrank.parallel.local():`, or score with `rexrank score`, which shards studies "
            f"itself. ({HANDSHAKE_SECONDS_ENV} sets the wait.)") from None


def _digest(keys: Sequence[str]) -> str:
    h = hashlib.sha256()
    for key in keys:
        h.update(key.encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()


def map_distinct(name: str, behaviour: str, keys: Sequence[str], compute: Callable[[list[int]], Any],
                 merge: Callable[[list[tuple[list[int], Any]], int], Any]) -> Any:
    """One call's result for the distinct items ``keys``, computed across the job's processes where that is right.

    ``compute(positions)`` returns a piece holding one value per position (positions index ``keys``, ascending);
    ``merge([(positions, piece), ...], n)`` puts pieces back into one result in input order. ``behaviour`` is
    the metric's ``across_processes``. Without a process group, inside ``local()`` or for "replicate", this
    process computes every item and no collective runs.
    """
    if behaviour not in BEHAVIOURS:
        raise ConfigError(f"{name}: across_processes must be one of {', '.join(BEHAVIOURS)}, not {behaviour!r}")
    everything = list(range(len(keys)))
    ctx = context()
    if behaviour == REPLICATE or caller_owns() or not ctx.distributed:
        return compute(everything)
    if not group_ready():
        global _warned_no_group
        if not _warned_no_group:
            log.warning("%s: launched with WORLD_SIZE=%d but no torch.distributed process group is up, so every "
                        "process scores every pair; initialise the group (or use `accelerate launch`) to share "
                        "the work", name, ctx.world_size)
            _warned_no_group = True
        return compute(everything)
    _handshake(name, ctx)
    mine = shard(len(keys), ctx)
    try:
        with local():
            piece = compute(mine) if mine else None
        payload: tuple = ("ok", _digest(keys), mine, piece)
    except Exception as exc:  # noqa: BLE001 - every rank must reach the gather, or the others wait forever
        payload = ("error", _digest(keys), ctx.rank, portable(exc, ctx.rank))
    parts = all_gather(payload, ctx)
    failed = [p for p in parts if p[0] == "error"]
    if failed:
        raise failed[0][3]
    if len({p[1] for p in parts}) != 1:
        raise ParallelCallError(
            f"{name} was called with different inputs on different processes of this {ctx.world_size}-process job. "
            "Inside a launched job a model-backed metric splits one call's pairs across the processes, so every "
            "process must pass the same pairs; to score each process's own pairs, call it inside "
            "`with rexrank.parallel.local():` and gather the values yourself, or use `rexrank score`.")
    covered = sorted(i for p in parts for i in p[2])
    if covered != everything:
        raise RuntimeError(f"{name}: the processes' shards do not cover the {len(keys)} items exactly once")
    return merge([(p[2], p[3]) for p in parts if p[2]], len(keys))


__all__ = ["BEHAVIOURS", "Context", "ParallelCallError", "REPLICATE", "SHARD", "all_gather", "caller_owns",
           "context", "device_for", "gather", "group_ready", "launch_shortfall", "local", "map_distinct", "portable",
           "processes_line", "setup", "shard", "teardown", "unshard", "would_shard"]
