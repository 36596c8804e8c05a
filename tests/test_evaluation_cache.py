"""The persistent scoring cache: reuse across runs and models, concurrent writers, and killed runs.

These are the promises that make large evaluations affordable: a killed run restarted recomputes nothing that
finished, a second model reuses every reference-side result, and processes sharing a cache never corrupt it.
"""

from __future__ import annotations

import ast
import functools
import json
import logging
import math
import multiprocessing as mp
import os
import resource
import signal
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evaluation_fakes as fakes
from rexrank.errors import ConfigError
from rexrank.evaluation import cache as cache_module
from rexrank.evaluation.cache import ScoreCache

TESTS = Path(__file__).resolve().parent
DRIVER = TESTS / "evaluation_driver.py"


def test_text_and_pair_roundtrip(tmp_path):
    """Values come back exactly, per namespace, and a reopened cache still has them."""
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


@pytest.mark.slow  # 1.5 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
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


# -- the cache stores values, never code; every row is checked ---------------------------------------------------------
def _float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _assert_same(got, want, where="value"):
    """Equal in type and content, floats bit for bit, arrays in dtype, shape and bytes, dicts in key order."""
    assert type(got) is type(want), f"{where}: {type(got)} != {type(want)}"
    if isinstance(want, float):
        assert struct.pack("<d", got) == struct.pack("<d", want), f"{where}: {got!r} != {want!r} (bits)"
    elif isinstance(want, np.ndarray):
        assert (got.dtype, got.shape, got.tobytes()) == (want.dtype, want.shape, want.tobytes()), where
        assert got.flags.writeable, f"{where}: a cached array must be writable, as a computed one is"
    elif isinstance(want, np.generic):
        assert (got.dtype, got.tobytes()) == (want.dtype, want.tobytes()), where
    elif isinstance(want, dict):
        assert len(got) == len(want) and list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for key in want:
            _assert_same(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            _assert_same(a, b, f"{where}[{i}]")
    elif want is pd.NA or want is None:
        assert got is want, where
    else:
        assert got == want, where


# What the metrics put in the cache, by who puts it (per-text artefacts through Metric.per_text, pair rows as
# runner._rows builds them: float scores, Int64/boolean/string detail columns whose missing values are pd.NA).
NEG_NAN, PAYLOAD_NAN = _float(0xFFF8000000000000), _float(0x7FF8000000000123)  # numpy's 0/0 on x86; a payload
ARTEFACTS = {
    "semb: (embedding, classes)": (np.array([0.1, -0.0, np.nan, 3e38], np.float32), np.array([0, 3, 1, 2], np.int8)),
    "bertscore: (token ids, embeddings)": (np.array([0, 713, 2], np.int32),
                                           np.arange(12, dtype=np.float32).reshape(3, 4) / 7),
    "bertscore: empty embedding": (np.zeros(0, np.int32), np.zeros((0, 768), np.float32)),
    "radgraph: annotation": {"text": "no effusion", "entities": {"1": {"tokens": "effusion", "label": "OBS-DA",
                                                                       "start_ix": 1, "end_ix": 1,
                                                                       "relations": [["modify", "2"]]}}},
    "ratescore: entities": [("effusion", "ABNORMALITY"), ("lung", "ANATOMY")],
    "ratescore: no entities": [],
    "ratescore: entity embedding": np.linspace(-1, 1, 5, dtype=np.float32),
    "ratescore: report embeddings": np.ones((2, 3), np.float64),
    "green: analysis": "[Clinically Significant Errors]:\n(a) ... 0. \u00e9\ud800",  # lone surrogate kept
    "fineradscore: answer": {"answer": {"errors": [{"severity": "major", "n": 2}], "ok": True, "x": None},
                             "raw": "{...}", "attempts": 1, "error": None},
    "test fakes: word set": frozenset({"lungs", "clear"}),
    "test fakes: float": 0.1,
    "numpy scalars": [np.float32(0.1), np.float64(NEG_NAN), np.int64(-3), np.bool_(True), np.uint8(255)],
    "python scalars": [True, False, 0, -1, 2**63 - 1, -(2**63), 2**80, -(2**70), b"\x00\xff", {"a", 1}, (1,),
                       {2: "int key", (1, "t"): "tuple key", None: 0.5}],
    "floats": [0.0, -0.0, 1e-310, math.inf, -math.inf, math.nan, NEG_NAN, PAYLOAD_NAN, 0.1 + 0.2],
    "arrays": [np.array([True, False]), np.array([[1, 2]], np.uint16), np.array(2.5), np.array([1 + 2j]),
               np.array(["ab", "c"]), np.asfortranarray(np.arange(6.0).reshape(2, 3)), np.arange(4.0)[::2],
               np.array([1.5], ">f8")],
}
PAIR_ROWS = {
    "bleu2": {"bleu_score": 0.25, "bleu_1": 0.5, "bleu_n_ref": 12.0},
    "bertscore": {"bertscore": -0.0, "bertscore_precision": NEG_NAN, "bertscore_recall": PAYLOAD_NAN,
                  "x": math.inf},
    "green": {"green_score": math.nan, "green_sig_a_x": pd.NA, "green_error_free": True,
              "green_parse_error": "no [Matched Findings]", "green_analysis": pd.NA},
    "fineradscore": {"fineradscore": NEG_NAN, "fineradscore_n_errors": 3, "fineradscore_error": None},
}


def test_every_value_type_the_metrics_store_round_trips_exactly(tmp_path):
    """Through the file and back: same types, floats bit for bit (NaN payloads, -0.0, inf), arrays with dtype (byte
    order included) and shape (a Fortran-ordered or strided array comes back with the same values, C-contiguous)."""
    cache = ScoreCache(tmp_path)
    cache.put_many("ns", ARTEFACTS)
    cache.put_pairs("fp", {(name, "r"): row for name, row in PAIR_ROWS.items()})
    cache.close()
    again = ScoreCache(tmp_path)
    got = again.get_many("ns", list(ARTEFACTS))
    for name, value in ARTEFACTS.items():
        if name == "arrays":  # memory layout is not a value
            value = [np.array(a, order="C") for a in value]
        _assert_same(got[name], value, name)
    rows = again.get_pairs("fp", [(name, "r") for name in PAIR_ROWS])
    for name, row in PAIR_ROWS.items():
        _assert_same(rows[(name, "r")], row, name)


def test_a_value_the_cache_cannot_hold_is_refused_when_stored(tmp_path):
    """No fallback to pickling: an object of any other type (here a class instance, an object array) is a TypeError
    naming the type, and nothing is written."""
    from rexrank.metrics.chexbert import TextOutputs

    cache = ScoreCache(tmp_path)
    for value in (TextOutputs(np.zeros(2, np.float32), np.zeros(2, np.int8)), np.array([{}], dtype=object),
                  [lambda: 0]):
        with pytest.raises(TypeError, match="plain values|numpy values"):
            cache.put_many("ns", {"k": value})
    assert cache.stats() == {"texts": 0, "pairs": 0}


def test_cache_module_never_unpickles():
    """cache.py imports no pickle (nor marshal, shelve, dill, joblib): nothing it reads from disk is code."""
    tree = ast.parse(Path(cache_module.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert not imported & {"pickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle", "joblib"}


def _run(tmp_path, metrics=("bleu2", "fake_len", "fake_judge"), n=40):
    from rexrank.evaluation.harness import ScoreOptions, evaluate

    inputs = _inputs(n, seed=5)
    inputs.hyps[3] = "unparseable " + inputs.hyps[3]  # fake_judge: a NaN score and missing error counts
    return evaluate(inputs, model="A", track="findings",
                    options=ScoreOptions(metrics=list(metrics), cache_dir=tmp_path / "cache", resamples=50))


def _metrics_json(result) -> str:
    return json.dumps(result.results["metrics"], sort_keys=True)


def test_warm_rescore_reads_no_pickle_and_equals_the_cold_run_byte_for_byte(tmp_path, fake_metrics, monkeypatch):
    import pickle

    cold = _run(tmp_path)
    assert all(s["computed"] > 0 for s in cold.stats.values())

    def refuse(*args, **kwargs):
        raise AssertionError("the score cache unpickled something")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    warm = _run(tmp_path)
    assert all(s["computed"] == 0 and s["cached"] == s["pairs"] for s in warm.stats.values())
    assert _metrics_json(warm) == _metrics_json(cold)
    pd.testing.assert_frame_equal(warm.per_study, cold.per_study)


def _tamper(path: Path, table: str, where: str, change) -> int:
    """Apply ``change(value, checksum) -> (value, checksum)`` to the rows of ``table`` matching ``where``, straight
    in SQLite; returns how many rows changed."""
    conn = sqlite3.connect(path)
    key = "scope, key" if table == "text_rows" else "scope, hyp, ref"
    rows = conn.execute(f"SELECT {key}, value, checksum FROM {table} WHERE {where}").fetchall()
    for *ident, value, checksum in rows:
        value, checksum = change(value, checksum)
        cond = " AND ".join(f"{col.strip()}=?" for col in key.split(","))
        conn.execute(f"UPDATE {table} SET value=?, checksum=? WHERE {cond}", (value, checksum, *ident))
    conn.commit()
    conn.close()
    return len(rows)


def _rewrite_bleu(value, checksum):
    row = cache_module.decode_value(value)
    row["bleu_score"] = 0.999  # a plausible number, validly encoded: only the checksum tells
    return cache_module.encode_value(row), checksum


def _flip_last_byte(value, checksum):
    return value[:-1] + bytes([value[-1] ^ 0x01]), checksum


def _garbage(value, checksum):
    return b"\x80\x04\x95 not a value at all", checksum


TAMPERING = {"rewritten value": _rewrite_bleu, "flipped byte": _flip_last_byte, "garbage bytes": _garbage}


@pytest.mark.parametrize("how", list(TAMPERING))
def test_a_tampered_pair_row_is_recomputed_never_used(tmp_path, fake_metrics, caplog, how):
    """A pair row changed in SQLite (a rewritten score, one flipped bit, bytes that are no value) is reported in one
    warning line naming the file, recomputed and replaced: the results equal a clean run's."""
    clean = _run(tmp_path)
    path = tmp_path / "cache" / "scores.sqlite"
    bleu_rows = ("(scope, hyp, ref) IN (SELECT scope, hyp, ref FROM pair_rows "
                 "WHERE instr(value, CAST('bleu_score' AS BLOB)) > 0 ORDER BY hyp LIMIT 3)")
    changed = _tamper(path, "pair_rows", bleu_rows, TAMPERING[how])
    assert changed == 3
    with caplog.at_level(logging.WARNING, logger="rexrank.evaluation"):
        again = _run(tmp_path)
    warnings = [r.getMessage() for r in caplog.records if "corrupt cache row" in r.getMessage()]
    assert len(warnings) == 1 and str(path) in warnings[0] and "\n" not in warnings[0], warnings
    assert sum(s["computed"] for s in again.stats.values()) == 3
    assert _metrics_json(again) == _metrics_json(clean)
    pd.testing.assert_frame_equal(again.per_study, clean.per_study)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rexrank.evaluation"):
        third = _run(tmp_path)  # the rows were replaced
    assert not caplog.records and all(s["computed"] == 0 for s in third.stats.values())


def test_a_row_moved_to_another_key_is_not_used(tmp_path, fake_metrics, caplog):
    """The checksum covers the key: a sound row copied over another pair's row fails it."""
    clean = _run(tmp_path, metrics=("bleu2",))
    conn = sqlite3.connect(tmp_path / "cache" / "scores.sqlite")
    rows = conn.execute("SELECT scope, hyp, ref, value, checksum FROM pair_rows ORDER BY hyp").fetchall()
    (fp, _, _, value, checksum), (_, hyp, ref, _, _) = next(
        (a, b) for a, b in zip(rows, rows[1:]) if a[3] != b[3])  # two rows with different scores
    conn.execute("UPDATE pair_rows SET value=?, checksum=? WHERE scope=? AND hyp=? AND ref=?",
                 (value, checksum, fp, hyp, ref))
    conn.commit()
    conn.close()
    with caplog.at_level(logging.WARNING, logger="rexrank.evaluation"):
        again = _run(tmp_path, metrics=("bleu2",))
    assert again.stats["bleu2"]["computed"] == 1
    assert sum("corrupt cache row" in r.getMessage() for r in caplog.records) == 1
    assert _metrics_json(again) == _metrics_json(clean)


def test_a_tampered_per_text_artefact_is_not_used(tmp_path, caplog):
    """Per-text artefacts are checked like pair rows: a changed one is missing from the lookup (so per_text
    computes it again) and the warning names the file."""
    cache = ScoreCache(tmp_path)
    cache.put_many("fake_len:words:fp", {"k1": frozenset({"lungs"}), "k2": frozenset({"clear"})})
    assert _tamper(cache.path, "text_rows", "key=(SELECT id FROM digests WHERE digest='k1')",
                   lambda value, checksum: (cache_module.encode_value(frozenset({"effusion"})), checksum)) == 1
    with caplog.at_level(logging.WARNING, logger="rexrank.evaluation"):
        assert cache.get_many("fake_len:words:fp", ["k1", "k2"]) == {"k2": frozenset({"clear"})}
    assert len(caplog.records) == 1 and str(cache.path) in caplog.records[0].getMessage()
    cache.put_many("fake_len:words:fp", {"k1": frozenset({"lungs"})})  # what per_text does next: replaced
    assert cache.get_many("fake_len:words:fp", ["k1"]) == {"k1": frozenset({"lungs"})}


def test_hostile_bytes_never_get_past_the_decoder(tmp_path):
    """Every truncation of a valid encoding, and random bytes, are refused with ValueError (a corrupt row), never
    another exception, a huge allocation or a value."""
    for value in (ARTEFACTS, PAIR_ROWS, PAIR_ROWS["bleu2"]):
        data = cache_module.encode_value(value)
        for end in range(len(data)):
            with pytest.raises(ValueError):
                cache_module.decode_value(data[:end])
        with pytest.raises(ValueError):
            cache_module.decode_value(data + b"\x00")
    # A row of float columns naming one column twice, or fewer names than numbers.
    with pytest.raises(ValueError):
        cache_module.decode_value(b"r" + struct.pack("<II", 2, 3) + b"a\x00a" + struct.pack("<2d", 1.0, 2.0))
    with pytest.raises(ValueError):
        cache_module.decode_value(b"r" + struct.pack("<II", 2, 1) + b"a" + struct.pack("<2d", 1.0, 2.0))
    rng = np.random.default_rng(0)
    for _ in range(2000):
        blob = rng.integers(0, 256, int(rng.integers(1, 40)), dtype=np.uint8).tobytes()
        try:
            cache_module.decode_value(blob)
        except ValueError:
            pass
    # An array header claiming 2**60 elements, and an object dtype: refused before numpy allocates or parses.
    with pytest.raises(ValueError):
        cache_module.decode_value(b"a\x03<f8\x01" + struct.pack("<Q", 2**60))
    with pytest.raises(ValueError):
        cache_module.decode_value(b"a\x03|O8\x01" + struct.pack("<Q", 1) + b"\x00" * 8)
    with pytest.raises(ValueError):  # nesting deeper than any metric's value
        cache_module.decode_value(b"l\x01\x00\x00\x00" * 500 + b"N")


def _pickled_cache(folder: Path, marker: Path) -> None:
    """A cache as rexrank wrote it before values were checksummed (schema 1), whose rows would run code if
    unpickled: creating ``marker``."""
    import pickle

    class Payload:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    folder.mkdir(mode=0o700)
    conn = sqlite3.connect(folder / "scores.sqlite")
    conn.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema', '1');"
        "CREATE TABLE texts (namespace TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, "
        "PRIMARY KEY (namespace, key)) WITHOUT ROWID;"
        "CREATE TABLE pairs (fingerprint TEXT NOT NULL, hyp TEXT NOT NULL, ref TEXT NOT NULL, value BLOB NOT NULL, "
        "PRIMARY KEY (fingerprint, hyp, ref)) WITHOUT ROWID;"
        "CREATE TABLE pair_origins (dataset TEXT NOT NULL, fingerprint TEXT NOT NULL, hyp TEXT NOT NULL, "
        "ref TEXT NOT NULL, PRIMARY KEY (dataset, fingerprint, hyp, ref)) WITHOUT ROWID;")
    conn.execute("INSERT INTO texts VALUES ('ns', 'k', ?)", (pickle.dumps(Payload()),))
    conn.execute("INSERT INTO pairs VALUES ('fp', 'h', 'r', ?)", (pickle.dumps({"v": Payload()}),))
    conn.execute("INSERT INTO pair_origins VALUES ('iu_xray', 'fp', 'h', 'r')")
    conn.commit()
    conn.close()


def test_an_unreleased_pickled_cache_is_refused_unread_and_untouched(tmp_path):
    """A schema-1 cache (pickles, only ever written by development versions) is refused in one line naming the
    folder and the fix; nothing is unpickled and its rows are kept."""
    folder, marker = tmp_path / "cache", tmp_path / "unpickled"
    _pickled_cache(folder, marker)
    with pytest.raises(ConfigError, match="cache schema 1") as err:
        ScoreCache(folder).get_many("ns", ["k"])
    assert "\n" not in str(err.value) and str(folder) in str(err.value) and "--cache-dir" in str(err.value)
    assert not marker.exists()
    conn = sqlite3.connect(folder / "scores.sqlite")  # its rows and schema as they were (opening set WAL mode only)
    assert conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == ("1",)
    counts = [conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("texts", "pairs", "pair_origins")]
    assert counts == [1, 1, 1]
    conn.close()


def test_a_cache_from_a_newer_rexrank_is_refused_without_advice_to_delete_it(tmp_path):
    ScoreCache(tmp_path).put_many("ns", {"k": 1})
    conn = sqlite3.connect(tmp_path / "scores.sqlite")
    conn.execute("UPDATE meta SET value='99' WHERE key='schema'")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError, match="newer rexrank") as err:
        ScoreCache(tmp_path).get_many("ns", ["k"])
    assert "elete" not in str(err.value) and "--cache-dir" in str(err.value)


def _foreign(path: Path, monkeypatch) -> None:
    """Make ``path`` another user's: chown it where this test may (root), else make the folder this user owns look
    like another's (os.geteuid)."""
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)
    else:
        uid = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: uid + 1)


