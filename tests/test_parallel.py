"""One owner of process parallelism (rexrank.parallel): every multi-process run equals the single-process run.

Real launched jobs: `torchrun` with 2 CPU processes in a gloo group (what `accelerate launch` leaves on CPU-only
machines too), so the metrics see a 2-process world exactly as they would on GPUs. The single-process reference
is the same worker with one process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rexrank import metrics, parallel

WORKER = Path(__file__).with_name("parallel_worker.py")
DRIVER = Path(__file__).with_name("evaluation_driver.py")
_LAUNCH_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE")


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCH_ENV}
    env.update(OMP_NUM_THREADS="1", REXRANK_PROGRESS="0", GLOO_SOCKET_IFNAME="lo", **extra)
    return env


def launch(scenario: str, out: Path, processes: int, options: dict | None = None, timeout: float = 600, **env):
    """Run the worker as `processes` launched processes; returns each rank's JSON."""
    out.mkdir(parents=True, exist_ok=True)
    args = [str(WORKER), scenario, str(out)]
    if options is not None:
        (out / "options.json").write_text(json.dumps(options))
        args.append(str(out / "options.json"))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes), *args]
    proc = subprocess.run(cmd, env=_env(**env), capture_output=True, text=True, timeout=timeout)
    written = [r for r in range(processes) if (out / f"rank{r}.json").is_file()]
    assert proc.returncode == 0, f"ranks that wrote their results: {written}\n{proc.stderr[-4000:]}"
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(processes)]


# ---------------------------------------------------------------- the sharding rule itself

def test_shard_covers_every_item_once_and_unshard_restores_order():
    for n in range(0, 13):
        for world in (1, 2, 3, 5):
            parts = [(parallel.shard(n, parallel.Context(r, world)), None) for r in range(world)]
            parts = [(pos, [f"x{i}" for i in pos]) for pos, _ in parts]
            assert sorted(i for pos, _ in parts for i in pos) == list(range(n))
            assert max((len(p) for p, _ in parts), default=0) - min((len(p) for p, _ in parts), default=0) <= 1
            assert parallel.unshard(parts[::-1], n) == [f"x{i}" for i in range(n)]
    with pytest.raises(RuntimeError, match="missing"):
        parallel.unshard([([0], ["a"])], 2)
    with pytest.raises(RuntimeError, match="overlap"):
        parallel.unshard([([0, 1], ["a", "b"]), ([1], ["b"])], 2)
    with pytest.raises(ValueError, match="not in a world"):
        parallel.shard(3, parallel.Context(2, 2))
    # Every world_size-th item, as the module says (not contiguous blocks, which pass the checks above): the
    # launched tests warm one rank's share by these positions, and generation deals its batches by the same rule.
    assert parallel.shard(10, parallel.Context(1, 3)) == [1, 4, 7]


def _torchrun_env(monkeypatch, node: int, local: int, nodes: int = 2, per_node: int = 2) -> None:
    """The variables torchrun sets in process ``local`` of node ``node`` (no process group up in this test)."""
    monkeypatch.setenv("WORLD_SIZE", str(nodes * per_node))
    monkeypatch.setenv("RANK", str(node * per_node + local))
    monkeypatch.setenv("LOCAL_RANK", str(local))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(per_node))
    monkeypatch.setenv("GROUP_RANK", str(node))


def test_a_process_rank_is_the_jobs_rank_not_the_nodes(monkeypatch):
    """Two nodes x two processes: each process's rank (its shard, the rank it joins the group with) is the job-wide
    RANK, its device index the node's LOCAL_RANK. Read the other way round, the two nodes' processes share ranks 0
    and 1: the group's rendezvous then waits for ranks that never come, and the multinode tests only time out."""
    recorded = []

    class FakeDist:  # what setup() asks of torch.distributed, recorded instead of a real rendezvous
        @staticmethod
        def init_process_group(**kwargs):
            recorded.append(kwargs)

    monkeypatch.setattr(parallel, "group_ready", lambda: False)
    monkeypatch.setattr(parallel, "_dist", lambda: FakeDist)
    seen = {}
    for node in (0, 1):
        for local in (0, 1):
            _torchrun_env(monkeypatch, node, local)
            ctx = parallel.context()
            job_rank = node * 2 + local
            assert (ctx.rank, ctx.world_size, ctx.local_rank) == (job_rank, 4, local), (
                f"node {node}'s process {local} read {ctx}: its rank must be RANK={job_rank} (the job's), its "
                f"local_rank LOCAL_RANK={local} (the node's); mixed up, two nodes share ranks and the job hangs")
            assert parallel.device_for("cuda", ctx) == f"cuda:{local}"
            assert parallel.setup(ctx) is True
            assert recorded[-1]["rank"] == job_rank and recorded[-1]["world_size"] == 4, (
                f"setup() joined the group as rank {recorded[-1]['rank']} for RANK={job_rank}: a rank the job "
                "already has, so the rendezvous would wait for the missing one until its timeout")
            seen[job_rank] = parallel.shard(10, ctx)
    assert sorted(i for positions in seen.values() for i in positions) == list(range(10))


