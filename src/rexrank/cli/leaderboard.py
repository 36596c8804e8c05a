"""`rexrank leaderboard ...`: serve the Space, add results, import the published tables, run the worker, sync."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from rexrank.cli.values import finite_float
from rexrank.leaderboard.limits import (DEFAULT_ANONYMOUS_LIMIT, DEFAULT_MAX_UPLOAD_MB, DEFAULT_PRIVATE_QUOTA,
                                        DEFAULT_RATE_LIMIT, upload_bytes)

app = typer.Typer()

DEFAULT_STORE = Path(".cache") / "leaderboard.sqlite"
MAX_META_EVAL_BYTES = 2_000_000  # a meta_eval.json of the eight metrics is ~20 kB
AUTO_METRICS = "auto"  # --submission-metrics: what the host's official weights allow (submissions.host_metrics)


@app.command("serve")
def serve(
    store: Path = typer.Option(DEFAULT_STORE, "--store", help="SQLite store (created and seeded if new)."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(7860, "--port"),
    no_seed: bool = typer.Option(False, "--no-seed", help="Do not import the published ReXrank tables."),
    edition: Optional[str] = typer.Option(None, "--edition", envvar="REXRANK_BOARD_EDITION",
                                          help="The board edition this store shows (rexrank.metrics.boards; kept in "
                                          "the store): 2026 (default, Findings with CRIMSON) or 2025."),
    no_worker: bool = typer.Option(False, "--no-worker", help="Do not score submissions in this process."),
    submission_metrics: str = typer.Option(AUTO_METRICS, "--submission-metrics",
                                           help="Metrics the worker computes for submissions (default 'auto': every "
                                           "leaderboard metric whose official weights this host has)."),
    model_path: Optional[list[str]] = typer.Option(None, "--model-path", help="metric=PATH for the worker."),
    references_dir: Optional[Path] = typer.Option(None, "--references-dir",
                                                  help="Local dataset copies (NAME subfolders) for scoring."),
    max_upload_mb: float = typer.Option(float(DEFAULT_MAX_UPLOAD_MB), "--max-upload-mb", parser=finite_float,
                                        help="Largest predictions file (decimal MB): larger uploads are refused "
                                        "while they stream in."),
    private_quota: int = typer.Option(DEFAULT_PRIVATE_QUOTA, "--private-quota", help="Submissions per user per "
                                      "private test set per day, rejected ones included."),
    rate_limit: int = typer.Option(DEFAULT_RATE_LIMIT, "--rate-limit", help="Submissions per user (and per "
                                   "anonymous client) per day over the public test sets, rejected ones included."),
    anonymous_limit: int = typer.Option(DEFAULT_ANONYMOUS_LIMIT, "--anonymous-limit", help="Anonymous submissions "
                                        "per day, all anonymous clients together (public test sets only)."),
    results_repo: Optional[str] = typer.Option(None, "--results-repo", envvar="REXRANK_RESULTS_REPO",
                                               help="Hub dataset repo of results: pulled at start, pushed after each "
                                               "write (token from HF_TOKEN)."),
    requests_repo: Optional[str] = typer.Option(None, "--requests-repo", envvar="REXRANK_REQUESTS_REPO",
                                                help="Hub dataset repo of submission requests (queue metadata, never "
                                                "the uploaded files)."),
    arena: bool = typer.Option(False, "--arena", envvar="REXRANK_ARENA",
                               help="Add the radiologist Arena tab (docs/arena.md); off by default."),
    arena_images: Optional[Path] = typer.Option(None, "--arena-images", envvar="REXRANK_ARENA_IMAGES",
                                                help="With --arena: a folder of the public set's images, shown with "
                                                "each study (the page may serve files from it), or a Hub dataset "
                                                "of them: hub:ORG/NAME[@REVISION][#ID_COLUMN] (ID_COLUMN: a Parquet "
                                                "dataset's study column)."),
    arena_experts_only: bool = typer.Option(False, "--arena-experts-only", envvar="REXRANK_ARENA_EXPERTS_ONLY",
                                            help="With --arena: only raters on the host's expert allow-list vote."),
    arena_rater: Optional[str] = typer.Option(None, "--arena-rater",
                                              help="With --arena on a server without Hugging Face login: who votes "
                                              "(a host trying the Arena out; e.g. hf:yourname)."),
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
    from rexrank.metrics.boards import edition as board_edition
    from rexrank.leaderboard.app import serve as serve_app

    if edition is not None:
        board_edition(edition)  # an unknown name: one error before anything opens

    options = {"metrics": _metrics(submission_metrics),
               "model_paths": _pairs(model_path), "data_dir": str(references_dir) if references_dir else None,
               "max_bytes": upload_bytes(max_upload_mb), "private_quota": private_quota,
               "rate_limit": rate_limit, "anonymous_limit": anonymous_limit}
    demo, _, _ = serve_app(str(store), host, port, seed=not no_seed, worker=not no_worker, edition=edition,
                           results_repo=results_repo, requests_repo=requests_repo, arena=arena,
                           arena_images=str(arena_images) if arena_images else None,
                           arena_experts_only=arena_experts_only, arena_rater=arena_rater,
                           prevent_thread_lock=True, **options)
    # Only now, once the server answers: the store was pulled, seeded and the page built (tens of seconds on a Space).
    typer.echo(f"store: {store}  url: http://{host}:{port}")
    demo.block_thread()


@app.command("add")
def add(
    results: list[Path] = typer.Argument(..., help="results.json files written by `rexrank score`: every one is "
                                         "checked before any is stored, then all are stored in one transaction."),
    name: Optional[str] = typer.Option(None, "--name", help="Model name shown on the board (default: each "
                                       "results.json's own model name, from `rexrank score --model-name`)."),
    institution: Optional[str] = typer.Option(None, "--institution"),
    url: Optional[str] = typer.Option(None, "--url"),
    year: Optional[int] = typer.Option(None, "--year"),
    model_type: Optional[str] = typer.Option(None, "--model-type"),
    trained_on: Optional[str] = typer.Option(None, "--trained-on", help="Comma-separated dataset names "
                                             "(aliases such as mimic or chexpert are accepted)."),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="The board a results.json scored with "
                                          "--references FILE belongs to (its own dataset is null); must agree with "
                                          "a results.json that names one."),
    split: Optional[str] = typer.Option(None, "--split", help="With --dataset: the split (default: the one the "
                                        "leaderboard scores)."),
    track: Optional[str] = typer.Option(None, "--track", help="With --dataset: the track, where the results.json "
                                        "does not name it."),
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
    allow_unofficial_weights: bool = typer.Option(
        False, "--allow-unofficial-weights", help="Add a result whose metric weights are not (or cannot be shown "
        "to be) the official ones; the board labels its row 'unofficial weights: ...'."),
    no_seed: bool = typer.Option(False, "--no-seed", help="A new store: do not import the published ReXrank tables "
                                 "(recorded in the store, so `serve` and `worker` leave it unseeded too)."),
) -> None:
    """Add `rexrank score` results to the store (only results scored with the official metric weights, unless
    --allow-unofficial-weights; only possible numbers). All or nothing: one bad file adds none."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.records import Provenance, check_numbers, check_weights
    from rexrank.leaderboard.store import Store
    from rexrank.metrics.official import UnofficialWeightsError

    _check_store(store)
    if len(set(results)) != len(results):
        raise InputError("a results.json is given twice: give each file once")
    # Every file read and checked as the store will check it (Store.add_result) before the store opens or is
    # seeded, so a bad file is reported with its name and changes nothing.
    records = []
    for path in results:
        data = _read_results(path)
        try:
            record = _record(data, name, institution, url, year, model_type, trained_on, dataset, split, track)
            check_numbers(record)
            records.append(check_weights(record, allow_unofficial_weights=allow_unofficial_weights))
        except UnofficialWeightsError:
            from rexrank.metrics.official import check_results

            weights = check_results(data)  # its explanation: per metric, the digest found and the official one
            raise UnofficialWeightsError(
                f"{path} was not scored with the official metric weights, so {_nothing(results)}:\n"
                f"{weights.explain()}\nTo add it anyway, labelled '{weights.label}' on the board, pass "
                "--allow-unofficial-weights.") from None
        except InputError as exc:
            raise InputError(f"{path}: {exc}; {_nothing(results)}") from None
    db = Store(store)
    _seed(db, no_seed)
    provenance = Provenance(via="cli")  # as the host; a name someone else owns: NameTaken before anything is stored
    added = db.add_results(records, provenance=provenance, allow_unofficial_weights=allow_unofficial_weights)
    for record, (record_id, new) in zip(records, added):
        what = f"({record.model.name}, {record.dataset} {record.split}, {record.track})"
        label = (record.extra.get("weights") or {}).get("label")
        if new:
            typer.echo(f"added: result #{record_id} {what}" + (f"; labelled '{label}'" if label else ""))
        elif db.is_shown(record_id):
            typer.echo(f"already on the board as #{record_id} {what}, with the same numbers; nothing added")
        else:
            typer.echo(f"already stored as #{record_id} {what}, with the same numbers (an older result: the board "
                       "shows a newer one for this model); nothing added")