@pytest.mark.parametrize("case", ["another user's folder", "group-writable folder", "world-writable folder",
                                  "another user's database file"])
def test_a_cache_folder_others_can_write_is_refused(tmp_path, case, monkeypatch):
    """Refused, not warned about and not chmod-ed: someone else could have written the scores. One line naming the
    folder (or file) and the fix; nothing is read, created or changed there."""
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    if case == "another user's database file":
        ScoreCache(folder).put_many("ns", {"k": 1})
        _foreign(folder / "scores.sqlite", monkeypatch)
    elif case == "another user's folder":
        _foreign(folder, monkeypatch)
    else:
        os.chmod(folder, 0o770 if case.startswith("group") else 0o707)
    before = {p.name: (p.stat().st_mode, p.stat().st_uid) for p in [folder, *folder.iterdir()]}
    with pytest.raises(ConfigError) as err:
        ScoreCache(folder).get_many("ns", ["k"])
    message = str(err.value)
    assert "\n" not in message and str(folder) in message, message
    assert ("chmod 700" if "writable" in case else "--cache-dir") in message, message
    assert {p.name: (p.stat().st_mode, p.stat().st_uid) for p in [folder, *folder.iterdir()]} == before


def test_harness_run_with_a_group_writable_cache_is_one_clear_error(tmp_path, fake_metrics):
    from rexrank.evaluation.harness import ScoreOptions, evaluate

    (tmp_path / "cache").mkdir(mode=0o775)
    os.chmod(tmp_path / "cache", 0o775)  # as a umask of 002 leaves a folder made by hand
    with pytest.raises(ConfigError, match="can be written by its group"):
        evaluate(_inputs(5), model="A", track="findings",
                 options=ScoreOptions(metrics=["bleu2"], cache_dir=tmp_path / "cache", resamples=10))


