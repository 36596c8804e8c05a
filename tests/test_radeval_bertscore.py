"""RadEval-BERTScore: rexrank's implementation against radeval 2.2.1's own code (transformers 4.57, .venv-ref) on the
same random-weight ModernBERT stand-in (rexrank.testing.standin_modernbert)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from parity import FPRParityTester, Pairs, iu_reports, shifted

from rexrank import metrics
from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics.radeval_bertscore import RadEvalBertScore


@pytest.fixture(scope="module")
def model_dir(standins) -> str:
    return standins("radeval_bertscore")["radeval_bertscore"]


EDGE = [
    ("", "The heart size is normal."),
    ("The heart size is normal.", ""),
    ("", ""),
    ("   ", "No pleural effusion."),  # whitespace only: empty after strip
    ("No  effusion.\n\nLungs   clear.", "No effusion. Lungs clear."),  # spaces are NOT collapsed (unlike ReXrank's)
    ("Héart size nörmal — no effusion ✓ 心脏 ", "Heart size normal, no effusion."),
    ("a\tb", "a b"),
    (".", ".."),
]


class TestRadEvalBertScoreParity(FPRParityTester):
    """200 IU-Xray pairs + edge cases: F1, P, R and their mean within 1e-5 of radeval 2.2.1's RadEvalBERTScorer as
    its adapter builds it (tests/reference/radeval_bertscore_ref.py), on the same ModernBERT stand-in."""

    metric = "radeval_bertscore"
    reference_script = "radeval_bertscore_ref.py"
    versions = {"radeval": "2.2.1", "transformers": "4."}

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test, n=200)
        long_report = " ".join(refs[:40])  # well past the local attention window of the stand-in
        return Pairs.with_edges(shifted(refs), refs, EDGE + [(long_report, long_report[: len(long_report) // 2])])

    @pytest.fixture(scope="class")
    def options(self, model_dir):
        # 2 rows per pass: a fixed-shape pass fills its rows with copies (metrics/batching.py), so the lone long
        # report and its half, each alone in a wide bucket, cost 16 copies at 16 rows: 79 s of CPU against 10 s at
        # 2 rows for that pair, while the 200 natural pairs take 1.4 s against 2.2 s (issue 51). Any row count is
        # one of the metric's shapes; the tolerance and the pairs are unchanged.
        return {"model": model_dir, "device": "cpu", "batch_size": 2}

    def reference_payload(self, pairs, options):
        return {"model": options["model"], "hyps": pairs.hyps, "refs": pairs.refs}

    def test_mean_equals_the_reference(self, ours, reference):
        self.assert_close(ours["score"].mean(), reference["mean"], "mean F1")


# The stand-in's tokenizer with a short maximum length, so truncation (8,192 tokens with the real model's tokenizer,
# never reached by a report) happens on report-length texts; the model itself still takes 8,192 positions, so a run
# that did not truncate would score the whole texts and differ.
SHORT_MAX_LENGTH = 24


@pytest.fixture(scope="module")
def short_model_dir(model_dir, tmp_path_factory) -> str:
    import json
    import shutil

    folder = tmp_path_factory.mktemp("radeval_bertscore_short") / "model"
    shutil.copytree(model_dir, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["model_max_length"] = SHORT_MAX_LENGTH
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return str(folder)


def _past_the_limit(refs: list[str]) -> list[tuple[str, str]]:
    """Pairs that only truncation makes what they are: the same opening and different tails beyond the limit (1
    when truncated), one side cut and the other whole."""
    pairs = []
    for i in range(0, 40, 4):
        head = " ".join(refs[i:i + 3])
        pairs.append((head + " " + refs[i + 3], head + " " + refs[i + 4]))
        pairs.append((refs[i + 1][:40], head))
    return pairs


class TestRadEvalBertScoreTruncationParity(FPRParityTester):
    """Issue 35 point 11: truncation at the tokenizer's model_max_length, which the 8,192-token limit never lets the
    class above reach: the stand-in with a 24-token limit, on 120 IU-Xray pairs of several reports joined (most over
    the limit) and built pairs whose tails differ only past it, against radeval 2.2.1 on the same folder."""

    metric = "radeval_bertscore"
    reference_script = "radeval_bertscore_ref.py"
    versions = {"radeval": "2.2.1", "transformers": "4."}

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test, n=240)
        joined = [" ".join(refs[i:i + 2]) for i in range(0, 240, 2)]
        return Pairs.with_edges(shifted(joined), joined, _past_the_limit(refs))

    @pytest.fixture(scope="class")
    def options(self, short_model_dir):
        return {"model": short_model_dir, "device": "cpu", "batch_size": 16}

    def reference_payload(self, pairs, options):
        return {"model": options["model"], "hyps": pairs.hyps, "refs": pairs.refs}

    def test_truncation_is_reached(self, scorer, pairs, ours):
        """The inputs exceed the limit (else this class would prove nothing), and the pairs that differ only past
        it score 1 (their tokens up to the limit are equal)."""
        lengths = [len(ids) for ids in scorer.encode(pairs.refs)]
        assert max(lengths) == SHORT_MAX_LENGTH and sum(n == SHORT_MAX_LENGTH for n in lengths) > len(lengths) // 2
        same_opening = slice(len(pairs.hyps) - pairs.n_edge, None, 2)
        np.testing.assert_allclose(ours["score"][same_opening], 1.0, atol=1e-6)


def test_spaces_matter_and_empty_scores_zero(model_dir):
    """radeval strips but does not collapse spaces (the byte-level BPE sees them); an empty side scores 0."""
    metric = RadEvalBertScore(model=model_dir, device="cpu")
    assert metric.encode(["No  effusion."]) != metric.encode(["No effusion."])
    assert metric.encode([" No effusion. \n"]) == metric.encode(["No effusion."])
    values = metric.score(["", " \n", "Heart normal."], ["Heart normal.", "Heart normal.", ""])
    np.testing.assert_array_equal(values, [0.0, 0.0, 0.0])
    assert metric.score(["Heart normal."], ["Heart normal."])[0] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.slow  # 18.7 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_two_launched_processes_equal_one(model_dir, tmp_path):
    """The spec shards a launched job's distinct pairs (torchrun, 2 gloo processes, tests/parallel_worker.py):
    every rank gets the single-process values (batch composition differs: float rounding only)."""
    from test_parallel import assert_two_processes_equal_one

    assert_two_processes_equal_one(tmp_path, "radeval_bertscore",
                                   {"model": model_dir, "device": "cpu", "batch_size": 2})


def test_config_names_weights_and_errors_are_clear(model_dir, tmp_path):
    config = RadEvalBertScore(model=model_dir, device="cpu").config()
    digest = hashlib.sha256((Path(model_dir) / "model.safetensors").read_bytes()).hexdigest()
    assert config["weight_digests"] == {"radeval_bertscore": {"model.safetensors": digest}}
    assert config["num_layers"] == 22 and config["weights"] == f"sha256:{digest}"
    with pytest.raises(ModelNotAvailableError, match="radeval_bertscore"):
        metrics.get("radeval_bertscore", model=tmp_path / "no-such-model")
    with pytest.raises(ConfigError, match="batch_size"):
        RadEvalBertScore(model=model_dir, batch_size=0)
    with pytest.raises(ConfigError, match="num_layers=23"):
        RadEvalBertScore(model=model_dir, num_layers=23, device="cpu").score(["a"], ["b"])


def test_standin_is_deterministic_and_in_the_modernbert_layout(tmp_path):
    from rexrank.testing.standin_modernbert import build

    a = Path(build(tmp_path / "a", "small", 0)["radeval_bertscore"])
    b = Path(build(tmp_path / "b", "small", 0)["radeval_bertscore"])
    names = sorted(p.name for p in a.iterdir())
    assert names == ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.slow  # 2.9 s CPU since issue 52: a few texts fill their buckets' 8-row passes with copies
def test_is_a_grpo_reward(model_dir):
    """rexrank.rewards takes it like any per-report metric: one value per completion, equal to score()."""
    from rexrank.rewards import reward

    fn = reward("radeval_bertscore", device="cpu", model=model_dir)
    completions = ["No pleural effusion. Heart size is normal.", "Small left effusion."]
    refs = ["Heart size is normal.", "Moderate cardiomegaly."]
    values = fn(prompts=["", ""], completions=completions, reference=refs)
    expected = metrics.get("radeval_bertscore", device="cpu", model=model_dir).score(completions, refs)
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-6)
    assert fn.__name__ == "rexrank_radeval_bertscore"
