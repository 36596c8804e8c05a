"""Long work shows a sign of life (rexrank.progress): a bar on a terminal, a log line every interval elsewhere.

The issue behind these tests: `rexrank score` under SLURM/nohup printed nothing for 17 minutes, and the bar moved
once per 256-pair chunk. So the lines must come *during* the work, and move within a chunk.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import time

import numpy as np
import pandas as pd
import pytest

import evaluation_fakes as fakes
from rexrank import progress
from rexrank.cli import main
from rexrank.evaluation import bootstrap

N_PAIRS = 300  # two chunks of the default 256 pairs: 256 + 44
LINE = re.compile(r"^fake_batched: (\d+)/300 pairs \((\d+)%\), \S+ elapsed, [\d.]+ pairs/s, ETA \S+$")
FINAL = re.compile(r"^fake_batched: 300/300 pairs in \S+ \([\d.]+ pairs/s\)$")


class Recorder(io.StringIO):
    """A stderr that remembers when each line arrived (to prove lines come during the run, not after it)."""

    def __init__(self, tty: bool = False):
        super().__init__()
        self.tty = tty
        self.stamps: list[tuple[float, str]] = []

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                self.stamps.append((time.monotonic(), line))
        return super().write(text)


@pytest.fixture
def fake_metrics(fake_metrics, monkeypatch):
    """tests/conftest.py's fake metrics, slowed down and with progress lines every 0.05 s."""
    monkeypatch.setenv(fakes.SLEEP_ENV, "0.04")  # per batch of 32: ~0.4 s for the run
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.05")
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)


@pytest.fixture
def files(tmp_path):
    refs = tmp_path / "refs.jsonl"
    refs.write_text("".join(json.dumps({"study_id": f"s{i}", "report": f"reference {i} " + "x" * (i % 7)}) + "\n"
                            for i in range(N_PAIRS)))
    preds = tmp_path / "preds.csv"
    pd.DataFrame({"study_id": [f"s{i}" for i in range(N_PAIRS)],
                  "report": [f"prediction {i}" for i in range(N_PAIRS)]}).to_csv(preds, index=False)
    return preds, refs


def _score(tmp_path, files, *extra: str, tty: bool = False) -> tuple[int, Recorder]:
    preds, refs = files
    err = Recorder(tty)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "fake_batched",
                     "--no-cache", "--resamples", "20", "--out", str(tmp_path / "out"), *extra])
    return code, err


def test_log_lines_appear_during_a_slow_metric(tmp_path, files, fake_metrics):
    """Outside a terminal `rexrank score` writes done/total, rate and ETA lines while the metric runs, then one
    final line; the counts move within a 256-pair chunk (the metric's batches of 32), not only per chunk."""
    code, err = _score(tmp_path, files)
    assert code == 0, err.getvalue()
    lines = [(t, line) for t, line in err.stamps if line.startswith("fake_batched:")]
    progress_lines = [(t, LINE.match(line)) for t, line in lines if LINE.match(line)]
    finals = [(t, line) for t, line in lines if FINAL.match(line)]
    assert len(finals) == 1 and lines[-1] == finals[0], err.getvalue()
    end = finals[0][0]
    # During the run: at least two lines well before the end (the run takes ~0.4 s, lines come every 0.05 s).
    early = [m for t, m in progress_lines if t < end - 0.1]
    assert len(early) >= 2, err.getvalue()
    counts = [int(m.group(1)) for _, m in progress_lines]
    assert counts == sorted(counts) and all(c < N_PAIRS for c in counts)
    assert any(0 < c < 256 for c in counts), counts  # sub-chunk progress: the first chunk is 256 pairs
    assert all(int(m.group(2)) == round(100 * int(m.group(1)) / N_PAIRS) for _, m in progress_lines)
    assert "\r" not in err.getvalue()  # no bar redraws in a log file


