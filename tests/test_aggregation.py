"""One aggregation rule: the leaderboard value (mean or 1/mean), its NaN rule and its direction.

``rexrank.metrics.aggregation`` owns the rule. These tests pin the rule itself, check that every place that turns
per-report values (or a stored mean) into a leaderboard value gives the same number on the same input — harness
results, bootstrap CIs, ``rexrank.summarize``, the evaluate modules, RadCliQ's helper, compare and the board — and
fail when a new reciprocal-of-mean appears anywhere else in the package.
"""

from __future__ import annotations

import io
import math
import tokenize
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rexrank.evaluate_modules.common import results as module_results
from rexrank.evaluation import bootstrap as bs
from rexrank.evaluation.aggregate import build_results
from rexrank.evaluation.compare import paired_test, rank_intervals
from rexrank.evaluation.in_memory import summarize
from rexrank.leaderboard import board
from rexrank.metrics import REGISTRY
from rexrank.metrics import aggregation as agg
from rexrank.metrics.radcliq import leaderboard_value as radcliq_leaderboard_value

NAN = float("nan")

# name -> (per-report values, expected mean, expected 1/mean, expected flags under 1/mean)
CASES = {
    "plain": ([1.0, 2.0, 3.0], 2.0, 0.5, ()),
    "some_nan": ([NAN, 2.0, NAN, 4.0], 3.0, 1 / 3, ()),
    "all_nan": ([NAN, NAN], NAN, NAN, (agg.NAN_MEAN,)),
    "mean_zero": ([1.0, -1.0], 0.0, NAN, (agg.ZERO_MEAN,)),
    "negative_mean": ([-1.0, -3.0], -2.0, -0.5, (agg.NEGATIVE_MEAN,)),
    "straddles_zero": ([-1.0, 2.0, 3.0], 4 / 3, 0.75, ()),  # 1/mean, never mean(1/x)
    "empty": ([], NAN, NAN, (agg.NAN_MEAN,)),
}


def _same(a, b) -> bool:
    """Equal floats, NaN equal to NaN (and None, which is how strict JSON writes NaN)."""
    a = NAN if a is None else float(a)
    b = NAN if b is None else float(b)
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12, abs=1e-15)


# --- the rule ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES)
def test_rule_reciprocal_of_mean(case):
    values, mean, value, flags = CASES[case]
    out = agg.aggregate(np.asarray(values), agg.RECIPROCAL_OF_MEAN)
    n_nan = int(np.isnan(values).sum()) if values else 0
    assert (out.n, out.n_nan) == (len(values) - n_nan, n_nan)  # NaN left out and counted, never dropped silently
    assert _same(out.mean, mean) and _same(out.leaderboard_value, value)
    assert out.flags == flags


@pytest.mark.parametrize("case", CASES)
def test_rule_mean_is_the_mean_and_flagged_only_when_nan(case):
    """A plain mean may be 0 or negative (rescaled BERTScore); only a mean of nothing is flagged."""
    values, mean, _, _ = CASES[case]
    out = agg.aggregate(values, agg.MEAN)
    assert _same(out.mean, mean) and _same(out.leaderboard_value, mean)
    assert out.flags == ((agg.NAN_MEAN,) if math.isnan(mean) else ())


def test_spec_and_name_give_the_same_aggregate():
    values = [0.5, NAN, 2.0]
    assert agg.aggregate(values, REGISTRY.spec("radcliq_v1")) == agg.aggregate(values, "reciprocal_of_mean")
    assert agg.aggregate(values, REGISTRY.spec("bleu2")) == agg.aggregate(values, "mean")


def test_unknown_aggregation_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown leaderboard aggregation 'radcliq_v1'.*not a metric name"):
        agg.aggregate([1.0], "radcliq_v1")


