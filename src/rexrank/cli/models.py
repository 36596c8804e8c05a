"""`rexrank models`: list and download the default metric weights."""

from __future__ import annotations

from typing import Optional

import typer

app = typer.Typer(no_args_is_help=True)


@app.command("list")
def list_models() -> None:
    """Show each metric model's official source."""
    from rexrank.metrics.weights import SOURCES

    for src in SOURCES.values():
        where = f"{src.repo_id}/{src.filename}" if src.filename else src.repo_id
        typer.echo(f"{src.key:18} {src.metric:11} {where}")


@app.command("download")
def download(
    only: Optional[list[str]] = typer.Option(None, "--only", help="Model keys to fetch (default: all)."),
    cache_dir: Optional[str] = typer.Option(None, "--cache-dir", help="Hugging Face cache directory to fill."),
) -> None:
    """Fetch every default model into one cache so later runs work offline (HF_HUB_OFFLINE=1)."""
    from rexrank.metrics.weights import resolve

    from rexrank.metrics.weights import SOURCES

    for key in only or list(SOURCES):
        path = resolve(key, hf_cache_dir=cache_dir)
        typer.echo(f"{key}: {path}")
