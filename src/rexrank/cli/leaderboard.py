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
    max_upload_mb: float = typer.Option(50.0, "--max-upload-mb", help="Largest predictions file (decimal MB): "
                                        "larger uploads are refused while they stream in."),
    private_quota: int = typer.Option(3, "--private-quota", help="Submissions per user per private test set per "
                                      "day, rejected ones included."),
    rate_limit: int = typer.Option(5, "--rate-limit", help="Submissions per user per day over the public test "
                                   "sets, rejected ones included."),
    anonymous_limit: int = typer.Option(100, "--anonymous-limit", help="Anonymous submissions per day, all "
                                        "anonymous users together (public test sets only)."),
) -> None:
    """Serve the leaderboard Space on a local store seeded with the published ReXrank tables."""
    from rexrank.leaderboard.app import serve as serve_app

    typer.echo(f"store: {store}  url: http://{host}:{port}")
    options = {"metrics": [m.strip() for m in submission_metrics.split(",") if m.strip()],
               "model_paths": _pairs(model_path), "data_dir": str(references_dir) if references_dir else None,
               "max_bytes": int(max_upload_mb * 1_000_000), "private_quota": private_quota,
               "rate_limit": rate_limit, "anonymous_limit": anonymous_limit}
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
    allow_unofficial_weights: bool = typer.Option(
        False, "--allow-unofficial-weights", help="Add a result whose metric weights are not (or cannot be shown "
        "to be) the official ones; the board labels its row 'unofficial weights: ...'."),
) -> None:
    """Add a `rexrank score` result to the store (only results scored with the official metric weights, unless
    --allow-unofficial-weights)."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.records import ModelInfo, Provenance, from_results_json
    from rexrank.leaderboard.store import Store
    from rexrank.metrics.official import UnofficialWeightsError, check_results

    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read {results}: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{results} is not a `rexrank score` results.json (a JSON object)")
    model = ModelInfo.from_dict({"name": name, "institution": institution, "url": url, "year": year,
                                 "model_type": model_type, "trained_on": trained_on})
    record = from_results_json(data, model)  # dataset/split/track aliases become the catalog's names here
    weights = check_results(data)  # the registry of official weights (rexrank.metrics.official)
    if not weights.ok and not allow_unofficial_weights:
        raise UnofficialWeightsError(
            f"{results} was not scored with the official metric weights, so it was not added:\n{weights.explain()}\n"
            f"To add it anyway, labelled '{weights.label}' on the board, pass --allow-unofficial-weights.")
    record.extra["weights"] = weights.summary()  # the label lives in the record's JSON; the board shows it
    record_id, new = Store(store).add_result(record, provenance=Provenance(via="cli"))  # as the host
    typer.echo(f"{'added' if new else 'already stored'}: result #{record_id} ({model.name}, {record.dataset} "
               f"{record.split}, {record.track})" + (f"; labelled '{weights.label}'" if weights.label else ""))


@app.command("edit-model")
def edit_model(
    name: str = typer.Argument(..., help="A registered model name."),
    institution: Optional[str] = typer.Option(None, "--institution"),
    url: Optional[str] = typer.Option(None, "--url"),
    year: Optional[int] = typer.Option(None, "--year"),
    model_type: Optional[str] = typer.Option(None, "--model-type"),
    trained_on: Optional[str] = typer.Option(None, "--trained-on", help="Comma-separated dataset names."),
    owner: Optional[str] = typer.Option(None, "--owner", help="Hand the name over: 'host', or 'hf:USERNAME' (a "
                                        "Hugging Face user, who may then submit under it from the Space)."),
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
) -> None:
    """Change a registered model's details or owner (the host only: submissions never change them)."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.records import HOST, ModelInfo, hf_identity
    from rexrank.leaderboard.store import Store

    db = Store(store)
    current = db.model(name)
    if current is None:
        raise InputError(f"no model named {name!r} in {store}")
    given = {"institution": institution, "url": url, "year": year, "model_type": model_type, "trained_on": trained_on}
    cleaned = vars(ModelInfo.from_dict({"name": current["name"], **given}))  # the same sanitising as submissions
    details = {key: cleaned[key] for key, value in given.items() if value is not None}
    if owner is not None:
        owner = HOST if owner == HOST else hf_identity(owner[3:] if owner.startswith("hf:") else owner)
    updated = db.edit_model(current["name"], owner=owner, **details)
    typer.echo(json.dumps({k: updated[k] for k in ("name", "owner", "institution", "url", "year", "model_type",
                                                   "trained_on")}))


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
