"""`rexrank leaderboard ...`: serve the Space, add results, import the published tables, run the worker, sync."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(no_args_is_help=True)

DEFAULT_STORE = Path(".cache") / "leaderboard.sqlite"


@app.command("serve")
def serve(
    store: Path = typer.Option(DEFAULT_STORE, "--store", help="SQLite store (created and seeded if new)."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(7860, "--port"),
    no_seed: bool = typer.Option(False, "--no-seed", help="Do not import the published ReXrank tables."),
    no_worker: bool = typer.Option(False, "--no-worker", help="Do not score submissions in this process."),
    submission_metrics: str = typer.Option("bleu2", "--submission-metrics",
                                           help="Metrics the worker computes for submissions."),
    model_path: Optional[list[str]] = typer.Option(None, "--model-path", help="metric=PATH for the worker."),
    references_dir: Optional[Path] = typer.Option(None, "--references-dir",
                                                  help="Local dataset copies (NAME subfolders) for scoring."),
) -> None:
    """Serve the leaderboard Space on a local store seeded with the published ReXrank tables."""
    from rexrank.leaderboard.app import serve as serve_app

    typer.echo(f"store: {store}  url: http://{host}:{port}")
    options = {"metrics": [m.strip() for m in submission_metrics.split(",") if m.strip()],
               "model_paths": _pairs(model_path), "data_dir": str(references_dir) if references_dir else None}
    demo, _, _ = serve_app(str(store), host, port, seed=not no_seed, worker=not no_worker, **options)
    demo.block_thread()


@app.command("add")
def add(
    results: Path = typer.Argument(..., help="results.json written by `rexrank score`."),
    name: str = typer.Option(..., "--name", help="Model name shown on the board."),
    institution: Optional[str] = typer.Option(None, "--institution"),
    url: Optional[str] = typer.Option(None, "--url"),
    year: Optional[int] = typer.Option(None, "--year"),
    model_type: Optional[str] = typer.Option(None, "--model-type"),
    trained_on: Optional[str] = typer.Option(None, "--trained-on", help="Comma-separated dataset names "
                                             "(aliases such as mimic or chexpert are accepted)."),
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
) -> None:
    """Add a `rexrank score` result to the store."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.records import ModelInfo, from_results_json
    from rexrank.leaderboard.store import Store

    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read {results}: {exc}") from None
    model = ModelInfo.from_dict({"name": name, "institution": institution, "url": url, "year": year,
                                 "model_type": model_type, "trained_on": trained_on})
    record = from_results_json(data, model)  # dataset/split/track aliases become the catalog's names here
    record_id, new = Store(store).add_result(record)
    typer.echo(f"{'added' if new else 'already stored'}: result #{record_id} ({model.name}, {record.dataset} "
               f"{record.split}, {record.track})")


@app.command("import-published")
def import_published_cmd(
    directory: Optional[Path] = typer.Argument(None, help="Folder of gh-pages_*result_*.csv (default: bundled)."),
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
) -> None:
    """Seed the store with the published ReXrank tables (idempotent)."""
    from rexrank.leaderboard.published import bundled_tables, import_published
    from rexrank.leaderboard.store import Store

    report = import_published(Store(store), directory or bundled_tables())
    typer.echo(f"{report['added']} new of {report['rows']} rows from {report['files']} tables")
    for note in report["notes"]:
        typer.echo(f"  note: {note}")


@app.command("worker")
def worker(
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
    once: bool = typer.Option(False, "--once", help="Score at most one queued submission, then exit."),
    submission_metrics: str = typer.Option("bleu2", "--submission-metrics"),
    model_path: Optional[list[str]] = typer.Option(None, "--model-path"),
    references_dir: Optional[Path] = typer.Option(None, "--references-dir"),
) -> None:
    """Score queued submissions (a separate process from the Space, if you like)."""
    from rexrank.leaderboard.store import Store
    from rexrank.leaderboard.submissions import Submissions

    service = Submissions(Store(store), store.with_suffix(".uploads"),
                          metrics=[m.strip() for m in submission_metrics.split(",") if m.strip()],
                          model_paths=_pairs(model_path), data_dir=str(references_dir) if references_dir else None)
    if once:
        typer.echo("scored one" if service.work_once() else "queue empty")
    else:
        service.run_worker()


@app.command("sync")
def sync(
    repo: str = typer.Option(..., "--repo", help="Hub dataset repo holding results/*.json"),
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
) -> None:
    """Sync the store with a Hub dataset repo, both ways (token from HF_TOKEN)."""
    from rexrank.leaderboard.hub_sync import HubSync
    from rexrank.leaderboard.store import Store

    typer.echo(json.dumps(HubSync(Store(store), repo).sync()))


def _pairs(values: Optional[list[str]]) -> dict[str, str]:
    from rexrank.errors import ConfigError

    out = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise ConfigError(f"--model-path takes metric=PATH (got {item!r})")
        out[key.strip()] = value.strip()
    return out