def _read_results(path: Path, what: str = "`rexrank score` results.json") -> dict:
    from rexrank.errors import InputError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: bad JSON or UTF-8, or a number over Python's digit limit
        raise InputError(f"cannot read {path}: {exc}") from None
    except RecursionError:
        raise InputError(f"cannot read {path}: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a {what} (a JSON object)")
    return data


def _record(data: dict, name, institution, url, year, model_type, trained_on, dataset, split, track):
    """The record of one results.json, named by --name or by its own model name."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.records import ModelInfo, from_results_json

    if name is None and not isinstance(data.get("model"), str):
        raise InputError("names no model: pass --name")
    model = ModelInfo.from_dict({"name": name if name is not None else data["model"], "institution": institution,
                                 "url": url, "year": year, "model_type": model_type, "trained_on": trained_on})
    # dataset/split/track aliases become the catalog's names here; --dataset names the board of a --references run
    return from_results_json(data, model, dataset=dataset, split=split, track=track)


def _nothing(results: list[Path]) -> str:
    return "it was not added" if len(results) == 1 else f"none of the {len(results)} files was added"


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


@app.command("arena-rater")
def arena_rater(
    username: str = typer.Argument(..., help="The rater's Hugging Face username (or hf:USERNAME)."),
    role: str = typer.Option(..., "--role", help="expert (on the allow-list; votes labelled expert), excluded (their "
                             "votes leave every Arena view) or rater (a plain rater again)."),
    reason: str = typer.Option("", "--reason", help="Why (kept in the log)."),
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
) -> None:
    """The host's decision about an Arena rater: an event of the store's log, synced to the Hub like results."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.arena import rater_identity
    from rexrank.leaderboard.store import RATER_ROLES, Store

    if role not in RATER_ROLES:
        raise InputError(f"unknown --role {role!r}: choose one of {', '.join(RATER_ROLES)}")
    _check_store(store)
    rater = rater_identity(username[3:] if username.startswith("hf:") else username)
    event = Store(store).add_rater_event(rater, role, reason=reason)
    typer.echo(json.dumps({k: event[k] for k in ("rater", "role", "reason")}))


