"""`rexrank score` and `rexrank compare`: the evaluation harness on the command line.

Both run on one process or many: `torchrun --nproc_per_node N -m rexrank score ...` or
`accelerate launch --num_processes N -m rexrank score ...` shard the studies; rank 0 writes the results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rexrank.cli.values import finite_float
from rexrank.data.tracks import DEFAULT_TRACK, TRACKS
from rexrank.errors import ConfigError
from rexrank.evaluation.defaults import DEFAULT_CONFIDENCE, DEFAULT_PERMUTATIONS, DEFAULT_RESAMPLES, DEFAULT_SEED
from rexrank.evaluation.predictions import (
    DEFAULT_MAX_FILE_SIZE_MB,
    DEFAULT_MAX_REPORT_CHARS,
    DEFAULT_MAX_REPORT_WORDS,
)


def register(app: typer.Typer) -> None:
    """Add this module's top-level commands to the main app."""
    app.command("score")(score_command)
    app.command("compare")(compare_command)


def _model_paths(values: list[str] | None) -> dict[str, str]:
    from rexrank.metrics import REGISTRY

    out: dict[str, str] = {}
    for item in values or []:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(f"--model-path takes METRIC=PATH (e.g. semb=/models/chexbert.pth), got {item!r}")
        out[REGISTRY.canonical(name.strip())] = path.strip()
    return out


def _metric_options(values: list[str] | None) -> dict[str, dict[str, object]]:
    """METRIC.KEY=VALUE -> {metric: {key: value}}; VALUE is read as JSON when it parses (numbers, true, lists)."""
    import json

    from rexrank.metrics import REGISTRY

    out: dict[str, dict[str, object]] = {}
    for item in values or []:
        target, sep, raw = item.partition("=")
        metric, dot, key = target.partition(".")
        if not sep or not dot or not metric.strip() or not key.strip():
            raise ConfigError(f"--option takes METRIC.KEY=VALUE (e.g. semb.backbone=/models/bert-base-uncased), "
                              f"got {item!r}")
        try:
            value: object = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON (or absurdly nested / long): the text itself
            value = raw
        out.setdefault(REGISTRY.canonical(metric.strip()), {})[key.strip()] = value
    return out


def _metric_settings(metrics: list[str], model_path: list[str] | None,
                     option: list[str] | None) -> tuple[dict[str, str], dict[str, dict[str, object]]]:
    """--model-path and --option values; one that no metric of the run reads is refused (not silently ignored),
    after its keys are checked (a misspelt key is named as such, whatever the run computes)."""
    from rexrank.evaluation.plan import check_settings_read
    from rexrank.metrics import REGISTRY

    paths, configs = _model_paths(model_path), _metric_options(option)
    for name, config in configs.items():
        REGISTRY.check_options(name, config, flag="--option")
    check_settings_read(metrics, {**{name: "--option" for name in configs}, **{name: "--model-path" for name in paths}})
    return paths, configs


def _progress_default(flag: bool | None, quiet: bool) -> bool:
    """--progress/--no-progress wins; --quiet means off; else rexrank.progress's rule (REXRANK_PROGRESS, else on)."""
    from rexrank.progress import enabled

    return enabled(False if quiet and flag is None else flag)


def _metrics_help(text: str) -> str:
    """`text`, then every registered metric and its description, read from the registry (one paragraph each, which
    the help formatter wraps)."""
    from rexrank.errors import RexrankError
    from rexrank.metrics import REGISTRY

    try:
        names, broken = REGISTRY.names(), []
    except RexrankError as exc:  # a broken plugin: the help still lists the rest and says what failed
        names, broken = REGISTRY.names(plugins=False), [f"Not listed: {exc}"]
    return "\n\n".join([text, *(f"{name}: {REGISTRY.spec(name).description}." for name in names), *broken])


