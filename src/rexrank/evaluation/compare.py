"""`rexrank compare`: paired significance tests and rankings with uncertainty, from per-study tables only.

For two models on the studies both scored, for every metric:
- paired bootstrap: resample studies (the same resample for both models), difference of the leaderboard values,
  its percentile CI, and a two-sided p-value counting resamples whose difference moved from the observed one by at
  least the observed size, |d* - d| >= |d| (the shift method of Berg-Kirkpatrick et al., 2012, both tails);
- approximate randomization: swap the two models' values of each study with probability 1/2, count permuted
  differences at least as large as the observed one, |d'| >= |d|.
Both p-values are (k + 1) / (n + 1), never exactly 0. A side is named better only when the difference is
significant at alpha = 1 - confidence by every measure: the CI excludes 0 and both p-values are below alpha
(``SIGNIFICANCE_RULE``); otherwise the verdict is "no significant difference". No metric is rescored: a
permutation of per-study values moves each model's mean by a matrix product, so 10,000 permutations take well under
a second.
For many models: each model's rank per metric with a bootstrap CI of the rank, all pairwise tests, per-site ranks,
normal/abnormal subgroups, GREEN error-free rates, and agreement between metrics (Kendall tau of model rankings).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rexrank import progress
from rexrank.errors import InputError
from rexrank.evaluation.aggregate import corpus_metrics, json_safe, metric_columns
from rexrank.evaluation.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    count_blocks,
    percentile_interval,
)
from rexrank.evaluation.disclosure import REFERENCE_KEY_COLUMNS
from rexrank.evaluation.subgroups import ERROR_FREE_COLUMN, SITE_COLUMN, normal_mask, site_masks
from rexrank.metrics import REGISTRY
from rexrank.metrics.aggregation import (
    MEAN,
    aggregate,
    corpus_outputs,
    corpus_values,
    is_corpus,
    leaderboard_flags,
    leaderboard_higher_is_better,
    leaderboard_values,
    nan_means,
)

DEFAULT_PERMUTATIONS = 10_000
NO_SIGNIFICANT_DIFFERENCE = "no significant difference"
# Conservative on purpose: a reader acts on a named winner, so all three measures must agree before one is named.
SIGNIFICANCE_RULE = ("a model is named better only when the {confidence:.0%} CI of the difference excludes 0 and "
                     "both p-values (paired bootstrap, approximate randomization) are below alpha = {alpha:g}; "
                     f"otherwise '{NO_SIGNIFICANT_DIFFERENCE}'")
_BLOCK_CELLS = 4_000_000


@dataclass
class Run:
    name: str
    frame: pd.DataFrame
    results: dict[str, Any] | None
    source: str


def load_run(path: str | os.PathLike) -> Run:
    """A `rexrank score` results folder, or a per_study.parquet file (with its results.json beside it, if any)."""
    from rexrank.evaluation.harness import PER_STUDY, RESULTS

    path = Path(path)
    parquet = path / PER_STUDY if path.is_dir() else path
    if not parquet.is_file():
        raise InputError(f"{path}: expected a `rexrank score` results folder (holding {PER_STUDY}) or a "
                         f"{PER_STUDY} file")
    try:
        frame = pd.read_parquet(parquet)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is one user-facing error
        raise InputError(f"{parquet} is not a readable parquet file: {exc}") from None
    if "study_id" not in frame.columns:
        raise InputError(f"{parquet} has no study_id column: not a rexrank per-study table")
    results_path = parquet.parent / RESULTS
    results = None
    if results_path.is_file():
        from rexrank.evaluation.predictions import parse_json

        results, problem = parse_json(results_path.read_text(encoding="utf-8", errors="replace"))
        if problem or not isinstance(results, dict):
            raise InputError(f"{results_path}: {problem or 'not a JSON object'}; pass a `rexrank score` results "
                             "folder, or its per_study.parquet alone")
    name = (results or {}).get("model") or (parquet.parent.name if parquet.name == PER_STUDY else parquet.stem)
    return Run(str(name), frame, results, str(path))


def _unique_names(runs: list[Run]) -> None:
    seen: dict[str, int] = {}
    for run in runs:
        if run.name in seen:
            seen[run.name] += 1
            run.name = f"{run.name} ({seen[run.name]})"
        else:
            seen[run.name] = 1


def _check_compatible(runs: list[Run]) -> list[str]:
    """Same dataset/split/track where known; returns warnings for what cannot be checked."""
    notes = []
    for key in ("dataset", "split", "track"):
        values = {r.results.get(key) for r in runs if r.results}
        if len(values) > 1:
            raise InputError(f"the runs differ in {key} ({', '.join(sorted(map(str, values)))}): compare runs "
                             "scored on the same test set and track")
    for metric in ("fingerprints",):
        by_run = {r.name: (r.results or {}).get(metric, {}) for r in runs}
        names = set().union(*[set(v) for v in by_run.values()])
        for name in sorted(names):
            prints = {v.get(name) for v in by_run.values() if v.get(name)}
            if len(prints) > 1:
                notes.append(f"{name} was computed with different configurations (fingerprints "
                             f"{', '.join(sorted(prints))}): its differences include the configuration change")
    return notes


def align(runs: list[Run]) -> tuple[list[str], list[pd.DataFrame], list[str]]:
    """Restrict every run to the studies all of them scored (in the first run's order); check references agree."""
    if len(runs) < 2:
        raise InputError("compare needs at least two runs")
    shared = set(runs[0].frame["study_id"])
    for run in runs[1:]:
        shared &= set(run.frame["study_id"])
    if not shared:
        raise InputError("the runs share no study: nothing to compare")
    ids = [i for i in runs[0].frame["study_id"] if i in shared]
    frames = []
    for run in runs:
        if run.frame["study_id"].duplicated().any():
            raise InputError(f"{run.source}: duplicate study ids in the per-study table")
        frames.append(run.frame.set_index("study_id").loc[ids].reset_index())
    notes = []
    # An open set's plain reference hashes, or a private set's keyed ones (same host secret, same keys).
    for key in REFERENCE_KEY_COLUMNS:
        if not all(key in f.columns for f in frames):
            continue
        base = frames[0][key].to_numpy()
        for run, frame in zip(runs[1:], frames[1:]):
            differ = int((frame[key].to_numpy() != base).sum())
            if differ:
                raise InputError(f"{run.name} and {runs[0].name} were scored against different references for "
                                 f"{differ} shared studies: compare runs on the same ground truth")
    sizes = [len(r.frame) for r in runs]
    if any(s != len(ids) for s in sizes):
        notes.append(f"compared on the {len(ids)} studies every run scored (runs had {', '.join(map(str, sizes))})")
    return ids, frames, notes


def _blocks_of(total: int, n: int):
    rows = max(1, _BLOCK_CELLS // max(n, 1))
    done = 0
    while done < total:
        size = min(rows, total - done)
        yield size
        done += size


def paired_test(a: np.ndarray, b: np.ndarray, *, aggregation: str = "mean", resamples: int = DEFAULT_RESAMPLES,
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
    for rows in _blocks_of(permutations, n):
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


def rank_intervals(values: np.ndarray, *, aggregation: str, higher_is_better: bool,
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
        boot_ranks.append(_ranks(leaderboard_values(counts @ values / n, aggregation), higher_is_better))
    boot = np.concatenate(boot_ranks)
    alpha = (1.0 - confidence) / 2.0
    low = np.quantile(boot, alpha, axis=0, method="lower")
    high = np.quantile(boot, 1.0 - alpha, axis=0, method="higher")
    return {"value": point, "rank": ranks, "rank_ci_low": low, "rank_ci_high": high, "n": n}


def corpus_paired_test(a: np.ndarray, b: np.ndarray, metric, *, resamples: int = DEFAULT_RESAMPLES,
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
    for rows in _blocks_of(permutations, n):
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


def corpus_rank_intervals(tables: Sequence[np.ndarray], metric, *, higher_is_better: bool,
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
        boot_ranks.append(_ranks(heads, higher_is_better))
    boot = np.concatenate(boot_ranks)
    alpha = (1.0 - confidence) / 2.0
    return {"value": point, "rank": ranks, "rank_ci_low": np.quantile(boot, alpha, axis=0, method="lower"),
            "rank_ci_high": np.quantile(boot, 1.0 - alpha, axis=0, method="higher"), "n": n}


def _metric_names(frames: list[pd.DataFrame], requested: Sequence[str] | None) -> list[str]:
    common = None
    for frame in frames:
        names = set(metric_columns(frame)) | set(corpus_metrics(frame))
        common = names if common is None else common & names
    ordered = [n for n in REGISTRY.names() if n in (common or set())]
    if requested:
        wanted = [REGISTRY.canonical(m) for m in requested]
        absent = [m for m in wanted if m not in ordered]
        if absent:
            raise InputError(f"not every run has the metric(s) {', '.join(absent)}; shared: {', '.join(ordered)}")
        ordered = wanted
    if not ordered:
        raise InputError("the runs share no metric column")
    return ordered


@dataclass
class _Aligned:
    """The runs restricted to their shared studies: what every part of a comparison reads."""

    models: list[str]
    frames: list[pd.DataFrame]
    names: list[str]  # metrics every run has, registry order (or as requested)

    @property
    def per_report(self) -> list[str]:
        """The metrics that are means of per-study values (subgroups and agreement read only these)."""
        return [n for n in self.names if not is_corpus(n)]

    def statistics(self, name: str) -> list[np.ndarray]:
        """A corpus metric's (studies, statistics) table of each model."""
        columns = corpus_metrics(self.frames[0])[name]
        return [f[columns].to_numpy(dtype=np.float64) for f in self.frames]

    def matrix(self, name: str, mask: np.ndarray | None = None) -> np.ndarray:
        """(studies, models) per-study values of one metric, optionally for a subset of studies."""
        column = REGISTRY.spec(name).column
        stacked = np.column_stack([f[column].to_numpy(dtype=np.float64) for f in self.frames])
        return stacked if mask is None else stacked[mask]


def compare_runs(runs: list[Run], metrics: Sequence[str] | None = None, *, resamples: int = DEFAULT_RESAMPLES,
                 permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED,
                 confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    """Rankings with rank CIs, all pairwise tests, subgroups and metric agreement of runs on their shared studies."""
    aligned, ids, notes = _align_runs(runs, metrics)
    boot = {"resamples": resamples, "seed": seed, "confidence": confidence}
    alpha = significance_level(confidence)
    report: dict[str, Any] = {"models": aligned.models, "n_studies": len(ids), "metrics": aligned.names,
                              "settings": {**boot, "permutations": permutations, "alpha": alpha,
                                           "significance_rule": SIGNIFICANCE_RULE.format(confidence=confidence,
                                                                                         alpha=alpha)},
                              "notes": notes}
    first = runs[0].results or {}
    report.update({k: first.get(k) for k in ("dataset", "split", "track")})
    report["ranking"] = _rankings(aligned, **boot)
    report["pairwise"] = _pairwise_tests(aligned, permutations=permutations, **boot)
    report["subgroups"] = _subgroups(aligned)
    report["agreement"] = _agreement(aligned, report["ranking"])
    return json_safe(report)


def _align_runs(runs: list[Run], metrics: Sequence[str] | None) -> tuple[_Aligned, list[str], list[str]]:
    """Unique model names, compatibility checks, shared studies and shared metrics; notes for the report."""
    _unique_names(runs)
    notes = _check_compatible(runs)
    ids, frames, align_notes = align(runs)
    names = _metric_names(frames, metrics)
    return _Aligned([r.name for r in runs], frames, names), ids, notes + align_notes


def _rankings(aligned: _Aligned, **boot: Any) -> dict[str, Any]:
    """Each model's leaderboard value and rank per metric, with a bootstrap CI of the rank."""
    ranking: dict[str, Any] = {}
    for name in aligned.names:
        spec = REGISTRY.spec(name)
        if is_corpus(spec):
            r = corpus_rank_intervals(aligned.statistics(name), spec, higher_is_better=spec.higher_is_better, **boot)
        else:
            r = rank_intervals(aligned.matrix(name), aggregation=spec.leaderboard_aggregation,
                               higher_is_better=leaderboard_higher_is_better(spec), **boot)
        ranking[name] = {"leaderboard_column": spec.leaderboard_column, "n": r["n"], "models": {
            model: {"value": r["value"][j], "rank": r["rank"][j], "rank_ci_low": r["rank_ci_low"][j],
                    "rank_ci_high": r["rank_ci_high"][j]} for j, model in enumerate(aligned.models)}}
    return ranking


def _pairwise_tests(aligned: _Aligned, *, permutations: int, resamples: int, seed: int,
                    confidence: float) -> list[dict[str, Any]]:
    """Paired bootstrap and randomization tests of every pair of models on every metric."""
    models = aligned.models
    pairs = []
    n_tests = len(models) * (len(models) - 1) // 2 * len(aligned.names)
    with progress.task(n_tests, "compare: paired tests", unit="test") as task:
        for i, j in itertools.combinations(range(len(models)), 2):
            tests = {}
            for name in aligned.names:
                if is_corpus(name):
                    tables = aligned.statistics(name)
                    tests[name] = corpus_paired_test(tables[i], tables[j], name, resamples=resamples,
                                                     permutations=permutations, seed=seed, confidence=confidence)
                    tests[name].update(verdict(tests[name], name, models[i], models[j],
                                               significance_level(confidence)))
                    task.update(1)
                    continue
                values = aligned.matrix(name)
                tests[name] = paired_test(values[:, i], values[:, j],
                                          aggregation=REGISTRY.spec(name).leaderboard_aggregation,
                                          resamples=resamples, permutations=permutations, seed=seed,
                                          confidence=confidence)
                tests[name].update(verdict(tests[name], name, models[i], models[j], significance_level(confidence)))
                task.update(1)
            pairs.append({"a": models[i], "b": models[j], "tests": tests})
    return pairs


def _subgroups(aligned: _Aligned) -> dict[str, Any]:
    """Normal/abnormal and per-site values (sites also ranked), and GREEN error-free rates.

    Groups are defined by ``evaluation.subgroups`` on the first run's table: they are properties of the references,
    which every run shares (``align`` checked that).
    """
    out: dict[str, Any] = {}
    normal = _shared_normal_mask(aligned.frames)
    if normal is not None:
        out["normal_vs_abnormal"] = {group: {"n": int(mask.sum()), "metrics": _group_values(aligned, mask)}
                                     for group, mask in (("normal", normal), ("abnormal", ~normal))}
    if all(SITE_COLUMN in f.columns for f in aligned.frames):
        out["sites"] = {site: {"n": int(mask.sum()), "metrics": _group_values(aligned, mask, with_rank=True)}
                        for site, mask in site_masks(aligned.frames[0]).items()}
    if all(ERROR_FREE_COLUMN in f.columns for f in aligned.frames):
        out["green"] = {model: _error_free_rates(frame, normal) for model, frame in zip(aligned.models, aligned.frames)}
    return out


def _error_free_rates(frame: pd.DataFrame, normal: np.ndarray | None) -> dict[str, float | None]:
    """Share of reports without a clinically significant GREEN error, overall and on abnormal studies."""
    rate = frame[ERROR_FREE_COLUMN].to_numpy(dtype=np.float64)
    entry = {"error_free_rate": _rate(rate)}
    if normal is not None and (~normal).any():
        entry["error_free_rate_abnormal"] = _rate(rate[~normal])
    return entry


def _rate(values: np.ndarray) -> float | None:
    # A rate is a plain mean of 0/1 values: the aggregation rule's mean, None when no study could tell.
    mean = aggregate(values, MEAN).mean
    return None if np.isnan(mean) else mean


def _agreement(aligned: _Aligned, ranking: dict[str, Any]) -> dict[str, Any]:
    """Kendall tau between the metrics' model rankings (3+ models) and Spearman rho of per-study values."""
    from scipy.stats import kendalltau

    models, names = aligned.models, aligned.names
    agreement: dict[str, Any] = {}
    if len(models) >= 3 and len(names) >= 2:
        taus: dict[str, dict[str, float]] = {}
        for x, y in itertools.combinations(names, 2):
            rx = np.asarray([ranking[x]["models"][m]["rank"] for m in models], dtype=float)
            ry = np.asarray([ranking[y]["models"][m]["rank"] for m in models], dtype=float)
            tau = kendalltau(rx, ry).statistic
            taus.setdefault(x, {})[y] = float(tau)
            taus.setdefault(y, {})[x] = float(tau)
        agreement["kendall_tau_model_rankings"] = taus
    names = aligned.per_report  # a corpus metric has no per-study value to correlate
    if len(names) >= 2:
        # Every (study, model) pair is one observation: how far the metrics agree on individual reports.
        pooled = pd.DataFrame({n: aligned.matrix(n).reshape(-1, order="F") for n in names})
        rho = pooled.corr(method="spearman")
        agreement["spearman_per_study"] = {a: {b: float(rho.loc[a, b]) for b in names} for a in names}
    return agreement


def significance_level(confidence: float) -> float:
    """alpha of the tests: the complement of the CI level, so the CI and the p-values answer the same question."""
    return round(1.0 - confidence, 12)  # 1 - 0.95 is 0.050000000000000044 in floats


def verdict(test: dict[str, Any], name: str, a: str, b: str, alpha: float) -> dict[str, Any]:
    """Which of A and B is better on one metric, by ``SIGNIFICANCE_RULE``; the fields compare.json holds.

    ``significant``: true/false, or None when the test could not decide (no usable study, a flagged value);
    ``better``: the better model's name when significant, else None; ``verdict``: the same in words.
    """
    if test.get("difference") is None:
        return {"significant": None, "better": None, "verdict": "not tested: no study has values for both"}
    flagged = [f"{model}: {flag}" for model, key in ((a, "flags_a"), (b, "flags_b")) for flag in test.get(key) or ()]
    if flagged:
        # A negative or zero mean under 1/mean has no meaningful leaderboard value to compare.
        return {"significant": None, "better": None, "verdict": "not decided: " + "; ".join(flagged)}
    low, high = test.get("ci_low"), test.get("ci_high")
    excludes_zero = low is not None and high is not None and (low > 0 or high < 0)
    significant = bool(test["difference"] != 0 and excludes_zero and test["p_bootstrap"] < alpha
                       and test["p_randomization"] < alpha)
    if not significant:
        return {"significant": False, "better": None, "verdict": NO_SIGNIFICANT_DIFFERENCE}
    better = a if (test["difference"] > 0) == leaderboard_higher_is_better(name) else b
    return {"significant": True, "better": better, "verdict": f"{better} is better"}


def _shared_normal_mask(frames: list[pd.DataFrame]) -> np.ndarray | None:
    # The reference labels are a property of the reference: take the first run that has them (all share it).
    for frame in frames:
        mask = normal_mask(frame)
        if mask is not None:
            return mask
    return None


def _ranks(point: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Rank 1 = best; a NaN value ranks last (ties share the better rank)."""
    from scipy.stats import rankdata

    sign = -1.0 if higher_is_better else 1.0
    return rankdata(sign * np.where(np.isnan(point), np.inf * sign, point), method="min", axis=-1)


def _group_values(aligned: _Aligned, mask: np.ndarray, with_rank: bool = False) -> dict[str, Any]:
    """Each model's leaderboard value per metric on a subset of studies (and its rank among the models)."""
    out = {}
    for name in aligned.names:
        spec = REGISTRY.spec(name)
        if is_corpus(spec):
            # A corpus metric's group value is its headline output of the group's summed statistics (CE F1: the
            # group's TP/FP/FN), every other output alongside, exactly as over the whole set.
            tables = [t[mask] for t in aligned.statistics(name)]
            every = [corpus_values(t.sum(axis=0), len(t), spec) for t in tables]
            point = np.array([v[0] for v in every])
            outputs = corpus_outputs(spec)
            entry = {model: {"value": float(point[j]), "values": dict(zip(outputs, map(float, every[j])))}
                     for j, model in enumerate(aligned.models)}
            if with_rank and int(mask.sum()):
                for j, rank in enumerate(_ranks(point, spec.higher_is_better)):
                    entry[aligned.models[j]]["rank"] = int(rank)
            out[name] = entry
            continue
        values = aligned.matrix(name, mask)
        point = leaderboard_values(nan_means(values, axis=0), spec)
        entry = {model: {"value": float(point[j])} for j, model in enumerate(aligned.models)}
        if with_rank and len(values):
            for j, rank in enumerate(_ranks(point, leaderboard_higher_is_better(spec))):
                entry[aligned.models[j]]["rank"] = int(rank)
        out[name] = entry
    return out


def _fmt(value: Any, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _rank(entry: dict[str, Any]) -> str:
    if entry.get("rank") is None:
        return "(no rank: no usable study)"
    return f"#{entry['rank']:.0f} [{entry['rank_ci_low']:.0f}-{entry['rank_ci_high']:.0f}]"


def _p(value: Any) -> str:
    return "n/a" if value is None else (f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}")


def _alpha(settings: dict[str, Any]) -> str:
    return f"{settings.get('alpha', significance_level(settings['confidence'])):g}"


def _rule(settings: dict[str, Any]) -> str:
    return settings.get("significance_rule") or SIGNIFICANCE_RULE.format(
        confidence=settings["confidence"], alpha=significance_level(settings["confidence"]))


def _verdict_text(test: dict[str, Any]) -> str:
    return test.get("verdict") or NO_SIGNIFICANT_DIFFERENCE


def markdown(report: dict[str, Any]) -> str:
    lines = [f"**Comparison of {', '.join(report['models'])}** on {report['n_studies']} shared studies", ""]
    lines += ["| Metric | " + " | ".join(f"{m} (rank, {report['settings']['confidence']:.0%} CI)"
                                         for m in report["models"]) + " |",
              "|---|" + "---:|" * len(report["models"])]
    for name, entry in report["ranking"].items():
        cells = []
        for model in report["models"]:
            cells.append(f"{_fmt(entry['models'][model]['value'])} {_rank(entry['models'][model])}")
        lines.append(f"| {entry['leaderboard_column'] or name} | " + " | ".join(cells) + " |")
    lines.append("")
    s = report["settings"]
    lines += [f"| A | B | Metric | A - B | CI | p (bootstrap) | p (randomization) | Verdict (alpha {_alpha(s)}) |",
              "|---|---|---|---:|---:|---:|---:|---|"]
    for pair in report["pairwise"]:
        for name, t in pair["tests"].items():
            label = REGISTRY.spec(name).leaderboard_column or name
            lines.append(f"| {pair['a']} | {pair['b']} | {label} | {_fmt(t['difference'])} | "
                         f"[{_fmt(t['ci_low'])}, {_fmt(t['ci_high'])}] | {_p(t['p_bootstrap'])} | "
                         f"{_p(t['p_randomization'])} | {_verdict_text(t)} |")
    lines.append("")
    lines.append(f"Paired bootstrap: {s['resamples']} resamples; approximate randomization: {s['permutations']} "
                 f"permutations; seed {s['seed']}; p = (k+1)/(n+1). No correction for multiple comparisons.")
    lines.append(f"Verdict: {_rule(s)}.")
    for note in report.get("notes", []):
        lines.append(f"\nNote: {note}")
    return "\n".join(lines) + "\n"


def print_report(report: dict[str, Any], console=None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    table = Table(title=f"Ranking on {report['n_studies']} shared studies (rank with {report['settings']['confidence']:.0%} CI)",
                  title_justify="left")
    table.add_column("Metric")
    for model in report["models"]:
        table.add_column(model, justify="right")
    for name, entry in report["ranking"].items():
        cells = [f"{_fmt(entry['models'][m]['value'])}  {_rank(entry['models'][m])}" for m in report["models"]]
        table.add_row(entry["leaderboard_column"] or name, *cells)
    console.print(table)
    tests = Table(title="Paired tests", title_justify="left")
    verdict_column = f"Verdict (alpha {_alpha(report['settings'])})"
    for column in ("A", "B", "Metric", "A - B", "CI", "p boot", "p rand", verdict_column):
        tests.add_column(column, justify="right" if column in ("A - B", "CI", "p boot", "p rand") else "left")
    for pair in report["pairwise"]:
        for name, t in pair["tests"].items():
            cells = (pair["a"], pair["b"], REGISTRY.spec(name).leaderboard_column or name, _fmt(t["difference"]),
                     f"[{_fmt(t['ci_low'])}, {_fmt(t['ci_high'])}]", _p(t["p_bootstrap"]), _p(t["p_randomization"]),
                     _verdict_text(t))
            tests.add_row(*(escape(cell) for cell in cells))  # "[n/a, n/a]" would otherwise be read as markup
    console.print(tests)
    console.print(f"verdict: {_rule(report['settings'])}", markup=False)
    for note in report.get("notes", []):
        console.print(f"note: {note}")
