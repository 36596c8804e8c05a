"""rexrank.rewards: per-report metrics as TRL GRPO reward functions.

Rewards must be exactly what the metric scores (plain and chat-format completions), a mix exactly its weighted
sum, lower-is-better metrics negated, reference-side work done once per reference for the whole run, and a real
GRPOTrainer run must log exactly the rewards direct scoring gives for the completions it generated.
"""

from __future__ import annotations

import numpy as np
import pytest

from rexrank import metrics, parallel, rewards
from rexrank.errors import ConfigError, InputError, UnknownNameError
from rexrank.metrics.base import Metric
from rexrank.testing.corpus import SENTENCES

# Reports long enough for the random-weight RadGraph stand-in to find entities (its scores then differ per pair);
# one empty completion and one exact match.
_LINES = SENTENCES.splitlines()
HYPS = [f"{_LINES[0]} {_LINES[1]}", f"{_LINES[2]} {_LINES[3]}", "", f"{_LINES[8]} {_LINES[10]}",
        f"{_LINES[6]} {_LINES[7]}"]
REFS = [f"{_LINES[1]} {_LINES[0]}", f"{_LINES[2]} {_LINES[4]}", _LINES[5], f"{_LINES[8]} {_LINES[10]}",
        f"{_LINES[7]} {_LINES[11]}"]
PROMPTS = ["Findings:"] * len(HYPS)


@pytest.fixture(scope="module")
def bert_dir(standins) -> str:
    return standins("bertscore")["bertscore"]


@pytest.fixture(scope="module")
def radgraph_dir(standins) -> str:
    return standins("radgraph")["radgraph"]


def _chat(texts, parts: bool = False):
    """Completions as TRL passes them for a conversational dataset (content as a string or as text parts)."""
    if parts:
        return [[{"role": "assistant", "content": [{"type": "text", "text": t[:5]}, {"type": "text", "text": t[5:]}]}]
                for t in texts]
    return [[{"role": "assistant", "content": t}] for t in texts]


@pytest.mark.parametrize("name", ["bleu2", "bertscore", "radgraph", "radgraph_partial"])
def test_reward_equals_direct_score_plain_and_conversational(name, bert_dir, radgraph_dir):
    config = {"bertscore": {"model": bert_dir, "device": "cpu"}, "radgraph": {"model": radgraph_dir, "device": "cpu"},
              "radgraph_partial": {"model": radgraph_dir, "device": "cpu"}}.get(name, {})
    fn = rewards.reward(name, **config)
    direct = metrics.get(name, **config).score(HYPS, REFS)
    assert fn.__name__ == f"rexrank_{name}"
    for completions in (HYPS, _chat(HYPS), _chat(HYPS, parts=True)):
        got = fn(prompts=PROMPTS, completions=completions, completion_ids=None, reference=REFS)
        assert all(isinstance(v, float) for v in got)
        np.testing.assert_allclose(got, direct, rtol=0, atol=1e-12)
    assert len(set(np.round(direct, 9))) > 1  # the pairs differ, so an order mix-up would show


def test_mix_is_the_weighted_sum(bert_dir):
    fn = rewards.mix({"bleu2": 0.3, "bert_score": 0.7}, configs={"bertscore": {"model": bert_dir}}, device="cpu")
    bleu = metrics.get("bleu2").score(HYPS, REFS)
    bert = metrics.get("bertscore", model=bert_dir, device="cpu").score(HYPS, REFS)
    got = fn(prompts=PROMPTS, completions=HYPS, reference=REFS)
    np.testing.assert_allclose(got, 0.3 * bleu + 0.7 * bert, rtol=0, atol=1e-12)
    assert fn.__name__ == "rexrank_mix_bleu2_bertscore"