def score_command(
    predictions: Path = typer.Option(..., "--predictions", "-p", help="Predictions: ReXrank JSON "
                                     "({id: {..., model_prediction}}), {id: report} JSON, JSONL or CSV (study_id, report)."),
    references: Optional[Path] = typer.Option(None, "--references", "-r", help="Ground truth in the same shapes "
                                              "(ReXrank JSON: the field is picked by --track)."),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="A rexrank test set (iu_xray, mimic_cxr, ...): "
                                          "the references come from its builder unless --references is given."),
    split: Optional[str] = typer.Option(None, "--split", help="Split of --dataset (default: the one the leaderboard scores)."),
    track: str = typer.Option(DEFAULT_TRACK, "--track", help=" or ".join(TRACKS) + "."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Local copy of --dataset."),
    metrics: Optional[str] = typer.Option(None, "--metrics", "-m", help=_metrics_help(
        "Comma-separated metrics (default: the columns every track of the default board edition shows, i.e. "
        "the seven classic ReXrank metrics; 'leaderboard' for all of its columns, crimson and fineradscore too; "
        "'all' for every registered one).")),
    model_path: Optional[list[str]] = typer.Option(None, "--model-path", help="METRIC=PATH: local weights or "
                                                   "another Hub id for a metric (repeatable)."),
    option: Optional[list[str]] = typer.Option(None, "--option", help="METRIC.KEY=VALUE: any metric option "
                                               "(e.g. semb.backbone=PATH, green.backend=vllm); repeatable."),
    model_name: Optional[str] = typer.Option(None, "--model-name", help="Name of the evaluated model "
                                             "(default: the predictions file name)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Results folder (default: results/<model-name>)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the persistent scoring cache."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Scoring cache folder "
                                             "(default: $REXRANK_CACHE/scores or ~/.cache/rexrank/scores)."),
    device: Optional[str] = typer.Option(None, "--device", help="cpu, cuda, cuda:1 ... for model-backed metrics."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Batch size of model-backed metrics."),
    chunk_size: int = typer.Option(256, "--chunk-size", help="Pairs scored between cache commits."),
    allow_missing: bool = typer.Option(False, "--allow-missing", help="Score the studies present on both sides "
                                       "instead of failing on missing or extra ids."),
    max_file_size_mb: float = typer.Option(DEFAULT_MAX_FILE_SIZE_MB, "--max-file-size-mb", parser=finite_float,
                                           help="Refuse input files above this size."),
    max_report_words: int = typer.Option(DEFAULT_MAX_REPORT_WORDS, "--max-report-words", help="Refuse reports "
                                         "(predictions or references) over this many words; punctuation marks "
                                         "count as words."),
    max_report_chars: int = typer.Option(DEFAULT_MAX_REPORT_CHARS, "--max-report-chars", help="Refuse reports "
                                         "over this many characters."),
    max_model_tokens: Optional[int] = typer.Option(None, "--max-model-tokens", help="Per-study budget of "
                                                   "model-backed metrics: refuse predictions over this many tokens "
                                                   "(punctuation marks count) before any model runs. Default: none."),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", help="Bootstrap resamples for the CIs."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Seed of the bootstrap."),
    confidence: float = typer.Option(DEFAULT_CONFIDENCE, "--confidence", parser=finite_float, help="CI level."),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="Progress with ETA: a bar "
                                            "on a terminal, else a log line every REXRANK_PROGRESS_INTERVAL_S "
                                            "(default 10) s. Default: on unless --quiet or REXRANK_PROGRESS=0."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the results folder."),
) -> None:
    """Score predictions against references: per_study.parquet, results.json, results.md, model_index.yaml."""
    from rexrank import parallel
    from rexrank.evaluation.harness import (RunMemo, ScoreOptions, check_writable, evaluate, expand_metrics,
                                            output_files, prepare_metrics, write_files)
    from rexrank.evaluation.inputs import load_inputs

    # Every option is checked here, before any input is read, any model loads or any pair is scored.
    if references is None and dataset is None:
        raise ConfigError("give the ground truth: --references FILE, or --dataset NAME [--split SPLIT]")
    dataset, split, track = _canonical_names(dataset, split, track, references is None)
    model = model_name or _default_model_name(predictions)
    out_dir = out or _results_folder(model)
    check_writable(out_dir, "--out")
    names = expand_metrics(metrics)
    paths, configs = _metric_settings(names, model_path, option)
    options = ScoreOptions(metrics=names, model_paths=paths, metric_configs=configs,
                           device=device, batch_size=batch_size,
                           use_cache=not no_cache, cache_dir=cache_dir, chunk_size=chunk_size,
                           max_model_tokens=max_model_tokens,
                           progress=_progress_default(progress, quiet), resamples=resamples,
                           seed=seed, confidence=confidence)
    if max_report_words < 1 or max_report_chars < 1:
        raise ConfigError("--max-report-words and --max-report-chars must be at least 1")
    # Last of the checks: every metric built (its constructor checks its option values), weights located.
    built = prepare_metrics(options, dataset=dataset)
    # The same files under the same settings as a run the cache remembers: its outputs, written back.
    memo = RunMemo.for_run(predictions, references, model=model, track=track, dataset=dataset, split=split,
                           allow_missing=allow_missing, max_file_size_mb=max_file_size_mb,
                           max_report_words=max_report_words, max_report_chars=max_report_chars, options=options,
                           metrics=built)
    recalled = memo.recall() if memo is not None else None
    ctx = parallel.context()
    if recalled is not None:
        results, stats, note = recalled.results, recalled.stats, recalled.note
    else:
        inputs = load_inputs(predictions, track=track, references=references, dataset=dataset, split=split,
                             data_dir=data_dir, allow_missing=allow_missing, max_file_size_mb=max_file_size_mb,
                             max_report_words=max_report_words, max_report_chars=max_report_chars)
        if ctx.is_main and (shortfall := parallel.launch_shortfall(ctx.world_size)):
            typer.secho(f"warning: {shortfall}", fg=typer.colors.YELLOW, err=True)
        note = inputs.drop_note()
    if note and ctx.is_main:
        typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)
    if recalled is not None:
        paths = recalled.write(out_dir)
    else:
        from rexrank.progress import switched

        with switched(options.progress):  # the bootstrap after scoring follows the same switch
            evaluation = evaluate(inputs, model=model, track=track, dataset=dataset, split=split, options=options,
                                  metrics=built)
        if evaluation is None:  # not rank 0: rank 0 writes the results
            return
        files = output_files(evaluation)
        paths = write_files(out_dir, files)
        if memo is not None:
            memo.remember(evaluation, files, note)
        results, stats = evaluation.results, evaluation.stats
    if quiet:
        typer.echo(str(out_dir))
        return
    from rich.console import Console

    from rexrank.evaluation.report import pair_counts, print_summary

    console = Console(width=max(100, Console().width))
    print_summary(results, console)
    for line in pair_counts(results, stats):  # studies vs distinct pairs, per metric
        console.print(line, markup=False)
    console.print(parallel.processes_line(ctx.world_size))
    console.print("wrote " + ", ".join(str(p) for p in paths.values()))


