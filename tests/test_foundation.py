"""The registry, model resolution and CLI error handling: the contracts every other part relies on."""

from __future__ import annotations

import numpy as np
import pytest

import rexrank
from rexrank import metrics
from rexrank.errors import InputError, ModelNotAvailableError, UnknownNameError


def test_unknown_metric_lists_available():
    with pytest.raises(UnknownNameError) as err:
        metrics.get("bleu3")
    message = str(err.value)
    assert message.startswith("Unknown metric 'bleu3'. Available: ")
    for name in ("bleu2", "bertscore", "semb", "radgraph", "radcliq_v1", "radcliq_v0", "ratescore", "green",
                 "fineradscore"):
        assert name in message


def test_specs_carry_direction_and_columns():
    assert metrics.spec("bleu").name == "bleu2"  # alias
    assert metrics.spec("radcliq_v1").higher_is_better is False
    assert metrics.spec("radcliq_v1").leaderboard_aggregation == "reciprocal_of_mean"
    assert metrics.spec("radcliq_v1").components == ("radgraph", "bertscore", "semb", "bleu2")
    assert metrics.spec("radgraph").column == "radgraph_combined"
    from rexrank.metrics import boards

    assert [metrics.spec(m).leaderboard_column for m in boards.edition().all_metrics()] == [
        "BLEU", "BertScore", "SembScore", "RadGraph", "1/RadCliQ-v1", "RaTEScore", "GREEN", "CRIMSON", "1/FineRadScore"]


@pytest.mark.parametrize(
    "hyps, refs, fragment",
    [
        (["a"], ["a", "b"], "differ in length: 1 hypotheses vs 2 references"),
        (["a", None], ["a", "b"], "hyps[1] is missing"),
        (["a", "b"], ["a", float("nan")], "refs[1] is missing"),
        (["a", 3], ["a", "b"], "hyps[1] is a int, not a string"),
        ("abc", ["a", "b", "c"], "not a single string"),
        (["ok", "bad \ud800 text"], ["a", "b"], "hyps[1] contains a lone UTF-16 surrogate"),
    ],
)
def test_check_pairs_rejects_bad_input(hyps, refs, fragment):
    with pytest.raises(InputError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        metrics.check_pairs(hyps, refs)


def test_missing_local_model_is_one_clear_error(tmp_path):
    from rexrank.metrics.weights import resolve

    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        resolve("chexbert", tmp_path / "nope" / "chexbert.pth")


def test_offline_hub_model_error_names_metric_and_fix(monkeypatch, tmp_path):
    from rexrank.metrics.weights import resolve

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError) as err:
        resolve("chexbert", hf_cache_dir=str(tmp_path))
    text = str(err.value)
    assert text.startswith("semb:") and "chexbert.pth" in text and "StanfordAIMI/RRG_scorers" in text
    assert "rexrank models download" in text and "HF_HUB_OFFLINE" in text


def test_cli_prints_errors_without_traceback(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out = cli("models", "download", "--only", "chexbert", "--cache-dir", str(tmp_path))
    assert code == 2
    assert out.startswith("error: semb: cannot load the CheXbert checkpoint")
    assert "Traceback" not in out


def test_score_summary_reciprocal_of_mean():
    import pandas as pd

    df = pd.DataFrame({"radcliq_v1": [-1.0, 3.0], "bleu_score": [0.2, 0.4]})
    summary = rexrank.summarize(df)
    assert summary["radcliq_v1"]["leaderboard_value"] == pytest.approx(1.0)  # 1/mean, not mean of 1/x (=0.33)
    assert summary["bleu2"]["leaderboard_value"] == pytest.approx(0.3)
    assert np.isfinite(summary["bleu2"]["mean"])