def _failing_connection(statement: str, name: str, message: str):
    """A sqlite3.Connection class whose statements starting with `statement` fail as SQLite's do with error `name`."""

    def fail():
        exc = sqlite3.OperationalError(message)
        exc.sqlite_errorname = name
        raise exc

    class Failing(sqlite3.Connection):
        def execute(self, sql, *args):
            return fail() if sql.startswith(statement) else super().execute(sql, *args)

        def executemany(self, sql, *args):
            return fail() if sql.startswith(statement) else super().executemany(sql, *args)

    return Failing


STORAGE_ERRORS = {  # SQLite's error, the statement it strikes, and what the one line must say
    "full disk": ("INSERT OR REPLACE", "SQLITE_FULL", "database or disk is full",
                  ["cannot write", "disk is full", "--cache-dir", "--no-cache"]),
    "write error": ("INSERT OR REPLACE", "SQLITE_IOERR_WRITE", "disk I/O error",
                    ["cannot write", "ulimit -f", "--cache-dir", "--no-cache"]),
    "read error": ("SELECT h.digest", "SQLITE_IOERR_READ", "disk I/O error", ["cannot read", "failing", "--cache-dir"]),
    "corrupt file": ("SELECT h.digest", "SQLITE_CORRUPT", "database disk image is malformed",
                     ["not a sound SQLite", "delete it"]),
}


