"""The persistent scoring cache: reuse across runs and models, concurrent writers, and killed runs.

These are the promises that make large evaluations affordable: a killed run restarted recomputes nothing that
finished, a second model reuses every reference-side result, and processes sharing a cache never corrupt it.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evaluation_fakes as fakes
from rexrank.evaluation.cache import ScoreCache

TESTS = Path(__file__).resolve().parent
DRIVER = TESTS / "evaluation_driver.py"


@pytest.fixture
def fake_metrics():
    fakes.register()
    fakes.FakeLength.computed_texts = []
    yield
    fakes.unregister()


def test_text_and_pair_roundtrip(tmp_path):
    """Values come back exactly (pickled), per namespace, and a reopened cache still has them."""
    cache = ScoreCache(tmp_path)
    cache.put_many("ns:a", {"k1": np.arange(3.0), "k2": {"x": 1}})
    cache.put_pairs("fp", {("h", "r"): {"col": 0.5, "detail": [1, 2]}})
    cache.close()
    again = ScoreCache(tmp_path)
    got = again.get_many("ns:a", ["k1", "k2", "absent"])
    assert set(got) == {"k1", "k2"} and np.array_equal(got["k1"], np.arange(3.0)) and got["k2"] == {"x": 1}
    assert again.get_many("ns:b", ["k1"]) == {}
    assert again.get_pairs("fp", [("h", "r"), ("h", "other")]) == {("h", "r"): {"col": 0.5, "detail": [1, 2]}}
    assert again.get_pairs("other-fingerprint", [("h", "r")]) == {}
    assert again.integrity_check() == "ok"


def test_lookup_of_many_keys_crosses_the_parameter_limit(tmp_path):
    cache = ScoreCache(tmp_path)
    items = {f"k{i}": i for i in range(2500)}
    cache.put_many("ns", items)
    assert cache.get_many("ns", list(items)) == items
    pairs = {(f"h{i}", f"r{i}"): {"v": float(i)} for i in range(1200)}
    cache.put_pairs("fp", pairs)
    assert cache.get_pairs("fp", list(pairs)) == pairs


def _writer(directory: str, worker: int, rounds: int) -> None:
    cache = ScoreCache(directory)
    for i in range(rounds):
        # Overlapping keys on purpose: both processes write "shared-i"; distinct ones too.
        cache.put_many("ns", {f"shared-{i}": i, f"w{worker}-{i}": worker})
        cache.put_pairs("fp", {(f"h{i}", "r"): {"v": float(i)}, (f"h{i}", f"w{worker}"): {"v": float(worker)}})
        if i % 50 == 0:
            assert cache.get_many("ns", [f"shared-{i}"]) == {f"shared-{i}": i}
    cache.close()


def test_two_processes_writing_at_once_do_not_corrupt_the_cache(tmp_path):
    """Two processes hammer the same SQLite file with small transactions; every write lands, the file is sound."""
    rounds = 300
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, rounds)) for w in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = ScoreCache(tmp_path)
    assert cache.integrity_check() == "ok"
    assert cache.stats() == {"texts": 3 * rounds, "pairs": 3 * rounds}
    keys = [f"shared-{i}" for i in range(rounds)] + [f"w{w}-{i}" for w in (0, 1) for i in range(rounds)]
    got = cache.get_many("ns", keys)
    assert len(got) == 3 * rounds and all(got[f"w1-{i}"] == 1 for i in range(rounds))


def test_cache_is_picklable_across_processes(tmp_path):
    import pickle

    cache = ScoreCache(tmp_path)
    cache.put_many("ns", {"a": 1})
    clone = pickle.loads(pickle.dumps(cache))
    assert clone.get_many("ns", ["a"]) == {"a": 1}


def _inputs(n: int, seed: int = 0):
    from rexrank.evaluation.inputs import Inputs

    rng = np.random.default_rng(seed)
    words = ["lungs", "clear", "effusion", "normal", "heart", "size", "no", "pneumothorax", "cardiomegaly"]
    refs = [" ".join(rng.choice(words, 6)) + "." for _ in range(n)]
    hyps = [" ".join(rng.choice(words, 5)) + "." for _ in range(n)]
    return Inputs([f"s{i}" for i in range(n)], hyps, refs)


def test_second_model_reuses_every_reference_side_result(tmp_path, fake_metrics):
    """Scoring model B against the same references computes per-text artefacts for B's reports only."""
    from rexrank.evaluation.harness import ScoreOptions, evaluate

    a = _inputs(30, seed=1)
    options = ScoreOptions(metrics=["fake_len"], cache_dir=tmp_path, resamples=50)
    evaluate(a, model="A", track="findings", options=options)
    assert set(fakes.FakeLength.computed_texts) == set(a.hyps) | set(a.refs)
    fakes.FakeLength.computed_texts = []
    b = _inputs(30, seed=2)
    b.refs = a.refs
    result = evaluate(b, model="B", track="findings", options=options)
    assert set(fakes.FakeLength.computed_texts) == set(b.hyps) - set(a.refs) - set(a.hyps)
    assert result.stats["fake_len"]["computed"] == len(set(zip(b.hyps, b.refs)))
    fakes.FakeLength.computed_texts = []
    again = evaluate(b, model="B", track="findings", options=options)
    assert fakes.FakeLength.computed_texts == [] and again.stats["fake_len"]["computed"] == 0
    assert again.per_study["fake_len"].equals(result.per_study["fake_len"])


