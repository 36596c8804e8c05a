"""What every `rexrank score` pays before any metric runs (issue 25, point 3).

The cost behind these tests: asking whether a torch.distributed process group exists imported torch (4 s of CPU and
200 MB) on every run, ~70% of a 590-pair BLEU-2 score; and a warm re-score hashed every text three times.
"""

from __future__ import annotations

import json
import os
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
