"""`rexrank explore`: the per-study explorer of scored runs, on 127.0.0.1 (rexrank.explore, docs/explore.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    app.command("explore")(explore_command)


def explore_command(
    runs: list[Path] = typer.Argument(..., help="One or more `rexrank score` results folders (or their "
                                      "per_study.parquet files) of one test set and track."),
    port: int = typer.Option(7870, "--port", help="Port on 127.0.0.1 (0: any free port)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="The dataset folder the runs read their "
                                            "references from (runs scored with --dataset)."),
    model_path: Optional[list[str]] = typer.Option(None, "--model-path", help="METRIC=PATH, as the runs were "
                                                   "scored: what RadGraph, SembScore and RaTEScore saw is read "
                                                   "from the score cache with these weights."),
    option: Optional[list[str]] = typer.Option(None, "--option", help="METRIC.KEY=VALUE, as the runs were scored."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="As the runs were scored (an encoder "
                                             "metric's batch shape is part of its fingerprint)."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="The score cache the runs used (read "
                                             "only; default: rexrank score's)."),
) -> None:
    """Browse every study of scored runs: reports side by side, per-study values, what each metric saw."""
    from rexrank.cli.evaluation import _metric_options, _model_paths
    from rexrank.explore import server

    server.check_port(port)
    port = server.usable_port(port)  # a busy port is one line before any run is read
    if batch_size is not None and batch_size < 1:
        from rexrank.errors import ConfigError

        raise ConfigError(f"--batch-size must be at least 1 (got {batch_size})")
    paths, configs = _model_paths(model_path), _metric_options(option)
    _, _, app = server.build([str(r) for r in runs], data_dir=data_dir, model_paths=paths, metric_configs=configs,
                             cache_dir=cache_dir, batch_size=batch_size)
    server.serve(app, port, announce=typer.echo)