def test_lower_is_better_is_negated_and_components_are_shared(standins, bert_dir, radgraph_dir):
    """RadCliQ-v1 enters as -RadCliQ (bounded, monotone; 1/RadCliQ per report is neither), and bertscore asked for
    alone and inside the composite with the same options is one object scored once per call."""
    semb = standins("semb")
    parts = {"radgraph": {"model": radgraph_dir}, "bertscore": {"model": bert_dir},
             "semb": {"model": semb["semb"], "backbone": semb["semb_backbone"]}}
    direct = metrics.get("radcliq_v1", device="cpu", **parts).score(HYPS, REFS)
    single = rewards.reward("radcliq_v1", device="cpu", **parts)
    assert single.__name__ == "rexrank_neg_radcliq_v1"
    np.testing.assert_allclose(single(completions=HYPS, reference=REFS), -direct, rtol=0, atol=1e-12)

    both = rewards.mix({"radcliq_v1": 1.0, "bertscore": 0.5},
                       configs={"radcliq_v1": parts, "bertscore": parts["bertscore"]}, device="cpu")
    assert sorted(both.metrics) == ["bertscore", "bleu2", "radgraph", "semb"]
    bert = metrics.get("bertscore", model=bert_dir, device="cpu").score(HYPS, REFS)
    np.testing.assert_allclose(both(completions=HYPS, reference=REFS), -direct + 0.5 * bert, rtol=0, atol=1e-12)


def test_reference_side_work_is_done_once(monkeypatch, bert_dir, radgraph_dir):
    """Second call, same references, new completions: no reference text reaches any per-text computation."""
    computed: list[str] = []
    original = Metric.per_text

    def spy(self, artifact, texts, compute):
        return original(self, artifact, texts, lambda unique: (computed.extend(unique), compute(unique))[1])

    monkeypatch.setattr(Metric, "per_text", spy)
    fn = rewards.mix({"radgraph": 0.5, "bertscore": 0.5},
                     configs={"radgraph": {"model": radgraph_dir}, "bertscore": {"model": bert_dir}}, device="cpu")
    fn(completions=HYPS, reference=REFS)
    assert set(REFS) <= set(computed)  # the first call did compute them (the spy sees the work)
    computed.clear()
    new_hyps = [h + " Unchanged." for h in HYPS]
    second = fn(completions=new_hyps, reference=REFS)
    assert computed and not set(computed) & set(REFS)
    assert set(computed) <= set(new_hyps)
    # and the values are still the direct scores
    direct = 0.5 * metrics.get("radgraph", model=radgraph_dir, device="cpu").score(new_hyps, REFS) + \
        0.5 * metrics.get("bertscore", model=bert_dir, device="cpu").score(new_hyps, REFS)
    np.testing.assert_allclose(second, direct, rtol=0, atol=1e-12)
    assert fn.cache.sizes["reference"] >= len(set(REFS))


def test_text_cache_keeps_references_and_bounds_the_rest():
    cache = rewards.RewardTextCache(max_completion_entries=2)
    cache.keep(["ref a", "ref b"])
    from rexrank.metrics.base import text_key

    keys = {t: text_key(t) for t in ("ref a", "ref b", "c1", "c2", "c3")}
    cache.put_many("ns", {keys[t]: t.upper() for t in keys})
    found = cache.get_many("ns", list(keys.values()))
    assert {k for k in keys if keys[k] in found} == {"ref a", "ref b", "c2", "c3"}  # c1, the oldest, dropped
    assert cache.sizes == {"reference": 2, "completion": 2}
    with pytest.raises(ConfigError, match="max_completion_entries"):
        rewards.RewardTextCache(max_completion_entries=-1)


def test_rows_without_reference_get_none_and_stats_count_latency():
    fn = rewards.reward("bleu2")
    logged: list[tuple[str, float]] = []
    got = fn(prompts=PROMPTS, completions=HYPS, reference=[REFS[0], None, *REFS[2:]],
             log_metric=lambda name, value: logged.append((name, value)), trainer_state=object())
    assert got[1] is None and all(isinstance(v, float) for i, v in enumerate(got) if i != 1)
    assert got[0] == metrics.get("bleu2").score(HYPS[:1], REFS[:1])[0]
    fn(completions=HYPS[:2], reference=REFS[:2])
    stats = fn.stats
    assert (stats.calls, stats.pairs, stats.last_pairs) == (2, len(HYPS) - 1 + 2, 2)
    assert stats.seconds >= stats.last_latency_s > 0 and set(stats.metric_seconds) == {"bleu2"}
    assert [name for name, _ in logged] == ["rewards/rexrank_bleu2/latency_s"] and logged[0][1] > 0


