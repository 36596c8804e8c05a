"""`rexrank models`: list and download the default metric weights."""

from __future__ import annotations

from typing import Optional

import typer

app = typer.Typer()


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
    record_official: bool = typer.Option(
        False, "--record-official", help="Also record the sha256 of each official weight file (from the official "
        "Hub repo) in this host's official-weights file, which `rexrank leaderboard add` and the Space worker "
        "compare results with. A download that differs from a published digest is refused."),
) -> None:
    """Fetch every default model into one cache so later runs work offline (HF_HUB_OFFLINE=1)."""
    from rexrank.evaluation.harness import check_writable
    from rexrank.metrics.weights import SOURCES, report_all_missing, resolve, source

    for key in only or []:  # every name checked before the first download starts
        source(key)
    if cache_dir is not None:
        check_writable(cache_dir, "--cache-dir")
    with report_all_missing() as missing:  # every model that cannot be fetched is reported, not just the first
        for key in only or list(SOURCES):
            before = len(missing)
            path = resolve(key, hf_cache_dir=cache_dir)
            if len(missing) == before:
                typer.echo(f"{key}: {path}")
    if record_official:
        from rexrank.metrics.official import host_file, record_official as record

        for key, entry in record(only, hf_cache_dir=cache_dir).items():
            where = f"{entry['repo_id']}@{entry['revision'] or '?'}"
            for name, digest in entry["files"].items():
                typer.echo(f"official {key}: {name} sha256 {digest} ({where})")
        typer.echo(f"recorded in {host_file()}")
