"""Meta-evaluation (issue 27 points 2 and 3): Kendall tau-b as scipy computes it, on the data and on every bootstrap
resample of studies; targets as the ReXVal paper defines them; a paired test whose p is calibrated under the null;
the inter-rater ceiling; the CLI and `rexrank.meta_eval` on synthetic files in the release's layout."""

from __future__ import annotations

import json

import numpy as np
import pytest
from expert_helpers import write_radevalx, write_rexval

import rexrank
from rexrank.data.expert_sets import ExpertSet, read
from rexrank.evaluation import meta_eval as me


def _expert(errors: np.ndarray, per_study: int = 4) -> ExpertSet:
    n = errors.shape[0]
    return ExpertSet("rexval", [str(i // per_study) for i in range(n)], ["c"] * n, ["ref"] * n, ["hyp"] * n,
                     [str(r) for r in range(errors.shape[1])], list(range(1, errors.shape[2] + 1)), errors, "memory")


def test_tau_b_equals_scipy_on_data_with_ties():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(0)
    worst = 0.0
    for trial in range(300):
        n = int(rng.integers(2, 80))
        x = rng.integers(0, 4, n).astype(float) if trial % 2 else rng.normal(size=n).round(1)
        y = rng.integers(0, 3, n) / 6.0 + (rng.normal(size=n) if trial % 5 == 0 else 0.0)
        ours, theirs = me.kendall_tau_b(x, y), kendalltau(x, y).statistic
        assert np.isnan(ours) == np.isnan(theirs)
        if not np.isnan(theirs):
            worst = max(worst, abs(ours - theirs))
    assert worst <= 1e-12


def test_each_resample_is_scipy_on_the_repeated_studies():
    """A resample's tau is scipy's on the pairs of its drawn studies, each study repeated as often as drawn."""
    from scipy.stats import kendalltau

    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(12), 4)
    x, y = rng.integers(0, 5, 48).astype(float), rng.normal(size=48).round(1)
    draws = me.study_resamples(12, 20, seed=7)
    taus = me.tau_b_matrix(x[None], y[None], [(0, 0)], groups, draws)[:, 0]
    for row, tau in zip(draws, taus):
        index = np.concatenate([np.flatnonzero(groups == g) for g in range(12) for _ in range(int(row[g]))])
        assert abs(tau - kendalltau(x[index], y[index]).statistic) <= 1e-12


def test_targets_are_the_mean_over_raters():
    rng = np.random.default_rng(2)
    errors = rng.poisson(0.4, size=(40, 6, 6, 2)).astype(float)
    goals = me.targets(_expert(errors))
    assert np.allclose(goals["total"], errors.sum(axis=(2, 3)).sum(axis=1) / 6)
    assert np.allclose(goals["significant"], errors[..., 1].sum(axis=2).sum(axis=1) / 6)
    assert np.allclose(goals["category_3"], errors[:, :, 2, :].sum(axis=2).mean(axis=1))
    assert np.allclose(goals["category_3_significant"], errors[:, :, 2, 1].mean(axis=1))


def test_direction_and_statistics_match_a_scipy_loop():
    """Higher-is-better metrics are negated (the paper's 1 - score), lower-is-better taken as they are; the report's
    taus, rater taus and CIs equal a plain scipy loop over the same resamples."""
    from scipy.stats import kendalltau

    rng = np.random.default_rng(3)
    errors = rng.poisson(0.3, size=(80, 6, 6, 2)).astype(float)
    expert = _expert(errors)
    total = errors.sum(axis=(1, 2, 3)) / 6
    bleu = -total + rng.normal(size=80)
    report = me.agreement({"bleu2": bleu, "radcliq_v0": -bleu}, expert, resamples=60, seed=4)
    expected = kendalltau(-bleu, total).statistic
    assert expected > 0.3
    for name in ("bleu2", "radcliq_v0"):
        assert abs(report["metrics"][name]["targets"]["total"]["tau"] - expected) <= 1e-12
    draws = me.study_resamples(20, 60, seed=4)
    groups = expert.groups
    boot = []
    for row in draws:
        index = np.concatenate([np.flatnonzero(groups == g) for g in range(20) for _ in range(int(row[g]))])
        boot.append(kendalltau(-bleu[index], total[index]).statistic)
    assert abs(report["metrics"]["bleu2"]["targets"]["total"]["ci_low"] - np.quantile(boot, 0.025)) <= 1e-12
    assert abs(report["metrics"]["bleu2"]["targets"]["total"]["ci_high"] - np.quantile(boot, 0.975)) <= 1e-12
    own = errors.sum(axis=(2, 3))
    for r in range(6):
        others = np.delete(own, r, axis=1).mean(axis=1)
        assert abs(report["raters"]["total"]["per_rater"][str(r)] - kendalltau(own[:, r], others).statistic) <= 1e-12
    assert report["pairwise"][0]["tests"]["total"]["verdict"] == me.NO_SIGNIFICANT_DIFFERENCE


def test_the_paired_test_names_the_better_metric():
    rng = np.random.default_rng(5)
    errors = rng.poisson(0.5, size=(200, 6, 6, 2)).astype(float)
    total = errors.sum(axis=(1, 2, 3))
    report = me.agreement({"radgraph": -total + rng.normal(size=200), "bleu2": rng.normal(size=200)},
                          _expert(errors), resamples=300, seed=0)
    test = report["pairwise"][0]["tests"]["total"]
    assert test["significant"] and test["better"] == "radgraph" and test["p"] < 0.01
    assert test["verdict"].startswith("RadGraph agrees better (p = ")


def test_paired_p_is_calibrated_under_the_null():
    """Two metrics identical in distribution (same signal, independent noise of the same size): the test rejects at
    alpha = 0.05 about 5% of the time. 200 seeds; a binomial(200, 0.05) lies in [2, 20] with probability > 0.999."""
    rejections = 0
    for seed in range(200):
        rng = np.random.default_rng(1000 + seed)
        errors = rng.poisson(0.4, size=(80, 2, 1, 1)).astype(float)
        total = errors.sum(axis=(1, 2, 3))
        # Both metrics higher-is-better, so their oriented values are the negated scores.
        oriented = np.vstack([total + 2.0 * rng.normal(size=80), total + 2.0 * rng.normal(size=80)])
        taus = me.tau_b_matrix(oriented, total[None], [(0, 0), (1, 0)], np.repeat(np.arange(20), 4),
                               np.vstack([np.ones((1, 20)), me.study_resamples(20, 199, seed)]))
        difference = taus[0, 0] - taus[0, 1]
        rejections += me.paired_p(difference, taus[1:, 0] - taus[1:, 1]) < 0.05
    assert 2 <= rejections <= 20, rejections


def test_stand_in_weights_are_flagged():
    notes = me._notes({"semb": {"config": {"checkpoint": "/tmp/standin"}}}, ["semb"], {"n_pairs_dropped": 0})
    assert notes and "not verified official" in notes[0] and "semb" in notes[0]
    assert me._notes({"bleu2": {"config": {}}}, ["bleu2"], {"n_pairs_dropped": 0}) == []


@pytest.mark.slow  # 1.6 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_cli_and_python_api_write_the_same_aggregates(tmp_path, cli):
    data, _ = write_rexval(tmp_path / "data" / "rexval-dataset" / "1.0.0", seed=8)
    out = tmp_path / "out"
    code, output = cli("meta-eval", "--dataset", "rexval", "--data-dir", str(tmp_path / "data"), "--metrics",
                       "bleu2", "--resamples", "50", "--out", str(out))
    assert code == 0, output
    assert {p.name for p in out.iterdir()} >= {"meta_eval.json", "meta_eval.md", "meta_eval_plot.json"}
    written = json.loads((out / "meta_eval.json").read_text())
    api = rexrank.meta_eval("rexval", ["bleu2"], data_dir=tmp_path / "data", resamples=50)
    assert json.loads(json.dumps(api)) == written
    assert written["n_pairs"] == 200 and written["n_studies"] == 50 and written["n_raters"] == 6
    figure = json.loads((out / "meta_eval_plot.json").read_text())
    assert [bar["x"] for bar in figure["data"]] == [["BLEU"], ["BLEU"]]
    # Aggregates only: no report text reaches any output.
    expert = read("rexval", tmp_path / "data")
    texts = set(expert.references) | set(expert.hypotheses)
    for path in out.iterdir():
        content = path.read_text(encoding="utf-8")
        assert not any(text in content for text in texts), path.name
    assert "| BLEU |" in output and "Raters (each vs the others' mean; ceiling)" in output


def test_radevalx_states_its_assumption_and_has_no_ceiling(tmp_path, cli):
    """RadEvalX: 100 single-candidate studies, consensus counts: every study resampled alone, no inter-rater
    ceiling, and the blank-cell reading stated in the JSON and the Markdown."""
    write_radevalx(tmp_path / "data", seed=3)
    code, output = cli("meta-eval", "--dataset", "radevalx", "--data-dir", str(tmp_path / "data"), "--metrics",
                       "bleu2", "--resamples", "30", "--out", str(tmp_path / "out"))
    assert code == 0, output
    report = json.loads((tmp_path / "out" / "meta_eval.json").read_text())
    assert (report["dataset"], report["n_pairs"], report["n_studies"], report["n_raters"]) == ("radevalx", 100, 100, 1)
    assert report["raters"] == {"total": None, "significant": None}
    assert "blank and were read as 0 errors" in report["notes"][0]
    assert "n/a: one consensus count per pair" in output and "blank and were read as 0 errors" in output
    assert set(report["metrics"]["bleu2"]["targets"]) >= {"total", "significant", "category_8_significant"}
    assert json.loads((tmp_path / "out" / "meta_eval_plot.json").read_text())["layout"]["shapes"] == []


@pytest.mark.parametrize("args, message", [
    (("--resamples", "0"), "--resamples must be between 1"),
    (("--dataset", "mimic_cxr"), "Unknown expert set 'mimic_cxr'"),
    (("--metrics", "ce_f1"), "ce_f1 is a corpus-level metric"),
    (("--metrics", "nosuchmetric"), "nosuchmetric"),
])
def test_cli_refuses_bad_options_in_one_line(tmp_path, cli, args, message):
    write_rexval(tmp_path, seed=9)
    code, output = cli("meta-eval", "--dataset", "rexval", "--data-dir", str(tmp_path), *args)
    assert code == 2 and message in output and "Traceback" not in output


def test_cli_names_a_missing_copy(tmp_path, cli):
    code, output = cli("meta-eval", "--dataset", "rexval", "--data-dir", str(tmp_path / "none"), "--metrics", "bleu2")
    assert code == 2 and "does not exist" in output and "wget -r" in output


@pytest.mark.slow
def test_stand_in_weights_run_through_the_harness_and_are_flagged(tmp_path, cli, standins):
    """A model-backed metric with random-weight stand-ins runs through `rexrank.score`'s core; the output says the
    numbers describe those weights, not the metric as published."""
    paths = standins("semb")
    write_rexval(tmp_path / "data", seed=10)
    code, output = cli("meta-eval", "--dataset", "rexval", "--data-dir", str(tmp_path / "data"), "--metrics",
                       "semb,bleu2", "--model-path", f"semb={paths['semb']}", "--option",
                       f"semb.backbone={paths['semb_backbone']}", "--resamples", "20", "--out", str(tmp_path / "out"))
    assert code == 0, output
    notes = json.loads((tmp_path / "out" / "meta_eval.json").read_text())["notes"]
    assert len(notes) == 1 and "not verified official ones (semb)" in notes[0] and "meaningless" in notes[0]
    assert "> Note: scored with weights that are not verified official ones (semb)" in output


@pytest.mark.slow
def test_two_launched_processes_write_what_one_writes(tmp_path):
    """torchrun with 2 processes: each computes the same report, only the main one prints and writes; the files
    equal a single-process run's byte for byte."""
    import os
    import subprocess
    import sys

    write_rexval(tmp_path / "data", seed=11)
    env = dict(os.environ, OMP_NUM_THREADS="1", REXRANK_PROGRESS="0", HF_HUB_OFFLINE="1")
    common = ["meta-eval", "--dataset", "rexval", "--data-dir", str(tmp_path / "data"), "--metrics", "bleu2",
              "--resamples", "40"]
    single = subprocess.run([sys.executable, "-m", "rexrank", *common, "--out", str(tmp_path / "one")], env=env,
                            capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    multi = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                            "-m", "rexrank", *common, "--out", str(tmp_path / "two")], env=env, capture_output=True,
                           text=True, timeout=300)
    assert multi.returncode == 0, multi.stderr[-3000:]
    names = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "two").iterdir())
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    assert multi.stdout.count("**Meta-evaluation on rexval**") == 1


