"""`rexrank score`: the default results folder stays inside results/ (issue 26, point 4), and the command says how
many processes took part, warning when the launcher asked for more than started (issue 26, point 8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REFS = {"s1": "Heart size normal. Lungs are clear.", "s2": "Cardiomegaly with small left effusion."}


@pytest.fixture
def files(tmp_path) -> tuple[Path, Path]:
    refs, preds = tmp_path / "refs.jsonl", tmp_path / "model_a.jsonl"
    refs.write_text("".join(json.dumps({"study_id": i, "report": r}) + "\n" for i, r in REFS.items()))
    preds.write_text("".join(json.dumps({"study_id": i, "report": r[:12]}) + "\n" for i, r in REFS.items()))
    return preds, refs


def _score(cli, preds: Path, refs: Path, *extra: str):
    return cli("score", "-p", str(preds), "-r", str(refs), "-m", "bleu2", "--no-cache", "--resamples", "10",
               "--no-progress", *extra)


@pytest.mark.parametrize("name", ["../../../../escaped/x", "../escaped", "..", "org/model", "ABSOLUTE"])
def test_a_model_name_that_is_a_path_is_refused(cli, files, tmp_path, monkeypatch, name):
    """Without --out the results go to results/<model name>: a name that is a path (.., /, absolute) would write
    them elsewhere. It is one error line naming the fix, and nothing is written anywhere."""
    work = tmp_path / "a" / "b" / "c" / "d"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    if name == "ABSOLUTE":
        name = str(tmp_path / "escaped" / "x")
    preds, refs = files
    code, output = _score(cli, preds, refs, "--model-name", name)
    assert code == 2, output
    assert "is not a plain folder name" in output and "--out DIR" in output and "Traceback" not in output
    assert len(output.strip().splitlines()) == 1
    assert not (tmp_path / "escaped").exists() and not (work / "results").exists()
    assert not (tmp_path / "a" / "b" / "c" / "escaped").exists()


def test_a_plain_model_name_and_an_explicit_out_still_work(cli, files, tmp_path, monkeypatch):
    """A plain name writes results/<name> under the working folder; with --out any label is fine (it is not a
    path then), and the output says how many processes took part."""
    monkeypatch.chdir(tmp_path)
    preds, refs = files
    code, output = _score(cli, preds, refs, "--model-name", "my-model")
    assert code == 0, output
    assert (tmp_path / "results" / "my-model" / "results.json").is_file()
    assert "1 process took part" in output and "warning" not in output
    code, output = _score(cli, preds, refs, "--model-name", "org/model", "--out", str(tmp_path / "elsewhere"))
    assert code == 0, output
    assert json.loads((tmp_path / "elsewhere" / "results.json").read_text())["model"] == "org/model"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                             "MASTER_PORT", "LOCAL_WORLD_SIZE")}
    return env | {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "REXRANK_PROGRESS": "0"}


@pytest.mark.slow  # 3.3 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_accelerate_asked_for_two_but_started_one_is_said(files, tmp_path):
    """`accelerate launch --num_processes 2` without GPUs runs one process: score says 1 process took part and
    warns that the launcher asked for more, naming the launcher that works on CPU."""
    preds, refs = files
    proc = subprocess.run([sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2",
                           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                           "-m", "rexrank", "score", "-p", str(preds), "-r", str(refs), "-m", "bleu2", "--no-cache",
                           "--resamples", "10", "-o", str(tmp_path / "out")],
                          env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "1 process took part" in proc.stdout
    assert "warning: accelerate launch was asked for several processes" in proc.stderr
    assert "torchrun --standalone --nproc_per_node N" in proc.stderr


def test_world_size_above_the_processes_that_took_part_is_warned(monkeypatch):
    """The launcher's ask comes from WORLD_SIZE (torchrun, accelerate's multi-GPU launcher) or the MPI sizes."""
    from rexrank.parallel import launch_shortfall, processes_line

    for name in ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "MASTER_ADDR",
                 "ACCELERATE_MIXED_PRECISION"):
        monkeypatch.delenv(name, raising=False)
    assert launch_shortfall(1) is None
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert launch_shortfall(4) is None
    assert "asked for 4 processes (WORLD_SIZE=4) but 2 took part" in launch_shortfall(2)
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    assert launch_shortfall(1) is None  # a cluster's MASTER_ADDR alone is no launch
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "no")
    assert "accelerate launch was asked for several processes" in launch_shortfall(1)
    assert processes_line(1) == "1 process took part" and processes_line(2) == "2 processes took part"