def test_terminal_gets_a_bar(tmp_path, files, fake_metrics):
    """On a terminal the same run draws a tqdm bar (carriage-return redraws, tqdm's rate unit), no log lines."""
    code, err = _score(tmp_path, files, tty=True)
    assert code == 0, err.getvalue()
    text = err.getvalue()
    assert "\r" in text and "fake_batched" in text and "pair/s" in text
    assert not any(LINE.match(line) or FINAL.match(line) for _, line in err.stamps)
    # The bar moved inside the first chunk too.
    assert re.search(r"\b(32|64|96|128|160|192|224)/300\b", text), text


@pytest.mark.parametrize("how", ["--no-progress", "REXRANK_PROGRESS=0", "--quiet"])
def test_progress_off(tmp_path, files, fake_metrics, monkeypatch, how):
    """--no-progress, REXRANK_PROGRESS=0 and --quiet print no progress at all (bootstrap included)."""
    extra = [how] if how.startswith("--") else []
    if not extra:
        monkeypatch.setenv(progress.PROGRESS_ENV, "0")
    monkeypatch.setattr(bootstrap, "count_blocks", _slow_blocks(bootstrap.count_blocks))
    code, err = _score(tmp_path, files, *extra)
    assert code == 0, err.getvalue()
    assert "bootstrap" not in err.getvalue() and "fake_batched" not in err.getvalue(), err.getvalue()


def test_a_bad_switch_is_a_clear_error(tmp_path, files, fake_metrics, monkeypatch):
    monkeypatch.setenv(progress.PROGRESS_ENV, "maybe")
    code, err = _score(tmp_path, files)
    assert code == 2 and "REXRANK_PROGRESS='maybe'" in err.getvalue() and "Traceback" not in err.getvalue()
    monkeypatch.setenv(progress.PROGRESS_ENV, "1")
    monkeypatch.setenv(progress.INTERVAL_ENV, "-3")
    code, err = _score(tmp_path, files)
    assert code == 2 and "REXRANK_PROGRESS_INTERVAL_S='-3'" in err.getvalue()


def test_short_tasks_stay_silent(monkeypatch):
    """A task that ends within the first interval writes nothing outside a terminal (short steps keep logs clean)."""
    stream = Recorder()
    with progress.task(10, "quick", unit="pair", enabled=True, stream=stream, interval=5.0) as task:
        task.update(10)
    assert stream.getvalue() == ""


def _slow_blocks(original):
    def slow(*args, **kwargs):
        for block in original(*args, **kwargs):
            time.sleep(0.06)
            yield block
    return slow


def test_bootstrap_reports_progress_and_keeps_its_numbers(monkeypatch):
    """A long bootstrap logs resamples done; showing progress changes no number."""
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.03")
    values = np.random.default_rng(0).random((20_000, 2))  # 200 rows per block: 5 blocks for 1,000 resamples
    with progress.switched(False):
        quiet = bootstrap.resample_means(values, 1000, seed=3)
    monkeypatch.setattr(bootstrap, "count_blocks", _slow_blocks(bootstrap.count_blocks))
    err = Recorder()
    with contextlib.redirect_stderr(err), progress.switched(True):
        shown = bootstrap.resample_means(values, 1000, seed=3)
    np.testing.assert_array_equal(quiet, shown)
    lines = [line for _, line in err.stamps]
    steps = [line for line in lines if re.match(r"^bootstrap: \d+/1000 resamples \(\d+%\), .* ETA \S+$", line)]
    assert len(steps) >= 2 and lines[-1].startswith("bootstrap: 1000/1000 resamples in "), lines


