"""`rexrank data ...`: list, describe, prepare, verify and export the ReXrank test sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer()

_DATA_DIR = typer.Option(None, "--data-dir", "-d", help="local copy (default: $REXRANK_DATA_DIR/<name>)")
_SPLIT = typer.Option(None, "--split", help="default: the split the leaderboard scores")


@app.command("list")
def list_datasets() -> None:
    """The ReXrank test sets, their splits and sizes (* the split the leaderboard scores) and their aliases."""
    from rexrank.data.catalog import DATASETS

    for spec in DATASETS.values():
        sizes = ", ".join(f"{s.name}{'*' if s.name == spec.leaderboard_split else ''} "
                          f"({s.n_studies if s.n_studies is not None else 'host-defined'})" for s in spec.splits.values())
        typer.echo(f"{spec.name:14s} {sizes:34s} {spec.title}")
        typer.echo(f"{'':14s} aliases: {', '.join(spec.aliases)}")


@app.command("info")
def info(name: str) -> None:
    """Licence, where to request access, what to download and the expected layout."""
    from rexrank.data.catalog import get_dataset_spec

    spec = get_dataset_spec(name)
    typer.echo(f"{spec.title}\n  licence: {spec.licence}\n  access:  {spec.access}\n  download: {spec.download}\n"
               "  layout:")
    for line in spec.layout.splitlines():
        typer.echo(f"    {line}")


@app.command("prepare")
def prepare(name: str, data_dir: Optional[Path] = _DATA_DIR,
            cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="datasets cache folder"),
            require_images: Optional[bool] = typer.Option(None, "--require-images/--no-require-images",
                                                          help="missing images are an error (default: yes, "
                                                          "except iu_xray)")) -> None:
    """Build the Arrow cache of every split (a second run reuses it)."""
    from rexrank.evaluation.harness import check_writable

    if cache_dir is not None:
        check_writable(cache_dir, "--cache-dir")
    from rexrank.data.load import prepare as prepare_dataset

    builder = prepare_dataset(name, data_dir, cache_dir=cache_dir, require_images=require_images)
    for split, info in (builder.info.splits or {}).items():
        typer.echo(f"{name} {split}: {info.num_examples} studies")
    typer.echo(f"cache: {builder.cache_dir}")


@app.command("verify")
def verify(name: str, data_dir: Optional[Path] = _DATA_DIR, split: Optional[str] = _SPLIT,
           open_images: bool = typer.Option(True, "--open-images/--no-open-images",
                                            help="decode-check every image with PIL"),
           as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
           max_listed: int = typer.Option(10, "--max-listed")) -> None:
    """Check a local copy against the ReXrank manifest: missing/extra studies, missing/unreadable files."""
    from rexrank.errors import ConfigError

    if max_listed < 0:
        raise ConfigError(f"--max-listed must be 0 or more (got {max_listed})")
    from rexrank.data.verify import verify as verify_dataset

    report = verify_dataset(name, data_dir, split, open_images=open_images)
    typer.echo(json.dumps(report.as_dict(), indent=1) if as_json else report.summary(max_listed))
    if not report.ok:
        # SystemExit, not typer.Exit: rexrank.cli.main runs click with standalone_mode=False, which turns
        # typer.Exit into a return value that main() does not pass on.
        raise SystemExit(1)


@app.command("export")
def export(name: str, out: Path = typer.Option(..., "--out", "-o", help="ReXrank-style JSON to write"),
           data_dir: Optional[Path] = _DATA_DIR, split: Optional[str] = _SPLIT,
           track: Optional[str] = typer.Option(None, "--track", help="keep only the studies this track counts")) -> None:
    """Write the studies as a ReXrank-style input JSON ({study_id: {image_path, key_image_path, ...}}),
    the file upstream `inference.py <input_json> <output_json> <img_root_dir>` reads."""
    from rexrank.evaluation.harness import check_writable

    check_writable(out, "--out", file=True)  # before the dataset loads
    from rexrank.data.load import load, track_info
    from rexrank.data.rexrank_json import write_rexrank_json

    dataset = load(name, data_dir, split=split, track=track, require_images=False)
    write_rexrank_json(dataset, out)
    summary = track_info(dataset)
    excluded = f", {summary['n_excluded']} excluded by the {summary['track']} track" if summary else ""
    typer.echo(f"wrote {len(dataset)} studies to {out}{excluded}")
