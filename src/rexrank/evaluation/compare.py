"""`rexrank compare`: paired significance tests and rankings with uncertainty, from per-study tables only.

For two models on the studies both scored, for every metric:
- paired bootstrap: resample studies (the same resample for both models), difference of the leaderboard values,
  its percentile CI, and a two-sided p-value counting resamples whose difference moved from the observed one by at
  least the observed size, |d* - d| >= |d| (the shift method of Berg-Kirkpatrick et al., 2012, both tails);
- approximate randomization: swap the two models' values of each study with probability 1/2, count permuted
  differences at least as large as the observed one, |d'| >= |d|.
Both p-values are (k + 1) / (n + 1), never exactly 0. A side is named better only when the difference is
significant at alpha = 1 - confidence by every measure: the CI excludes 0 and both p-values are below alpha
(``SIGNIFICANCE_RULE``); otherwise the verdict is "no significant difference". No metric is rescored: every
metric is a function of column sums of its per-study table (``SumRule``), so a resample or a permutation moves every
model's sums by one matrix product; ``statistics.compare_tables`` draws the resamples and swaps once and evaluates
every model, pair and metric from them (per-report and corpus metrics alike).
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

from rexrank.errors import InputError
from rexrank.evaluation.aggregate import corpus_metrics, json_safe, metric_columns
from rexrank.evaluation.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from rexrank.evaluation.disclosure import REFERENCE_KEY_COLUMNS
from rexrank.evaluation.statistics import DEFAULT_PERMUTATIONS, compare_tables, ranks, usable_studies
from rexrank.evaluation.subgroups import ERROR_FREE_COLUMN, SITE_COLUMN, normal_mask, site_masks
from rexrank.metrics import REGISTRY
from rexrank.metrics.aggregation import MEAN, SumRule, aggregate, leaderboard_higher_is_better, sum_rule

NO_SIGNIFICANT_DIFFERENCE = "no significant difference"
# Conservative on purpose: a reader acts on a named winner, so all three measures must agree before one is named.
SIGNIFICANCE_RULE = ("a model is named better only when the {confidence:.0%} CI of the difference excludes 0 and "
                     "both p-values (paired bootstrap, approximate randomization) are below alpha = {alpha:g}; "
                     f"otherwise '{NO_SIGNIFICANT_DIFFERENCE}'")


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
    # Plain lists: iterating an Arrow-backed id column element by element cost most of a 24-run compare's time.
    listed = [run.frame["study_id"].tolist() for run in runs]
    shared = set(listed[0])
    for other in listed[1:]:
        shared &= set(other)
    if not shared:
        raise InputError("the runs share no study: nothing to compare")
    ids = [i for i in listed[0] if i in shared]
    frames = []
    for run, own in zip(runs, listed):
        if run.frame["study_id"].duplicated().any():
            raise InputError(f"{run.source}: duplicate study ids in the per-study table")
        # Runs of one test set usually list the same studies in the same order: nothing to reorder then.
        frames.append(run.frame.reset_index(drop=True) if own == ids else
                      run.frame.set_index("study_id").loc[ids].reset_index())
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
    notes += _infinite_as_missing(runs, frames)
    sizes = [len(r.frame) for r in runs]
    if any(s != len(ids) for s in sizes):
        notes.append(f"compared on the {len(ids)} studies every run scored (runs had {', '.join(map(str, sizes))})")
    return ids, frames, notes


def _infinite_as_missing(runs: list[Run], frames: list[pd.DataFrame]) -> list[str]:
    """+-inf in a per-study table is read as no value, as NaN is (``statistics.usable_studies``, the rule of the
    tests and rankings), so subgroups, error-free rates and agreement follow that rule too. No metric gives inf: a
    note names each run and column that held some."""
    notes = []
    for run, frame in zip(runs, frames):
        columns = frame.select_dtypes("floating").columns
        infinite = np.isinf(frame[columns].to_numpy())
        counts = {column: int(n) for column, n in zip(columns, infinite.sum(axis=0)) if n}
        if counts:
            frame[list(counts)] = frame[list(counts)].mask(np.isinf(frame[list(counts)]))
            listed = ", ".join(f"{n} in {column}" for column, n in counts.items())
            notes.append(f"{run.name}: infinite per-study values ({listed}) were read as missing, like NaN: left "
                         "out of every statistic (n_excluded counts them)")
    return notes


def paired_test(a: np.ndarray, b: np.ndarray, *, aggregation: str = "mean", resamples: int = DEFAULT_RESAMPLES,
                permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED,
                confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    """Difference of the leaderboard values of A and B on paired studies, its CI and two p-values.

    One pair through ``statistics.compare_tables`` (the path every comparison takes). Studies where either value
    is NaN are left out (and counted in ``n_excluded``).
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise InputError(f"paired values differ in length: {a.shape[0]} vs {b.shape[0]}")
    rule = SumRule.of_aggregation(aggregation)
    return _one_pair(np.stack([a, b])[:, :, None], rule, resamples=resamples, permutations=permutations, seed=seed,
                     confidence=confidence)


