"""`rexrank compare` in one pass (issue 25): every pair and ranking from one draw equals testing each pair alone.

The oracle is the pairwise code this replaced (rexrank 3b7a29e's ``evaluation/compare.py``, copied below unchanged
but for names): one pair at a time, its own draw of the same streams. Same seed, same inputs: every difference, CI,
p-value and rank interval agrees to 1e-12, for per-report metrics (mean and 1/mean, with NaNs that make pairs use
different studies) and corpus metrics (NLG from IU-Xray reports, CE F1) through the one path. The evaluation blocks
change nothing, and the memory the pass holds follows the documented bound.
"""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rexrank import progress
from rexrank.errors import InputError
from rexrank.evaluation import bootstrap as bs
from rexrank.evaluation import statistics as st
from rexrank.evaluation.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    count_blocks,
    percentile_interval,
)
from rexrank.evaluation.compare import Run, compare_runs
from rexrank.evaluation.defaults import DEFAULT_PERMUTATIONS
from rexrank.metrics import REGISTRY, ce_f1, get, nlg
from rexrank.metrics.aggregation import (
    corpus_values,
    leaderboard_flags,
    leaderboard_higher_is_better,
    leaderboard_values,
    sum_rule,
)



# ---- the oracle: the pairwise implementation before issue 25 ---------------------------------------------------------
def old_blocks_of(total: int, n: int):
    rows = bs.rows_per_block(n)  # the streams' blocks, which the old code built by the same rule
    done = 0
    while done < total:
        size = min(rows, total - done)
        yield size
        done += size