def test_vectorised_form_matches_the_scalar_rule():
    means = np.array([2.0, 0.0, -4.0, NAN, np.inf, -np.inf, 1e-300])
    got = agg.leaderboard_values(means, agg.RECIPROCAL_OF_MEAN)
    expected = [0.5, NAN, -0.25, NAN, NAN, NAN, 1e300]
    assert all(_same(g, e) for g, e in zip(got, expected))
    assert all(_same(agg.leaderboard_values(m, agg.RECIPROCAL_OF_MEAN), e) for m, e in zip(means, expected))
    np.testing.assert_array_equal(agg.leaderboard_values(means, agg.MEAN), means)
    # (resamples, metrics) in, same shape out: what the bootstrap feeds it.
    assert agg.leaderboard_values(np.ones((7, 3)), agg.RECIPROCAL_OF_MEAN).shape == (7, 3)


def test_nan_means_are_column_means_without_nan():
    matrix = np.array([[1.0, NAN, NAN], [3.0, 4.0, NAN]])
    got = agg.nan_means(matrix, axis=0)
    assert _same(got[0], 2.0) and _same(got[1], 4.0) and math.isnan(got[2])
    assert np.isnan(agg.nan_means(np.zeros((0, 2)), axis=0)).all()


def test_direction_flips_under_a_reciprocal():
    assert agg.leaderboard_higher_is_better("radcliq_v1") is True  # RadCliQ: lower is better; 1/RadCliQ: higher
    assert agg.leaderboard_higher_is_better(REGISTRY.spec("fineradscore")) is True
    assert agg.leaderboard_higher_is_better("bleu2") is True
    assert agg.leaderboard_higher_is_better("radcliq_v0") is False  # shown as the mean, lower is better


def test_interval_of_a_reciprocal():
    assert agg.leaderboard_interval(2.0, 4.0, agg.RECIPROCAL_OF_MEAN) == (0.25, 0.5)  # swapped
    assert agg.leaderboard_interval(-4.0, -2.0, agg.RECIPROCAL_OF_MEAN) == (-0.5, -0.25)
    assert all(math.isnan(x) for x in agg.leaderboard_interval(-1.0, 2.0, agg.RECIPROCAL_OF_MEAN))  # unbounded
    assert agg.leaderboard_interval(-1.0, 2.0, agg.MEAN) == (-1.0, 2.0)


# --- every caller gives the rule's value ---------------------------------------------------------------------------

def _via_bootstrap(values, how):
    entry = bs.confidence_intervals({"x": np.asarray(values, dtype=np.float64)}, aggregations={"x": how},
                                    resamples=20)["x"]
    return entry["mean"], entry["leaderboard_value"], tuple(entry["leaderboard_flags"])


def _via_build_results(values, how):
    name = "radcliq_v1" if how == agg.RECIPROCAL_OF_MEAN else "bleu2"
    frame = pd.DataFrame({REGISTRY.spec(name).column: np.asarray(values, dtype=np.float64)})
    entry = build_results(frame, {}, model="m", dataset=None, split=None, track="findings", order=[name],
                          resamples=20)["metrics"][name]
    return entry["mean"], entry["leaderboard_value"], tuple(entry["leaderboard_flags"])


def _via_summarize(values, how):
    name = "radcliq_v1" if how == agg.RECIPROCAL_OF_MEAN else "bleu2"
    frame = pd.DataFrame({REGISTRY.spec(name).column: np.asarray(values, dtype=np.float64)})
    entry = summarize(frame, [name])[name]
    return entry["mean"], entry["leaderboard_value"], tuple(entry["leaderboard_flags"])


def _via_evaluate_module(values, how):
    out = module_results("x", values, reciprocal=how == agg.RECIPROCAL_OF_MEAN)
    if how == agg.MEAN:  # a plain-mean module has no 1/mean, but returns its flags (a NaN mean) all the same
        assert "inverse_x" not in out
        return out["x"], out["x"], tuple(out["leaderboard_flags"])
    return out["x"], out["inverse_x"], tuple(out["leaderboard_flags"])