def test_every_metric_declares_its_behaviour_across_processes():
    """Model-backed metrics shard a direct call; cheap pure ones replicate it (MetricSpec owns the decision)."""
    from rexrank.metrics import REGISTRY

    for name in REGISTRY.names():
        spec = REGISTRY.spec(name)
        assert spec.across_processes in parallel.BEHAVIOURS, name
        assert spec.across_processes == ("shard" if spec.needs_model else "replicate"), name


def test_no_launch_means_no_collective(monkeypatch):
    """One process, or inside local(): compute everything here (the path every single-process run takes)."""
    calls = []

    def compute(positions):
        calls.append(list(positions))
        return positions

    assert parallel.map_distinct("m", "shard", ["a", "b"], compute, None) == [0, 1]
    monkeypatch.setenv("WORLD_SIZE", "2")  # launched, but no process group: every process scores everything
    assert parallel.map_distinct("m", "shard", ["a", "b", "c"], compute, None) == [0, 1, 2]
    with parallel.local():
        assert not parallel.would_shard("shard")
    with pytest.raises(Exception, match="across_processes must be one of"):
        parallel.map_distinct("m", "sometimes", ["a"], compute, None)


def test_harness_owns_parallelism_while_it_scores():
    """The harness enters parallel.local() around the metric calls: a metric never re-shards the harness's shard
    (the bug: GREEN re-sharded each rank's studies and came back with other studies' analyses)."""
    import inspect

    from rexrank.evaluation import harness

    source = inspect.getsource(harness._shard_frame)
    assert "parallel.local()" in source and "score_pairs(" in source.split("parallel.local()")[1]
    for path in Path(parallel.__file__).parent.rglob("*.py"):
        text = path.read_text()
        if path.name != "parallel.py":
            assert "gather_object(" not in text or path.parts[-2] == "generate", path
            assert "sharded_map" not in text, path


# ---------------------------------------------------------------- direct calls in a launched job

@pytest.fixture(scope="module")
def counting_one(tmp_path_factory) -> dict:
    """The counting scenario's single-process run, the reference of two tests below: launched once (a launch is a
    torchrun and a worker, each importing torch), not once per test."""
    return launch("counting", tmp_path_factory.mktemp("counting_one"), 1)[0]


@pytest.mark.slow
def test_direct_call_shards_distinct_pairs_and_every_rank_gets_everything(tmp_path, counting_one):
    one = counting_one
    two = launch("counting", tmp_path / "two", 2)
    for rank in two:
        assert rank["ok"], rank
        assert rank["values"] == one["values"], changed_sources(rank, one)
    # The 9 pairs hold 6 distinct ones: each is computed once in the whole job, split 3 / 3.
    assert len(one["computed"]) == 6
    assert sorted(two[0]["computed"] + two[1]["computed"]) == one["computed"]
    assert len(two[0]["computed"]) == len(two[1]["computed"]) == 3


@pytest.mark.slow
def test_warm_cache_on_one_rank_only_gives_the_same_result_without_a_hang(tmp_path, counting_one):
    one = counting_one
    two = launch("counting", tmp_path / "two", 2, {"warm_rank": 0}, timeout=300)
    assert all(r["ok"] and r["values"] == one["values"] for r in two)
    assert len(two[0]["computed"]) < len(two[1]["computed"])  # rank 0 found pairs in its cache, rank 1 did not


@pytest.mark.slow
@pytest.mark.parametrize("scenario, message", [
    ("mismatch", "different inputs on different processes"),  # ranks passed other pairs: refused, not mixed
    ("failure", "process 1 failed: ValueError: boom on purpose"),  # one rank failed: every rank says so
])
def test_a_broken_call_fails_on_every_rank_with_one_clear_error(tmp_path, scenario, message):
    for rank in launch(scenario, tmp_path, 2):
        assert not rank["ok"] and message in rank["error"]