@pytest.mark.parametrize("case", list(STORAGE_ERRORS))
def test_a_storage_error_is_one_line_naming_the_cache_and_what_to_do(tmp_path, monkeypatch, case):
    """A full disk is never answered with "delete the file" (only a file that is no sound database is), and a failed
    write leaves the committed rows as they were."""
    from rexrank.errors import RexrankError

    statement, name, text, expected = STORAGE_ERRORS[case]
    ScoreCache(tmp_path).put_pairs("fp", {("h", "r"): {"v": 1.0}})
    monkeypatch.setattr(sqlite3, "connect", functools.partial(sqlite3.connect,
                                                              factory=_failing_connection(statement, name, text)))
    cache = ScoreCache(tmp_path)
    with pytest.raises(RexrankError) as err:
        cache.put_pairs("fp", {("h2", "r"): {"v": 2.0}})
        cache.get_pairs("fp", [("h", "r")])
    message = str(err.value)
    assert "\n" not in message and str(tmp_path) in message, message
    assert all(part in message for part in expected), message
    assert ("elete" in message) == (case == "corrupt file"), message
    monkeypatch.undo()
    again = ScoreCache(tmp_path)
    assert again.get_pairs("fp", [("h", "r")]) == {("h", "r"): {"v": 1.0}}
    assert again.integrity_check() == "ok"