def _via_radcliq_helper(values, how):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its way of reporting NaN counts and flags
        value = radcliq_leaderboard_value(values)
    summary = agg.aggregate(values, how)
    return summary.mean, value, summary.flags


def _via_compare(values, how):
    values = np.asarray(values, dtype=np.float64)
    test = paired_test(values, values.copy(), aggregation=how, resamples=5, permutations=5)
    ranked = rank_intervals(values[:, None], aggregation=how, higher_is_better=True, resamples=5)
    assert _same(ranked["value"][0], test["value_a"])
    return agg.aggregate(values, how).mean, test["value_a"], agg.aggregate(values, how).flags


def _via_board(values, how):
    name = "radcliq_v1" if how == agg.RECIPROCAL_OF_MEAN else "bleu2"
    mean = agg.aggregate(values, how).mean  # the store keeps the mean; the board turns it into what it shows
    value, _, _ = board.shown_value(name, {"mean": None if math.isnan(mean) else mean})
    return mean, value, agg.aggregate(values, how).flags


CALLERS = {"bootstrap": _via_bootstrap, "build_results": _via_build_results, "summarize": _via_summarize,
           "evaluate_module": _via_evaluate_module, "radcliq_helper": _via_radcliq_helper, "compare": _via_compare,
           "board": _via_board}


def _applies(caller: str, case: str, how: str) -> bool:
    # RadCliQ's helper is 1/mean only, and refuses an empty input (InputError, tested in test_radcliq.py).
    return caller != "radcliq_helper" or (how == agg.RECIPROCAL_OF_MEAN and case != "empty")


@pytest.mark.parametrize(("caller", "case", "how"), [
    (caller, case, how) for caller in CALLERS for case in CASES for how in agg.AGGREGATIONS
    if _applies(caller, case, how)])
def test_every_caller_gives_the_rules_value(caller, case, how):
    values = CASES[case][0]
    rule = agg.aggregate(values, how)
    mean, value, flags = CALLERS[caller](list(values), how)
    assert _same(mean, rule.mean), f"{caller}: mean {mean} != {rule.mean}"
    assert _same(value, rule.leaderboard_value), f"{caller}: leaderboard value {value} != {rule.leaderboard_value}"
    assert tuple(flags) == rule.flags


def test_board_interval_uses_the_rule():
    entry = {"mean": 2.0, "ci_low": 1.6, "ci_high": 2.5}
    assert board.shown_value("radcliq_v1", entry) == pytest.approx((0.5, 0.4, 0.625))
    shown = board.shown_value("radcliq_v1", {"mean": 0.1, "ci_low": -0.2, "ci_high": 0.4})
    assert shown[0] == pytest.approx(10.0) and math.isnan(shown[1]) and math.isnan(shown[2])


def test_negative_mean_flag_reaches_the_printed_results():
    from rexrank.evaluation.report import markdown_table

    frame = pd.DataFrame({"radcliq_v1": [-1.0, -3.0]})
    results = build_results(frame, {}, model="m", dataset=None, split=None, track="findings", order=["radcliq_v1"],
                            resamples=20)
    assert results["leaderboard"]["1/RadCliQ-v1"] == pytest.approx(-0.5)
    assert f"1/RadCliQ-v1: {agg.NEGATIVE_MEAN}" in markdown_table(results)


# --- no second implementation ------------------------------------------------------------------------------------

