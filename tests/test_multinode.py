"""Several nodes, proven on one machine: two torchrun "nodes" (`--nnodes 2 --node_rank 0/1`, one process each,
static rendezvous on 127.0.0.1) write the same bytes as one node with two processes and as one process, for
`rexrank score` with a model-backed metric on a stand-in and for `rexrank generate`; a node lost mid-run is
recomputed by a rerun from what the other node and its own cache kept, and only that.

The launch is the recipe of docs/cluster.md as written there (`torchrun --nnodes N --node_rank R --nproc_per_node P
--master_addr HOST --master_port PORT -m rexrank ...`), with the interpreter's `-m torch.distributed.run` for
`torchrun`. Each node has its own cache folder, as nodes with local disks do. Every launch runs in its own session
and is killed whole if it outlives its timeout.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parent
DRIVER = TESTS / "multinode_driver.py"
_LAUNCH_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE", "GROUP_RANK",
               "NODE_RANK")
TIMEOUT = 300
GRACE = 60  # a peer's failure reaches the other node within seconds (gloo sees the closed socket)
REPORTS = ["The heart size is normal. The lungs are clear.", "Small left pleural effusion.",
           "Moderate pulmonary edema, worse than before.", "No pneumothorax. Mild cardiomegaly.",
           "Right lower lobe opacity concerning for pneumonia."]


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCH_ENV}
    return env | {"OMP_NUM_THREADS": "1", "REXRANK_PROGRESS": "0", "GLOO_SOCKET_IFNAME": "lo",
                  "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **extra}


def _free_port() -> int:
    """A free port below the kernel's ephemeral range: node 1's launcher connects to node 0's store on it, retrying
    until node 0 listens, and a port inside that range can be the retry's own source port (a TCP self-connect: node
    1 then talks to itself, fails, and node 0 waits for it until the timeout)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port below {low}")


def _wait(procs: list[subprocess.Popen], outs: list, timeout: float,
          grace: float = GRACE) -> list[tuple[int, str, str]]:
    """Each launcher's (exit code, stdout, stderr). All are killed, whole sessions, when one outlives ``timeout``, or
    when the others outlive a failed one by ``grace`` (a node that failed before the rendezvous leaves the other
    waiting for it); the error then shows every launcher's exit code and the end of its stderr."""
    start, failed_at = time.monotonic(), None
    while any(proc.poll() is None for proc in procs):
        now = time.monotonic()
        if failed_at is None and any(proc.returncode not in (None, 0) for proc in procs):
            failed_at = now
        if now - start > timeout or (failed_at is not None and now - failed_at > grace):
            for proc in procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
            for proc in procs:
                proc.wait()
            why = f"outlived {timeout} s" if now - start > timeout else f"outlived a failed one by {grace} s"
            raise AssertionError(f"a launch {why}:\n" + "\n".join(
                f"--- launcher {i}: exit {proc.returncode}\n{_read(err)[-3000:]}"
                for i, (proc, (_, err)) in enumerate(zip(procs, outs))))
        time.sleep(0.2)
    return [(proc.returncode, _read(out), _read(err)) for proc, (out, err) in zip(procs, outs)]


def _read(file) -> str:
    file.seek(0)
    return file.read()


def launch(program: list[str], *, nodes: int = 1, per_node: int = 1, env_of=lambda node: {},
           timeout: float = TIMEOUT) -> list[tuple[int, str, str]]:
    """``program`` (a `-m rexrank ...` or a script and its arguments) on ``nodes`` x ``per_node`` processes:
    one plain process for 1 x 1, else one torchrun per node (the docs/cluster.md form)."""
    if nodes == per_node == 1:
        commands = [[sys.executable, *program]]
    else:
        port = _free_port()
        commands = [[sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nodes), "--node_rank", str(node),
                     "--nproc_per_node", str(per_node), "--master_addr", "127.0.0.1", "--master_port", str(port),
                     *program] for node in range(nodes)]
    # Files, not pipes: a launcher is never blocked on a full pipe while another is being waited for.
    with ExitStack() as files:
        outs = [(files.enter_context(tempfile.TemporaryFile("w+")), files.enter_context(tempfile.TemporaryFile("w+")))
                for _ in commands]
        procs = [subprocess.Popen(command, env=_env(**env_of(node)), stdout=out, stderr=err, text=True,
                                  start_new_session=True)
                 for node, (command, (out, err)) in enumerate(zip(commands, outs))]
        return _wait(procs, outs, timeout)


def _ok(results) -> None:
    for code, _, stderr in results:
        assert code == 0, stderr[-4000:]


SHAPES = {"one process": (1, 1), "one node, two processes": (1, 2), "two nodes": (2, 1)}


# ---------------------------------------------------------------- rexrank score, a model-backed metric

def _pairs(tmp_path: Path, n: int) -> tuple[Path, Path]:
    preds = {f"s{i}": f"{REPORTS[i % 5]} Study {i}." for i in range(n)}
    refs = {f"s{i}": REPORTS[(i + 1) % 5] for i in range(n)}
    (tmp_path / "preds.json").write_text(json.dumps(preds))
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    return tmp_path / "preds.json", tmp_path / "refs.json"


