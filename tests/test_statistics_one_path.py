"""One statistics path for every metric (issue 25, point 2): a single run's CIs go through ``SumRule`` for per-report
and corpus metrics alike, with the numbers of the two-path code before it to the last bit.

The oracle below is the single-run code as it was at commit d37e7df (``rexrank.evaluation.bootstrap``'s
``confidence_intervals``/``resample_means``/``corpus_intervals``, ``rexrank.evaluation.aggregate``'s
``metric_summary``/``corpus_summary`` and ``rexrank.evaluation.subgroups``' ``subgroup_summary``), copied here
trimmed to what results.json uses: a per-report path of stacked column means and a corpus path per metric.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest

from rexrank.evaluation import bootstrap as bs
from rexrank.evaluation.aggregate import json_safe, metric_summary
from rexrank.evaluation.harness import ScoreOptions, evaluate
from rexrank.evaluation.in_memory import summarize
from rexrank.evaluation.inputs import Inputs
from rexrank.metrics import REGISTRY, nlg
from rexrank.metrics.aggregation import (
    CORPUS,
    MEAN,
    SumRule,
    aggregate,
    corpus_aggregate,
    corpus_outputs,
    corpus_statistics,
    corpus_values,
    is_corpus,
    leaderboard_higher_is_better,
    leaderboard_values,
    sum_rule,
)

# -- the oracle: the two-path single-run code of d37e7df ---------------------------------------------------------------


def _old_resample_means(values, resamples, seed):
    values = np.asarray(values, dtype=np.float64)
    valid = ~np.isnan(values)
    filled = np.where(valid, values, 0.0)
    out = []
    for counts in bs.count_blocks(values.shape[0], resamples, seed):
        sums = counts @ filled
        if not valid.all():
            with np.errstate(invalid="ignore", divide="ignore"):
                out.append(sums / (counts @ valid.astype(np.float64)))
        else:
            out.append(sums / values.shape[0])
    return np.concatenate(out, axis=0)


def _old_confidence_intervals(columns, *, aggregations=None, resamples, seed, confidence):
    names = list(columns)
    if not names:
        return {}
    matrix = np.column_stack([np.asarray(columns[c], dtype=np.float64) for c in names])
    means_b = _old_resample_means(matrix, resamples, seed) if matrix.shape[0] else np.full((0, len(names)), np.nan)
    low, high = bs.percentile_interval(means_b, confidence)
    out = {}
    for j, name in enumerate(names):
        how = (aggregations or {}).get(name, "mean")
        summary = aggregate(matrix[:, j], how)
        entry = {"mean": summary.mean, "ci_low": float(low[j]), "ci_high": float(high[j]), "n": summary.n,
                 "n_nan": summary.n_nan, "leaderboard_value": summary.leaderboard_value,
                 "leaderboard_flags": list(summary.flags)}
        if summary.aggregation == MEAN:
            entry.update(leaderboard_ci_low=float(low[j]), leaderboard_ci_high=float(high[j]))
        else:
            lb_low, lb_high = bs.percentile_interval(leaderboard_values(means_b[:, j], how), confidence)
            entry.update(leaderboard_ci_low=float(lb_low), leaderboard_ci_high=float(lb_high))
        out[name] = entry
    return out


def _old_corpus_intervals(statistics, metric, *, resamples, seed, confidence):
    statistics = np.asarray(statistics, dtype=np.float64)
    n = statistics.shape[0]
    point = corpus_aggregate(statistics, metric)
    names = corpus_outputs(metric)
    if n:
        resampled = np.concatenate([corpus_values(counts @ statistics, n, metric)
                                    for counts in bs.count_blocks(n, resamples, seed)], axis=0)
        low, high = bs.percentile_interval(resampled, confidence)
    else:
        low = high = np.full(len(names), np.nan)
    return {name: {"value": point[name], "ci_low": float(low[j]), "ci_high": float(high[j])}
            for j, name in enumerate(names)}


def _old_metric_summary(frame, names=None, *, resamples, seed, confidence):
    columns = {n: REGISTRY.spec(n).column for n in REGISTRY.names()
               if not is_corpus(REGISTRY.spec(n)) and REGISTRY.spec(n).column in frame.columns}
    corpus = {n: list(corpus_statistics(n)) for n in REGISTRY.names()
              if is_corpus(REGISTRY.spec(n)) and all(c in frame.columns for c in corpus_statistics(n))}
    wanted = list(names or list(columns) + list(corpus))
    plain = [n for n in wanted if n in columns]
    specs = {n: REGISTRY.spec(n) for n in plain}
    stats = _old_confidence_intervals({n: frame[columns[n]].to_numpy(dtype=np.float64) for n in plain},
                                      aggregations={n: specs[n].leaderboard_aggregation for n in plain},
                                      resamples=resamples, seed=seed, confidence=confidence)
    out = {}
    for name in plain:
        spec = specs[name]
        out[name] = {"column": spec.column, **stats[name], "higher_is_better": spec.higher_is_better,
                     "leaderboard_column": spec.leaderboard_column, "aggregation": spec.leaderboard_aggregation,
                     "leaderboard_higher_is_better": leaderboard_higher_is_better(spec)}
    for name in (n for n in wanted if n in corpus):
        spec = REGISTRY.spec(name)
        values = _old_corpus_intervals(frame[corpus[name]].to_numpy(dtype=np.float64), spec, resamples=resamples,
                                       seed=seed, confidence=confidence)
        head = next(iter(values))
        first = values[head]
        cls = REGISTRY.cls(name)
        out[name] = {"column": spec.column, "level": CORPUS, "headline": head, "mean": first["value"],
                     "ci_low": first["ci_low"], "ci_high": first["ci_high"], "n": int(len(frame)), "n_nan": 0,
                     "leaderboard_value": first["value"], "leaderboard_ci_low": first["ci_low"],
                     "leaderboard_ci_high": first["ci_high"], "leaderboard_flags": [], "values": values,
                     "shown": {output: cls.output_label(output) for output in cls.SHOWN},
                     "higher_is_better": spec.higher_is_better, "leaderboard_column": None, "aggregation": CORPUS,
                     "leaderboard_higher_is_better": spec.higher_is_better}
    return {n: out[n] for n in wanted if n in out}


def _old_group(frame, mask, names, **boot):
    part = frame.loc[np.asarray(mask, dtype=bool)]
    if len(part) == 0:
        return {"n": 0, "metrics": {}}
    summary = _old_metric_summary(part, names, **boot)
    fields = ("mean", "ci_low", "ci_high", "leaderboard_value", "leaderboard_ci_low", "leaderboard_ci_high", "values")
    return {"n": int(len(part)), "metrics": {k: {f: v[f] for f in fields if f in v} for k, v in summary.items()}}


def _old_subgroup_summary(frame, names, **boot):
    out = {}
    normal = frame["ref_normal"].to_numpy(dtype=bool) if "ref_normal" in frame.columns else None
    if normal is not None:
        out["normal_vs_abnormal"] = {"definition": 'CheXbert "No Finding" positive on the reference = normal',
                                     "normal": _old_group(frame, normal, names, **boot),
                                     "abnormal": _old_group(frame, ~normal, names, **boot)}
    sites = frame["site"].astype("string").fillna("(unknown)").to_numpy()
    out["sites"] = {site: _old_group(frame, sites == site, names, **boot) for site in sorted(set(sites))}
    if "green_error_free" in frame.columns:
        column = frame["green_error_free"].to_numpy(dtype=np.float64)
        green = {"error_free_rate": _old_confidence_intervals({"x": column}, **boot)["x"]}
        if normal is not None and (~normal).any():
            green["error_free_rate_abnormal"] = _old_confidence_intervals({"x": column[~normal]}, **boot)["x"]
        for entry in green.values():
            for key in [k for k in entry if k.startswith("leaderboard")]:
                del entry[key]
        out["green"] = green
    return out


# -- tests -----------------------------------------------------------------------------------------------------------


def _inputs(n: int, seed: int) -> Inputs:
    rng = random.Random(seed)
    words = "the heart size is normal no effusion or pneumothorax lungs are clear mild atelectasis cardiomegaly".split()
    refs = [" ".join(rng.choice(words) for _ in range(rng.randrange(4, 12))) for _ in range(n)]
    # fake_judge gives NaN for "unparseable": per-report NaNs on the same run as a corpus metric
    hyps = [" ".join(rng.choice(words) for _ in range(rng.randrange(3, 12))) + (" unparseable" if i % 7 == 0 else "")
            for i in range(n)]
    return Inputs([f"s{i}" for i in range(n)], hyps, refs,
                  attributes={f"s{i}": {"site": "AB"[i % 3 == 0]} for i in range(n)})


@pytest.mark.parametrize(("n", "metrics"), [
    (90, ("bleu2", "fake_len", "fake_lower", "fake_judge", "nlg")),  # several per-report (NaN, 1/mean) + corpus
    (700, ("fake_judge", "nlg")),  # one per-report column (NaN), larger n
    (40, ("bleu2",)),  # per-report only
])
def test_results_json_is_byte_identical_to_the_two_path_code(fake_metrics, n, metrics):
    """results.json (its bytes, as write_outputs writes them) of a run with per-report metrics (BLEU-2, fakes with a
    reciprocal leaderboard value and NaNs) and a corpus metric (NLG), seed 4: the one SumRule path gives exactly the
    bytes the two-path code gives on the same per-study table, headline metrics, subgroups and GREEN rate alike."""
    boot = {"resamples": 300, "seed": 4, "confidence": 0.95}
    run = evaluate(_inputs(n, seed=n), model="M", track="findings",
                   options=ScoreOptions(metrics=list(metrics), use_cache=False, **boot))
    results = run.results
    frame = run.per_study
    if "fake_judge" in metrics:
        assert results["metrics"]["fake_judge"]["n_nan"] > 0  # the NaN path is exercised
    expected = dict(results)
    expected["metrics"] = json_safe(_old_metric_summary(frame, list(results["metrics"]), **boot))
    expected["leaderboard"] = {e["leaderboard_column"]: e["leaderboard_value"] for e in expected["metrics"].values()
                               if e["leaderboard_column"]}
    expected["subgroups"] = json_safe(_old_subgroup_summary(frame, list(results["metrics"]), **boot))
    assert "sites" in results["subgroups"]
    assert "fake_len" not in metrics or {"normal_vs_abnormal", "green"} <= set(expected["subgroups"])
    old = json.dumps(expected, indent=2, allow_nan=False)
    new = json.dumps(results, indent=2, allow_nan=False)
    assert new == old


def test_a_corpus_metric_row_with_a_nan_is_left_out_and_counted_like_a_per_report_value():
    """The NaN rule is the rule's, not the kind's: a study whose statistics hold a NaN is left out of the sums and
    counted in n_nan, as a per-report NaN is (the two-path code raised for a corpus metric). The figures equal
    those of the table without that study's row on the same resamples of every study."""
    rng = np.random.default_rng(1)
    stats = rng.integers(0, 5, size=(30, len(nlg.STATISTICS))).astype(float)
    stats[:, 2:4] += 10  # lengths above the matches
    frame = pd.DataFrame(stats, columns=list(nlg.STATISTICS))
    frame.iloc[3, 5] = np.nan
    entry = metric_summary(frame, ["nlg"], resamples=200, seed=2)["nlg"]
    assert (entry["n"], entry["n_nan"]) == (29, 1)
    kept = np.delete(stats, 3, axis=0)
    expected = corpus_values(kept.sum(axis=0), 29, "nlg")
    assert entry["mean"] == pytest.approx(expected[0], abs=1e-12)
    resampled = []
    for idx in bs.index_matrix(30, 200, 2):
        idx = idx[idx != 3]
        resampled.append(corpus_values(stats[idx].sum(axis=0), len(idx), "nlg"))
    low, high = bs.percentile_interval(np.array(resampled), 0.95)
    assert entry["values"]["cider"]["ci_low"] == pytest.approx(low[nlg.OUTPUTS.index("cider")], rel=1e-12)
    assert entry["ci_high"] == pytest.approx(high[0], rel=1e-12)


