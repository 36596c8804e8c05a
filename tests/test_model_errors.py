"""Missing metric models: every one reported at once, each with the exact flag that fixes it, and an unreachable Hub
detected in seconds instead of a retry loop (issue 15, "Errors")."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rexrank.errors import ModelNotAvailableError
from rexrank.metrics import weights

REPO = Path(__file__).resolve().parents[1]


def _pairs(tmp_path: Path) -> tuple[Path, Path]:
    preds = tmp_path / "preds.json"
    refs = tmp_path / "refs.json"
    preds.write_text(json.dumps({"s1": "No acute findings.", "s2": "Small left effusion."}))
    refs.write_text(json.dumps({"s1": "No acute process.", "s2": "Left pleural effusion."}))
    return preds, refs


def _rexrank(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub"),
               "REXRANK_CACHE": str(tmp_path / "rexrank-cache"), **env}
    return subprocess.run([sys.executable, "-m", "rexrank", *args], capture_output=True, text=True, env=environ,
                          cwd=tmp_path, timeout=300)


@pytest.mark.slow  # 2.3 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_score_reports_every_missing_model_at_once_with_its_flag(tmp_path):
    preds, refs = _pairs(tmp_path)
    checkpoint = tmp_path / "chexbert.pth"
    checkpoint.write_bytes(b"not read: only located")
    proc = _rexrank(tmp_path, "score", "-p", str(preds), "-r", str(refs), "--metrics", "bertscore,semb,ratescore",
                    "--model-path", f"semb={checkpoint}", "--no-cache", "--out", str(tmp_path / "out"))
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "Traceback" not in text
    assert "4 problems with metric models" in text
    # Each missing model with the flag that fixes it: the backbone is an --option, not --model-path.
    assert "--model-path bertscore=PATH" in text
    assert "bert-base-uncased" in text and "--option semb.backbone=PATH" in text
    assert "--model-path semb=PATH" not in text  # the checkpoint was given and found
    assert "--option ratescore.ner_model=PATH" in text and "--option ratescore.embed_model=PATH" in text
    assert not (tmp_path / "out").exists()


def test_build_metrics_reports_a_lazy_radgraph_archive_too(monkeypatch, tmp_path):
    from rexrank.evaluation.runner import build_metrics

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError) as err:
        build_metrics(["radgraph", "bertscore"], model_paths={"radgraph": str(tmp_path / "no.tar.gz"),
                                                              "bertscore": str(tmp_path / "nodir/")})
    text = str(err.value)
    assert text.startswith("2 problems with metric models")
    assert "radgraph: " in text and "bertscore: " in text


def test_one_missing_model_reads_as_before(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError) as err:
        with weights.report_all_missing():
            weights.resolve("chexbert", tmp_path / "nope.pth")
    assert str(err.value).startswith("semb: the CheXbert checkpoint path")
    assert "--model-path semb=PATH" in str(err.value)


def test_models_download_lists_every_failure(tmp_path):
    proc = _rexrank(tmp_path, "models", "download", "--only", "chexbert", "--only", "ratescore_embed")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "2 problems with metric models" in text and "Traceback" not in text
    assert "StanfordAIMI/RRG_scorers" in text and "FremyCompany/BioLORD-2023-C" in text


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_hub_fails_fast_without_retries(monkeypatch, tmp_path, caplog):
    """No HF_HUB_OFFLINE, but the Hub endpoint refuses connections: one probe, then the local cache only."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setattr(weights, "_probe", {})
    caplog.set_level(logging.INFO)
    start = time.monotonic()
    with pytest.raises(ModelNotAvailableError) as err:
        weights.resolve("chexbert", hf_cache_dir=str(tmp_path / "hub"))
    elapsed = time.monotonic() - start
    text = str(err.value)
    assert "cannot be reached" in text and "127.0.0.1" in text and "--model-path semb=PATH" in text
    assert elapsed < weights.HUB_PROBE_TIMEOUT_S + 5
    assert "Retrying" not in caplog.text


def test_reachable_endpoint_is_probed_once(monkeypatch):
    calls = []

    class _Conn:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def fake_connect(address, timeout):
        calls.append(address)
        return _Conn()

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.example.org")
    monkeypatch.setattr(weights, "_probe", {})
    monkeypatch.setattr(weights.socket, "create_connection", fake_connect)
    assert weights._unreachable_hub() is None
    assert weights._unreachable_hub() is None
    assert calls == [("hub.example.org", 443)]