@app.command("add-meta-eval")
def add_meta_eval(
    report: Path = typer.Argument(..., help="The meta_eval.json that `rexrank meta-eval` wrote."),
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
) -> None:
    """Publish the host's meta-evaluation (how each metric agrees with radiologists) on the board's About tab:
    aggregates only (taus, intervals, the raters' ceiling, the paired tests' verdicts, notes), never the expert set's
    text. An event of the store's log, synced to the Hub like results; anything else in the file is refused."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.store import Store

    _check_store(store)
    if report.is_file() and report.stat().st_size > MAX_META_EVAL_BYTES:
        raise InputError(f"{report} is {report.stat().st_size:,} bytes: a meta_eval.json of aggregates is far smaller "
                         f"(at most {MAX_META_EVAL_BYTES:,}); give the file `rexrank meta-eval` wrote")
    data = _read_results(report, "`rexrank meta-eval` meta_eval.json")  # checked whole before the store opens: a refused file changes nothing
    from rexrank.evaluation.meta_eval_report import meta_eval_summary

    try:
        meta_eval_summary(data)
    except InputError as exc:
        raise InputError(f"{report}: {exc}") from None
    digest, added = Store(store).add_meta_eval(data)
    typer.echo(f"{'published' if added else 'already published, the same aggregates; nothing added'}: "
               f"meta-evaluation {digest[:12]}")


@app.command("import-published")
def import_published_cmd(
    sources: Optional[list[Path]] = typer.Argument(
        None, help="Folders or files of published ReXrank tables, named as upstream names them: "
        "findings_result_<key>.csv / result_<key>.csv, with or without gh-pages_ (default: the bundled tables of the "
        "store's board edition)."),
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="With --track: the test set of a single table "
                                          "file whose name does not say it."),
    track: Optional[str] = typer.Option(None, "--track", help="With --dataset: that file's track."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the sync (every model added, changed, withdrawn) "
                                 "and write nothing; exit 2 where the sync itself would be refused."),
    allow_withdraw: bool = typer.Option(False, "--allow-withdraw", help="Let the sync withdraw more than half of "
                                        "the models a table lists (refused otherwise: a truncated table would "
                                        "empty the board)."),
) -> None:
    """Sync the store with the published ReXrank tables: rows added, changed, withdrawn (a model the tables no
    longer list leaves the board), unchanged. The host's tables are authoritative: the store is never seeded again."""
    import tempfile

    from rexrank.errors import InputError
    from rexrank.leaderboard.editions import edition_of
    from rexrank.leaderboard.published import bundled_files, import_tables, read_tables, report_line
    from rexrank.leaderboard.store import Store

    _check_store(store)
    existing = store.is_file()
    # Every table is read and checked before the store opens: a failed import writes nothing, not even the file.
    if sources:
        tables, notes = read_tables(sources, dataset=dataset, track=track)
    else:
        tables, notes = read_tables(bundled_files(edition_of(Store(store)) if existing else None),
                                    dataset=dataset, track=track)
    with tempfile.TemporaryDirectory() as scratch:
        # A dry run on a store not made yet syncs into an empty one of its own: the host's path stays free.
        target = Store(store if existing or not dry_run else Path(scratch) / "dry-run.sqlite")
        report = import_tables(target, tables, notes=notes, seeded=not sources, dry_run=dry_run,
                               allow_withdraw=allow_withdraw)
        target.close()
    typer.echo(report_line(report))
    for note in report["notes"]:
        typer.echo(f"  note: {note}")
    if dry_run:
        for board_table, change, model in report["changes"]:
            typer.echo(f"  {change}: {board_table} {model}")
        if report["refused"] and not allow_withdraw:
            raise InputError(f"the sync would be refused: {report['refused']}")


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

    hub = HubSync(Store(store), repo, requests_repo=requests_repo)
    typer.echo(json.dumps(hub.sync()))
    for path in hub.refused:
        typer.echo(f"  skipped {path}: not a valid event or result (see the log)")