def test_every_table_goes_one_way_per_report_the_one_column_case():
    """interval_tables takes per-report and corpus tables together: a one-column table's figures are the per-resample
    loop's NaN-skipping means, a corpus table's the loop's corpus values, on the same resamples of every study."""
    rng = np.random.default_rng(7)
    values = rng.random(80)
    values[[5, 9]] = np.nan
    plain = SumRule.of_aggregation(MEAN, column="v")
    stats = rng.integers(0, 4, size=(80, len(nlg.STATISTICS))).astype(float)
    stats[:, 2:4] += 8
    rules = {"plain": plain, "nlg": sum_rule("nlg")}
    figures = bs.interval_tables({"plain": values, "nlg": stats}, rules, resamples=150, seed=3)
    loop = []
    for idx in bs.index_matrix(80, 150, 3):
        v = values[idx]
        loop.append(np.nanmean(v))
    low, high = bs.percentile_interval(np.array(loop)[:, None], 0.95)
    f = figures["plain"]
    assert (f.n, f.n_nan) == (78, 2)
    assert f.mean[0] == pytest.approx(np.nanmean(values), rel=1e-12)
    assert (f.mean_low[0], f.mean_high[0]) == pytest.approx((low[0], high[0]), rel=1e-12)
    corpus = [corpus_values(stats[idx].sum(axis=0), 80, "nlg") for idx in bs.index_matrix(80, 150, 3)]
    c_low, _ = bs.percentile_interval(np.array(corpus), 0.95)
    np.testing.assert_allclose(figures["nlg"].value_low, c_low, rtol=1e-12)