def _limit_file_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (96 * 1024, 96 * 1024))


def test_a_file_size_limit_while_scoring_is_one_error_line_and_the_cache_stays_sound(tmp_path):
    """`rexrank score` under `ulimit -f` (a real SQLite write failure, SQLITE_IOERR_WRITE): one error line naming
    the cache folder and what to do, no traceback, no advice to delete the cache; the committed chunks are sound."""
    n = 600
    preds, refs = _write_pair_files(tmp_path, n)
    cache_dir = tmp_path / "cache"
    args = [sys.executable, "-m", "rexrank", "score", "-p", str(preds), "-r", str(refs), "-m", "bleu2",
            "--cache-dir", str(cache_dir), "--chunk-size", "50", "-o", str(tmp_path / "out"), "-q",
            "--resamples", "10"]
    done = subprocess.run(args, env=_env(tmp_path / "log", 0.0), capture_output=True, text=True, timeout=300,
                          preexec_fn=_limit_file_size)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot write the scoring cache in {cache_dir}:"), lines
    assert "ulimit -f" in lines[0] and "--cache-dir" in lines[0] and "--no-cache" in lines[0]
    assert "elete" not in lines[0]
    cache = ScoreCache(cache_dir)
    assert cache.integrity_check() == "ok"
    committed = cache.stats()["pairs"]
    assert 0 < committed < n and committed % 50 == 0