@pytest.mark.slow
def test_a_call_made_on_one_rank_only_is_a_clear_error_not_a_hang(tmp_path):
    ranks = launch("lonely", tmp_path, 2, timeout=120, REXRANK_PARALLEL_HANDSHAKE_S="3")
    assert not ranks[0]["ok"] and "not every process called it" in ranks[0]["error"]
    assert "rexrank.parallel.local()" in ranks[0]["error"]


@pytest.mark.slow
def test_local_call_on_one_rank_runs_alone(tmp_path):
    ranks = launch("local_call", tmp_path, 2, timeout=120, REXRANK_PARALLEL_HANDSHAKE_S="3")
    assert ranks[0]["ok"] and len(ranks[0]["values"]) == 9


# ---------------------------------------------------------------- the model-backed metrics, direct and harness

REPORTS = ["The heart size is normal. The lungs are clear.", "Small left pleural effusion.",
           "Moderate pulmonary edema, worse than before.", "No pneumothorax. Mild cardiomegaly.",
           "Right lower lobe opacity concerning for pneumonia."]
HYPS = [REPORTS[1], REPORTS[0], REPORTS[3], REPORTS[1], REPORTS[4], REPORTS[2], REPORTS[0]]
REFS = [REPORTS[0], REPORTS[0], REPORTS[2], REPORTS[0], REPORTS[3], REPORTS[2], REPORTS[1]]
JUDGE_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"


def _model_configs(standins) -> dict[str, dict]:
    bert, semb, rg = standins("bertscore"), standins("semb"), standins("radgraph")
    rate, green = standins("ratescore"), standins("green")["green"]
    return {
        "bertscore": {"model": bert["bertscore"], "device": "cpu"},
        "semb": {"model": semb["semb"], "backbone": semb["semb_backbone"], "device": "cpu"},
        "radgraph": {"model": rg["radgraph"], "device": "cpu"},
        "ratescore": {"model": str(Path(rate["ratescore_ner"]).parent), "device": "cpu"},
        "green": {"model": green, "max_new_tokens": 8, "device": "cpu"},
        "fineradscore": {"model": green, "backend": "transformers", "chat_template": JUDGE_TEMPLATE,
                         "max_tokens": 6, "prompt": "zeroshot", "device": "cpu"},
    }


# Batch composition differs between 1 and 2 processes, so encoder outputs differ by float rounding (< 1e-6);
# BERTScore then rescales by 1 / (1 - baseline) (about 5x here), as its reference limit allows (1e-5).
def _tolerance(column: str) -> float:
    return 1e-5 if column.startswith("bertscore") or column.startswith("radcliq") else 1e-6


def changed_sources(a: dict, b: dict) -> str:
    """Which rexrank files differed between two launches (parallel_worker.sources), for a failure message: a value
    that differs because the shared working tree was edited between the launches says so instead of looking like a
    multi-process bug."""
    changed = sorted(k for k in a["sources"].keys() | b["sources"].keys() if a["sources"].get(k) != b["sources"].get(k))
    return f"; the source changed between the launches: {changed}" if changed else ""


def _same_frame(a: dict, b: dict, name: str, note: str = "") -> None:
    assert list(a) == list(b), (name, note)
    for column in a:
        x, y = a[column], b[column]
        if any(isinstance(v, float) for v in x + y):
            xs = np.array([np.nan if v is None else v for v in x], dtype=float)
            ys = np.array([np.nan if v is None else v for v in y], dtype=float)
            assert np.allclose(xs, ys, atol=_tolerance(column), rtol=0, equal_nan=True), (name, column, x, y, note)
        else:
            assert x == y, (name, column, note)


def assert_two_processes_equal_one(tmp_path: Path, name: str, config: dict, hyps=HYPS, refs=REFS) -> None:
    """A metric that shards across processes (its spec says so) gives every rank of a launched 2-process job
    (torchrun, gloo, tests/parallel_worker.py) the single-process frame, within ``_tolerance``."""
    assert metrics.spec(name).across_processes == "shard"
    options = {"hyps": list(hyps), "refs": list(refs), "metrics": {name: config}}
    one = launch("models", tmp_path / "one", 1, options)[0]
    assert one["ok"], one
    for rank in launch("models", tmp_path / "two", 2, options):
        assert rank["ok"], rank
        _same_frame(rank[name]["frame"], one[name]["frame"], name)