def test_no_cache_writes_nothing(tmp_path, fake_metrics):
    from rexrank.evaluation.harness import ScoreOptions, evaluate

    evaluate(_inputs(5), model="A", track="findings",
             options=ScoreOptions(metrics=["fake_len"], use_cache=False, cache_dir=tmp_path / "c", resamples=10))
    assert not (tmp_path / "c").exists()


def test_a_new_metric_configuration_never_reads_old_values(tmp_path, fake_metrics):
    from rexrank.evaluation.harness import ScoreOptions, evaluate

    inputs = _inputs(10)
    evaluate(inputs, model="A", track="findings", options=ScoreOptions(metrics=["fake_len"], cache_dir=tmp_path,
                                                                        resamples=10))
    fakes.FakeLength.computed_texts = []
    other = evaluate(inputs, model="A", track="findings",
                     options=ScoreOptions(metrics=["fake_len"], cache_dir=tmp_path, resamples=10,
                                          model_paths={"fake_len": "other-weights"}))
    assert other.stats["fake_len"]["cached"] == 0 and fakes.FakeLength.computed_texts


def _write_pair_files(tmp_path: Path, n: int) -> tuple[Path, Path]:
    inputs = _inputs(n, seed=3)
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"study_id": i, "report": h}) + "\n" for i, h in zip(inputs.study_ids,
                                                                                            inputs.hyps)))
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps(dict(zip(inputs.study_ids, inputs.refs))))
    return preds, refs


def _env(log: Path, sleep: float) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", REXRANK_PROGRESS="0")
    env[fakes.LOG_ENV] = str(log)
    env[fakes.SLEEP_ENV] = str(sleep)
    return env


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.slow
def test_killed_run_restarted_recomputes_nothing_that_finished(tmp_path, fake_metrics):
    """SIGKILL a scoring process mid-run, start it again: only unfinished chunks are computed, no results file is
    left by the killed run, and the final table equals an uninterrupted run's."""
    n, chunk = 60, 4
    preds, refs = _write_pair_files(tmp_path, n)
    cache_dir, out, log = tmp_path / "cache", tmp_path / "out", tmp_path / "log.txt"
    args = [sys.executable, str(DRIVER), "score", "-p", str(preds), "-r", str(refs), "-m", "bleu2,fake_slow",
            "--cache-dir", str(cache_dir), "--chunk-size", str(chunk), "-o", str(out), "-q", "--resamples", "50"]
    proc = subprocess.Popen(args, env=_env(log, 0.05), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while len(_lines(log)) < 3 * chunk and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed: make it slower"
    assert not out.exists()
    first = _lines(log)
    assert 0 < len(first) < n
    finished = len(first) // chunk * chunk  # the chunk in flight was logged but never committed
    committed = ScoreCache(cache_dir).stats()["pairs"]
    assert committed >= finished - chunk and committed % chunk == 0 and committed > n  # bleu2 (all n) + fake_slow

    done = subprocess.run(args, env=_env(log, 0.0), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    second = _lines(log)[len(first):]
    fake_slow_committed = committed - n
    assert len(second) == n - fake_slow_committed
    assert not set(second) & set(first[:fake_slow_committed])
    results = json.loads((out / "results.json").read_text())
    assert results["analyses"]["cache"]["fake_slow"] == {"pairs": n, "cached": fake_slow_committed,
                                                         "computed": n - fake_slow_committed}
    assert results["analyses"]["cache"]["bleu2"]["computed"] == 0

    from rexrank.evaluation.harness import ScoreOptions, check_equal, evaluate
    from rexrank.evaluation.inputs import load_inputs

    fresh = evaluate(load_inputs(preds, references=refs, track="findings"), model="preds", track="findings",
                     options=ScoreOptions(metrics=["bleu2", "fake_slow"], use_cache=False, resamples=50))
    assert check_equal(pd.read_parquet(out / "per_study.parquet"), fresh.per_study)
    assert results["metrics"] == json.loads(json.dumps(fresh.results["metrics"]))
