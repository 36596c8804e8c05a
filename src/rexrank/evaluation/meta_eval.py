"""`rexrank meta-eval` / `rexrank.meta_eval`: how well each metric agrees with radiologists' error counts.

The statistic is the one the ReXVal paper (Yu et al., Patterns 2023) and the metric papers that report on ReXVal
use: Kendall's tau-b over the pairs between the metric and the mean over raters of the errors in each pair. A metric
where higher is better (its MetricSpec) is negated first, so for every metric a positive tau means "more errors,
worse score" (the paper's 1 - score). Targets: all errors, clinically significant errors, and each error category
(all and significant alone).

Uncertainty: 95% percentile intervals from a bootstrap that resamples studies (a study's candidate reports stay
together: they share a reference, so they are not independent), the draws of `bootstrap.count_blocks`. Paired
test of two metrics: the difference tau(A) - tau(B) on the same resamples; two-sided p = (k + 1) / (B + 1) with k
the resamples whose difference moved from the observed one by at least its size (the shift method `compare` uses),
and a verdict only when p < alpha. The ceiling: each rater's tau-b against the mean of the other raters.

Speed: every tau of every resample comes from the pairs' sign matrices collapsed to study blocks. A resample is
a vector w of study multiplicities, and tau-b's numerator and tie counts are quadratic forms in w (pairs drawn
together from one study copy count as tied in both variables, exactly as scipy sees repeated observations), so
all resamples of one (metric, target) take one (B, studies) x (studies, studies) product. With w = 1 this is
tau-b as `scipy.stats.kendalltau` computes it (tests/test_meta_eval.py checks <= 1e-12 on data with ties).

Outputs hold aggregates only (taus, intervals, p-values, counts, settings): never a report or a per-pair value.
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rexrank.data.expert_sets import SIGNIFICANCE, ExpertSet
from rexrank.errors import ConfigError, InputError
from rexrank.evaluation.aggregate import json_safe
from rexrank.evaluation.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    count_blocks,
    percentile_interval,
)
from rexrank.evaluation.meta_eval_report import SIGNIFICANT, TOTAL  # the report's shape has its own owner
from rexrank.metrics import REGISTRY

NO_SIGNIFICANT_DIFFERENCE = "no significant difference"
UNOFFICIAL_NOTE = ("scored with weights that are not verified official ones ({names}): these taus describe those "
                   "weights (random stand-ins give meaningless numbers), not the metrics as published")
# Published taus on ReXVal. None could be read from a public source here (the papers' result tables were not
# reachable as text), so none is printed; an entry needs {"tau": value, "target": TOTAL|SIGNIFICANT, "source": ...}.
PUBLISHED: dict[str, dict[str, Any]] = {}
PUBLISHED_NOTE = ("published values: none shown. The RadCliQ paper (Yu et al. 2023), GREEN (Ostmeier et al. 2024) "
                  "and RaTEScore (Zhao et al. 2024) report Kendall taus on ReXVal, but their tables could not be read "
                  "from a public source when this was built; rexrank's numbers are comparable to them only when "
                  "scored with the official weights")


# ---- the statistic --------------------------------------------------------------------------------------------
def _signs(values: np.ndarray) -> np.ndarray:
    return np.sign(values[:, None] - values[None, :])


def _ties(values: np.ndarray) -> np.ndarray:
    return (values[:, None] == values[None, :]).astype(np.float64)


def _members(groups: np.ndarray) -> np.ndarray:
    """(studies, pairs) 0/1 matrix: which pairs belong to which study."""
    groups = np.asarray(groups, dtype=np.int64)
    member = np.zeros((int(groups.max()) + 1, len(groups)))
    member[groups, np.arange(len(groups))] = 1.0
    return member


def _quadratic(weights: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return ((weights @ matrix) * weights).sum(axis=1)


def tau_b_matrix(xs: np.ndarray, ys: np.ndarray, couples: Sequence[tuple[int, int]], groups: np.ndarray,
                 weights: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of xs[a] against ys[c] for every (a, c) in `couples`, for each row of `weights`.

    xs: (A, pairs), ys: (C, pairs), groups: each pair's study 0..G-1, weights: (R, G) study multiplicities (a row of
    ones is the data itself). Returns (R, len(couples)); NaN where a variable is constant in a resample."""
    member = _members(groups)
    weights = np.asarray(weights, dtype=np.float64)
    total = weights @ member.sum(axis=1)
    pairs = total * (total - 1) / 2.0
    x_ties = [0.5 * (_quadratic(weights, member @ _ties(x) @ member.T) - total) for x in xs]
    y_ties = [0.5 * (_quadratic(weights, member @ _ties(y) @ member.T) - total) for y in ys]
    x_signs = [_signs(x) for x in xs]
    y_signs = [_signs(y) for y in ys]
    out = np.empty((weights.shape[0], len(couples)))
    with np.errstate(invalid="ignore", divide="ignore"):
        for k, (a, c) in enumerate(couples):
            numerator = 0.5 * _quadratic(weights, member @ (x_signs[a] * y_signs[c]) @ member.T)
            denominator = np.sqrt((pairs - x_ties[a]) * (pairs - y_ties[c]))
            out[:, k] = np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)
    return out


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two equal-length vectors (scipy.stats.kendalltau's statistic)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return float(tau_b_matrix(x[None], y[None], [(0, 0)], np.arange(len(x)), np.ones((1, len(x))))[0, 0])


def study_resamples(studies: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, studies) multiplicities: the bootstrap's draws of whole studies (`bootstrap.count_blocks`)."""
    return np.concatenate(list(count_blocks(studies, resamples, seed)), axis=0)


def _interval(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The harness's percentile interval (`bootstrap.percentile_interval`), quiet about an all-NaN column (a target
    constant in every resample), which stays NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return percentile_interval(samples, confidence)


def paired_p(observed: float, resampled: np.ndarray) -> float:
    """Two-sided bootstrap p of a difference: resamples that moved from it by at least its size (shift method)."""
    usable = resampled[np.isfinite(resampled)]
    if not np.isfinite(observed) or not usable.size:
        return float("nan")
    k = int(np.count_nonzero(np.abs(usable - observed) >= abs(observed) - 1e-12))
    return (k + 1) / (usable.size + 1)


# ---- targets ------------------------------------------------------------------------------------------------
def targets(expert: ExpertSet) -> dict[str, np.ndarray]:
    """Mean over raters of each pair's errors: all, clinically significant, and per category (all, significant)."""
    errors = expert.errors  # (pairs, raters, categories, significance)
    significant = SIGNIFICANCE.index("significant")
    out = {TOTAL: errors.sum(axis=(2, 3)).mean(axis=1), SIGNIFICANT: errors[..., significant].sum(axis=2).mean(axis=1)}
    for c, code in enumerate(expert.categories):
        out[f"category_{code}"] = errors[:, :, c, :].sum(axis=2).mean(axis=1)
        out[f"category_{code}_significant"] = errors[:, :, c, significant].mean(axis=1)
    return out


def rater_targets(expert: ExpertSet, significant_only: bool) -> tuple[np.ndarray, np.ndarray]:
    """(raters, pairs) each rater's errors, and (raters, pairs) the mean of the other raters'."""
    errors = expert.errors[..., SIGNIFICANCE.index("significant")] if significant_only else expert.errors.sum(axis=3)
    own = errors.sum(axis=2).T
    raters = own.shape[0]
    others = (own.sum(axis=0, keepdims=True) - own) / max(raters - 1, 1)
    return own, others


# ---- the analysis -------------------------------------------------------------------------------------------
def agreement(scores: Mapping[str, np.ndarray], expert: ExpertSet, *, resamples: int = DEFAULT_RESAMPLES,
              seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Any]:
    """Every statistic of the report from per-pair metric values ({metric: (pairs,)}) and the expert set."""
    names = list(scores)
    if not names:
        raise InputError("meta-eval needs at least one metric")
    values = np.vstack([np.asarray(scores[n], dtype=np.float64) for n in names])
    if values.shape[1:] != (len(expert.references),):
        raise InputError(f"meta-eval: each metric needs one value per pair ({len(expert.references)})")
    usable = np.isfinite(values).all(axis=0)
    groups = expert.groups[usable]
    # Study numbers of the usable pairs, renumbered 0..G-1 (a study whose every pair was dropped is gone).
    _, groups = np.unique(groups, return_inverse=True)
    n_studies = int(groups.max()) + 1 if groups.size else 0
    if n_studies < 2:
        raise InputError("meta-eval: fewer than two studies have a value for every metric")
    oriented = np.vstack([values[k] * (-1.0 if REGISTRY.spec(n).higher_is_better else 1.0)
                          for k, n in enumerate(names)])[:, usable]
    goals = {name: target[usable] for name, target in targets(expert).items()}
    goal_names = list(goals)
    ys = np.vstack([goals[g] for g in goal_names])
    draws = study_resamples(n_studies, resamples, seed)
    every = np.vstack([np.ones((1, n_studies)), draws])
    couples = [(a, c) for a in range(len(names)) for c in range(len(goal_names))]
    taus = tau_b_matrix(oriented, ys, couples, groups, every)
    observed, boot = taus[0], taus[1:]
    low, high = _interval(boot, confidence)
    alpha = round(1.0 - confidence, 12)
    index = {couple: k for k, couple in enumerate(couples)}

    metrics: dict[str, Any] = {}
    for a, name in enumerate(names):
        spec = REGISTRY.spec(name)
        metrics[name] = {"label": spec.leaderboard_column or name, "higher_is_better": spec.higher_is_better,
                         "targets": {g: {"tau": observed[index[a, c]], "ci_low": low[index[a, c]],
                                         "ci_high": high[index[a, c]]} for c, g in enumerate(goal_names)}}
    pairwise = []
    for (a, name_a), (b, name_b) in itertools.combinations(enumerate(names), 2):
        tests = {}
        for goal in (TOTAL, SIGNIFICANT):
            c = goal_names.index(goal)
            ka, kb = index[a, c], index[b, c]
            difference = observed[ka] - observed[kb]
            moved = boot[:, ka] - boot[:, kb]
            d_low, d_high = _interval(moved[:, None], confidence)
            p = paired_p(difference, moved)
            tests[goal] = {"difference": difference, "ci_low": d_low[0], "ci_high": d_high[0], "p": p,
                           **_verdict(difference, p, alpha, name_a, name_b, metrics[name_a]["label"],
                                       metrics[name_b]["label"])}
        pairwise.append({"a": name_a, "b": name_b, "tests": tests})
    return json_safe({
        "n_pairs": int(usable.sum()), "n_pairs_dropped": int((~usable).sum()), "n_studies": n_studies,
        "n_raters": len(expert.raters), "metrics": metrics, "pairwise": pairwise,
        "raters": _raters(expert, usable, groups, every, confidence),
        "settings": {"resamples": resamples, "seed": seed, "confidence": confidence, "alpha": alpha,
                     "statistic": "Kendall tau-b (scipy.stats.kendalltau), metric negated where higher is better",
                     "resampling": "studies with replacement (a study's candidates together)",
                     "paired_test": "difference of taus on the same resamples; p = (k+1)/(B+1), shift method"},
    })


def _verdict(difference: float, p: float, alpha: float, a: str, b: str, label_a: str, label_b: str) -> dict[str, Any]:
    """`better`: the metric's name; the verdict in words with its display label."""
    if not np.isfinite(p):
        return {"significant": None, "better": None, "verdict": "not tested: a tau is undefined"}
    if p >= alpha or difference == 0:
        return {"significant": False, "better": None, "verdict": NO_SIGNIFICANT_DIFFERENCE}
    better, label = (a, label_a) if difference > 0 else (b, label_b)
    return {"significant": True, "better": better, "verdict": f"{label} agrees better (p = {_p(p)})"}


def _raters(expert: ExpertSet, usable: np.ndarray, groups: np.ndarray, every: np.ndarray,
            confidence: float) -> dict[str, Any]:
    """Each rater against the mean of the others, for all and for significant errors: the ceiling a metric can
    approach. The mean over raters gets its bootstrap interval from the same resamples. None for a set with one
    count per pair (a consensus): there is no other rater to agree with."""
    out: dict[str, Any] = {}
    if len(expert.raters) < 2:
        return {TOTAL: None, SIGNIFICANT: None}
    for goal, significant in ((TOTAL, False), (SIGNIFICANT, True)):
        own, others = rater_targets(expert, significant)
        own, others = own[:, usable], others[:, usable]
        couples = [(r, r) for r in range(own.shape[0])]
        taus = tau_b_matrix(own, others, couples, groups, every)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            means = np.nanmean(taus, axis=1)
        low, high = _interval(means[1:, None], confidence)
        out[goal] = {"per_rater": dict(zip(expert.raters, taus[0])), "mean": means[0], "ci_low": low[0],
                     "ci_high": high[0]}
    return out


def meta_eval(dataset: str = "rexval", metrics: Sequence[str] | str | None = None, *, data_dir=None,
              from_hub: bool = False, token=None, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
              confidence: float = DEFAULT_CONFIDENCE, model_paths: Mapping[str, Any] | None = None,
              metric_configs: Mapping[str, Mapping[str, Any]] | None = None, device: str | None = None,
              batch_size: int | None = None) -> dict[str, Any]:
    """Score every pair of an expert set with each metric (the `rexrank.score` core) and report how each agrees
    with the raters. Returns the report dict that `markdown`, `plot_figure` and the JSON file show.

    `metrics` as `rexrank score` takes them (`harness.expand_metrics`): None -> score's default set (the leaderboard
    metrics on open weights), "leaderboard" -> all eight, or names; each must have a value per report."""
    from rexrank.data.expert_sets import read
    from rexrank.evaluation.harness import check_statistics, expand_metrics
    from rexrank.evaluation.in_memory import score

    check_statistics(resamples, confidence, seed)
    names = expand_metrics(metrics)
    for name in names:
        if REGISTRY.spec(name).level != "report":
            raise ConfigError(f"meta-eval: {name} is a corpus-level metric (no value per pair); name per-report "
                              "metrics, e.g. bleu2,radgraph")
    expert = read(dataset, data_dir, from_hub=from_hub, token=token)
    # Components ride along (computed anyway for a composite) so the weights check sees their configs.
    every = list(dict.fromkeys([*names, *(c for n in names for c in REGISTRY.spec(n).components)]))
    frame = score(expert.hypotheses, expert.references, every, model_paths=model_paths,
                  metric_configs=metric_configs, device=device, batch_size=batch_size)
    report = agreement({n: frame[REGISTRY.spec(n).column].to_numpy(dtype=np.float64) for n in names}, expert,
                       resamples=resamples, seed=seed, confidence=confidence)
    report = {"dataset": expert.name, **report,
              "notes": [*expert.notes, *_notes(frame.attrs.get("metrics", {}), names, report)]}
    report["published"] = {"values": PUBLISHED, "note": PUBLISHED_NOTE}
    return report


def _notes(info: Mapping[str, Any], names: Sequence[str], report: Mapping[str, Any]) -> list[str]:
    from rexrank.metrics.official import check_metric

    configs = {name: entry.get("config") for name, entry in info.items() if isinstance(entry, Mapping)}
    unofficial = [name for name in names
                  if (check := check_metric(name, configs)) is not None and check.status != "official"]
    notes = []
    if unofficial:
        notes.append(UNOFFICIAL_NOTE.format(names=", ".join(unofficial)))
    if report.get("n_pairs_dropped"):
        notes.append(f"{report['n_pairs_dropped']} pairs without a value for every metric were left out")
    return notes


# ---- outputs -------------------------------------------------------------------------------------------------
def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _p(value: Any) -> str:
    return "n/a" if value is None else (f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}")


def markdown(report: Mapping[str, Any]) -> str:
    s = report["settings"]
    lines = [f"**Meta-evaluation on {report.get('dataset', '?')}**: {report['n_pairs']} pairs, {report['n_studies']} "
             f"studies, {report['n_raters']} raters", ""]
    for note in report.get("notes", []):
        lines += [f"> Note: {note}", ""]
    lines += [f"| Metric | tau all errors ({s['confidence']:.0%} CI) | tau significant errors | published |",
              "|---|---:|---:|---|"]
    published = report.get("published", {}).get("values", {})
    for name, entry in report["metrics"].items():
        t, g = entry["targets"][TOTAL], entry["targets"][SIGNIFICANT]
        pub = published.get(name)
        lines.append(f"| {entry['label']} | {_fmt(t['tau'])} [{_fmt(t['ci_low'])}, {_fmt(t['ci_high'])}] | "
                     f"{_fmt(g['tau'])} [{_fmt(g['ci_low'])}, {_fmt(g['ci_high'])}] | "
                     f"{_fmt(pub['tau']) + ' (' + pub['source'] + ')' if pub else '-'} |")
    raters = report["raters"]
    if raters[TOTAL] is None:
        lines += ["| Raters (ceiling) | n/a: one consensus count per pair | n/a | - |", ""]
    else:
        lines += [f"| Raters (each vs the others' mean; ceiling) | {_fmt(raters[TOTAL]['mean'])} "
                  f"[{_fmt(raters[TOTAL]['ci_low'])}, {_fmt(raters[TOTAL]['ci_high'])}] | "
                  f"{_fmt(raters[SIGNIFICANT]['mean'])} [{_fmt(raters[SIGNIFICANT]['ci_low'])}, "
                  f"{_fmt(raters[SIGNIFICANT]['ci_high'])}] | - |", ""]
    categories = [k for k in next(iter(report["metrics"].values()))["targets"] if k.startswith("category_")]
    if categories:
        lines += ["| Metric | " + " | ".join(c.replace("category_", "cat. ").replace("_significant", " sig.")
                                            for c in categories) + " |", "|---|" + "---:|" * len(categories)]
        for entry in report["metrics"].values():
            lines.append(f"| {entry['label']} | " + " | ".join(_fmt(entry["targets"][c]["tau"]) for c in categories)
                         + " |")
        lines.append("")
    if report["pairwise"]:
        lines += [f"| A | B | errors | tau(A) - tau(B) | CI | p | verdict (alpha {s['alpha']:g}) |",
                  "|---|---|---|---:|---:|---:|---|"]
        for pair in report["pairwise"]:
            a, b = report["metrics"][pair["a"]]["label"], report["metrics"][pair["b"]]["label"]
            for goal, t in pair["tests"].items():
                lines.append(f"| {a} | {b} | {goal} | {_fmt(t['difference'])} | [{_fmt(t['ci_low'])}, "
                             f"{_fmt(t['ci_high'])}] | {_p(t['p'])} | {t['verdict']} |")
        lines.append("")
    lines.append(f"Kendall tau-b between each metric (negated where higher is better) and the raters' mean error "
                 f"count per pair; {s['resamples']} bootstrap resamples of studies, seed {s['seed']}; paired p = "
                 "(k+1)/(B+1), no correction for multiple comparisons.")
    lines.append(f"\n{report.get('published', {}).get('note', PUBLISHED_NOTE)}.")
    return "\n".join(lines) + "\n"


def plot_figure(report: Mapping[str, Any]) -> dict[str, Any]:
    """A plotly figure as plain JSON (no plotly needed to write it): each metric's tau with its interval, for all
    and for significant errors, and the raters' ceiling as a line."""
    labels = [entry["label"] for entry in report["metrics"].values()]
    data = []
    for goal, title in ((TOTAL, "all errors"), (SIGNIFICANT, "clinically significant errors")):
        taus = [e["targets"][goal]["tau"] for e in report["metrics"].values()]
        lows = [e["targets"][goal]["ci_low"] for e in report["metrics"].values()]
        highs = [e["targets"][goal]["ci_high"] for e in report["metrics"].values()]
        data.append({"type": "bar", "name": title, "x": labels, "y": taus, "error_y": {
            "type": "data", "symmetric": False,
            "array": [None if h is None or t is None else h - t for t, h in zip(taus, highs)],
            "arrayminus": [None if lo is None or t is None else t - lo for t, lo in zip(taus, lows)]}})
    ceiling = (report["raters"][TOTAL] or {}).get("mean")
    shapes = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": ceiling, "y1": ceiling,
               "line": {"dash": "dash"}}] if ceiling is not None else []
    return json_safe({"data": data, "layout": {
        "title": {"text": f"Agreement with radiologists on {report.get('dataset', '?')} (Kendall tau-b, "
                          f"{report['settings']['confidence']:.0%} CI; dashed: inter-rater ceiling)"},
        "barmode": "group", "yaxis": {"title": {"text": "Kendall tau-b"}}, "shapes": shapes}})


def output_files(report: Mapping[str, Any]) -> dict[str, bytes]:
    """The files `rexrank meta-eval --out` writes (through harness.write_files): JSON, Markdown, the plot as plotly
    JSON, and as a standalone HTML page when plotly is installed."""
    figure = plot_figure(report)
    files = {"meta_eval.json": (json.dumps(report, indent=2, allow_nan=False) + "\n").encode(),
             "meta_eval.md": markdown(report).encode("utf-8"),
             "meta_eval_plot.json": (json.dumps(figure, allow_nan=False) + "\n").encode()}
    try:
        import plotly.io
    except ImportError:  # the plot's JSON is enough to show it later; HTML is a convenience
        return files
    # A fixed div id (plotly draws a random one): the same report gives the same bytes.
    page = plotly.io.to_html(figure, include_plotlyjs="cdn", full_html=True, div_id="meta-eval-plot")
    files["meta_eval_plot.html"] = page.encode("utf-8")
    return files