def _canonical_names(dataset: str | None, split: str | None, track: str,
                     split_default: bool) -> tuple[str | None, str | None, str]:
    """Aliases -> the catalog's names, so results.json (and `leaderboard add` after it) holds canonical ones.

    ``split_default``: without --split, the split the leaderboard scores (references from the dataset).
    """
    from rexrank.data.catalog import canonical_dataset, canonical_split
    from rexrank.data.tracks import canonical_track

    track = canonical_track(track)
    if dataset is None:
        return None, split, track
    dataset = canonical_dataset(dataset)
    if split is not None or split_default:
        split = canonical_split(dataset, split)
    return dataset, split, track


def _results_folder(model: str) -> Path:
    """results/<model name>, the default --out: the name must be one plain folder name, or the results would be
    written outside results/ (`--model-name ../../x`, an absolute path)."""
    if model in ("", ".", "..") or any(c in model for c in "/\\\0") or Path(model).is_absolute():
        safe = "__".join(part for part in model.replace("\\", "/").split("/") if part not in ("", ".", "..")) \
            or "my-model"
        raise ConfigError(f"the model name {model!r} (--model-name, or the predictions file's name) is not a plain "
                          f"folder name, and results/<model name> must stay inside results/: pass a name without "
                          f"'/', '\\' or '..' (e.g. --model-name {safe}), or choose the folder with --out DIR")
    return Path("results") / model


def _default_model_name(predictions: Path) -> str:
    stem = predictions.name
    for suffix in (".jsonl", ".json", ".csv", ".ndjson"):
        if stem.lower().endswith(suffix):
            return stem[: -len(suffix)]
    return stem


def compare_command(
    runs: list[Path] = typer.Argument(..., help="Two or more `rexrank score` results folders or per_study.parquet files."),
    metrics: Optional[str] = typer.Option(None, "--metrics", "-m", help="Comma-separated metrics (default: every "
                                          "metric all runs share)."),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", help="Paired bootstrap resamples."),
    permutations: int = typer.Option(DEFAULT_PERMUTATIONS, "--permutations",
                                     help="Approximate-randomization permutations."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Seed of both tests."),
    confidence: float = typer.Option(DEFAULT_CONFIDENCE, "--confidence", parser=finite_float, help="CI level."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write compare.json and compare.md here."),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="Progress of the paired tests "
                                            "with ETA: a bar on a terminal, else a log line every "
                                            "REXRANK_PROGRESS_INTERVAL_S (default 10) s. Default: on unless "
                                            "REXRANK_PROGRESS=0."),
) -> None:
    """Paired bootstrap and approximate-randomization tests, rankings with rank CIs, subgroups, metric agreement."""
    import json

    from rich.console import Console

    from rexrank.evaluation.compare import compare_runs, load_run, markdown, print_report
    from rexrank.evaluation.harness import check_statistics, check_writable, write_files
    from rexrank.progress import switched

    if len(runs) < 2:
        raise ConfigError("compare needs at least two runs")
    check_statistics(resamples, confidence, seed, permutations=permutations)
    if out is not None:
        check_writable(out, "--out")
    names = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    with switched(progress):  # None: REXRANK_PROGRESS, else on (rexrank.progress)
        report = compare_runs([load_run(p) for p in runs], names, resamples=resamples, permutations=permutations,
                              seed=seed, confidence=confidence)
    print_report(report, Console(width=max(120, Console().width)))
    if out is not None:
        paths = write_files(out, {"compare.json": (json.dumps(report, indent=2, allow_nan=False) + "\n").encode(),
                                  "compare.md": markdown(report).encode("utf-8")})
        typer.echo("wrote " + ", ".join(str(p) for p in paths.values()))