@pytest.mark.slow
def test_every_model_backed_metric_called_directly_equals_one_process(tmp_path, standins):
    """score_details of BERTScore, SembScore, RadGraph, RaTEScore, GREEN and FineRadScore's local judge, each
    rank passing the same 7 pairs (5 distinct), one rank with a warm GREEN cache: every rank gets the
    single-process values (<= 1e-6; identical GREEN analyses), and GREEN judges each distinct pair once."""
    options = {"hyps": HYPS, "refs": REFS, "metrics": _model_configs(standins)}
    one = launch("models", tmp_path / "one", 1, options)[0]
    two = launch("models", tmp_path / "two", 2, dict(options, warm_rank=1))
    assert one["ok"], one
    for rank in two:
        assert rank["ok"], rank
        note = changed_sources(rank, one)
        for name in options["metrics"]:
            _same_frame(rank[name]["frame"], one[name]["frame"], name, note)
        assert rank["green"]["analyses"] == one["green"]["analyses"], note
    distinct = len(set(zip(HYPS, REFS)))
    assert one["green"]["generated"] == distinct
    assert two[0]["green"]["generated"] + two[1]["green"]["generated"] < distinct + 1
    assert two[0]["green"]["generated"] >= 2  # rank 0 (cold) judged its own share


def _score_args(standins) -> tuple[list[str], list[str]]:
    configs = _model_configs(standins)
    args = []
    for name, config in configs.items():
        config = dict(config)
        path = config.pop("model")
        config.pop("device")
        args += ["--model-path", f"{name}={path}"]
        for key, value in config.items():
            args += ["--option", f"{name}.{key}={value if isinstance(value, str) else json.dumps(value)}"]
    # ce_f1: per-study counts from semb's labels, summed; nlg: BLEU counts, and CIDEr-D's document frequencies from
    # the whole reference set while pairs are scored 3 at a time in each process.
    return [*configs, "radcliq_v1", "ce_f1", "nlg"], args


def _files(tmp_path: Path, n: int) -> tuple[Path, Path]:
    preds = {f"s{i}": HYPS[i % len(HYPS)] + ("" if i < len(HYPS) else f" Study {i}.") for i in range(n)}
    refs = {f"s{i}": REFS[i % len(REFS)] for i in range(n)}
    (tmp_path / "preds.json").write_text(json.dumps(preds))
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    return tmp_path / "preds.json", tmp_path / "refs.json"


def _score(tmp_path: Path, out: str, processes: int, common: list[str], extra: list[str]):
    launcher = [sys.executable] if processes == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)]
    proc = subprocess.run([*launcher, str(DRIVER), *common, *extra, "-o", str(tmp_path / out)], env=_env(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return pd.read_parquet(tmp_path / out / "per_study.parquet"), json.loads((tmp_path / out / "results.json").read_text())


def _same_table(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    for column in a.columns:
        if pd.api.types.is_float_dtype(a[column]):
            assert np.allclose(a[column], b[column], atol=_tolerance(column), rtol=0, equal_nan=True), column
        else:
            assert a[column].astype(str).tolist() == b[column].astype(str).tolist(), column


@pytest.mark.slow
def test_rexrank_score_with_every_model_backed_metric_two_processes_equal_one(tmp_path, standins):
    """`rexrank score` under torchrun (2 gloo processes) with every model-backed metric on the stand-ins: the
    per-study table equals a single-process run, also when rank 0 starts with a warm cache and rank 1 cold."""
    names, model_args = _score_args(standins)
    preds, refs = _files(tmp_path, 10)
    common = ["score", "-p", str(preds), "-r", str(refs), "-m", ",".join(names), *model_args, "--resamples", "50",
              "-q", "--chunk-size", "3"]
    one, r1 = _score(tmp_path, "one", 1, common, ["--no-cache"])
    # Warm only rank 0's share: its studies (positions 0, 2, 4, ...) scored first into the shared cache.
    warm = {f"s{i}": json.loads(preds.read_text())[f"s{i}"] for i in range(0, 10, 2)}
    (tmp_path / "warm.json").write_text(json.dumps(warm))
    warm_common = [a if a != str(preds) else str(tmp_path / "warm.json") for a in common]
    _score(tmp_path, "warm", 1, warm_common, ["--cache-dir", str(tmp_path / "cache"), "--allow-missing"])
    two, r2 = _score(tmp_path, "two", 2, common, ["--cache-dir", str(tmp_path / "cache")])
    _same_table(one, two)
    assert r2["analyses"]["processes"] == 2
    green = r2["analyses"]["cache"]["green"]
    assert green["cached"] > 0 and green["computed"] > 0  # one rank warm, the other cold
    for name in names:
        a, b = r1["metrics"][name]["mean"], r2["metrics"][name]["mean"]
        assert (a is None and b is None) or abs(a - b) <= _tolerance(name), name
