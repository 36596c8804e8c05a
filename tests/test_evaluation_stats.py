"""Bootstrap CIs, paired tests and rank intervals: properties that must hold whatever the data.

The statistics are derived from the per-study table only, vectorised; these tests pin them against the plain
definitions (a per-resample loop over the same resamples) and against properties a user relies on: seeded
reproducibility, p-values never exactly 0, CIs around the estimate, reciprocal metrics from each resample's mean.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rexrank.evaluation import bootstrap as bs
from rexrank.evaluation.compare import Run, compare_runs, paired_test, rank_intervals


def test_resample_means_equal_the_per_resample_loop():
    """The count-matrix product is exactly the mean over the drawn indices, resample by resample."""
    rng = np.random.default_rng(5)
    values = rng.random((257, 3))
    idx = bs.index_matrix(257, 40, seed=11)
    naive = np.stack([values[row].mean(axis=0) for row in idx])
    np.testing.assert_allclose(bs.resample_means(values, 40, seed=11), naive, rtol=1e-12)


def test_resamples_do_not_depend_on_block_size(monkeypatch):
    """The stream depends on (n, resamples, seed) only; memory blocking is an implementation detail."""
    values = np.random.default_rng(0).random((50, 2))
    whole = bs.resample_means(values, 30, seed=3)
    monkeypatch.setattr(bs, "_BLOCK_CELLS", 50 * 7)  # 7 resamples per block
    np.testing.assert_array_equal(bs.index_matrix(50, 30, seed=3)[:7], bs.index_matrix(50, 7, seed=3))
    np.testing.assert_allclose(bs.resample_means(values, 30, seed=3)[:30], whole, rtol=1e-12)


def test_seeded_reproducibility_and_seed_sensitivity():
    values = {"x": np.random.default_rng(1).random(300)}
    a = bs.confidence_intervals(values, resamples=200, seed=7)
    assert a == bs.confidence_intervals(values, resamples=200, seed=7)
    assert a["x"]["ci_low"] != bs.confidence_intervals(values, resamples=200, seed=8)["x"]["ci_low"]


def test_ci_contains_the_mean_and_narrows_with_more_studies():
    rng = np.random.default_rng(2)
    small = bs.confidence_intervals({"x": rng.random(50)}, resamples=500)["x"]
    large = bs.confidence_intervals({"x": rng.random(5000)}, resamples=500)["x"]
    for entry in (small, large):
        assert entry["ci_low"] < entry["mean"] < entry["ci_high"]
    assert large["ci_high"] - large["ci_low"] < (small["ci_high"] - small["ci_low"]) / 5


def test_constant_column_has_a_zero_width_interval():
    entry = bs.confidence_intervals({"x": np.full(20, 0.25)}, resamples=100)["x"]
    assert entry["ci_low"] == pytest.approx(0.25) and entry["ci_high"] == pytest.approx(0.25)


def test_nan_values_are_left_out_and_counted():
    values = np.array([0.2, np.nan, 0.4, 0.6, np.nan])
    entry = bs.confidence_intervals({"x": values}, resamples=200)["x"]
    assert entry["n"] == 3 and entry["n_nan"] == 2 and entry["mean"] == pytest.approx(0.4)
    assert 0.2 <= entry["ci_low"] <= entry["ci_high"] <= 0.6


def test_reciprocal_metric_uses_each_resamples_mean():
    """1/RadCliQ-v1 is 1/mean; its CI comes from 1/mean of each resample (never a mean of reciprocals)."""
    values = np.array([-1.0, 3.0, 0.5, 1.5] * 25)
    entry = bs.confidence_intervals({"r": values}, aggregations={"r": "reciprocal_of_mean"}, resamples=300)["r"]
    assert entry["leaderboard_value"] == pytest.approx(1 / values.mean())
    boot = 1 / bs.resample_means(values, 300)[:, 0]
    assert entry["leaderboard_ci_low"] == pytest.approx(np.quantile(boot, 0.025))
    assert entry["leaderboard_ci_high"] == pytest.approx(np.quantile(boot, 0.975))
    assert entry["leaderboard_ci_low"] < entry["leaderboard_value"] < entry["leaderboard_ci_high"]


def test_paired_test_p_value_is_never_zero_and_has_its_floor():
    a = np.linspace(0.6, 0.9, 200)
    b = a - 0.3
    t = paired_test(a, b, resamples=999, permutations=1999)
    assert t["difference"] == pytest.approx(0.3)
    assert t["p_bootstrap"] == pytest.approx(1 / 1000) and t["p_randomization"] == pytest.approx(1 / 2000)
    assert t["ci_low"] == pytest.approx(0.3) and t["ci_high"] == pytest.approx(0.3)


def test_identical_models_are_not_different():
    a = np.random.default_rng(3).random(100)
    t = paired_test(a, a.copy(), resamples=200, permutations=500)
    assert t["difference"] == 0 and t["p_bootstrap"] == 1.0 and t["p_randomization"] == 1.0


def test_paired_test_is_symmetric_and_seeded():
    rng = np.random.default_rng(4)
    a, b = rng.random(150), rng.random(150) + 0.02
    ab = paired_test(a, b, resamples=300, permutations=600, seed=9)
    ba = paired_test(b, a, resamples=300, permutations=600, seed=9)
    assert ab == paired_test(a, b, resamples=300, permutations=600, seed=9)
    assert ab["difference"] == pytest.approx(-ba["difference"])
    assert ab["p_randomization"] == ba["p_randomization"] and ab["p_bootstrap"] == ba["p_bootstrap"]
    assert ab["ci_low"] <= ab["difference"] <= ab["ci_high"]
    assert ab["ci_low"] == pytest.approx(-ba["ci_high"]) and ab["ci_high"] == pytest.approx(-ba["ci_low"])


def test_randomization_matches_the_per_permutation_loop():
    """Same swaps as the vectorised code, applied one permutation at a time with plain means."""
    rng = np.random.default_rng(6)
    a, b = rng.random(40), rng.random(40) + 0.05
    permutations = 300
    t = paired_test(a, b, resamples=10, permutations=permutations, seed=2)
    swaps = np.random.default_rng([2, 1]).integers(0, 2, size=(permutations, 40), dtype=np.int8).astype(bool)
    observed = a.mean() - b.mean()
    k = 0
    for row in swaps:
        pa, pb = np.where(row, b, a), np.where(row, a, b)
        k += abs(pa.mean() - pb.mean()) >= abs(observed) - 1e-12
    assert t["p_randomization"] == (k + 1) / (permutations + 1)


def test_randomization_p_value_is_calibrated_under_the_null():
    """With no true difference, p <= 0.05 happens in about 5% of experiments (not 0%, not 30%)."""
    rng = np.random.default_rng(8)
    ps = [paired_test(rng.random(60), rng.random(60), resamples=10, permutations=199, seed=s)["p_randomization"]
          for s in range(150)]
    rate = np.mean(np.array(ps) <= 0.05)
    assert 0.01 <= rate <= 0.12


def test_reciprocal_paired_test_compares_leaderboard_values():
    a, b = np.full(50, 2.0), np.full(50, 4.0)  # lower is better: 1/2 vs 1/4 on the leaderboard
    t = paired_test(a, b, aggregation="reciprocal_of_mean", resamples=50, permutations=50)
    assert t["value_a"] == 0.5 and t["value_b"] == 0.25 and t["difference"] == pytest.approx(0.25)


def test_paired_test_drops_incomplete_pairs():
    a = np.array([0.1, np.nan, 0.3, 0.5])
    b = np.array([0.2, 0.2, np.nan, 0.4])
    t = paired_test(a, b, resamples=20, permutations=20)
    assert t["n"] == 2 and t["n_excluded"] == 2 and t["difference"] == pytest.approx(0.0)


def test_rank_intervals_separated_and_overlapping_models():
    rng = np.random.default_rng(10)
    base = rng.random(400)
    values = np.column_stack([base + 0.3, base, base + 0.001 * rng.standard_normal(400), base - 0.3])
    r = rank_intervals(values, aggregation="mean", higher_is_better=True, resamples=300)
    assert list(r["rank"]) == [1, 3, 2, 4] or list(r["rank"]) == [1, 2, 3, 4]
    assert (r["rank_ci_low"][0], r["rank_ci_high"][0]) == (1, 1)
    assert (r["rank_ci_low"][3], r["rank_ci_high"][3]) == (4, 4)
    assert r["rank_ci_low"][1] == 2 and r["rank_ci_high"][1] == 3  # near-tie: the CI spans both places
    lower = rank_intervals(values, aggregation="mean", higher_is_better=False, resamples=50)
    assert lower["rank"][3] == 1


def _frame(ids, values, refs=None, **extra):
    data = {"study_id": ids, "hyp_sha256": [f"h{v}" for v in range(len(ids))],
            "ref_sha256": refs or [f"r{i}" for i in ids]}
    data.update(values)
    data.update(extra)
    return pd.DataFrame(data)


def test_tied_models_share_the_better_rank_and_a_ci_touching_zero_decides_nothing():
    from rexrank.evaluation.compare import verdict
    from rexrank.evaluation.statistics import ranks

    assert ranks(np.array([0.5, 0.7, 0.7, np.nan]), higher_is_better=True).tolist() == [3, 1, 1, 4]
    assert ranks(np.array([0.5, 0.5, 0.2]), higher_is_better=False).tolist() == [2, 2, 1]
    test = {"difference": 0.1, "ci_low": 0.0, "ci_high": 0.2, "p_bootstrap": 0.001, "p_randomization": 0.001}
    assert verdict(test, "bleu2", "A", "B", 0.05)["significant"] is False  # the CI must exclude 0, not touch it
    assert verdict(dict(test, ci_low=1e-9), "bleu2", "A", "B", 0.05)["better"] == "A"
    below = dict(test, difference=-0.1, ci_low=-0.2, ci_high=0.0)
    assert verdict(below, "bleu2", "A", "B", 0.05)["significant"] is False


def test_compare_runs_structure_subgroups_and_agreement():
    rng = np.random.default_rng(12)
    n = 120
    ids = [f"s{i}" for i in range(n)]
    normal = rng.random(n) < 0.4
    site = np.where(np.arange(n) % 2 == 0, "A", "B")
    runs = []
    for k, shift in enumerate((0.0, 0.05, 0.1)):
        bleu = np.clip(rng.random(n) * 0.3 + shift, 0, 1)
        radcliq = 2.0 - 3 * bleu + rng.random(n) * 0.1
        frame = _frame(ids, {"bleu_score": bleu, "radcliq_v1": radcliq}, site=site, ref_normal=normal,
                       green_error_free=(rng.random(n) < 0.3 + shift).astype(float))
        runs.append(Run(f"m{k}", frame, {"dataset": "iu_xray", "split": "test", "track": "findings"}, "mem"))
    report = compare_runs(runs, resamples=200, permutations=400)
    assert report["models"] == ["m0", "m1", "m2"] and report["metrics"] == ["bleu2", "radcliq_v1"]
    assert [report["ranking"]["bleu2"]["models"][m]["rank"] for m in ("m0", "m1", "m2")] == [3, 2, 1]
    # 1/RadCliQ-v1 ranks by the reciprocal of the mean: lower RadCliQ is better.
    assert [report["ranking"]["radcliq_v1"]["models"][m]["rank"] for m in ("m0", "m1", "m2")] == [3, 2, 1]
    assert len(report["pairwise"]) == 3
    test = report["pairwise"][0]["tests"]["bleu2"]
    assert test["better"] == "m1" and test["p_randomization"] <= 0.01
    assert report["subgroups"]["normal_vs_abnormal"]["normal"]["n"] == int(normal.sum())
    assert set(report["subgroups"]["sites"]) == {"A", "B"}
    assert report["subgroups"]["sites"]["A"]["metrics"]["bleu2"]["m2"]["rank"] == 1
    assert set(report["subgroups"]["green"]["m0"]) == {"error_free_rate", "error_free_rate_abnormal"}
    assert report["agreement"]["kendall_tau_model_rankings"]["bleu2"]["radcliq_v1"] == pytest.approx(1.0)
    assert report["agreement"]["spearman_per_study"]["bleu2"]["radcliq_v1"] < -0.9
    json.dumps(report, allow_nan=False)  # strict JSON


def test_compare_refuses_runs_on_different_references():
    ids = ["a", "b"]
    one = Run("x", _frame(ids, {"bleu_score": [0.1, 0.2]}), None, "mem")
    two = Run("y", _frame(ids, {"bleu_score": [0.1, 0.2]}, refs=["ra", "other"]), None, "mem")
    from rexrank.errors import InputError

    with pytest.raises(InputError, match="y and x were scored against different references for 1 shared studies"):
        compare_runs([one, two], resamples=10, permutations=10)


def test_compare_uses_shared_studies_and_says_so():
    one = Run("x", _frame(["a", "b", "c"], {"bleu_score": [0.1, 0.2, 0.3]}), None, "mem")
    two = Run("x", _frame(["b", "c", "d"], {"bleu_score": [0.3, 0.4, 0.5]}), None, "mem")
    report = compare_runs([one, two], resamples=10, permutations=10)
    assert report["n_studies"] == 2 and report["models"] == ["x", "x (2)"]
    assert report["notes"] == ["compared on the 2 studies every run scored (runs had 3, 3)"]
    assert report["pairwise"][0]["tests"]["bleu2"]["difference"] == pytest.approx(-0.1)


def test_compare_names_the_metrics_only_some_runs_have(capsys):
    """Issue 49 point 7: a metric only one run has was dropped without a word. It is named, with the runs that have
    it, in one note (the printed report, the Markdown) and in the JSON's ``not_compared``."""
    from rexrank.evaluation.compare import markdown, print_report

    ids = ["a", "b", "c"]
    one = Run("x", _frame(ids, {"bleu_score": [0.1, 0.2, 0.3], "radgraph_combined": [0.2, 0.3, 0.4]}), None, "mem")
    two = Run("y", _frame(ids, {"bleu_score": [0.3, 0.4, 0.5]}), None, "mem")
    report = compare_runs([one, two], resamples=10, permutations=10)
    assert report["metrics"] == ["bleu2"] and report["not_compared"] == {"radgraph": ["x"]}
    line = "not compared, since not every run has them: RadGraph (only x)"
    assert report["notes"] == [line]
    assert f"Note: {line}" in markdown(report)
    print_report(report)
    assert f"note: {line}" in capsys.readouterr().out
    json.dumps(report, allow_nan=False)
    asked = compare_runs([one, two], ["bleu2"], resamples=10, permutations=10)  # only what was asked is compared
    assert asked["not_compared"] == {} and asked["notes"] == []


