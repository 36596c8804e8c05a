"""`torchrun --nproc_per_node N tests/parallel_worker.py SCENARIO OUT_DIR [JSON]`: one process of a launched job.

Each process joins a gloo group (as `torchrun` + `init_process_group` or `accelerate launch` would leave it), runs
the scenario's direct metric calls and writes OUT_DIR/rank<R>.json. Used by tests/test_parallel.py; with one
process it gives the single-process result the multi-process runs must equal.
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rexrank import parallel
from rexrank.metrics.base import Metric
from rexrank.metrics.registry import MetricSpec


class Counting(Metric):
    """A cheap sharded metric: score = len(hyp) / len(ref); records what this process computed."""

    spec = MetricSpec("counting", "counting", True, "1", "test metric", across_processes="shard")

    def __init__(self, fail_on_rank: int | None = None):
        self.computed: list[str] = []
        self.fail_on_rank = fail_on_rank

    def _score(self, hyps, refs):
        if self.fail_on_rank is not None and parallel.context().rank == self.fail_on_rank:
            raise ValueError("boom on purpose")
        values = []
        for hyp, ref in zip(hyps, refs):
            found = self.per_text("value", [hyp + "\0" + ref], self._compute)
            values.append(found[0])
        return np.array(values)

    def _compute(self, keys):
        self.computed.extend(keys)
        return [len(k.split("\0")[0]) / max(len(k.split("\0")[1]), 1) for k in keys]


HYPS = ["a", "bb", "ccc", "a", "dddd", "bb", "eeeee", "ffffff", "a"]
REFS = ["xx", "xx", "xx", "xx", "yyy", "xx", "z", "zz", "xx"]


def _plain(value):
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(float(value)) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def _frame_json(frame) -> dict:
    return {str(c): [_plain(v) for v in frame[c].tolist()] for c in frame.columns}


def counting(rank: int, out: Path, options: dict) -> dict:
    metric = Counting()
    if options.get("warm_rank") == rank:  # this process alone has already scored some pairs (cache hits)
        with parallel.local():
            metric.score(HYPS[:4], REFS[:4])
    metric.computed.clear()
    values = metric.score(HYPS, REFS)
    return {"values": values.tolist(), "computed": sorted(metric.computed)}


def mismatch(rank: int, out: Path, options: dict) -> dict:
    hyps = HYPS if rank == 0 else HYPS[::-1]
    return {"values": Counting().score(hyps, REFS).tolist()}


def lonely(rank: int, out: Path, options: dict) -> dict:
    """Only rank 0 calls; the other waits for it to give up, so the job stays up meanwhile."""
    if rank == 0:
        try:
            return {"values": Counting().score(HYPS, REFS).tolist()}
        finally:
            (out / "rank0.done").write_text("1")
    while not (out / "rank0.done").exists():
        time.sleep(0.1)
    return {"values": None}


def failure(rank: int, out: Path, options: dict) -> dict:
    return {"values": Counting(fail_on_rank=1).score(HYPS, REFS).tolist()}


def local_call(rank: int, out: Path, options: dict) -> dict:
    """rank 0 scores alone inside parallel.local(): no collective, so no wait for the other process."""
    if rank == 0:
        with parallel.local():
            return {"values": Counting().score(HYPS, REFS).tolist()}
    return {"values": None}


def models(rank: int, out: Path, options: dict) -> dict:
    """Every model-backed metric called directly (score_details) on the stand-ins, same pairs on every rank."""
    from rexrank.metrics import get

    hyps, refs = options["hyps"], options["refs"]
    result = {}
    for name, config in options["metrics"].items():
        metric = get(name, **config)
        calls: list[int] = []
        if name == "green":  # count the prompts this process generates
            generator = metric._make_generator()
            original = generator.generate
            generator.generate = lambda prompts, _o=original: (calls.append(len(prompts)), _o(prompts))[1]
            if options.get("warm_rank") == rank:
                with parallel.local():
                    metric.score(hyps[:2], refs[:2])
                calls.clear()
        frame = metric.score_details(hyps, refs)
        result[name] = {"frame": _frame_json(frame), "generated": sum(calls)}
        if name == "green":
            result[name]["analyses"] = metric.analyses(hyps, refs)
    return result


def sources() -> dict[str, str]:
    """A digest of each rexrank source file as this process found it: tests compare the launches' digests when
    their values differ, because helpers share one working tree and an edit between two launches (the 1-process
    reference and the N-process run import the code separately) reads as a wrong value otherwise."""
    root = Path(parallel.__file__).parent
    return {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest()[:16]
            for f in sorted(root.rglob("*.py"))}


SCENARIOS = {f.__name__: f for f in (counting, mismatch, lonely, failure, local_call, models)}


def main() -> None:
    # A crash in C++ (SIGABRT) then prints every thread's Python stack, so a failed launch says where it died.
    faulthandler.enable(all_threads=True)
    scenario, out = sys.argv[1], Path(sys.argv[2])
    options = json.loads(Path(sys.argv[3]).read_text()) if len(sys.argv) > 3 else {}
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("gloo")
    rank = parallel.context().rank
    imported = sources()
    try:
        payload = {"ok": True, **SCENARIOS[scenario](rank, out, options)}
    except Exception as exc:  # noqa: BLE001 - the test reads the error each process got
        payload = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    payload["sources"] = imported
    (out / f"rank{rank}.json").write_text(json.dumps(payload))
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # Results are on disk and the group is destroyed: leave without interpreter finalization. In one CI run both
    # ranks of a stanza launch died there with `terminate called without an active exception` (a C++ thread
    # destroyed while joinable; not reproduced here in 15 runs, idle or loaded). What the tests check happened
    # before this line; launch() reports which ranks wrote their file if a rank dies earlier.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