def test_run_memos_round_trip_are_checked_capped_and_purged(tmp_path, caplog, monkeypatch):
    """The run memo table (rexrank.evaluation.harness.RunMemo's storage): a memo comes back exactly; one changed
    byte of a stored memo, or a value that is no memo (not a dict), is refused with one warning; only the newest
    MAX_RUN_MEMOS are kept; and purge removes every memo (each holds one run's per-study table)."""
    memo = {"results": '{"a": 1}', "per_study": b"\x00PAR1\xff", "stats": {"m": {"pairs": 2}}, "note": None}
    assert ScoreCache(tmp_path / "none").get_run("k1") is None and not (tmp_path / "none").exists()  # not created
    cache = ScoreCache(tmp_path)
    cache.put_run("k1", memo)
    assert cache.get_run("k1") == memo and cache.get_run("absent") is None
    with sqlite3.connect(tmp_path / cache_module.FILENAME) as conn:
        conn.execute("INSERT INTO runs SELECT 'k2', value, checksum, written FROM runs WHERE key='k1'")  # moved key
        value = conn.execute("SELECT value FROM runs WHERE key='k1'").fetchone()[0]
        conn.execute("UPDATE runs SET value=? WHERE key='k1'", (value[:-1] + bytes([value[-1] ^ 1]),))
    conn.close()
    cache.put_run("k3", ["not", "a", "memo"])
    with caplog.at_level(logging.WARNING, logger="rexrank.evaluation"):
        assert cache.get_run("k1") is None and cache.get_run("k2") is None and cache.get_run("k3") is None
    assert sum("corrupt cache row" in r.getMessage() and "run memo" in r.getMessage() for r in caplog.records) == 3

    monkeypatch.setattr(cache_module, "MAX_RUN_MEMOS", 3)
    clock = iter(range(int(time.time()) + 1000, int(time.time()) + 1100))  # after the rows above
    monkeypatch.setattr(cache_module.time, "time", lambda: float(next(clock)))
    for i in range(5):
        cache.put_run(f"n{i}", {**memo, "note": str(i)})
    with sqlite3.connect(tmp_path / cache_module.FILENAME) as conn:
        kept = sorted(key for (key,) in conn.execute("SELECT key FROM runs"))
    conn.close()
    assert kept == ["n2", "n3", "n4"] and cache.get_run("n4")["note"] == "4"
    cache.put_pairs("fp", {("h", "r"): {"v": 1.0}})
    counted = cache.purge("some_dataset", dry_run=True)
    assert counted["runs"] == 3 and counted["bytes"] > 0 and cache.get_run("n4") is not None
    assert cache.purge("some_dataset")["runs"] == 3
    assert [cache.get_run(k) for k in kept] == [None, None, None]
    assert cache.get_pairs("fp", [("h", "r")]) == {("h", "r"): {"v": 1.0}}  # untagged, not one of its texts
    cache.close()


def _model_options(standins, cache_dir: Path, metrics: tuple[str, ...]):
    from rexrank.evaluation.harness import ScoreOptions

    semb, ratescore = standins("semb"), standins("ratescore")
    configs = {"semb": {"model": semb["semb"], "backbone": semb["semb_backbone"]},
               "bertscore": {"model": standins("bertscore")["bertscore"]},
               "ratescore": {"ner_model": ratescore["ratescore_ner"], "embed_model": ratescore["ratescore_embed"]},
               "radgraph": {"model": standins("radgraph")["radgraph"]}}
    return ScoreOptions(metrics=list(metrics), metric_configs={m: configs[m] for m in metrics}, device="cpu",
                        batch_size=4, cache_dir=cache_dir, chunk_size=7, resamples=20)