def test_percentile_interval_is_nanquantile_per_column():
    """Vectorised without NaNs, column by column with them: the same numbers as numpy's nanquantile either way."""
    rng = np.random.default_rng(13)
    alpha = (1.0 - 0.9) / 2.0  # as percentile_interval computes it (not exactly 0.05)
    for samples in (rng.standard_normal(500), rng.standard_normal((400, 30, 6)), rng.random((7, 3))):
        low, high = bs.percentile_interval(samples, 0.9)
        np.testing.assert_array_equal(low, np.nanquantile(samples, alpha, axis=0))
        np.testing.assert_array_equal(high, np.nanquantile(samples, 1.0 - alpha, axis=0))
    holed = rng.standard_normal((300, 4))
    holed[::7, 1] = np.nan
    holed[:, 3] = np.nan
    low, high = bs.percentile_interval(holed, 0.9)
    np.testing.assert_array_equal(low[:3], np.nanquantile(holed[:, :3], alpha, axis=0))
    assert np.isnan(low[3]) and np.isnan(high[3])


def _healthy_and_broken(n=200, seed=14):
    """Two runs of n studies where the second holds 3 non-finite values (NaN, +inf, -inf), and a third run."""
    rng = np.random.default_rng(seed)
    ids = [f"s{i}" for i in range(n)]
    base = rng.uniform(0.2, 0.6, n)
    healthy = base - 0.05 + rng.normal(0, 0.02, n)
    broken = healthy.copy()
    bad = [3, 50, 120]
    broken[bad] = [np.nan, np.inf, -np.inf]
    runs = [Run(name, _frame(ids, {"bleu_score": values}), None, "mem")
            for name, values in (("base", base), ("healthy", healthy), ("broken", broken))]
    return runs, healthy, bad