def test_summarize_gives_the_results_figures_of_every_kind_of_metric():
    """rexrank.summarize (no CI) goes the same SumRule way as results.json: its mean, leaderboard value, counts and
    flags equal metric_summary's exactly, for a plain mean, a reciprocal with NaNs and a corpus metric; a corpus
    study with a NaN statistic is left out and counted (the two-path code raised)."""
    rng = np.random.default_rng(4)
    stats = rng.integers(0, 5, size=(25, len(nlg.STATISTICS))).astype(float)
    stats[:, 2:4] += 10
    frame = pd.DataFrame(stats, columns=list(nlg.STATISTICS))
    frame[REGISTRY.spec("bleu2").column] = rng.random(25)
    radcliq = rng.normal(1.0, 0.5, 25)
    radcliq[[2, 11]] = np.nan
    frame[REGISTRY.spec("radcliq_v1").column] = radcliq
    frame.iloc[6, 4] = np.nan  # one NLG statistic
    names = ["bleu2", "radcliq_v1", "nlg"]
    quick, full = summarize(frame, names), metric_summary(frame, names, resamples=20)
    for name in names:
        for key in ("mean", "n", "n_nan", "leaderboard_value", "leaderboard_flags"):
            assert quick[name][key] == full[name][key], (name, key)
    assert (quick["radcliq_v1"]["n_nan"], quick["nlg"]["n_nan"]) == (2, 1)
    assert quick["nlg"]["values"] == {k: v["value"] for k, v in full["nlg"]["values"].items()}
    assert quick["radcliq_v1"]["leaderboard_value"] == 1 / np.nanmean(radcliq)