def test_the_report_written_has_the_shape_its_light_owner_declares(tmp_path):
    """meta_eval_report owns the report's shape (issue 36 point 1): what `rexrank meta-eval` writes is exactly it,
    the board's summary of it accepts it, and the owner loads no scoring stack (`leaderboard add-meta-eval` and
    `leaderboard add` import it through the store)."""
    import subprocess
    import sys

    from rexrank.evaluation import meta_eval_report as shape

    write_rexval(tmp_path / "data" / "rexval-dataset" / "1.0.0", seed=3)
    report = json.loads(json.dumps(rexrank.meta_eval("rexval", ["bleu2"], data_dir=tmp_path / "data", resamples=20)))
    assert set(report) == (set(shape.META_EVAL_KEYS) - {"confidence"}) | set(shape.REPORT_ONLY_KEYS)
    assert tuple(report["settings"]) == shape.SETTINGS_KEYS
    assert set(report["metrics"]["bleu2"]["targets"]) >= set(shape.GOALS) and set(report["raters"]) == set(shape.GOALS)
    summary = shape.meta_eval_summary(report)
    assert tuple(summary) == shape.META_EVAL_KEYS and summary["confidence"] == report["settings"]["confidence"]
    code = ("import sys, rexrank.evaluation.meta_eval_report; "
            "print(sorted(m for m in ('numpy', 'scipy', 'pandas', 'rexrank.evaluation.meta_eval') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