def test_non_finite_per_study_values_are_left_out_and_counted():
    """Issue 35 point 8: NaN and +-inf per-study values are both "no value" (statistics.usable_studies). Before: inf
    was summed, numpy warned, the broken run's value was NaN with the false "every value NaN" flag, its tests still
    had p-values and no model was ranked."""
    import warnings

    runs, healthy, bad = _healthy_and_broken()
    keep = np.setdiff1d(np.arange(len(healthy)), bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy RuntimeWarning (inf - inf, all-NaN slice) fails the test
        report = compare_runs(runs, resamples=200, permutations=200)
    base_broken = report["pairwise"][1]["tests"]["bleu2"]
    assert (report["pairwise"][1]["a"], report["pairwise"][1]["b"]) == ("base", "broken")
    assert base_broken["n"] == 197 and base_broken["n_excluded"] == 3
    assert base_broken["value_b"] == pytest.approx(healthy[keep].mean(), abs=1e-12)
    assert base_broken["flags_b"] == [] and base_broken["better"] == "base"
    assert report["pairwise"][0]["tests"]["bleu2"]["n_excluded"] == 0  # base vs healthy: every study
    ranking = report["ranking"]["bleu2"]
    assert ranking["n"] == 197
    assert [ranking["models"][m]["rank"] for m in ("base", "healthy", "broken")] == [1, 2, 2]
    assert all(ranking["models"][m]["rank_ci_low"] is not None for m in ranking["models"])
    assert report["notes"] == ["broken: infinite per-study values (2 in bleu_score) were read as missing, like NaN: "
                               "left out of every statistic (n_excluded counts them)"]
    json.dumps(report, allow_nan=False)


def test_infinite_values_count_as_nan_in_the_one_pass_statistics():
    """The library path too: a table with +-inf gives the numbers of the same table with NaN there."""
    a = np.random.default_rng(15).random(60)
    b = a + 0.01
    with_inf, with_nan = b.copy(), b.copy()
    with_inf[[1, 7]], with_nan[[1, 7]] = [np.inf, -np.inf], np.nan
    assert paired_test(a, with_inf, resamples=50, permutations=50) == paired_test(a, with_nan, resamples=50,
                                                                                  permutations=50)
    ranked = rank_intervals(np.column_stack([a, with_inf]), aggregation="mean", higher_is_better=True, resamples=50)
    assert list(ranked["rank"]) == [2, 1] and ranked["n"] == 58


def _first_place_at(k: int, n: int = 150, resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """(studies, 2) values of models A and B where A has the higher mean in exactly k of the seeded resamples.

    Adding a constant to B's values adds it to B's mean in every resample (the counts sum to n), so B is shifted
    to put exactly k resampled differences B - A below zero."""
    rng = np.random.default_rng(16)
    a = rng.random(n)
    b = a + rng.normal(0.0, 0.05, n)
    differences = np.sort(np.concatenate([c @ (b - a) / n for c in bs.count_blocks(n, resamples, seed)]))
    assert differences[k - 1] < differences[k]
    return np.column_stack([a, b - (differences[k - 1] + differences[k]) / 2.0])


def _order_statistic_interval(values: np.ndarray, resamples: int, seed: int, confidence: float):
    """The rank CI by its definition, computed apart from rexrank's rank and quantile code: each resample's rank
    (1 + the models with a strictly higher mean), sorted per model; the ends are the ranks at the 0-based positions
    floor(a (B - 1)) and ceil((1 - a) (B - 1)), a = (1 - confidence) / 2, in exact fractions (docs/harness.md)."""
    import math
    from fractions import Fraction

    n, m = values.shape
    per_model = [[] for _ in range(m)]
    for counts in bs.count_blocks(n, resamples, seed):
        for means in counts @ values / n:
            for j in range(m):
                per_model[j].append(1 + sum(1 for other in means if other > means[j]))
    a = (1 - Fraction(str(confidence))) / 2
    low_at, high_at = math.floor(a * (resamples - 1)), math.ceil((1 - a) * (resamples - 1))
    firsts = [ranks.count(1) for ranks in per_model]
    return [sorted(r)[low_at] for r in per_model], [sorted(r)[high_at] for r in per_model], firsts


@pytest.mark.parametrize("k", [25, 20, 975, 13, 12])
def test_rank_ci_at_the_quantile_boundary_equals_order_statistics(k):
    """Issue 35 point 11: model A is first in exactly k of 1,000 resamples, so A's and B's rank CIs sit on the
    boundary of the quantile rule: k = 25 is where position floor(0.025 x 999) = 24 starts holding rank 1 (rounding
    to the nearest position, 25, would give 2), k = 12, 13 and 20 lie between that and the 0.0125 quantile's position
    12 (a halved alpha), k = 975 the same at the upper end. Each must equal the order statistics above."""
    values = _first_place_at(k)
    low, high, firsts = _order_statistic_interval(values, 1000, 0, 0.95)
    assert firsts[0] == k  # the input sits where it was built to
    ours = rank_intervals(values, aggregation="mean", higher_is_better=True, resamples=1000, seed=0, confidence=0.95)
    assert list(ours["rank_ci_low"]) == low and list(ours["rank_ci_high"]) == high
