"""What every `rexrank score` pays before any metric runs (issue 25, point 3).

The cost behind these tests: asking whether a torch.distributed process group exists imported torch (4 s of CPU and
200 MB) on every run, ~70% of a 590-pair BLEU-2 score; and a warm re-score hashed every text three times.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rexrank.evaluation import runner
from rexrank.evaluation.inputs import Inputs
from rexrank.metrics import base

N_STUDIES = 40
# Prints whether torch was imported by the time `rexrank score` returned (the CLI's own entry, in this process).
_PROBE = ("import sys\nfrom rexrank.cli import main\ncode = main(sys.argv[1:])\n"
          "print('TORCH-IMPORTED' if 'torch' in sys.modules else 'NO-TORCH', code)\n")
_LAUNCHER_ENV = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE",
                 "ACCELERATE_MIXED_PRECISION")


@pytest.fixture
def files(tmp_path):
    refs = tmp_path / "refs.jsonl"
    refs.write_text("".join(json.dumps({"study_id": f"s{i}", "report": f"Heart size normal. Study {i} clear."}) + "\n"
                            for i in range(N_STUDIES)))
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"study_id": f"s{i}", "report": f"Lungs are clear. Note {i % 7}."}) + "\n"
                             for i in range(N_STUDIES)))
    return preds, refs


def _score(tmp_path: Path, files, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    preds, refs = files
    clean = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_ENV}
    clean["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([sys.executable, "-c", _PROBE, "score", "-p", str(preds), "-r", str(refs), "-m", "bleu2",
                           "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / "out"), "--resamples", "50",
                           *extra], capture_output=True, text=True, env={**clean, **(env or {})}, timeout=300)


@pytest.mark.slow  # 1.6 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_bleu2_score_never_imports_torch(tmp_path, files):
    """`rexrank score --metrics bleu2` on one process: no model-backed metric runs and no launcher started a process
    group, so torch is never imported (cold cache, then a warm re-score from it)."""
    for run in ("cold", "warm"):
        done = _score(tmp_path, files)
        assert done.returncode == 0, done.stderr
        assert "NO-TORCH 0" in done.stdout, f"{run} run imported torch:\n{done.stdout}\n{done.stderr}"
    assert (tmp_path / "out" / "results.json").is_file()


def test_group_questions_do_not_import_torch():
    """parallel's questions (is a group up? which rank am I?) answer from the environment while torch is absent."""
    code = ("import sys\nfrom rexrank import parallel\n"
            "assert not parallel.group_ready() and parallel.context() == parallel.Context()\n"
            "assert not parallel.would_shard('shard')\n"
            "print('torch' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_ENV}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_summarising_ce_f1_counts_does_not_import_torch():
    """compare, subgroups and summaries aggregate CE F1 from its per-study counts, which imports its module (label
    names, corpus rule): arithmetic on a table must not load torch. The encoder metrics' shared batching helper
    imported it at module level, so importing any of them did."""
    code = ("import sys\nimport numpy as np\nfrom rexrank.metrics.aggregation import corpus_aggregate\n"
            "from rexrank.metrics import bertscore, ce_f1, radeval_bertscore, semb, srrbert\n"
            "corpus_aggregate(np.ones((3, len(ce_f1.STATISTICS))), 'ce_f1')\n"
            "print('torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_each_distinct_text_is_hashed_once(monkeypatch):
    """A run hashes each distinct text once: the inputs' keys are computed once and read by the scorer, the
    per-study table and the inputs' digests (every text repeated here, so a second hash of any would show)."""
    calls: list[str] = []
    real = base.text_key

    def counting(text: str) -> str:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(base, "text_key", counting)
    hyps = [f"hyp {i % 5}" for i in range(30)]
    refs = [f"ref {i % 3}" for i in range(30)]
    inputs = Inputs(study_ids=[f"s{i}" for i in range(30)], hyps=hyps, refs=refs)
    assert inputs.hyp_keys == [real(t) for t in hyps] and inputs.ref_keys == [real(t) for t in refs]
    assert inputs.hyp_keys is inputs.hyp_keys  # computed once, then read
    assert sorted(calls) == sorted(set(hyps) | set(refs))

    from rexrank.metrics.bleu import Bleu2

    calls.clear()
    keys = list(zip(inputs.hyp_keys, inputs.ref_keys))
    scored = runner.score_pairs(hyps, refs, {"bleu2": Bleu2()}, keys=keys)
    assert calls == [] and len(scored.columns["bleu_score"]) == 30
    with pytest.raises(ValueError, match="keys"):
        runner.score_pairs(hyps, refs, {"bleu2": Bleu2()}, keys=keys[:-1])


# -- the run memo (issue 25 point 3: a warm re-score without re-reading every line and pair row) ------------------
# Prints whether pandas (what only a recomputed run needs) was imported when `rexrank score` returned.
_PANDAS_PROBE = ("import sys\nfrom rexrank.cli import main\ncode = main(sys.argv[1:])\n"
                 "print('PANDAS-IMPORTED' if 'pandas' in sys.modules else 'NO-PANDAS', code)\n")
_OUTPUTS = ("per_study.parquet", "results.json", "results.md", "model_index.yaml")


def _probe_score(tmp_path: Path, files, out: str) -> str:
    """One `rexrank score -m bleu2` process into ``out``; 'hit' when it never imported pandas (served from the run
    memo), 'miss' when it did (read, scored and tabled)."""
    preds, refs = files
    clean = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_ENV}
    done = subprocess.run([sys.executable, "-c", _PANDAS_PROBE, "score", "-p", str(preds), "-r", str(refs), "-m",
                           "bleu2", "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / out),
                           "--resamples", "50"], capture_output=True, text=True,
                          env={**clean, "HF_HUB_OFFLINE": "1", "REXRANK_PROGRESS": "0"}, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(("NO-PANDAS 0", "PANDAS-IMPORTED 0")), done.stdout
    return "hit" if done.stdout.rstrip().endswith("NO-PANDAS 0") else "miss"


def _outputs(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in _OUTPUTS}


def _results(folder: Path, *drop: str) -> dict:
    """results.json without created_at (and the analyses listed in ``drop``)."""
    results = json.loads((folder / "results.json").read_text())
    results.pop("created_at")
    for key in drop:
        results["analyses"].pop(key)
    return results


def _forget_runs(cache: Path) -> None:
    """Remove every run memo, leaving the pair rows: the next run is a plain warm re-score."""
    with sqlite3.connect(cache / "scores.sqlite") as conn:
        conn.execute("DELETE FROM runs")
    conn.close()


@pytest.mark.slow  # 2.4 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_a_rerun_of_the_same_files_is_served_from_the_run_memo_with_the_warm_runs_files(tmp_path, files):
    """Cold run (writes the memo), memo hit, then a warm re-score from the pair rows alone: every output file is
    byte-identical between the hit and the warm run but for results.json's created_at, and the cold run differs
    only there and in its cache counts (it computed what the others read). The hit never imports pandas."""
    assert _probe_score(tmp_path, files, "cold") == "miss"
    assert _probe_score(tmp_path, files, "hit") == "hit"
    _forget_runs(tmp_path / "cache")
    assert _probe_score(tmp_path, files, "warm") == "miss"
    hit, warm, cold = (_outputs(tmp_path / name) for name in ("hit", "warm", "cold"))
    for name in ("per_study.parquet", "results.md", "model_index.yaml"):
        assert hit[name] == warm[name] == cold[name], name
    assert _results(tmp_path / "hit") == _results(tmp_path / "warm")
    assert _results(tmp_path / "hit", "cache") == _results(tmp_path / "cold", "cache")
    assert json.loads(cold["results.json"])["analyses"]["cache"]["bleu2"] == {"pairs": N_STUDIES, "cached": 0,
                                                                               "computed": N_STUDIES}
    # Apart from created_at, the hit's results.json is the warm run's byte for byte (same rendering).
    stamp = re.compile(rb'"created_at": "[^"]*"')
    assert stamp.sub(b"", hit["results.json"]) == stamp.sub(b"", warm["results.json"])


def _score_in_process(tmp_path: Path, files, out: str, monkeypatch, *extra: str) -> tuple[int, int]:
    """(exit code, times load_inputs ran) of one in-process `rexrank score`; load_inputs runs on a memo miss only."""
    from rexrank.cli import main
    from rexrank.evaluation import inputs as inputs_module

    calls = []
    real = inputs_module.load_inputs

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(inputs_module, "load_inputs", counting)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    preds, refs = files
    code = main(["score", "-p", str(preds), "-r", str(refs), "-m", "bleu2", "--cache-dir", str(tmp_path / "cache"),
                 "-o", str(tmp_path / out), "--resamples", "50", "-q", *extra])
    return code, len(calls)


@pytest.mark.parametrize("side", ["predictions", "references"])
def test_one_changed_byte_in_either_file_misses_the_memo(tmp_path, files, monkeypatch, side):
    """The memo is keyed by each file's bytes: one changed letter in one report of either file is a miss (read,
    validated and scored again, its new hash in the outputs); the original bytes still hit."""
    assert _score_in_process(tmp_path, files, "first", monkeypatch) == (0, 1)
    assert _score_in_process(tmp_path, files, "again", monkeypatch) == (0, 0)
    path = files[0] if side == "predictions" else files[1]
    original = path.read_bytes()
    at = original.index(b"Study 3 clear" if side == "references" else b"Note 3")
    path.write_bytes(original[:at] + original[at:at + 1].lower() + original[at + 1:])
    assert path.read_bytes() != original
    assert _score_in_process(tmp_path, files, "changed", monkeypatch) == (0, 1)
    key = "predictions_sha256" if side == "predictions" else "references_sha256"
    assert _results(tmp_path / "changed")["inputs"][key] != _results(tmp_path / "first")["inputs"][key]
    path.write_bytes(original)
    assert _score_in_process(tmp_path, files, "restored", monkeypatch) == (0, 0)
    assert _results(tmp_path / "restored") == _results(tmp_path / "again")


def test_a_memo_hit_is_as_strict_as_a_miss(tmp_path, files, monkeypatch, capsys):
    """A file that would fail validation never reaches a memo: one byte that breaks a line is a miss, refused with
    the validator's message and nothing written; a changed option (--seed, --max-report-words) misses too."""
    assert _score_in_process(tmp_path, files, "first", monkeypatch) == (0, 1)
    preds = files[0]
    original = preds.read_bytes()
    preds.write_bytes(original.replace(b'"study_id"', b'"study_id', 1))
    code, reads = _score_in_process(tmp_path, files, "broken", monkeypatch)
    assert (code, reads) == (2, 1) and not (tmp_path / "broken").exists()
    assert "predictions" in capsys.readouterr().err
    preds.write_bytes(original)
    assert _score_in_process(tmp_path, files, "seed", monkeypatch, "--seed", "1") == (0, 1)
    # A limit the inputs now break: refused, although a memo of the same bytes under other limits exists.
    code, reads = _score_in_process(tmp_path, files, "short", monkeypatch, "--max-report-words", "3")
    assert (code, reads) == (2, 1) and not (tmp_path / "short").exists()


def test_a_tampered_memo_is_refused_recomputed_and_replaced(tmp_path, files, monkeypatch, caplog):
    """A memo row whose bytes changed fails its checksum: one 'corrupt cache row' warning, the run is recomputed
    from the pair rows (the same outputs as before) and the memo rewritten, so the next run hits again. A memo
    re-sealed with a valid checksum but content that is not a run's is refused the same way."""
    from rexrank.evaluation.cache import ScoreCache

    assert _score_in_process(tmp_path, files, "first", monkeypatch) == (0, 1)
    with sqlite3.connect(tmp_path / "cache" / "scores.sqlite") as conn:
        (key, value), = conn.execute("SELECT key, value FROM runs").fetchall()
        at = value.index(b"bleu_score")  # inside the stored results: a hand-edited value
        conn.execute("UPDATE runs SET value=? WHERE key=?", (value[:at] + b"B" + value[at + 1:], key))
    conn.close()
    with caplog.at_level(logging.WARNING, logger="rexrank.evaluation"):
        assert _score_in_process(tmp_path, files, "tampered", monkeypatch) == (0, 1)
    assert "corrupt cache row" in caplog.text and "run memo" in caplog.text
    assert _outputs(tmp_path / "tampered")["per_study.parquet"] == _outputs(tmp_path / "first")["per_study.parquet"]
    assert _results(tmp_path / "tampered", "cache") == _results(tmp_path / "first", "cache")
    assert _score_in_process(tmp_path, files, "replaced", monkeypatch) == (0, 0)

    cache = ScoreCache(tmp_path / "cache")
    memo = cache.get_run(key)
    results = json.loads(memo["results"])
    results["metrics"]["bleu2"]["mean"] = 0.99
    # Sealed by the cache itself, so only the reader's shape check stands between it and the outputs: the stored
    # cache counts no longer agree with the results.
    cache.put_run(key, {**memo, "results": json.dumps(results),
                        "stats": {"bleu2": {"pairs": 1, "cached": 1, "computed": 0}}})
    cache.put_run(key + "x", {"results": "{}"})  # and one of the wrong shape under another key
    cache.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rexrank.evaluation"):
        assert _score_in_process(tmp_path, files, "resealed", monkeypatch) == (0, 1)
    assert "run memo" in caplog.text
    assert _results(tmp_path / "resealed") == _results(tmp_path / "replaced")


def test_the_memo_is_left_alone_where_something_else_decides_the_outcome(tmp_path, files, monkeypatch):
    """No memo without a persistent cache, for a launched job (several processes score shards), or for a file
    that is not a regular file: those runs read and score as before."""
    from rexrank.evaluation.harness import RunMemo, ScoreOptions, prepare_metrics

    preds, refs = files
    options = ScoreOptions(metrics=["bleu2"], cache_dir=tmp_path / "cache")
    built = prepare_metrics(options)
    settings = dict(model="m", track="findings", dataset=None, split=None, allow_missing=False, max_file_size_mb=200.0,
                    max_report_words=5000, max_report_chars=50000, metrics=built)
    for name in _LAUNCHER_ENV:
        monkeypatch.delenv(name, raising=False)
    assert RunMemo.for_run(preds, refs, options=options, **settings) is not None
    assert RunMemo.for_run(preds, refs, options=ScoreOptions(metrics=["bleu2"], use_cache=False), **settings) is None
    assert RunMemo.for_run(preds, None, options=options, **settings) is None
    fifo = tmp_path / "refs.fifo"
    os.mkfifo(fifo)
    assert RunMemo.for_run(preds, fifo, options=options, **settings) is None  # and it returned: nothing waited
    assert RunMemo.for_run(preds, refs, options=options, **{**settings, "max_file_size_mb": 0.0001}) is None
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    assert RunMemo.for_run(preds, refs, options=options, **settings) is None


def test_a_memo_the_cache_cannot_take_is_a_warning_not_a_failed_run(tmp_path, files, monkeypatch, caplog):
    """Storing the memo comes after the outputs are written: a cache that refuses it (here: a full disk while
    writing the row) leaves a successful run with its files and one warning, and the next run recomputes."""
    from rexrank.errors import RexrankError
    from rexrank.evaluation.cache import ScoreCache

    def full(self, key, memo):
        raise RexrankError("cannot write the scoring cache: the disk is full")

    monkeypatch.setattr(ScoreCache, "put_run", full)
    with caplog.at_level(logging.WARNING, logger="rexrank.evaluation"):
        assert _score_in_process(tmp_path, files, "first", monkeypatch) == (0, 1)
    assert "run memo not stored" in caplog.text and "disk is full" in caplog.text
    assert all((tmp_path / "first" / name).is_file() for name in _OUTPUTS)
    monkeypatch.undo()
    assert _score_in_process(tmp_path, files, "second", monkeypatch) == (0, 1)
    assert _score_in_process(tmp_path, files, "third", monkeypatch) == (0, 0)


@pytest.mark.slow
def test_a_launched_job_neither_reads_nor_writes_the_memo_and_equals_one_process(tmp_path, files):
    """torchrun with 2 processes on files a single-process run has memoised: the job scores its shards (results
    say 2 processes, so nothing came from the memo), leaves the memo as it was, and its per-study table is the
    single-process run's byte for byte."""
    assert _probe_score(tmp_path, files, "one") == "miss"
    database = tmp_path / "cache" / "scores.sqlite"

    def memos():
        with sqlite3.connect(database) as conn:
            rows = conn.execute("SELECT key, checksum, written FROM runs").fetchall()
        conn.close()
        return rows

    before = memos()
    assert len(before) == 1
    preds, refs = files
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_ENV}
    env.update(HF_HUB_OFFLINE="1", REXRANK_PROGRESS="0", OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    driver = Path(__file__).with_name("evaluation_driver.py")
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           str(driver), "score", "-p", str(preds), "-r", str(refs), "-m", "bleu2", "--cache-dir",
                           str(tmp_path / "cache"), "-o", str(tmp_path / "two"), "--resamples", "50", "-q"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert memos() == before
    assert json.loads((tmp_path / "two" / "results.json").read_text())["analyses"]["processes"] == 2
    assert _outputs(tmp_path / "two")["per_study.parquet"] == _outputs(tmp_path / "one")["per_study.parquet"]
    assert _results(tmp_path / "two", "processes", "cache") == _results(tmp_path / "one", "processes", "cache")