def test_generate_reports_progress(tmp_path, monkeypatch):
    """`rexrank generate` outside a terminal logs studies done with rate and ETA while the model runs."""
    from rexrank.testing.standin_generate import write_image_studies

    monkeypatch.setenv(progress.INTERVAL_ENV, "0.05")
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    studies = write_image_studies(tmp_path, 6, lambda i, j: np.full((8, 8, 3), 10 * i + j, dtype=np.uint8),
                                  lambda i: {"report": f"Findings: {i}.", "section_findings": f"{i}."})
    helper = tmp_path / "slow_model.py"
    helper.write_text("import time\n\ndef slow(studies):\n    time.sleep(0.08)\n"
                      "    return ['Findings: ' + s['study_id'] + '.' for s in studies]\n")
    err = Recorder()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["generate", "--input-json", str(studies), "--image-root", str(tmp_path / "img"),
                     "--out", str(tmp_path / "run"), "--model", f"{helper}:slow", "--batch-size", "1"])
    assert code == 0, err.getvalue()
    lines = [line for _, line in err.stamps if line.startswith("generate:")]
    steps = [line for line in lines if re.match(r"^generate: [0-5]/6 studies \(\d+%\), .* ETA \S+$", line)]
    assert len(steps) >= 2 and lines[-1].startswith("generate: 6/6 studies in "), err.getvalue()


HYPS = ["Heart size normal. Lungs are clear.", "Small left pleural effusion.", "No pneumothorax. Mild cardiomegaly.",
        "Right lower lobe opacity.", "Normal chest radiograph."]
REFS = ["Lungs clear. Heart normal.", "Left effusion, small.", "Cardiomegaly. No pneumothorax.",
        "Opacity in the right lower lobe, possibly pneumonia.", "No acute cardiopulmonary process."]


def _model_metric(name: str, standins):
    from rexrank import metrics

    if name == "bertscore":
        return metrics.get("bertscore", model=standins("bertscore")["bertscore"], device="cpu", batch_size=2)
    if name == "semb":
        files = standins("semb")
        return metrics.get("semb", model=files["semb"], backbone=files["semb_backbone"], device="cpu", batch_size=2)
    if name == "radgraph":
        return metrics.get("radgraph", model=standins("radgraph")["radgraph"], device="cpu", batch_size=2)
    if name == "ratescore":
        files = standins("ratescore")
        return metrics.get("ratescore", ner_model=files["ratescore_ner"], embed_model=files["ratescore_embed"],
                           device="cpu", batch_size=2)
    return metrics.get("green", model=standins("green")["green"], device="cpu", batch_size=2, max_new_tokens=4)


@pytest.mark.parametrize("name", ["bertscore", "semb", "radgraph", "ratescore", "green"])
def test_model_metrics_report_batches_and_keep_their_numbers(name, standins):
    """Each model-backed metric reports its batches through the hook (done rises to total), and a metric with the
    hook set gives exactly the numbers of one without it."""
    plain = _model_metric(name, standins).score(HYPS, REFS)
    metric = _model_metric(name, standins)
    calls: list[tuple[float, float]] = []
    metric.progress_hook = lambda done, total: calls.append((done, total))
    watched = metric.score(HYPS, REFS)
    np.testing.assert_array_equal(plain, watched)
    assert len(calls) >= 2, calls
    fractions = [d / t for d, t in calls]
    assert fractions[-1] == 1.0 and all(0 < f <= 1 for f in fractions), calls
    assert "progress" not in json.dumps(metric.config(), default=str)


def test_fineradscore_judge_reports_each_call():
    """FineRadScore's judge asks in steps and reports after each; every pair gets the reply it gets in one call."""
    from rexrank.metrics.fineradscore import judge

    class Client:
        def __init__(self):
            self.sizes = []

        def complete(self, conversations):
            self.sizes.append(len(conversations))
            return [f"no JSON for {c[0]['content']}" for c in conversations]

    conversations = [[{"role": "user", "content": f"pair {i}"}] for i in range(5)]
    calls: list[tuple[int, int]] = []
    stepped, whole = Client(), Client()
    out = judge(conversations, stepped, max_retries=0, step=2, progress=lambda d, t: calls.append((d, t)))
    reference = judge(conversations, whole, max_retries=0)
    assert stepped.sizes == [2, 2, 1] and whole.sizes == [5] and calls == [(2, 5), (4, 5), (5, 5)]
    assert [o["raw"] for o in out] == [o["raw"] for o in reference] == [f"no JSON for pair {i}" for i in range(5)]