def test_scoring_runs_local_to_the_process(monkeypatch):
    """In a multi-process TRL run each process scores its own completions: the metric must not shard them."""
    fn = rewards.reward("bleu2")
    seen = []
    metric = fn.metrics["bleu2"]
    original = metric.score
    monkeypatch.setattr(metric, "score", lambda h, r: (seen.append(parallel.caller_owns()), original(h, r))[1])
    fn(completions=HYPS, reference=REFS)
    assert seen == [True] and not parallel.caller_owns()


def test_clear_errors():
    fn = rewards.reward("bleu2", reference_column="findings")
    with pytest.raises(ConfigError, match=r"no 'findings' column.*passed: reference.*reference_column="):
        fn(prompts=PROMPTS, completions=HYPS, reference=REFS, trainer_state=None)
    with pytest.raises(InputError, match=r"completions\[1\] is neither"):
        fn(completions=["ok", {"role": "assistant"}], findings=REFS[:2])
    with pytest.raises(InputError, match=r"findings\[0\] is a int"):
        fn(completions=["ok"], findings=[3])
    with pytest.raises(InputError, match="2 completions but 1 values"):
        fn(completions=["a", "b"], findings=["x"])
    with pytest.raises(UnknownNameError, match="Unknown metric 'nope'"):
        rewards.reward("nope")
    with pytest.raises(ConfigError, match="bleu2 has no option 'model'"):
        rewards.reward("bleu2", model="x")
    with pytest.raises(ConfigError, match="weight of bleu2 must be a finite number"):
        rewards.mix({"bleu2": float("nan")})
    with pytest.raises(ConfigError, match="options given for bertscore"):
        rewards.mix({"bleu2": 1.0}, configs={"bertscore": {"model": "x"}})
    with pytest.raises(ConfigError, match="already a term"):
        rewards.mix({"bleu2": 1.0, "bleu": 1.0})
    for corpus_level in ("nlg", "ce_f1", "meteor"):
        with pytest.raises(ConfigError, match=f"{corpus_level} is a corpus-level metric.*per-report metric: bleu2"):
            rewards.mix({"bleu2": 1.0, corpus_level: 1.0})


@pytest.mark.slow
def test_grpo_two_steps_log_the_direct_scores(standins, bert_dir, tmp_path):
    """Two GRPO steps of a tiny random causal LM on CPU with a rexrank reward: the per-step reward means TRL logs
    equal the mean of direct metric scores of the completions it generated."""
    pytest.importorskip("trl", reason="trl is not installed: pip install -e '.[rl]'")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    policy_dir = standins("green")["green"]  # a 2-layer random Llama with a byte-fallback BPE tokenizer
    fn = rewards.mix({"bleu2": 0.5, "bertscore": 0.5}, configs={"bertscore": {"model": bert_dir}}, device="cpu")
    calls: list[tuple[list[str], list[str]]] = []

    def captured(**kwargs):
        calls.append((list(kwargs["completions"]), list(kwargs["reference"])))
        return fn(**kwargs)

    captured.__name__ = fn.__name__
    refs = ["No pleural effusion.", "Heart size is normal.", "Lungs are clear.", "No pneumothorax."]
    dataset = Dataset.from_dict({"prompt": ["Findings:", "Impression:"] * 2, "reference": refs})
    args = GRPOConfig(output_dir=str(tmp_path / "grpo"), max_steps=2, per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=8, report_to=[], use_cpu=True, logging_steps=1,
                      beta=0.0, save_strategy="no", seed=0, bf16=False)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(policy_dir), reward_funcs=[captured], args=args,
                          train_dataset=dataset, processing_class=AutoTokenizer.from_pretrained(policy_dir))
    trainer.train()

    key = f"rewards/{fn.__name__}/mean"
    logged = [row[key] for row in trainer.state.log_history if key in row]
    assert len(logged) == 2 == len(calls)
    bleu, bert = metrics.get("bleu2"), metrics.get("bertscore", model=bert_dir, device="cpu")
    for (completions, references), value in zip(calls, logged):
        assert len(completions) == 4 and set(references) <= set(refs)
        direct = 0.5 * bleu.score(completions, references) + 0.5 * bert.score(completions, references)
        assert value == pytest.approx(float(np.mean(direct)), rel=1e-5, abs=1e-6)  # TRL keeps float32
    assert fn.stats.calls == 2 and fn.stats.pairs == 8
    assert all(row[f"rewards/{fn.__name__}/latency_s"] > 0 for row in trainer.state.log_history if key in row)