@app.command("backup")
def backup(
    out: Path = typer.Argument(..., help="Where the copy goes: a new file (never overwritten)."),
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
) -> None:
    """A consistent copy of the store while the board serves (SQLite's backup API: the writes still in its -wal
    included; one owner-only file). Restore: docs/hosting.md."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.store import Store

    if not store.is_file():
        raise InputError(f"no store at {store}: nothing to back up (give --store PATH)")
    source = Store(store)
    try:
        copy = source.backup(out)
        typer.echo(f"backed up {store} ({len(source.results(latest=False, include_hidden=True))} results) to {copy}")
    finally:
        source.close()


def _seed(db, no_seed: bool) -> None:
    """The store gets the published tables as ``published.seed_store`` decides (the one rule, for every command)."""
    from rexrank.leaderboard.editions import edition_of
    from rexrank.leaderboard.published import seed_message, seed_store

    message = seed_message(seed_store(db, seed=not no_seed, edition=edition_of(db)))
    if message:
        typer.echo(message)


def _metrics(submission_metrics: str) -> Optional[list[str]]:
    """The worker's metrics: None for 'auto' (``submissions.host_metrics`` decides), else the names given."""
    if submission_metrics.strip().lower() == AUTO_METRICS:
        return None
    from rexrank.evaluation.harness import expand_metrics

    return expand_metrics(submission_metrics)


def _check_store(store: Path) -> None:
    from rexrank.evaluation.paths import check_writable  # not the harness: light commands import no scoring stack

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


@app.command("arena-integrity")
def arena_integrity(
    store: Path = typer.Option(DEFAULT_STORE, "--store"),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="The Arena's test set (one whose text is open; "
                                          "default: the Arena's)."),
    track: Optional[str] = typer.Option(None, "--track", help="Default: the Arena's."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per rater instead of a table."),
) -> None:
    """The Arena's rater integrity signals (docs/arena.md "Signals and the flag"), most suspicious first: the host's
    view, never shown on the public page (it names which model a named rater preferred)."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.arena import INTEGRITY_COLUMNS, Arena
    from rexrank.leaderboard.store import Store

    if not store.is_file():
        raise InputError(f"no store at {store}: give the Space's store file with --store")
    chosen = {k: v for k, v in (("dataset", dataset), ("track", track)) if v is not None}
    rows = Arena(Store(store), n_boot=0, **chosen).integrity()
    if as_json:
        for row in rows:
            typer.echo(json.dumps({h: row[h] for h in INTEGRITY_COLUMNS}))
        return
    cells = [INTEGRITY_COLUMNS] + [[_integrity_cell(row[h]) for h in INTEGRITY_COLUMNS] for row in rows]
    widths = [max(len(line[k]) for line in cells) for k in range(len(INTEGRITY_COLUMNS))]
    for line in cells:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    if not rows:
        typer.echo("(no votes yet)")


def _integrity_cell(value) -> str:
    if isinstance(value, bool):
        return "FLAGGED" if value else ""
    if isinstance(value, float):
        return "n/a" if value != value else f"{value:.2f}"
    return str(value)
