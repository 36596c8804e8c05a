"""Results for people: a terminal table, a Markdown table and a Hugging Face ``model-index`` block.

Every table of a private test set's result is made from its disclosed results (``rexrank.evaluation.disclosure``:
3 decimals, small subgroups suppressed) and printed at that resolution.
"""

from __future__ import annotations

from typing import Any

from rexrank.data import catalog
from rexrank.errors import UnknownNameError
from rexrank.evaluation import disclosure
from rexrank.evaluation.defaults import DEFAULT_CONFIDENCE
from rexrank.metrics import REGISTRY
from rexrank.metrics.aggregation import CORPUS, MEAN, NAN_MEAN, RECIPROCAL_OF_MEAN, leaderboard_higher_is_better, mean_label

# model-index `type` per metric: Hub metric ids where one exists (evaluate's bleu, bertscore), else our own slug.
_MODEL_INDEX_TYPE = {"bleu2": "bleu", "bertscore": "bertscore"}


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}"


def _disclosed(results: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """(results as they may be shown, digits to print): a private set's disclosed results at its resolution."""
    if disclosure.is_private(results.get("dataset")) or isinstance(results.get("disclosure"), dict):
        return disclosure.disclose_results(results, private=True), disclosure.PRIVATE_DECIMALS
    return results, 4


FLAG_MARK = "(!)"  # marks a value whose leaderboard flag is printed under the table


def rows(results: dict[str, Any]) -> list[dict[str, str]]:
    """One row per figure, each with its own CI and direction.

    A plain metric has one figure, its mean. A reciprocal metric (1/RadCliQ-v1) has two: the per-report mean
    (RadCliQ-v1, lower is better) and the leaderboard's 1/mean (higher is better), so neither is ever read under
    the other's direction. A value with a leaderboard flag (NaN or negative mean) carries ``FLAG_MARK``.
    """
    out = []
    results, digits = _disclosed(results)
    confidence = results.get("bootstrap", {}).get("confidence", DEFAULT_CONFIDENCE)
    for name, entry in results["metrics"].items():
        spec = _spec(name)
        if entry.get("level") == CORPUS:
            out.extend(_corpus_rows(name, entry, digits))
            continue
        flags = entry.get("leaderboard_flags") or ()
        mark = f" {FLAG_MARK}" if flags else ""
        label = entry.get("leaderboard_column") or name
        n = str(entry.get("n", ""))
        if entry.get("aggregation", getattr(spec, "leaderboard_aggregation", MEAN)) == RECIPROCAL_OF_MEAN:
            mean_higher = entry.get("higher_is_better", getattr(spec, "higher_is_better", False))
            out.append({"metric": f"{mean_label(spec) if spec else name} (mean per report)", "name": name,
                        "figure": "mean",
                        # a 0 or negative mean is a fine mean: only its reciprocal is flagged
                        "value": _fmt(entry.get("mean"), digits) + (mark if NAN_MEAN in flags else ""),
                        "ci": f"[{_fmt(entry.get('ci_low'), digits)}, {_fmt(entry.get('ci_high'), digits)}]",
                        "direction": _direction(mean_higher), "n": n})
            label = f"{label} (1/mean)"
        low, high = entry.get("leaderboard_ci_low"), entry.get("leaderboard_ci_high")
        out.append({"metric": label, "name": name, "figure": "leaderboard",
                    "value": _fmt(entry.get("leaderboard_value"), digits) + mark,
                    "ci": f"[{_fmt(low, digits)}, {_fmt(high, digits)}]",
                    "direction": _direction(entry.get("leaderboard_higher_is_better", _higher(name))), "n": n})
    for row in out:
        row["ci_label"] = f"{confidence:.0%} CI"
    return out


def _corpus_rows(name: str, entry: dict[str, Any], digits: int) -> list[dict[str, str]]:
    """A corpus metric (CE F1): one row per output its class shows (every output is in results.json)."""
    values = entry.get("values") or {}
    try:
        cls = REGISTRY.cls(name)
        shown, label = [o for o in cls.SHOWN if o in values], cls.output_label
    except UnknownNameError:
        shown, label = list(values)[:1], str
    direction = _direction(entry.get("higher_is_better", True))
    return [{"metric": label(o), "name": name, "figure": o, "value": _fmt(values[o].get("value"), digits),
             "ci": f"[{_fmt(values[o].get('ci_low'), digits)}, {_fmt(values[o].get('ci_high'), digits)}]",
             "direction": direction, "n": str(entry.get("n", ""))} for o in shown]


def _direction(higher_is_better: bool) -> str:
    return "higher" if higher_is_better else "lower"


def flag_notes(results: dict[str, Any]) -> list[str]:
    """One line per flagged leaderboard value (a NaN mean, or a 0 or negative mean under 1/mean): under every table."""
    notes = []
    for name, entry in results["metrics"].items():
        for flag in entry.get("leaderboard_flags") or ():
            notes.append(f"{FLAG_MARK} {entry.get('leaderboard_column') or name}: {flag}")
    return notes


def nan_notes(results: dict[str, Any]) -> list[str]:
    """One line per metric with NaN per-report values left out of its mean (when some values remain); a private
    set's count is the disclosed one, to the nearest ``disclosure.PRIVATE_COUNT_STEP``, and says so."""
    notes = []
    step = (results.get("disclosure") or {}).get("count_step") if isinstance(results.get("disclosure"), dict) else None
    for name, entry in results["metrics"].items():
        n_nan, n = entry.get("n_nan") or 0, entry.get("n") or 0
        if n_nan and n:
            verb = "is" if n_nan == 1 else "are"
            about = f"about {n_nan} (to the nearest {step})" if step else f"{n_nan}"
            notes.append(f"{entry.get('leaderboard_column') or name}: {about} of {n + n_nan} per-report values "
                         f"{verb} NaN and left out of the mean")
    return notes


def reciprocal_notes(results: dict[str, Any]) -> list[str]:
    """How to read the two figures of each reciprocal metric (printed once under the table)."""
    notes = []
    for name, entry in results["metrics"].items():
        spec = _spec(name)
        if spec is None or entry.get("aggregation", spec.leaderboard_aggregation) != RECIPROCAL_OF_MEAN:
            continue
        notes.append(f"{mean_label(spec)} is the mean of the per-report values ({_direction(spec.higher_is_better)} "
                     f"is better); {entry.get('leaderboard_column') or name} is 1 / that mean, the number the "
                     f"leaderboard shows ({_direction(leaderboard_higher_is_better(spec))} is better), never a mean "
                     "of reciprocals")
    return notes


def pair_counts(results: dict[str, Any], stats: dict[str, dict[str, int]]) -> list[str]:
    """What `rexrank score` computed, for people: studies vs distinct (prediction, reference) pairs, and per metric
    how many distinct pairs were computed or read from the cache.

    Identical pairs are scored once (``evaluation.runner``), so 590 studies can be 580 pairs. ``stats`` is the
    harness's (per metric: pairs, cached, computed, summed over processes); each process finds the repeats
    within its own studies, so with several processes the distinct count is per process.
    """
    if not stats:
        return []
    lines = []
    n_studies = int(results.get("n_studies") or 0)
    processes = int((results.get("analyses") or {}).get("processes") or 1)
    distinct = {s["pairs"] for s in stats.values()}
    within = f" (repeats found within each of {processes} processes)" if processes > 1 else ""
    if len(distinct) == 1 and (pairs := distinct.pop()) < n_studies:
        repeat = n_studies - pairs
        lines.append(f"{n_studies} studies, {pairs} distinct (prediction, reference) pairs{within}: {repeat} "
                     f"{'study repeats' if repeat == 1 else 'studies repeat'} an earlier study's pair and "
                     f"{'reuses' if repeat == 1 else 'reuse'} its score (identical pairs are scored once)")
    counts = {name: (s["computed"], s["cached"]) for name, s in stats.items()}
    if len(set(counts.values())) == 1:
        computed, cached = next(iter(counts.values()))
        each = "each metric: " if len(counts) > 1 else ""
        lines.append(f"distinct pairs computed: {computed}, from the cache: {cached} ({each}{', '.join(counts)})")
    else:
        lines.append("distinct pairs computed / from the cache, per metric: "
                     + "; ".join(f"{name} {computed} / {cached}" for name, (computed, cached) in counts.items()))
    return lines


def _spec(name: str):
    try:
        return REGISTRY.spec(name)
    except (KeyError, UnknownNameError):
        return None


def _higher(name: str) -> bool:
    spec = _spec(name)
    return True if spec is None else leaderboard_higher_is_better(spec)


def title(results: dict[str, Any]) -> str:
    parts = [results.get("model") or "model", "on", results.get("dataset") or "references"]
    if results.get("split"):
        parts.append(results["split"])
    parts.append(f"({results.get('track')} track, {results.get('n_studies')} studies)")
    return " ".join(str(p) for p in parts)


def notes(results: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(warnings, notes) printed under every table of a result: its flags first, then how to read it."""
    return flag_notes(results), nan_notes(results) + reciprocal_notes(results)


def print_summary(results: dict[str, Any], console=None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    results, _ = _disclosed(results)
    shown = rows(results)
    # escape: rich would read "[n/a, n/a]" or a bracketed model name as markup and drop it
    table = Table(title=escape(title(results)), title_justify="left")
    table.add_column("Metric")
    table.add_column("Value", justify="right")
    table.add_column(shown[0]["ci_label"] if shown else "CI", justify="right")
    table.add_column("Better")
    for row in shown:
        table.add_row(*(escape(row[key]) for key in ("metric", "value", "ci", "direction")))
    console.print(table)
    warnings, remarks = notes(results)
    for note in warnings:
        console.print(f"warning: {note}", markup=False)
    for note in remarks:
        console.print(f"note: {note}", markup=False)
    dropped = {k: v for k, v in (results.get("n_dropped") or {}).items() if v}
    if dropped:
        console.print("dropped: " + ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in dropped.items()))


def markdown_table(results: dict[str, Any]) -> str:
    results, _ = _disclosed(results)
    confidence = results.get("bootstrap", {}).get("confidence", DEFAULT_CONFIDENCE)
    lines = [f"**{title(results)}**", "", f"| Metric | Value | {confidence:.0%} CI | Better |", "|---|---:|---:|---|"]
    for row in rows(results):
        lines.append(f"| {row['metric']} | {row['value']} | {row['ci']} | {row['direction']} |")
    lines.append("")
    warnings, remarks = notes(results)
    lines += [f"Warning: {note}." for note in warnings]
    lines += [f"Note: {note}." for note in remarks]
    boot = results.get("bootstrap", {})
    lines.append(f"CIs: percentile bootstrap over studies, {boot.get('resamples')} resamples, seed {boot.get('seed')}.")
    if isinstance(results.get("disclosure"), dict) and results["disclosure"].get("note"):
        lines.append(f"Disclosure: {results['disclosure']['note']}.")
    return "\n".join(lines) + "\n"


def _model_index_dataset(results: dict[str, Any]) -> tuple[str, str, str]:
    """(type slug, display label, split) of the evaluated set: the catalog's names for a ReXrank dataset;
    for a custom reference file, its own name and split ("test" when it gave none, the model-index default)."""
    name, split = results.get("dataset") or "custom", results.get("split")
    try:
        canonical = catalog.canonical_dataset(name)
        return canonical, catalog.dataset_label(canonical), catalog.canonical_split(canonical, split)
    except UnknownNameError:
        return name, name, split or "test"


def model_index(results: dict[str, Any]) -> str:
    """A ``model-index`` YAML block for a model card (the Hub's evaluation-results metadata)."""
    import yaml

    results, _ = _disclosed(results)
    dataset, label, split = _model_index_dataset(results)
    track = results.get("track")
    metrics = []
    for name, entry in results["metrics"].items():
        value = entry.get("leaderboard_value")
        if value is None:
            continue
        spec = REGISTRY.spec(name)
        metrics.append({"type": _MODEL_INDEX_TYPE.get(name, f"rexrank/{name}"),
                        "name": spec.leaderboard_column or name, "value": round(float(value), 6),
                        "verified": False})
    block = {"model-index": [{
        "name": results.get("model") or "model",
        "results": [{
            "task": {"type": "image-to-text", "name": "Chest X-ray report generation"},
            "dataset": {"name": f"ReXrank {label} ({track} track)",
                        "type": f"rexrank/{dataset}", "split": split,
                        "config": track},
            "metrics": metrics,
            "source": {"name": "rexrank", "url": "https://rexrank.ai"},
        }],
    }]}
    return yaml.safe_dump(block, sort_keys=False, allow_unicode=True)