@pytest.mark.slow
def test_two_nodes_score_the_bytes_of_one_node_and_of_one_process(tmp_path, standins):
    """RadGraph on its stand-in (batches of one, so batch composition cannot move a float): per_study.parquet is
    byte-identical, and results.json's metrics equal, across 1 process, 1 node x 2 and 2 nodes x 1; the job really
    had two processes, and a node's LOCAL_RANK (0 on both) did not decide its shard."""
    model = standins("radgraph")["radgraph"]
    preds, refs = _pairs(tmp_path, 6)
    tables, results = {}, {}
    for name, (nodes, per_node) in SHAPES.items():
        out = tmp_path / name.replace(" ", "_").replace(",", "")
        program = [str(DRIVER), "score", "-p", str(preds), "-r", str(refs), "-m", "radgraph", "--model-path",
                   f"radgraph={model}", "--batch-size", "1", "--chunk-size", "2", "--resamples", "20", "-q",
                   "-o", str(out)]
        _ok(launch(program, nodes=nodes, per_node=per_node,
                   env_of=lambda node, out=out: {"REXRANK_CACHE": str(out.parent / f"{out.name}-cache{node}")}))
        tables[name] = (out / "per_study.parquet").read_bytes()
        results[name] = json.loads((out / "results.json").read_text())
    assert results["one process"]["analyses"]["processes"] == 1
    for name in ("one node, two processes", "two nodes"):
        assert tables[name] == tables["one process"], name
        assert results[name]["metrics"] == results["one process"]["metrics"], name
        assert results[name]["analyses"]["processes"] == 2, name
    # Both nodes computed their share into their own cache (rank 1 on node 1 is LOCAL_RANK 0 there).
    for node in (0, 1):
        assert (tmp_path / f"two_nodes-cache{node}" / "scores").is_dir()


# ---------------------------------------------------------------- rexrank generate

@pytest.mark.slow
def test_two_nodes_generate_the_bytes_of_one_node_and_of_one_process(tmp_path, standins):
    from rexrank.testing.standin_generate import write_image_studies

    studies = write_image_studies(
        tmp_path / "studies", 7,
        lambda i, j: np.random.RandomState(10 * i + j).randint(0, 255, (32, 32, 3), dtype=np.uint8),
        lambda i: {"report": f"Findings: F{i}. Impression: Normal.", "section_findings": f"F{i}.",
                   "section_impression": "Normal.", "split": "test"})
    model = standins("generate")["generate_ved"]
    outputs = {}
    for name, (nodes, per_node) in SHAPES.items():
        out = tmp_path / name.replace(" ", "_").replace(",", "")
        program = ["-m", "rexrank", "generate", "--input-json", str(studies), "--image-root",
                   str(studies.parent / "img"), "--out", str(out), "--no-progress", "--model", model,
                   "--batch-size", "2", "--max-new-tokens", "6"]
        runs = launch(program, nodes=nodes, per_node=per_node)
        _ok(runs)
        outputs[name] = (out / "predictions.json").read_bytes()
        assert f"{min(2, nodes * per_node)} process" in runs[0][1]
        if nodes * per_node == 2:  # the work was split: both processes wrote studies
            parts = sorted((out / "parts").glob("process-*.jsonl"))
            assert len(parts) == 2 and all(p.read_text().strip() for p in parts), name
    assert outputs["one node, two processes"] == outputs["one process"]
    assert outputs["two nodes"] == outputs["one process"]


# ---------------------------------------------------------------- a node lost mid-run

def _computed(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.slow
def test_a_lost_node_is_recomputed_by_the_rerun_and_only_it(tmp_path):
    """Node 1 dies (os._exit: no cleanup) while scoring its third chunk, before committing it; node 0 finished its
    share. The same command again on both nodes computes only node 1's uncommitted pairs, and writes the bytes of an
    uninterrupted run."""
    preds, refs = _pairs(tmp_path, 10)
    log = tmp_path / "computed"

    def program(out: str) -> list[str]:
        return [str(DRIVER), "score", "-p", str(preds), "-r", str(refs), "-m", "fake_slow", "--chunk-size", "2",
                "--resamples", "20", "-q", "-o", str(tmp_path / out)]

    def env_of(run: str, **extra):
        return lambda node: {"REXRANK_CACHE": str(tmp_path / f"{run}-cache{node}"),
                             "REXRANK_FAKE_LOG": f"{log}-{run}-{node}", **extra}

    _ok(launch(program("whole"), nodes=2, env_of=env_of("whole")))
    assert _computed(Path(f"{log}-whole-0")) == _computed(Path(f"{log}-whole-1")) == 5

    lost = launch(program("lost"), nodes=2,
                  env_of=env_of("lost", REXRANK_TEST_LOSE_RANK="1", REXRANK_TEST_LOSE_AT_CALL="3"))
    assert lost[1][0] != 0 and lost[0][0] != 0  # node 1 died; node 0 cannot gather its share
    assert not (tmp_path / "lost" / "per_study.parquet").exists()
    # Node 1 computed 2 + 2 + 1 pairs; the last call's pair died with it, uncommitted.
    assert _computed(Path(f"{log}-lost-1")) == 5
    for node in (0, 1):
        Path(f"{log}-lost-{node}").rename(f"{log}-lost-{node}-before")

    _ok(launch(program("lost"), nodes=2, env_of=env_of("lost")))
    assert _computed(Path(f"{log}-lost-0")) == 0  # node 0's share came from its cache
    assert _computed(Path(f"{log}-lost-1")) == 1  # node 1's two committed chunks too: only the lost pair again
    assert (tmp_path / "lost" / "per_study.parquet").read_bytes() == \
        (tmp_path / "whole" / "per_study.parquet").read_bytes()
    whole, rerun = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("whole", "lost"))
    assert rerun["metrics"] == whole["metrics"]