def corpus_paired_test(a: np.ndarray, b: np.ndarray, metric, *, resamples: int = DEFAULT_RESAMPLES,
                       permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED,
                       confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    """``paired_test`` of a corpus-level metric (CE F1): ``a`` and ``b`` are the two models' (n, statistics)
    tables on the same studies. The headline output fills the usual fields; ``outputs`` holds every output's
    difference, CI and p-values. Same path, resamples and swaps as ``paired_test`` (a swap exchanges a study's row)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise InputError(f"paired statistics differ in shape: {a.shape} vs {b.shape}")
    return _one_pair(np.stack([a, b]), sum_rule(metric), resamples=resamples, permutations=permutations, seed=seed,
                     confidence=confidence)


def _one_pair(table: np.ndarray, rule: SumRule, **options: Any) -> dict[str, Any]:
    out = compare_tables({rule.name: table}, {rule.name: rule}, pairs=[(0, 1)], rank=False, **options)
    return out[rule.name]["tests"][(0, 1)]


def rank_intervals(values: np.ndarray, *, aggregation: str, higher_is_better: bool,
                   resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                   confidence: float = DEFAULT_CONFIDENCE) -> dict[str, np.ndarray]:
    """Rank (1 = best) of each of M models (columns of ``values``), with a bootstrap CI of the rank.

    Studies with a NaN for any model are left out, so every resample ranks the models on the same studies.
    """
    values = np.asarray(values, dtype=np.float64)
    return _ranking(values.T[:, :, None], SumRule.of_aggregation(aggregation, higher_is_better), resamples=resamples,
                    seed=seed, confidence=confidence)


def _ranking(table: np.ndarray, rule: SumRule, **options: Any) -> dict[str, np.ndarray]:
    return compare_tables({rule.name: table}, {rule.name: rule}, pairs=[], **options)[rule.name]["ranking"]


def _metric_names(frames: list[pd.DataFrame], requested: Sequence[str] | None,
                  models: Sequence[str] = ()) -> tuple[list[str], dict[str, list[str]]]:
    """(the metrics compared: every run's, registry order, or as requested; {each metric only some runs have: those
    runs' models}, left out of the comparison and named in its notes, issue 49 point 7; empty when metrics were
    requested, since only those are compared)."""
    common = None
    held: list[set[str]] = []
    for frame in frames:
        names = set(metric_columns(frame)) | set(corpus_metrics(frame))
        held.append(names)
        common = names if common is None else common & names
    ordered = [n for n in REGISTRY.names() if n in (common or set())]
    partial = {n: [m for m, names in zip(models, held) if n in names]
               for n in REGISTRY.names() if n not in (common or set()) and any(n in names for names in held)}
    if requested:
        wanted = [REGISTRY.canonical(m) for m in requested]
        absent = [m for m in wanted if m not in ordered]
        if absent:
            raise InputError(f"not every run has the metric(s) {', '.join(absent)}; shared: {', '.join(ordered)}")
        ordered, partial = wanted, {}
    if not ordered:
        raise InputError("the runs share no metric column")
    return ordered, partial


def not_compared_note(partial: dict[str, list[str]]) -> str | None:
    """One line naming the metrics only some runs have (None if there are none)."""
    if not partial:
        return None
    named = "; ".join(f"{REGISTRY.spec(n).leaderboard_column or n} (only {', '.join(m)})" for n, m in partial.items())
    return f"not compared, since not every run has them: {named}"


@dataclass
class _Aligned:
    """The runs restricted to their shared studies: what every part of a comparison reads."""

    models: list[str]
    frames: list[pd.DataFrame]
    names: list[str]  # metrics every run has, registry order (or as requested)

    @property
    def per_report(self) -> list[str]:
        """The metrics with a value per study (agreement correlates only these)."""
        return [n for n in self.names if sum_rule(n).per_study_values]

    def table(self, name: str, mask: np.ndarray | None = None) -> np.ndarray:
        """(models, studies, columns) per-study table of one metric (``SumRule.columns``), optionally a subset."""
        columns = list(sum_rule(name).columns)
        stacked = np.stack([f[columns].to_numpy(dtype=np.float64) for f in self.frames])
        return stacked if mask is None else stacked[:, mask]

    def matrix(self, name: str) -> np.ndarray:
        """(studies, models) values of a metric with one value per study."""
        return self.table(name)[:, :, 0].T


def compare_runs(runs: list[Run], metrics: Sequence[str] | None = None, *, resamples: int = DEFAULT_RESAMPLES,
                 permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED,
                 confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    """Rankings with rank CIs, all pairwise tests, subgroups and metric agreement of runs on their shared studies."""
    aligned, ids, notes, partial = _align_runs(runs, metrics)
    boot = {"resamples": resamples, "seed": seed, "confidence": confidence}
    alpha = significance_level(confidence)
    report: dict[str, Any] = {"models": aligned.models, "n_studies": len(ids), "metrics": aligned.names,
                              "not_compared": partial,
                              "settings": {**boot, "permutations": permutations, "alpha": alpha,
                                           "significance_rule": SIGNIFICANCE_RULE.format(confidence=confidence,
                                                                                         alpha=alpha)},
                              "notes": notes}
    first = runs[0].results or {}
    report.update({k: first.get(k) for k in ("dataset", "split", "track")})
    report["ranking"], report["pairwise"] = _statistics(aligned, permutations=permutations, **boot)
    report["subgroups"] = _subgroups(aligned)
    report["agreement"] = _agreement(aligned, report["ranking"])
    return json_safe(report)


def _align_runs(runs: list[Run], metrics: Sequence[str] | None
                ) -> tuple[_Aligned, list[str], list[str], dict[str, list[str]]]:
    """Unique model names, compatibility checks, shared studies and shared metrics; notes for the report; the
    metrics only some runs have (``_metric_names``)."""
    _unique_names(runs)
    notes = _check_compatible(runs)
    ids, frames, align_notes = align(runs)
    models = [r.name for r in runs]
    names, partial = _metric_names(frames, metrics, models)
    left_out = not_compared_note(partial)
    return _Aligned(models, frames, names), ids, notes + align_notes + ([left_out] if left_out else []), partial


def _statistics(aligned: _Aligned, *, permutations: int, resamples: int, seed: int,
                confidence: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Each model's rank per metric with its bootstrap CI, and the paired tests of every pair on every metric.

    One call of ``statistics.compare_tables`` for every metric: the resamples and swaps are drawn once."""
    rules = {name: sum_rule(name) for name in aligned.names}
    results = compare_tables({name: aligned.table(name) for name in aligned.names}, rules, resamples=resamples,
                             permutations=permutations, seed=seed, confidence=confidence)
    models, alpha = aligned.models, significance_level(confidence)
    ranking: dict[str, Any] = {}
    for name in aligned.names:
        r = results[name]["ranking"]
        ranking[name] = {"leaderboard_column": REGISTRY.spec(name).leaderboard_column, "n": r["n"], "models": {
            model: {"value": r["value"][j], "rank": r["rank"][j], "rank_ci_low": r["rank_ci_low"][j],
                    "rank_ci_high": r["rank_ci_high"][j]} for j, model in enumerate(models)}}
    pairs = []
    for i, j in itertools.combinations(range(len(models)), 2):
        tests = {}
        for name in aligned.names:
            tests[name] = results[name]["tests"][(i, j)]
            tests[name].update(verdict(tests[name], name, models[i], models[j], alpha))
        pairs.append({"a": models[i], "b": models[j], "tests": tests})
    return ranking, pairs


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


def _group_values(aligned: _Aligned, mask: np.ndarray, with_rank: bool = False) -> dict[str, Any]:
    """Each model's leaderboard value per metric on a subset of studies (and its rank among the models).

    A model's value is its ``SumRule`` values of the column sums over its usable studies in the group (a NaN value
    is left out, as in ``nan_means``); a metric with named outputs (CE F1, NLG) shows each under ``values``."""
    out = {}
    for name in aligned.names:
        rule = sum_rule(name)
        table = aligned.table(name, mask)  # (models, studies, columns)
        usable = usable_studies(table)[:, :, None]
        every = rule.values(np.where(usable, table, 0.0).sum(axis=1), usable.sum(axis=1)[:, 0])
        point = every[:, 0]
        entry: dict[str, Any] = {model: {"value": float(point[j])} for j, model in enumerate(aligned.models)}
        if rule.outputs:
            for j, model in enumerate(aligned.models):
                entry[model]["values"] = dict(zip(rule.outputs, map(float, every[j])))
        if with_rank and table.shape[1]:
            for j, rank in enumerate(ranks(point, rule.higher_is_better)):
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
