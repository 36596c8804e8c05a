"""`rexrank data ...`: list, describe, prepare, verify, export and purge the ReXrank test sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer()

_DATA_DIR = typer.Option(None, "--data-dir", "-d", help="local copy (default: $REXRANK_DATA_DIR/<name>)")
_SPLIT = typer.Option(None, "--split", help="default: the split the leaderboard scores")
_IMAGE_ROOT = typer.Option(None, "--image-root", help="the folder holding the images (MIMIC-CXR: the MIMIC-CXR-JPG "
                           "folder with its CSVs); wins over the search of --data-dir")
_REPORTS_ROOT = typer.Option(None, "--reports-root", help="the report text: MIMIC-CXR's mimic-cxr-reports.zip or the "
                             "folder holding files/, CheXpert Plus's CSV, ReXGradient's metadata JSON (or their "
                             "folders); wins over the search of --data-dir")


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
                                                          "except iu_xray)"),
            image_root: Optional[Path] = _IMAGE_ROOT, reports_root: Optional[Path] = _REPORTS_ROOT) -> None:
    """Build the Arrow cache of every split (a second run reuses it)."""
    from rexrank.evaluation.harness import check_writable

    if cache_dir is not None:
        check_writable(cache_dir, "--cache-dir")
    from rexrank.data.loading import prepare as prepare_dataset

    builder = prepare_dataset(name, data_dir, cache_dir=cache_dir, require_images=require_images,
                              image_root=image_root, reports_root=reports_root)
    for split, info in (builder.info.splits or {}).items():
        typer.echo(f"{name} {split}: {info.num_examples} studies")
    typer.echo(f"cache: {builder.cache_dir}")


@app.command("verify")
def verify(name: str, data_dir: Optional[Path] = _DATA_DIR, split: Optional[str] = _SPLIT,
           open_images: bool = typer.Option(True, "--open-images/--no-open-images",
                                            help="decode-check every image with PIL"),
           as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
           max_listed: int = typer.Option(10, "--max-listed"),
           image_root: Optional[Path] = _IMAGE_ROOT, reports_root: Optional[Path] = _REPORTS_ROOT) -> None:
    """Check a local copy against the ReXrank manifest: missing/extra studies, missing/unreadable files."""
    from rexrank.errors import ConfigError

    if max_listed < 0:
        raise ConfigError(f"--max-listed must be 0 or more (got {max_listed})")
    from rexrank.data.verification import verify as verify_dataset

    report = verify_dataset(name, data_dir, split, open_images=open_images, image_root=image_root,
                            reports_root=reports_root)
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
    from rexrank.data.loading import load, track_info
    from rexrank.data.rexrank_json import write_rexrank_json

    dataset = load(name, data_dir, split=split, track=track, require_images=False)
    write_rexrank_json(dataset, out)
    summary = track_info(dataset)
    excluded = f", {summary['n_excluded']} excluded by the {summary['track']} track" if summary else ""
    typer.echo(f"wrote {len(dataset)} studies to {out}{excluded}")


@app.command("purge")
def purge(name: str,
          yes: bool = typer.Option(False, "--yes", "-y", help="remove without asking"),
          cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="datasets cache folder, as given to "
                                                   "prepare (default: $HF_DATASETS_CACHE)"),
          score_cache_dir: Optional[Path] = typer.Option(None, "--score-cache-dir", help="scoring cache folder, as "
                                                         "given to `rexrank score --cache-dir` (default: "
                                                         "$REXRANK_CACHE/scores)"),
          data_dir: Optional[Path] = typer.Option(None, "--data-dir", "-d", help="local copy, read only when no "
                                                  "Arrow copy is left to find the reference texts in"),
          reports_root: Optional[Path] = _REPORTS_ROOT) -> None:
    """Remove every cached copy of a test set's text: its Arrow copies and the scoring-cache rows and artefacts
    derived from its references (a later `rexrank score` recomputes them)."""
    from rexrank.data.catalog import canonical_dataset
    from rexrank.data.loading import cached_copies, cached_reference_texts, purge_cached_copies, reference_texts
    from rexrank.errors import ConfigError, DatasetNotAvailableError
    from rexrank.evaluation.cache import ScoreCache

    name = canonical_dataset(name)
    arrow = cached_copies(name, cache_dir)
    # The score cache is keyed by text hashes: the dataset's reference texts find rows of runs that were not
    # tagged with it (older caches, --references files), so read them before the Arrow copies go.
    texts = cached_reference_texts(name, cache_dir)
    if not texts:
        try:
            texts = reference_texts(name, data_dir, reports_root=reports_root)
        except DatasetNotAvailableError:
            typer.echo(f"note: no Arrow copy and no local copy of {name}: scoring-cache rows are found by their "
                       "dataset tag only (rows of --references runs stay; give --data-dir to find them too)")
    scores = ScoreCache(score_cache_dir)
    found = scores.purge(name, texts, dry_run=True)
    typer.echo(f"{name}:")
    typer.echo(f"  Arrow copies:  {arrow['copies']} ({arrow['files']} files, {_size(arrow['bytes'])}) in "
               f"{arrow['folder']}")
    typer.echo(f"  scoring cache: {found['pairs']} pair rows, {found['texts']} per-text artefacts "
               f"({_size(found['bytes'])}) in {scores.path}")
    if not arrow["paths"] and not found["pairs"] and not found["texts"]:
        typer.echo("nothing to remove")
        return
    if not yes:
        if not _interactive():
            raise ConfigError("rexrank data purge asks before removing anything, and stdin is not a terminal: "
                              "pass --yes to remove without asking")
        if not typer.confirm("Remove them?", default=False):
            typer.echo("nothing removed")
            return
    removed = purge_cached_copies(name, cache_dir)
    purged = scores.purge(name, texts)
    scores.close()
    typer.echo(f"removed {removed['copies']} Arrow copies ({removed['files']} files, {_size(removed['bytes'])}), "
               f"{purged['pairs']} pair rows and {purged['texts']} per-text artefacts ({_size(purged['bytes'])})")


def _interactive() -> bool:
    import sys

    return sys.stdin is not None and sys.stdin.isatty()


def _size(n_bytes: int) -> str:
    from rexrank.evaluation.harness import format_size

    return format_size(n_bytes)
