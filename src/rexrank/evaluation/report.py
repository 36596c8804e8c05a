"""Results for people: a terminal table, a Markdown table and a Hugging Face ``model-index`` block.

Every table of a private test set's result is made from its disclosed results (``rexrank.evaluation.disclosure``:
3 decimals, small subgroups suppressed) and printed at that resolution.
"""

from __future__ import annotations

from typing import Any

from rexrank.data import catalog
from rexrank.errors import UnknownNameError
from rexrank.evaluation import disclosure
from rexrank.metrics import REGISTRY

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


def rows(results: dict[str, Any]) -> list[dict[str, str]]:
    """One row per metric: leaderboard column, value with its 95% CI, and the per-report mean."""
    out = []
    results, digits = _disclosed(results)
    confidence = results.get("bootstrap", {}).get("confidence", 0.95)
    for name, entry in results["metrics"].items():
        label = entry.get("leaderboard_column") or name
        value = entry.get("leaderboard_value")
        low, high = entry.get("leaderboard_ci_low"), entry.get("leaderboard_ci_high")
        out.append({
            "metric": label,
            "name": name,
            "value": _fmt(value, digits),
            "ci": f"[{_fmt(low, digits)}, {_fmt(high, digits)}]",
            "mean": _fmt(entry.get("mean"), digits),
            "direction": "higher" if _higher(name) else "lower",
            "n": str(entry.get("n", "")),
        })
    for row in out:
        row["ci_label"] = f"{confidence:.0%} CI"
    return out


def flag_notes(results: dict[str, Any]) -> list[str]:
    """One line per flagged leaderboard value (a negative mean under 1/mean): shown under every table."""
    notes = []
    for name, entry in results["metrics"].items():
        for flag in entry.get("leaderboard_flags") or ():
            notes.append(f"{entry.get('leaderboard_column') or name}: {flag}")
    return notes


def _higher(name: str) -> bool:
    from rexrank.metrics.aggregation import leaderboard_higher_is_better

    try:
        return leaderboard_higher_is_better(name)
    except KeyError:
        return True


def title(results: dict[str, Any]) -> str:
    parts = [results.get("model") or "model", "on", results.get("dataset") or "references"]
    if results.get("split"):
        parts.append(results["split"])
    parts.append(f"({results.get('track')} track, {results.get('n_studies')} studies)")
    return " ".join(str(p) for p in parts)


def print_summary(results: dict[str, Any], console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    results, _ = _disclosed(results)
    table = Table(title=title(results), title_justify="left")
    table.add_column("Metric")
    table.add_column("Value", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("Per-report mean", justify="right")
    table.add_column("Better")
    for row in rows(results):
        table.add_row(row["metric"], row["value"], row["ci"], row["mean"], row["direction"])
    console.print(table)
    for note in flag_notes(results):
        console.print(f"warning: {note}")
    dropped = {k: v for k, v in (results.get("n_dropped") or {}).items() if v}
    if dropped:
        console.print("dropped: " + ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in dropped.items()))


def markdown_table(results: dict[str, Any]) -> str:
    results, _ = _disclosed(results)
    confidence = results.get("bootstrap", {}).get("confidence", 0.95)
    lines = [f"**{title(results)}**", "", f"| Metric | Value | {confidence:.0%} CI | Per-report mean | Better |",
             "|---|---:|---:|---:|---|"]
    for row in rows(results):
        lines.append(f"| {row['metric']} | {row['value']} | {row['ci']} | {row['mean']} | {row['direction']} |")
    lines.append("")
    lines += [f"Warning: {note}." for note in flag_notes(results)]
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
