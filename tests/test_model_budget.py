"""The per-study budget of model-backed metrics (issue 35 point 6): a prediction over the budget is refused in one
line, naming the study and its token count, before any model runs; the board's submissions always have it, and
`rexrank score` has it with --max-model-tokens. Tokens are counted from the text alone, so the answer is the same
on any machine."""

from __future__ import annotations

import json

import pytest

from rexrank.errors import InputError

LONG = "Small left pleural effusion. " * 240  # 4 words and a full stop: 1,200 tokens
AT_BUDGET = "Effusion." * 500  # 1,000 tokens, the budget exactly


def _inputs(*hyps: str):
    from rexrank.evaluation.inputs import Inputs

    return Inputs([f"s{i}" for i in range(len(hyps))], list(hyps), ["No acute findings."] * len(hyps))


def test_a_prediction_over_the_budget_is_refused_before_any_model_runs(monkeypatch):
    from rexrank.evaluation import harness
    from rexrank.evaluation.harness import ScoreOptions, evaluate
    from rexrank.evaluation.plan import SUBMISSION_MAX_MODEL_TOKENS

    assert SUBMISSION_MAX_MODEL_TOKENS == 1_000

    def no_scoring(*args, **kwargs):
        raise AssertionError("a metric was built or scored before the budget was checked")

    monkeypatch.setattr(harness, "_shard_frame", no_scoring)
    options = ScoreOptions(metrics=["bleu2", "radgraph"], use_cache=False, resamples=10,
                           max_model_tokens=SUBMISSION_MAX_MODEL_TOKENS)
    with pytest.raises(InputError) as err:
        evaluate(_inputs("The lungs are clear.", LONG, AT_BUDGET), model="m", track="findings", options=options)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("1 prediction is over the per-study budget of the model-backed metrics (radgraph): "
                              "1,000 tokens"), message
    assert "'s1' (1,200 tokens)" in message and "'s2'" not in message and "--max-model-tokens" in message


def test_the_budget_binds_model_backed_metrics_only_and_none_means_none(tmp_path):
    """BLEU-2 alone costs nothing per token: the same long prediction is scored; without a budget (the default of
    `rexrank score` and of evaluate) a model-backed run is not refused either."""
    from rexrank.evaluation.harness import ScoreOptions, evaluate
    from rexrank.evaluation.plan import check_model_budget

    inputs = _inputs("The lungs are clear.", LONG)
    scored = evaluate(inputs, model="m", track="findings",
                      options=ScoreOptions(metrics=["bleu2"], use_cache=False, resamples=10, max_model_tokens=1_000))
    assert list(scored.per_study["study_id"]) == ["s0", "s1"]
    assert ScoreOptions().max_model_tokens is None
    check_model_budget(inputs.study_ids, inputs.hyps, ["radgraph", "bertscore"], None)
    with pytest.raises(InputError, match=r"\(radgraph, bertscore\): 1,199 tokens"):
        check_model_budget(inputs.study_ids, inputs.hyps, ["bleu2", "radgraph", "bertscore"], 1_199)
    check_model_budget(inputs.study_ids, inputs.hyps, ["radgraph"], 1_200)


def test_many_studies_over_the_budget_are_counted_and_the_first_ten_named():
    from rexrank.evaluation.plan import check_model_budget

    inputs = _inputs(*([LONG] * 12))
    with pytest.raises(InputError) as err:
        check_model_budget(inputs.study_ids, inputs.hyps, ["semb"], 1_000)
    message = str(err.value)
    assert message.startswith("12 predictions are over") and "'s9' (1,200 tokens) and 2 more" in message
    assert "'s10'" not in message


def test_rexrank_score_takes_the_budget_and_refuses_in_one_line(cli, tmp_path, standins):
    preds, refs = tmp_path / "preds.json", tmp_path / "refs.json"
    preds.write_text(json.dumps({"a": "The lungs are clear.", "b": LONG}))
    refs.write_text(json.dumps({"a": "No acute findings.", "b": "No acute findings."}))
    out = tmp_path / "out"
    args = ["score", "-p", str(preds), "-r", str(refs), "-m", "radgraph", "--model-path",
            f"radgraph={standins('radgraph')['radgraph']}", "--no-cache", "-o", str(out), "-q"]
    code, text = cli(*args, "--max-model-tokens", "1000")
    lines = [line for line in text.splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1, text
    assert lines[0].startswith("error: 1 prediction is over the per-study budget"), text
    assert "'b' (1,200 tokens)" in lines[0] and not out.exists()
    code, text = cli(*args, "--max-model-tokens", "0")
    assert code == 2 and "--max-model-tokens must be at least 1" in text and not out.exists()


def test_a_submission_over_the_budget_is_refused_when_submitted(tmp_path):
    """The board checks the budget with the rest of validation, so the submitter hears at once and nothing is
    queued; the worker's scoring has the same budget (a job restored from elsewhere)."""
    from leaderboard_helpers import iu_predictions
    from rexrank.leaderboard.store import Store
    from rexrank.leaderboard.submissions import Submissions

    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "queue", metrics=["bleu2", "bertscore"], n_resamples=20)
    path = iu_predictions(tmp_path / "a.json", n_shift=1)
    preds = json.loads(path.read_text())
    first = next(iter(preds))
    preds[first] = LONG
    path.write_text(json.dumps(preds))
    with pytest.raises(InputError, match=rf"metrics \(bertscore\).*'{first}' \(1,200 tokens\)"):
        service.submit(path, {"name": "Verbose"}, "iu_xray", "findings")
    assert store.counts()["submissions"] == 0
    store.close()