_MODEL_METRICS = ("bertscore", "semb", "ratescore", "radgraph")


@pytest.mark.slow  # 10.6 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_warm_equals_cold_byte_for_byte_whatever_another_run_left_in_the_cache(tmp_path, standins, iu_xray_test):
    """Issue 35 point 7. Model B scored in a fresh cache, and again in a cache where model A's run left some of the
    same references' artefacts and some of B's pairs (A shares a few predictions with B): every per-study value,
    detail columns included, has the same bytes. Encoders give a text slightly different floats beside other
    texts in one forward pass, so a value computed from the cache misses only must not depend on its neighbours."""
    from rexrank.evaluation.harness import evaluate
    from rexrank.evaluation.inputs import Inputs

    reports = list(dict.fromkeys(study["report"] for study in iu_xray_test.values()))[:24]
    refs, b_hyps = reports[:12], reports[12:24]
    ids = [f"s{i}" for i in range(12)]
    # A: the first 7 studies, three of them with B's own prediction (pair rows B finds), four with another.
    a_hyps = [b_hyps[i] if i % 2 else reports[(i + 5) % 12] for i in range(7)]

    cold = evaluate(Inputs(ids, b_hyps, refs), model="B", track="findings",
                    options=_model_options(standins, tmp_path / "cold", _MODEL_METRICS))
    shared = _model_options(standins, tmp_path / "shared", _MODEL_METRICS)
    evaluate(Inputs(ids[:7], a_hyps, refs[:7]), model="A", track="findings", options=shared)
    warm = evaluate(Inputs(ids, b_hyps, refs), model="B", track="findings", options=shared)
    assert all(0 < s["cached"] < s["pairs"] for s in warm.stats.values()), warm.stats  # partly warm, really
    assert list(warm.per_study.columns) == list(cold.per_study.columns)
    differ = [column for column in cold.per_study.columns if _column_bytes(warm.per_study[column])
              != _column_bytes(cold.per_study[column])]
    assert differ == []


def _column_bytes(column: pd.Series) -> bytes:
    """A column's values as bytes: a numeric column's IEEE bits, any other column's values as text."""
    values = column.to_numpy()
    return values.tobytes() if values.dtype.kind in "biufc" else json.dumps(values.tolist()).encode()


def test_a_pair_row_is_three_integers_a_compact_value_and_one_checksum(tmp_path):
    """Issue 35 point 12: text hashes and names are stored once and referred to by integer ids (no hex key in any
    row), a row of one float is its 8 bytes plus 13 of framing, and one 8-byte checksum covers the row."""
    from rexrank.metrics.base import text_key

    hyp, ref = text_key("The lungs are clear."), text_key("No acute findings.")
    cache = ScoreCache(tmp_path, dataset="iu_xray")
    cache.put_pairs("0123456789abcdef", {(hyp, ref): {"bleu_score": 0.5}})
    cache.put_many("bertscore:tokens:0123456789abcdef", {ref: np.arange(4, dtype=np.float32)})
    assert cache.get_pairs("0123456789abcdef", [(hyp, ref)]) == {(hyp, ref): {"bleu_score": 0.5}}
    cache.close()
    conn = sqlite3.connect(tmp_path / "scores.sqlite")
    assert conn.execute("SELECT typeof(scope), typeof(hyp), typeof(ref), length(value), length(checksum) "
                        "FROM pair_rows").fetchall() == [("integer", "integer", "integer", 21, 8)]
    assert conn.execute("SELECT typeof(scope), typeof(key), length(checksum) FROM text_rows").fetchall() == [
        ("integer", "integer", 8)]
    assert sorted(conn.execute("SELECT length(digest) FROM digests")) == [(32,), (32,)]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    stored = (tmp_path / "scores.sqlite").read_bytes()
    assert hyp.encode() not in stored and ref.encode() not in stored and bytes.fromhex(ref) in stored


def _schema2_checksum(table: str, scope: str, key: tuple[str, ...], value: bytes) -> bytes:
    """How schema 2 sealed a row: 16-byte BLAKE2b (person "rexrank-scores") over the framed table and scope, the
    framed key parts (hex hashes) and the value bytes."""
    import hashlib

    def framed(parts):
        return "".join(f"{len(part)}:{part}" for part in parts).encode()

    h = hashlib.blake2b(framed((table, scope)), digest_size=16, person=b"rexrank-scores")
    h.update(framed(key))
    h.update(value)
    return h.digest()


