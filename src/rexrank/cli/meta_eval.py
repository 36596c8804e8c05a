"""`rexrank meta-eval`: how well each metric agrees with radiologists on an expert-rated set (docs/meta_eval.md).

Under a launcher (torchrun, accelerate) every process computes the same report (the same pairs, metrics and seed)
and only the main process prints it and writes --out, so the folder never sees two writers."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rexrank.cli.values import finite_float
from rexrank.evaluation.defaults import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED


def register(app: typer.Typer) -> None:
    app.command("meta-eval")(meta_eval_command)


def meta_eval_command(
    dataset: str = typer.Option(..., "--dataset", help="Expert-rated set, e.g. rexval, radevalx or radeval_expert "
                                "(an unknown name is answered with every one; docs/meta_eval.md)."),
    metrics: Optional[str] = typer.Option(None, "--metrics", "-m", help="Comma-separated per-report metrics, "
                                          "or 'leaderboard' (default: what `rexrank score` runs by default)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Local copy of the set (as PhysioNet's "
                                            "download unpacks it)."),
    from_hub: bool = typer.Option(False, "--from-hub", help="Read ReXrank's gated Hub copy instead (a token "
                                  "with access)."),
    model_path: Optional[list[str]] = typer.Option(None, "--model-path", help="METRIC=PATH: local weights."),
    option: Optional[list[str]] = typer.Option(None, "--option", help="METRIC.KEY=VALUE: any metric option."),
    device: Optional[str] = typer.Option(None, "--device", help="cpu, cuda, cuda:1 ... for model-backed metrics."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Batch size of model-backed metrics."),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", help="Bootstrap resamples of studies."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Seed of the bootstrap."),
    confidence: float = typer.Option(DEFAULT_CONFIDENCE, "--confidence", parser=finite_float,
                                     help="CI level (alpha of the paired tests: 1 - it)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write meta_eval.json, meta_eval.md and the plot "
                                       "here."),
) -> None:
    """Kendall tau-b of each metric against radiologists' error counts, with bootstrap CIs, paired tests and the
    inter-rater ceiling."""
    from rexrank import parallel
    from rexrank.cli.evaluation import _metric_settings
    from rexrank.data.expert_sets import canonical_expert_set
    from rexrank.evaluation.harness import check_device, check_statistics, check_writable, write_files
    from rexrank.evaluation.harness import expand_metrics
    from rexrank.evaluation.meta_eval import markdown, meta_eval, output_files

    # Every option is checked before the set is read or a metric loaded.
    name = canonical_expert_set(dataset)
    check_statistics(resamples, confidence, seed)
    check_device(device)
    if out is not None:
        check_writable(out, "--out")
    paths, configs = _metric_settings(expand_metrics(metrics), model_path, option)
    report = meta_eval(name, metrics, data_dir=data_dir, from_hub=from_hub, resamples=resamples, seed=seed,
                       confidence=confidence, model_paths=paths, metric_configs=configs, device=device,
                       batch_size=batch_size)
    if not parallel.context().is_main:
        return
    typer.echo(markdown(report))
    if out is not None:
        paths = write_files(out, output_files(report))
        typer.echo("wrote " + ", ".join(str(p) for p in paths.values()))
