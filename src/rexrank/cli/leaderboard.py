"""`rexrank leaderboard ...`: serve the Space, add results, import the published tables, run the worker, sync."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer()

DEFAULT_STORE = Path(".cache") / "leaderboard.sqlite"
AUTO_METRICS = "auto"  # --submission-metrics: what the host's official weights allow (submissions.host_metrics)


@app.command("serve")
def serve(
    store: Path = typer.Option(DEFAULT_STORE, "--store", help="SQLite store (created and seeded if new)."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(7860, "--port"),
    no_seed: bool = typer.Option(False, "--no-seed", help="Do not import the published ReXrank tables."),
    no_worker: bool = typer.Option(False, "--no-worker", help="Do not score submissions in this process."),
    submission_metrics: str = typer.Option(AUTO_METRICS, "--submission-metrics",
                                           help="Metrics the worker computes for submissions (default 'auto': every "
                                           "leaderboard metric whose official weights this host has)."),
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
    results_repo: Optional[str] = typer.Option(None, "--results-repo", envvar="REXRANK_RESULTS_REPO",
                                               help="Hub dataset repo of results: pulled at start, pushed after each "
                                               "write (token from HF_TOKEN)."),
    requests_repo: Optional[str] = typer.Option(None, "--requests-repo", envvar="REXRANK_REQUESTS_REPO",
                                                help="Hub dataset repo of submission requests (queue metadata, never "
                                                "the uploaded files)."),
) -> None:
    """Serve the leaderboard Space on a local store seeded with the published ReXrank tables."""
    from rexrank.errors import ConfigError

    _check_worker_options(store, submission_metrics, references_dir)
    if not 0 < port < 65536:
        raise ConfigError(f"--port must be between 1 and 65535 (got {port})")
    if not max_upload_mb > 0:
        raise ConfigError(f"--max-upload-mb must be more than 0 (got {max_upload_mb})")
    for option, value in (("--private-quota", private_quota), ("--rate-limit", rate_limit),
                          ("--anonymous-limit", anonymous_limit)):
        if value < 0:
            raise ConfigError(f"{option} must be 0 or more (got {value})")
    from rexrank.leaderboard.app import serve as serve_app

    typer.echo(f"store: {store}  url: http://{host}:{port}")
    options = {"metrics": _metrics(submission_metrics),
               "model_paths": _pairs(model_path), "data_dir": str(references_dir) if references_dir else None,
               "max_bytes": int(max_upload_mb * 1_000_000), "private_quota": private_quota,
               "rate_limit": rate_limit, "anonymous_limit": anonymous_limit}
    demo, _, _ = serve_app(str(store), host, port, seed=not no_seed, worker=not no_worker,
                           results_repo=results_repo, requests_repo=requests_repo, **options)
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
    no_seed: bool = typer.Option(False, "--no-seed", help="A new store: do not import the published ReXrank tables "
                                 "(recorded in the store, so `serve` and `worker` leave it unseeded too)."),
) -> None:
    """Add a `rexrank score` result to the store (only results scored with the official metric weights, unless
    --allow-unofficial-weights)."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.records import ModelInfo, Provenance, from_results_json
    from rexrank.leaderboard.store import Store
    from rexrank.metrics.official import UnofficialWeightsError, check_results

    _check_store(store)
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: bad JSON or UTF-8, or a number over Python's digit limit
        raise InputError(f"cannot read {results}: {exc}") from None
    except RecursionError:
        raise InputError(f"cannot read {results}: JSON nested too deeply") from None
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
    db = Store(store)
    _seed(db, no_seed)
    record_id, new = db.add_result(record, provenance=Provenance(via="cli"))  # as the host
    what = f"({model.name}, {record.dataset} {record.split}, {record.track})"
    if new:
        typer.echo(f"added: result #{record_id} {what}" + (f"; labelled '{weights.label}'" if weights.label else ""))
    elif db.is_shown(record_id):
        typer.echo(f"already on the board as #{record_id} {what}, with the same numbers; nothing added")
    else:
        typer.echo(f"already stored as #{record_id} {what}, with the same numbers (an older result: the board shows "
                   "a newer one for this model); nothing added")


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

    _check_store(store)
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
    from rexrank.errors import ConfigError
    from rexrank.leaderboard.store import Store

    _check_store(store)
    if directory is not None and not directory.is_dir():
        raise ConfigError(f"{directory} is not a folder: give the folder of gh-pages_*result_*.csv tables")
    report = import_published(Store(store), directory or bundled_tables())
    typer.echo(f"{report['added']} new of {report['rows']} rows from {report['files']} tables"
               + (" (every row already stored; nothing added)" if report["rows"] and not report["added"] else ""))
    for note in report["notes"]:
        typer.echo(f"  note: {note}")