def old_paired_test(a: np.ndarray, b: np.ndarray, *, aggregation: str = "mean", resamples: int = DEFAULT_RESAMPLES,
                permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED,
                confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    """Difference of the leaderboard values of A and B on paired studies, its CI and two p-values.

    Studies where either value is NaN are left out (and counted in ``n_excluded``).
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise InputError(f"paired values differ in length: {a.shape[0]} vs {b.shape[0]}")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    n = a.shape[0]
    out: dict[str, Any] = {"n": int(n), "n_excluded": int((~keep).sum())}
    if n == 0:
        return {**out, "value_a": None, "value_b": None, "difference": None, "ci_low": None, "ci_high": None,
                "p_bootstrap": None, "p_randomization": None}
    mean_a, mean_b = a.mean(), b.mean()
    observed = float(leaderboard_values(mean_a, aggregation) - leaderboard_values(mean_b, aggregation))
    both = np.column_stack([a, b])
    diffs = []
    for counts in count_blocks(n, resamples, seed):
        means = counts @ both / n
        diffs.append(leaderboard_values(means[:, 0], aggregation) - leaderboard_values(means[:, 1], aggregation))
    boot = np.concatenate(diffs)
    low, high = percentile_interval(boot, confidence)
    # Ties with the observed value count as "at least as extreme": tolerate float rounding of the matrix products.
    tol = 1e-12 * max(1.0, abs(observed))
    k_boot = int(np.sum(np.abs(boot - observed) >= abs(observed) - tol))
    rng = np.random.default_rng([seed, 1])  # its own stream, independent of the bootstrap's
    delta = (b - a) / n
    k_perm = 0
    for rows in old_blocks_of(permutations, n):
        swaps = rng.integers(0, 2, size=(rows, n), dtype=np.int8).astype(np.float64)
        shift = swaps @ delta
        perm = leaderboard_values(mean_a + shift, aggregation) - leaderboard_values(mean_b - shift, aggregation)
        k_perm += int(np.sum(np.abs(perm) >= abs(observed) - tol))
    return {**out, "value_a": float(leaderboard_values(mean_a, aggregation)),
            "value_b": float(leaderboard_values(mean_b, aggregation)),
            "flags_a": list(leaderboard_flags(float(mean_a), aggregation)),
            "flags_b": list(leaderboard_flags(float(mean_b), aggregation)),
            "difference": observed, "ci_low": float(low), "ci_high": float(high),
            "p_bootstrap": (k_boot + 1) / (resamples + 1), "p_randomization": (k_perm + 1) / (permutations + 1),
            "resamples": resamples, "permutations": permutations}


def old_rank_intervals(values: np.ndarray, *, aggregation: str, higher_is_better: bool,
                   resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                   confidence: float = DEFAULT_CONFIDENCE) -> dict[str, np.ndarray]:
    """Rank (1 = best) of each of M models (columns of ``values``), with a bootstrap CI of the rank.

    Studies with a NaN for any model are left out, so every resample ranks the models on the same studies.
    """
    from scipy.stats import rankdata

    values = np.asarray(values, dtype=np.float64)
    values = values[~np.isnan(values).any(axis=1)]
    n, m = values.shape
    if n == 0:
        nan = np.full(m, np.nan)
        return {"value": nan, "rank": nan, "rank_ci_low": nan, "rank_ci_high": nan, "n": 0}
    sign = -1.0 if higher_is_better else 1.0
    point = leaderboard_values(values.mean(axis=0), aggregation)
    ranks = rankdata(sign * point, method="min")
    boot_ranks = []
    for counts in count_blocks(n, resamples, seed):
        boot_ranks.append(old_ranks(leaderboard_values(counts @ values / n, aggregation), higher_is_better))
    boot = np.concatenate(boot_ranks)
    alpha = (1.0 - confidence) / 2.0
    low = np.quantile(boot, alpha, axis=0, method="lower")
    high = np.quantile(boot, 1.0 - alpha, axis=0, method="higher")
    return {"value": point, "rank": ranks, "rank_ci_low": low, "rank_ci_high": high, "n": n}


def old_corpus_paired_test(a: np.ndarray, b: np.ndarray, metric, *, resamples: int = DEFAULT_RESAMPLES,
                       permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED,
                       confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    """``paired_test`` for a corpus-level metric (CE F1): ``a`` and ``b`` are the two models' (n, statistics)
    per-study tables on the same studies. The headline output fills the usual fields; ``outputs`` holds every
    output's difference, CI and p-values. Same resamples as ``paired_test`` (same seed); a randomization swaps a
    study's whole row of statistics, so each model's sums move by one matrix product."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise InputError(f"paired statistics differ in shape: {a.shape} vs {b.shape}")
    n = a.shape[0]
    out: dict[str, Any] = {"n": int(n), "n_excluded": 0}
    if n == 0:
        return {**out, "value_a": None, "value_b": None, "difference": None, "ci_low": None, "ci_high": None,
                "p_bootstrap": None, "p_randomization": None}
    names = list(REGISTRY.cls(metric).OUTPUTS)
    value_a, value_b = corpus_values(a.sum(axis=0), n, metric), corpus_values(b.sum(axis=0), n, metric)
    observed = value_a - value_b
    tol = 1e-12 * np.maximum(1.0, np.abs(observed))
    diffs = []
    for counts in count_blocks(n, resamples, seed):
        diffs.append(corpus_values(counts @ a, n, metric) - corpus_values(counts @ b, n, metric))
    boot = np.concatenate(diffs)
    low, high = percentile_interval(boot, confidence)
    k_boot = np.sum(np.abs(boot - observed) >= np.abs(observed) - tol, axis=0)
    rng = np.random.default_rng([seed, 1])
    delta, sum_a, sum_b = b - a, a.sum(axis=0), b.sum(axis=0)
    k_perm = np.zeros(len(names), dtype=np.int64)
    for rows in old_blocks_of(permutations, n):
        swaps = rng.integers(0, 2, size=(rows, n), dtype=np.int8).astype(np.float64)
        shift = swaps @ delta
        perm = corpus_values(sum_a + shift, n, metric) - corpus_values(sum_b - shift, n, metric)
        k_perm += np.sum(np.abs(perm) >= np.abs(observed) - tol, axis=0)
    p_boot, p_perm = (k_boot + 1) / (resamples + 1), (k_perm + 1) / (permutations + 1)
    outputs = {name: {"value_a": float(value_a[j]), "value_b": float(value_b[j]), "difference": float(observed[j]),
                      "ci_low": float(low[j]), "ci_high": float(high[j]), "p_bootstrap": float(p_boot[j]),
                      "p_randomization": float(p_perm[j])} for j, name in enumerate(names)}
    head = outputs[names[0]]
    return {**out, **head, "headline": names[0], "flags_a": [], "flags_b": [], "outputs": outputs,
            "resamples": resamples, "permutations": permutations}


def old_corpus_rank_intervals(tables: Sequence[np.ndarray], metric, *, higher_is_better: bool,
                          resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                          confidence: float = DEFAULT_CONFIDENCE) -> dict[str, np.ndarray]:
    """``rank_intervals`` for a corpus metric's headline output: each model's (n, statistics) table, same studies."""
    from scipy.stats import rankdata

    stacked = np.stack([np.asarray(t, dtype=np.float64) for t in tables])  # (models, n, statistics)
    m, n = stacked.shape[:2]
    if n == 0:
        nan = np.full(m, np.nan)
        return {"value": nan, "rank": nan, "rank_ci_low": nan, "rank_ci_high": nan, "n": 0}
    point = corpus_values(stacked.sum(axis=1), n, metric)[:, 0]
    ranks = rankdata((-1.0 if higher_is_better else 1.0) * point, method="min")
    boot_ranks = []
    for counts in count_blocks(n, resamples, seed):
        heads = np.stack([corpus_values(counts @ stacked[j], n, metric)[:, 0] for j in range(m)], axis=1)
        boot_ranks.append(old_ranks(heads, higher_is_better))
    boot = np.concatenate(boot_ranks)
    alpha = (1.0 - confidence) / 2.0
    return {"value": point, "rank": ranks, "rank_ci_low": np.quantile(boot, alpha, axis=0, method="lower"),
            "rank_ci_high": np.quantile(boot, 1.0 - alpha, axis=0, method="higher"), "n": n}


def old_ranks(point: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Rank 1 = best; a NaN value ranks last (ties share the better rank)."""
    from scipy.stats import rankdata

    sign = -1.0 if higher_is_better else 1.0
    return rankdata(sign * np.where(np.isnan(point), np.inf * sign, point), method="min", axis=-1)


# ---- synthetic runs: IU-Xray reports, per-model noise -----------------------------------------------------------------
MODELS = 5
N = 160
BOOT = {"resamples": 150, "permutations": 400, "seed": 3, "confidence": 0.9}


@pytest.fixture(scope="module")
def tables(iu_xray_test) -> dict[str, np.ndarray]:
    """(models, studies, columns) per metric: NLG statistics of noisy copies of IU-Xray findings, CE F1 counts of
    noisy labels, and two per-report columns (BLEU-2 and RadCliQ-v1, whose 1/mean is the leaderboard value) with
    NaNs for some models, so pairs differ in the studies they use."""
    rng = np.random.default_rng(25)
    refs = [s["section_findings"] for s in iu_xray_test.values() if s.get("section_findings")][:N]
    metric = get("nlg", tokenizer="none").use_corpus(refs)
    ref_labels = rng.random((N, len(ce_f1.CONDITIONS))) < 0.25
    out: dict[str, list[np.ndarray]] = {"nlg": [], "ce_f1": [], "bleu2": [], "radcliq_v1": []}
    for k in range(MODELS):
        keep = (0.6, 0.6, 0.7, 0.8, 0.8)[k]  # share of the reference's words a model keeps: some pairs tie
        hyps = [" ".join(w for w in ref.split() if rng.random() < keep) or "normal" for ref in refs]
        stats = metric.statistics(hyps, refs)
        out["nlg"].append(stats)
        labels = np.where(rng.random(ref_labels.shape) < 0.6 + 0.08 * k, ref_labels, rng.random(ref_labels.shape) < 0.3)
        out["ce_f1"].append(ce_f1.study_statistics(labels, ref_labels))
        bleu = np.clip(stats[:, 0] * (0.8 + 0.05 * k) + 0.05 * rng.standard_normal(N), 0, 1)
        radcliq = 2.0 - 2.5 * bleu + 0.3 * rng.standard_normal(N)
        if k in (1, 3):
            bleu[rng.choice(N, 6 + k, replace=False)] = np.nan
        if k == 2:
            radcliq[rng.choice(N, 5, replace=False)] = np.nan
        out["bleu2"].append(bleu[:, None])
        out["radcliq_v1"].append(radcliq[:, None])
    return {name: np.stack(v) for name, v in out.items()}


def _runs(tables: dict[str, np.ndarray]) -> list[Run]:
    runs = []
    for k in range(MODELS):
        columns = {}
        for name, table in tables.items():
            columns.update(zip(sum_rule(name).columns, table[k].T))
        frame = pd.DataFrame({"study_id": [f"s{i}" for i in range(N)], "ref_sha256": [f"r{i}" for i in range(N)],
                              **columns})
        runs.append(Run(f"m{k}", frame, {"dataset": "iu_xray", "split": "test", "track": "findings"}, "mem"))
    return runs


def _oracle_test(name: str, table: np.ndarray, i: int, j: int) -> dict[str, Any]:
    spec = REGISTRY.spec(name)
    if spec.level == "corpus":
        return old_corpus_paired_test(table[i], table[j], name, **BOOT)
    return old_paired_test(table[i, :, 0], table[j, :, 0], aggregation=spec.leaderboard_aggregation, **BOOT)


def _oracle_ranking(name: str, table: np.ndarray) -> dict[str, Any]:
    spec = REGISTRY.spec(name)
    boot = {k: v for k, v in BOOT.items() if k != "permutations"}
    if spec.level == "corpus":
        return old_corpus_rank_intervals(list(table), name, higher_is_better=spec.higher_is_better, **boot)
    return old_rank_intervals(table[:, :, 0].T, aggregation=spec.leaderboard_aggregation,
                              higher_is_better=leaderboard_higher_is_better(spec), **boot)


def _close(ours: Any, theirs: Any, where: str) -> None:
    """Same keys, numbers within 1e-12 (None and NaN where the oracle has them)."""
    if isinstance(theirs, dict):
        assert set(ours) == set(theirs), (where, set(ours) ^ set(theirs))
        for key in theirs:
            _close(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(theirs, (list, tuple)):
        assert list(ours) == list(theirs), where
    elif theirs is None or (isinstance(theirs, float) and np.isnan(theirs)):
        assert ours is None or np.isnan(ours), (where, ours)
    elif isinstance(theirs, str):
        assert ours == theirs, where
    else:
        assert abs(float(ours) - float(theirs)) <= 1e-12, (where, ours, theirs)


def test_one_pass_equals_testing_each_pair_alone(tables):
    """compare_runs: every pair's test and every ranking equal the pairwise code's, per-report and corpus alike."""
    report = compare_runs(_runs(tables), **BOOT)
    assert report["metrics"] == ["bleu2", "radcliq_v1", "ce_f1", "nlg"]
    pairs = list(itertools.combinations(range(MODELS), 2))
    assert [(p["a"], p["b"]) for p in report["pairwise"]] == [(f"m{i}", f"m{j}") for i, j in pairs]
    studies_used = set()
    for (i, j), pair in zip(pairs, report["pairwise"]):
        for name, table in tables.items():
            ours = {k: v for k, v in pair["tests"][name].items() if k not in ("significant", "better", "verdict")}
            _close(ours, _oracle_test(name, table, i, j), f"{name} m{i}-m{j}")
            studies_used.add((name, ours["n"]))
    # The NaNs made pairs use different studies (several draws), and the tests are not all trivial.
    assert len({n for name, n in studies_used if name == "bleu2"}) >= 3
    assert any(p["tests"]["nlg"]["p_randomization"] < 0.05 for p in report["pairwise"])
    assert any(p["tests"]["nlg"]["p_bootstrap"] > 0.1 for p in report["pairwise"])
    for name, table in tables.items():
        theirs = _oracle_ranking(name, table)
        ours = report["ranking"][name]
        assert ours["n"] == theirs["n"]
        for j in range(MODELS):
            entry = ours["models"][f"m{j}"]
            assert abs(entry["value"] - theirs["value"][j]) <= 1e-12, name
            assert (entry["rank"], entry["rank_ci_low"], entry["rank_ci_high"]) == (
                theirs["rank"][j], theirs["rank_ci_low"][j], theirs["rank_ci_high"][j]), name


def test_each_metric_draws_its_streams_once(tables, monkeypatch):
    """Without NaNs, four metrics x ten pairs plus the rankings take one draw of resamples and one of swaps."""
    calls = {"counts": 0, "swaps": 0}

    def counted(kind, original):
        def wrapper(*args, **kwargs):
            calls[kind] += 1
            yield from original(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(st, "count_blocks", counted("counts", bs.count_blocks))
    monkeypatch.setattr(st, "swap_blocks", counted("swaps", bs.swap_blocks))
    clean = {name: np.nan_to_num(t, nan=0.5) for name, t in tables.items()}
    st.compare_tables(clean, {name: sum_rule(name) for name in clean}, **BOOT)
    assert calls == {"counts": 1, "swaps": 1}


def test_results_do_not_depend_on_the_evaluation_blocks(tables, monkeypatch):
    """Tiny product, pair and store blocks (many batches, many chunks) give exactly the same results."""
    rules = {name: sum_rule(name) for name in tables}
    whole = st.compare_tables(tables, rules, **BOOT)
    monkeypatch.setattr(st, "_BLOCK_CELLS", 300)
    monkeypatch.setattr(st, "_STORE_CELLS", 2_000)
    assert st._block_rows(60) == 5 and st._pair_block(5, 12) == 5
    small = st.compare_tables(tables, rules, **BOOT)
    for name in tables:
        for pair, test in whole[name]["tests"].items():
            _close(small[name]["tests"][pair], test, f"{name} {pair}")
        for key in ("value", "rank", "rank_ci_low", "rank_ci_high"):
            np.testing.assert_allclose(small[name]["ranking"][key], whole[name]["ranking"][key], rtol=0, atol=1e-12)


def test_memory_stays_within_the_documented_bound(monkeypatch):
    """The blocks are shaped from the bound, and a pass holds no more than ``memory_bound`` beyond its inputs and
    results: three times the models (nine times the pairs) stay under the bound, which never counts pairs."""
    monkeypatch.setattr(bs, "_BLOCK_CELLS", 24_000)
    monkeypatch.setattr(st, "_BLOCK_CELLS", 24_000)
    monkeypatch.setattr(st, "_STORE_CELLS", 60_000)
    for columns in (1, 7, 300, 50_000):
        assert st._block_rows(columns) * columns <= max(st._BLOCK_CELLS, columns)
        assert st._pair_block(st._block_rows(columns), 12) * st._block_rows(columns) * 12 <= max(
            st._BLOCK_CELLS, st._block_rows(columns) * 12)
    rng = np.random.default_rng(1)
    rules = {"bleu2": sum_rule("bleu2"), "nlg": sum_rule("nlg")}
    resamples, n = 60, 1000
    warm = {"bleu2": rng.random((3, 40, 1)), "nlg": rng.integers(1, 9, (3, 40, 12)).astype(float)}
    st.compare_tables(warm, rules, resamples=5, permutations=5)  # imports and caches outside the measurement
    held = {}
    for models in (12, 36):
        tables = {"bleu2": rng.random((models, n, 1)), "nlg": rng.integers(1, 9, (models, n, 12)).astype(float)}
        tracemalloc.start()
        results = st.compare_tables(tables, rules, resamples=resamples, permutations=60)
        retained, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        held[models] = peak - retained
        assert held[models] <= st.memory_bound(models, n, columns=12, width=6, resamples=resamples), held
        assert len(results["nlg"]["tests"]) == models * (models - 1) // 2
    assert held[36] < 4 * held[12], held  # linear in models (their columns), not in pairs (x9.5)


def test_progress_moves_with_every_block_of_draws(monkeypatch):
    """compare's progress advances from the first block of draws in steps of a few percent, not per (pair, metric)
    test (four models, one metric: six tests, 17% each before issue 25)."""
    monkeypatch.setattr(bs, "_BLOCK_CELLS", 500 * 40)  # 40 draws per block on 500 studies
    steps: list[tuple[int, int]] = []

    class Recording(progress.Task):
        def update(self, n: int = 1) -> None:
            super().update(n)
            steps.append((self.done, self.total))

    def recording(total, desc, unit="item", **options):
        return Recording(total, desc, unit, show=False)

    monkeypatch.setattr(progress, "task", recording)
    rng = np.random.default_rng(2)
    ids = [f"s{i}" for i in range(500)]
    runs = [Run(f"m{k}", pd.DataFrame({"study_id": ids, "bleu_score": rng.random(500)}), None, "mem")
            for k in range(4)]
    compare_runs(runs, resamples=400, permutations=1000)
    assert steps and steps[-1][0] == steps[-1][1]
    positions = [0] + [done for done, _ in steps]
    assert max(b - a for a, b in zip(positions, positions[1:])) <= 0.03 * steps[-1][1]