def _schema2_cache(folder: Path, pairs: dict, texts: dict, tamper: tuple[str, str]) -> None:
    """A cache as rexrank wrote it with hex keys (schema 2): every row tagged iu_xray; the pair row ``tamper`` gets
    another row's checksum, and a run memo."""
    folder.mkdir(mode=0o700)
    conn = sqlite3.connect(folder / "scores.sqlite")
    conn.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('schema', '2');"
        "CREATE TABLE texts (namespace TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, checksum BLOB NOT NULL, "
        "PRIMARY KEY (namespace, key)) WITHOUT ROWID;"
        "CREATE TABLE pairs (fingerprint TEXT NOT NULL, hyp TEXT NOT NULL, ref TEXT NOT NULL, value BLOB NOT NULL, "
        "checksum BLOB NOT NULL, PRIMARY KEY (fingerprint, hyp, ref)) WITHOUT ROWID;"
        "CREATE TABLE text_origins (dataset TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, "
        "PRIMARY KEY (dataset, namespace, key)) WITHOUT ROWID;"
        "CREATE TABLE pair_origins (dataset TEXT NOT NULL, fingerprint TEXT NOT NULL, hyp TEXT NOT NULL, "
        "ref TEXT NOT NULL, PRIMARY KEY (dataset, fingerprint, hyp, ref)) WITHOUT ROWID;"
        "CREATE TABLE runs (key TEXT PRIMARY KEY, value BLOB NOT NULL, checksum BLOB NOT NULL, written REAL NOT NULL);"
        "INSERT INTO runs VALUES ('memo', x'00', x'00', 0);")
    for (fingerprint, hyp, ref), row in pairs.items():
        value = cache_module.encode_value(row)
        checksum = _schema2_checksum("pairs", fingerprint, (hyp, ref), value)
        if (hyp, ref) == tamper:
            checksum = bytes(16)
        conn.execute("INSERT INTO pairs VALUES (?, ?, ?, ?, ?)", (fingerprint, hyp, ref, value, checksum))
        conn.execute("INSERT INTO pair_origins VALUES ('iu_xray', ?, ?, ?)", (fingerprint, hyp, ref))
    for (namespace, key), item in texts.items():
        value = cache_module.encode_value(item)
        conn.execute("INSERT INTO texts VALUES (?, ?, ?, ?)",
                     (namespace, key, value, _schema2_checksum("texts", namespace, (key,), value)))
        conn.execute("INSERT INTO text_origins VALUES ('iu_xray', ?, ?)", (namespace, key))
    conn.commit()
    conn.close()


def test_a_cache_with_hex_keys_is_converted_once_its_rows_checked(tmp_path, caplog):
    """A schema-2 cache (hex keys, 16-byte checksums) is converted when opened, in one info line: every sound row
    keeps its value under the compact layout, a row that fails its old checksum is dropped (recomputed when
    needed), the dataset tags still let purge find the rows, and the old rows' bytes are overwritten."""
    from rexrank.metrics.base import text_key

    folder = tmp_path / "cache"
    hyps = [text_key(f"prediction {i}") for i in range(3)]
    ref = text_key("reference")
    pairs = {("fp", h, ref): {"bleu_score": i / 4, "bleu_detail": float(i)} for i, h in enumerate(hyps)}
    texts = {("bertscore:tokens:fp", ref): (np.arange(3, dtype=np.int32), np.ones((3, 2), np.float32))}
    _schema2_cache(folder, pairs, texts, tamper=(hyps[2], ref))
    cache = ScoreCache(folder)
    with caplog.at_level(logging.INFO, logger="rexrank.evaluation"):
        found = cache.get_pairs("fp", [(h, ref) for h in hyps])
    assert found == {(h, ref): pairs[("fp", h, ref)] for h in hyps[:2]}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and str(folder) in lines[0] and "\n" not in lines[0], lines
    assert "converted 2 pair rows and 1 per-text artefacts of schema 2" in lines[0] and "1 rows failed" in lines[0]
    (ids, vectors), = cache.get_many("bertscore:tokens:fp", [ref]).values()
    assert ids.tolist() == [0, 1, 2] and vectors.dtype == np.float32 and vectors.shape == (3, 2)
    assert cache.get_run("memo") is None
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="rexrank.evaluation"):
        assert ScoreCache(folder).get_pairs("fp", [(hyps[0], ref)])  # converted once: no second line
    assert not caplog.records
    conn = sqlite3.connect(folder / "scores.sqlite")
    assert conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == (cache_module.SCHEMA_VERSION,)
    assert conn.execute("SELECT DISTINCT length(checksum) FROM pair_rows").fetchall() == [(8,)]
    conn.close()
    cache.close()
    stored = b"".join(p.read_bytes() for p in ScoreCache(folder).sidecars() if p.exists())
    assert hyps[0].encode() not in stored  # the hex rows were overwritten, not just unlinked
    removed = cache.purge("iu_xray")
    assert (removed["pairs"], removed["texts"]) == (2, 1)
    assert cache.stats() == {"texts": 0, "pairs": 0}
