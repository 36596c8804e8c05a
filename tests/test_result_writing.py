"""Writing the result files when the disk says no (issue 26, point 3).

A full disk, a quota or the process's file-size limit (`ulimit -f`) while `rexrank score` or `rexrank compare`
writes its files is one `error:` line naming the folder, what the files need and what is free, never a traceback;
nothing half-written is left, and the files of an earlier run in the same folder keep their content.
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import resource
import signal
import subprocess
import sys

import pandas as pd
import pytest

from rexrank.errors import RexrankError

HYPS = {"s1": "Heart size normal. Lungs clear.", "s2": "Cardiomegaly. No effusion.", "s3": "Normal chest."}
REFS = {"s1": "Heart size normal. Lungs are clear.", "s2": "Cardiomegaly with small left effusion.",
        "s3": "Normal chest radiograph."}


@pytest.fixture
def files(tmp_path):
    preds, refs = tmp_path / "preds.json", tmp_path / "refs.json"
    preds.write_text(json.dumps(HYPS))
    refs.write_text(json.dumps(REFS))
    return preds, refs


def _score_args(preds, refs, out) -> list[str]:
    return ["score", "-p", str(preds), "-r", str(refs), "-m", "bleu2", "--no-cache", "--resamples", "20", "-o",
            str(out), "-q"]


def _one_error_line(text: str) -> str:
    assert "Traceback" not in text, text
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), text
    return lines[0]


def _full_disk_after(limit: int, monkeypatch):
    """Path.write_text/write_bytes write at most ``limit`` bytes of each file, then raise ENOSPC, as a full disk does
    (the part written stays on disk: the writer must remove it)."""
    real_text, real_bytes = pathlib.Path.write_text, pathlib.Path.write_bytes

    def write_bytes(self, data):
        real_bytes(self, bytes(data)[:limit])
        if len(data) > limit:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return len(data)

    def write_text(self, data, *args, **kwargs):
        return write_bytes(self, data.encode("utf-8"))

    monkeypatch.setattr(pathlib.Path, "write_bytes", write_bytes)
    monkeypatch.setattr(pathlib.Path, "write_text", write_text)
    return real_text


def test_full_disk_while_writing_results_is_one_line_and_leaves_nothing(cli, files, tmp_path, monkeypatch):
    preds, refs = files
    out = tmp_path / "out"
    code, text = cli(*_score_args(preds, refs, out))
    assert code == 0, text
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(before) == {"per_study.parquet", "results.json", "results.md", "model_index.yaml"}

    _full_disk_after(100, monkeypatch)
    code, text = cli(*_score_args(preds, refs, out))
    line = _one_error_line(text)
    assert code == 2
    assert str(out) in line and "no space left on device" in line.lower()
    assert " need " in line and " free" in line and "--out" in line
    # Nothing staged is left and the earlier run's files are whole.
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_full_disk_in_a_new_folder_leaves_only_the_folder(cli, files, tmp_path, monkeypatch):
    preds, refs = files
    out = tmp_path / "new"
    _full_disk_after(0, monkeypatch)
    code, text = cli(*_score_args(preds, refs, out))
    line = _one_error_line(text)
    assert code == 2 and str(out) in line
    assert list(out.iterdir()) == []


def test_compare_on_a_full_disk(cli, files, tmp_path, monkeypatch):
    preds, refs = files
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        assert cli(*_score_args(preds, refs, run))[0] == 0
    out = tmp_path / "cmp"
    _full_disk_after(10, monkeypatch)
    code, text = cli("compare", str(runs[0]), str(runs[1]), "--resamples", "20", "--permutations", "20", "-o",
                     str(out))
    line = text.strip().splitlines()[-1]
    assert code == 2 and "Traceback" not in text and line.startswith("error: ") and str(out) in line, text
    assert list(out.iterdir()) == []


def test_write_files_names_what_is_needed_and_free(tmp_path, monkeypatch):
    """The library call behind both commands: the sizes are those of what was being written."""
    from rexrank.evaluation.harness import format_size, write_files

    _full_disk_after(1000, monkeypatch)
    data = {"a.bin": b"x" * 3_000_000, "b.txt": b"y" * 1000}
    with pytest.raises(RexrankError) as err:
        write_files(tmp_path / "o", data)
    assert f"need {format_size(3_001_000)}" in str(err.value) and isinstance(err.value, OSError)
    assert list((tmp_path / "o").iterdir()) == []


def _limited(limit_bytes: int):
    def apply():
        # The kernel sends SIGXFSZ (which kills) before failing the write with EFBIG; a process that ignores the
        # signal sees the error, as under `ulimit -f` in a shell that traps it.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return apply


def test_file_size_limit_in_a_real_process(files, tmp_path):
    """`ulimit -f` below the size of the per-study table: the real EFBIG from pyarrow/the OS is one line."""
    preds, refs = files
    out = tmp_path / "limited"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1", "REXRANK_PROGRESS": "0"}
    proc = subprocess.run([sys.executable, "-m", "rexrank", *_score_args(preds, refs, out)], capture_output=True,
                          text=True, env=env, timeout=300, preexec_fn=_limited(1024))
    text = proc.stdout + proc.stderr
    line = _one_error_line(text)
    assert proc.returncode == 2, text
    assert str(out) in line and "file-size limit" in line and "ulimit -f" in line, line
    assert list(out.iterdir()) == []


def test_results_and_staged_names_are_what_a_normal_run_writes(files, tmp_path):
    """Rendering in memory changes no byte: the table read back equals the run's table."""
    from rexrank.evaluation.harness import ScoreOptions, evaluate, write_outputs
    from rexrank.evaluation.inputs import load_inputs

    preds, refs = files
    inputs = load_inputs(preds, references=refs, track="findings")
    evaluation = evaluate(inputs, model="m", track="findings", options=ScoreOptions(metrics=["bleu2"], use_cache=False,
                                                                                   resamples=20))
    paths = write_outputs(evaluation, tmp_path / "o")
    pd.testing.assert_frame_equal(pd.read_parquet(paths["per_study"]), evaluation.per_study)
    assert json.loads(paths["results"].read_text(encoding="utf-8")) == evaluation.results
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == sorted(p.name for p in paths.values())