@app.command("worker")
def worker(
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
    once: bool = typer.Option(False, "--once", help="Score at most one queued submission, then exit."),
    submission_metrics: str = typer.Option(AUTO_METRICS, "--submission-metrics", help="Default 'auto': every "
                                           "leaderboard metric whose official weights this host has."),
    model_path: Optional[list[str]] = typer.Option(None, "--model-path"),
    references_dir: Optional[Path] = typer.Option(None, "--references-dir"),
    no_seed: bool = typer.Option(False, "--no-seed", help="A new store: do not import the published ReXrank tables."),
) -> None:
    """Score queued submissions (a separate process from the Space, if you like)."""
    _check_worker_options(store, submission_metrics, references_dir)
    from rexrank.leaderboard.store import Store
    from rexrank.leaderboard.submissions import Submissions

    db = Store(store)
    _seed(db, no_seed)
    service = Submissions(db, store.with_suffix(".uploads"), metrics=_metrics(submission_metrics),
                          model_paths=_pairs(model_path), data_dir=str(references_dir) if references_dir else None)
    if once:
        typer.echo("scored one" if service.work_once() else "queue empty")
    else:
        service.run_worker()


@app.command("sync")
def sync(
    repo: str = typer.Option(..., "--repo", help="Hub dataset repo holding results/*.json"),
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
    requests_repo: Optional[str] = typer.Option(None, "--requests-repo", help="Hub dataset repo holding "
                                                "requests/*.json (the submission queue)"),
) -> None:
    """Sync the store with a Hub dataset repo, both ways (token from HF_TOKEN)."""
    _check_store(store)
    from rexrank.leaderboard.hub_sync import HubSync
    from rexrank.leaderboard.store import Store

    typer.echo(json.dumps(HubSync(Store(store), repo, requests_repo=requests_repo).sync()))


def _seed(db, no_seed: bool) -> None:
    """The store gets the published tables as ``published.seed_store`` decides (the one rule, for every command)."""
    from rexrank.leaderboard.published import seed_message, seed_store

    message = seed_message(seed_store(db, seed=not no_seed))
    if message:
        typer.echo(message)


def _metrics(submission_metrics: str) -> Optional[list[str]]:
    """The worker's metrics: None for 'auto' (``submissions.host_metrics`` decides), else the names given."""
    if submission_metrics.strip().lower() == AUTO_METRICS:
        return None
    from rexrank.evaluation.harness import expand_metrics

    return expand_metrics(submission_metrics)


def _check_store(store: Path) -> None:
    from rexrank.evaluation.harness import check_writable

    check_writable(store, "--store", file=True)


def _check_worker_options(store: Path, submission_metrics: str, references_dir: Optional[Path]) -> None:
    """What the scoring worker is given, checked before the store opens or the Space starts."""
    from rexrank.errors import ConfigError
    from rexrank.evaluation.harness import expand_metrics

    _check_store(store)
    if submission_metrics.strip().lower() != AUTO_METRICS:
        expand_metrics(submission_metrics)  # unknown names: the registry's error, listing the available ones
    if references_dir is not None and not references_dir.is_dir():
        raise ConfigError(f"--references-dir {references_dir} is not a folder (it holds one NAME subfolder per "
                          "dataset)")


def _pairs(values: Optional[list[str]]) -> dict[str, str]:
    from rexrank.errors import ConfigError

    out = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise ConfigError(f"--model-path takes metric=PATH (got {item!r})")
        out[key.strip()] = value.strip()
    return out