SRC = Path(__file__).resolve().parents[1] / "src" / "rexrank"
OWNER = "metrics/aggregation.py"
# Files allowed to compute a reciprocal, and why it is not the leaderboard rule.
EXCEPTIONS = {
    "testing/standin_radgraph.py": "stand-in model weights: a scale of 1/std, unrelated to any metric's aggregation",
    "testing/standin_ratescore.py": "stand-in model weights: 1/sqrt(fan-in) initialisation, unrelated",
    "metrics/nlg.py": "BLEU's own formula (the n-th root of the running product, the brevity penalty exp(1 - 1/ratio)), "
                      "inside a corpus metric's values, not a leaderboard reciprocal",
    "metrics/meteor.py": "METEOR's own formula (its weighted harmonic mean of precision and recall), inside a corpus "
                         "metric's values, not a leaderboard reciprocal",
    "metrics/srrbert.py": "radeval's per-label precision and F1 with their epsilon (1/(1+eps), 2/(2+eps)), inside one "
                          "report's value, not a leaderboard reciprocal",
    "leaderboard/arena.py": "the Bradley-Terry prior's precision (1/sd^2, a ridge on the strengths), not a metric's value",
    "leaderboard/compare_view.py": "a Monte Carlo p-value's floor (1/(draws+1)) and its printed bound (1/draws), not a "
                                   "metric's value",
}


def _reciprocal_code(path: Path) -> list[int]:
    """Lines where code (not a comment or string) divides 1 by something, or calls a ``reciprocal`` function."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
              if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)]
    lines = []
    for a, b in zip(tokens, tokens[1:]):
        one_over = a.type == tokenize.NUMBER and b.string == "/" and _is_one(a.string)
        called = a.type == tokenize.NAME and a.string == "reciprocal" and b.string == "("
        power = a.string == "**" and b.string == "-"
        if one_over or called or power:
            lines.append(a.start[0])
    return lines


def _is_one(number: str) -> bool:
    try:
        return float(number.replace("_", "")) == 1.0
    except ValueError:  # hex, complex...: not a plain 1
        return False


def test_no_reciprocal_of_a_mean_outside_the_owner_module():
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel != OWNER and (lines := _reciprocal_code(path)):
            found[rel] = lines
    unexpected = {rel: lines for rel, lines in found.items() if rel not in EXCEPTIONS}
    assert not unexpected, (f"reciprocal code outside {OWNER} at {unexpected}: use "
                            "rexrank.metrics.aggregation (aggregate / leaderboard_values), or add the file to "
                            "EXCEPTIONS with the reason it is not a leaderboard value")
    stale = sorted(set(EXCEPTIONS) - set(found))
    assert not stale, f"EXCEPTIONS lists files without reciprocal code any more: {stale}"
    assert _reciprocal_code(SRC / OWNER), "the owner module computes the reciprocal: the scan must see it"


def test_sum_rule_point_means_and_leaderboard_are_the_aggregation_rule():
    """SumRule.point leaves rows with a NaN out and counts them; means of its sums are aggregate()'s mean to the last
    bit and leaderboard() its leaderboard value (1/mean for RadCliQ-v1); a corpus rule's means are its values, its
    own leaderboard values, and its point leaves a study with any NaN statistic out."""
    values = np.array([0.5, np.nan, -0.25, 2.0, np.nan, 1.0])
    rule = agg.sum_rule("radcliq_v1")
    sums, used, left_out = rule.point(values[:, None])
    assert (used, left_out) == (4, 2)
    expected = agg.aggregate(values, REGISTRY.spec("radcliq_v1"))
    assert rule.means(sums, used)[0] == expected.mean
    assert rule.leaderboard(rule.means(sums, used))[0] == expected.leaderboard_value == 1 / expected.mean
    np.testing.assert_array_equal(rule.values(sums, used), rule.leaderboard(rule.means(sums, used)))
    corpus = agg.sum_rule("nlg")
    stats = np.arange(3 * len(corpus.columns), dtype=float).reshape(3, -1) + 1
    stats[1, 3] = np.nan
    sums, used, left_out = corpus.point(stats)
    assert (used, left_out) == (2, 1)
    np.testing.assert_array_equal(sums, stats[[0, 2]].sum(axis=0))
    means = corpus.means(sums, used)
    np.testing.assert_array_equal(means, agg.corpus_values(sums, 2, "nlg"))
    assert corpus.leaderboard(means) is means