# ---- issue 25 point 4: a line before each model load; rate and ETA from the first movement ----------------------
@pytest.mark.parametrize("name", ["bertscore", "semb", "radgraph", "ratescore", "green"])
def test_model_metrics_say_what_they_load_before_loading_it(name, standins, tmp_path):
    """One line `<metric>: loading <weights> ...` before the model load starts (so before the first batch reports),
    once per loaded model, and none when progress is off."""
    def fresh():
        if name != "radgraph":
            return _model_metric(name, standins)
        # RadGraph keeps one loaded annotator per archive for the process: a copy of the archive is a new model.
        import shutil

        from rexrank import metrics

        copy = tmp_path / f"radgraph-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(standins("radgraph")["radgraph"], copy)
        return metrics.get("radgraph", model=str(copy), device="cpu", batch_size=2)

    metric = fresh()
    err = Recorder()
    first_report: list[str] = []
    metric.progress_hook = lambda done, total: first_report.append(err.getvalue()) if not first_report else None
    with contextlib.redirect_stderr(err), progress.switched(True):
        metric.score(HYPS, REFS)
        metric.score(HYPS[::-1], REFS)  # the model is loaded now: no second line
    loads = [line for _, line in err.stamps if line.startswith(f"{name}: loading ")]
    assert len(loads) == 1 and loads[0].endswith(" ..."), err.getvalue()
    weights = {"semb": standins("semb")["semb"], "ratescore": standins("ratescore")["ratescore_ner"],
               "radgraph": getattr(metric, "model", None)}.get(name) or next(iter(standins(name).values()))
    assert str(weights) in loads[0], loads
    assert first_report and loads[0] in first_report[0], "the line must come before the first batch"
    quiet = fresh()
    err = Recorder()
    with contextlib.redirect_stderr(err), progress.switched(False):
        quiet.score(HYPS, REFS)
    assert "loading" not in err.getvalue()


@pytest.mark.slow  # 43.7 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_score_names_the_weights_before_the_first_chunk_moves(tmp_path, files, standins, monkeypatch):
    """`rexrank score` outside a terminal: the loading line comes before any bertscore progress line, and
    --no-progress drops it with the rest."""
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.05")
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    weights = standins("bertscore")["bertscore"]
    preds, refs = files
    args = ["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "bertscore",
            "--model-path", f"bertscore={weights}", "--no-cache", "--resamples", "20", "--batch-size", "16",
            "--out", str(tmp_path / "out")]
    for extra, shown in (([], True), (["--no-progress"], False)):
        err = Recorder()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(args + extra)
        assert code == 0, err.getvalue()
        lines = [line for _, line in err.stamps if line.startswith("bertscore:")]
        if not shown:
            assert lines == [], lines
            continue
        assert lines[0] == f"bertscore: loading {weights} ...", lines
        assert sum(line.startswith("bertscore: loading") for line in lines) == 1


def test_rate_and_eta_count_from_the_first_movement(monkeypatch):
    """A first chunk that spends 90 s loading a model, then moves 50 pairs in 10 s: the rate is 5 pairs/s (not
    100 pairs in 100 s, which the old line showed as 1.00 pairs/s, ETA 11m40s) and the ETA follows it."""
    clock = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    task = progress.Task(800, "radgraph", unit="pair", show=False)
    report = task.span(400)
    clock[0] += 90
    assert task.line() == "radgraph: 0/800 pairs (0%), 1m30s elapsed, ETA unknown"
    report(50, 400)
    clock[0] += 10
    report(100, 400)
    assert task.line() == "radgraph: 100/800 pairs (12%), 1m40s elapsed, 5.00 pairs/s, ETA 2m20s"
    task.update(400)
    clock[0] += 60
    assert task.line() == "radgraph: 400/800 pairs (50%), 2m40s elapsed, 5.00 pairs/s, ETA 1m20s"
