"""`rexrank generate`: one report per study of a test set with any model, on one process or many.

Run it with `accelerate launch [--num_processes N] -m rexrank generate ...` or `torchrun --nproc_per_node N -m rexrank
generate ...` for data parallel; a plain `rexrank generate ...` uses one process.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rexrank.cli.values import finite_float
from rexrank.data.tracks import DEFAULT_TRACK, TRACKS

EXIT_STUDIES_FAILED = 3


def register(app: typer.Typer) -> None:
    """Add this module's top-level commands to the main app."""
    app.command("generate")(generate_command)


def generate_command(
    model: str = typer.Option(..., "--model", "-m", help="Hugging Face model (local dir or Hub id), "
                              "package.module:function / file.py:function, or an upstream inference.py."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (resumable: rerun the same command to continue)."),
    dataset: str | None = typer.Option(None, help="A rexrank test set (see `rexrank data`), e.g. iu_xray."),
    split: str | None = typer.Option(None, help="Split of --dataset (default: the one the leaderboard scores)."),
    data_dir: Path | None = typer.Option(None, help="Local copy of --dataset (default $REXRANK_DATA_DIR/<name>)."),
    input_json: Path | None = typer.Option(None, help="A ReXrank-style JSON of studies instead of --dataset."),
    image_root: Path | None = typer.Option(None, help="Root of --input-json's relative image paths "
                                           "(default: the JSON's folder)."),
    track: str = typer.Option(DEFAULT_TRACK, help=" or ".join(TRACKS) + ": what the report must contain, and "
                              "which studies count."),
    limit: int | None = typer.Option(None, min=1, help="Only the first N studies (a quick trial)."),
    images: str = typer.Option("auto", help="all: every image of a study; key: the key image only; auto: all if the "
                               "model takes several images, else key."),
    context: bool = typer.Option(False, "--context/--no-context", help="Give the model the study's indication/"
                                 "comparison text (for models that read text)."),
    prompt: str | None = typer.Option(None, help="Prompt template, or @file. Placeholders: {context} {n_images} "
                                      "{views}. Default: a findings (or findings+impression) instruction."),
    model_type: str = typer.Option("auto", help="auto, vision-encoder-decoder, image-text-to-text, entrypoint, "
                                   "script."),
    batch_size: int | None = typer.Option(None, min=1, help="Studies per batch (default 8; 256 for inference.py)."),
    max_new_tokens: int | None = typer.Option(None, help="Most tokens to generate per report (default 256)."),
    num_beams: int | None = typer.Option(None, help="Beam search width (default 1: greedy)."),
    do_sample: bool = typer.Option(False, "--do-sample", help="Sample instead of greedy decoding."),
    temperature: float | None = typer.Option(None, parser=finite_float, help="Sampling temperature (with --do-sample)."),
    top_p: float | None = typer.Option(None, parser=finite_float, help="Nucleus sampling (with --do-sample)."),
    gen_arg: list[str] = typer.Option([], "--gen-arg", help="Extra generate() argument KEY=VALUE (JSON value), "
                                      "repeatable, e.g. repetition_penalty=1.1."),
    dtype: str = typer.Option("auto", help="auto (the checkpoint's), float32, bfloat16 or float16."),
    device: str | None = typer.Option(None, help="cpu to force the CPU; default: this process's accelerator."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Run the model repo's own code "
                                           "(only for models you trust)."),
    chat_template: bool = typer.Option(True, "--chat-template/--no-chat-template", help="Wrap the prompt in the "
                                       "processor's chat template (image-text-to-text models)."),
    model_arg: list[str] = typer.Option([], "--model-arg", help="KEY=VALUE for an entry point (JSON value), "
                                        "repeatable."),
    script_python: str | None = typer.Option(None, help="Python interpreter for an inference.py model "
                                             "(default: this one)."),
    sandbox: bool | None = typer.Option(None, "--sandbox/--no-sandbox", help="Run the model's code under "
                                        "bubblewrap, seeing only its files, its Python environment and its batch's "
                                        "images (docs/threat_model.md). Default: on for a private test set."),
    trust_model: bool = typer.Option(False, "--i-trust-this-model", help="With --no-sandbox on a private test set: "
                                     "you have vetted the model's code and accept that it could read the "
                                     "references."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="On resume, try failed studies again."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard an earlier run in --out."),
    allow_errors: bool = typer.Option(False, "--allow-errors", help="Exit 0 even if some studies failed."),
    progress: bool | None = typer.Option(None, "--progress/--no-progress", help="Progress with ETA: a bar on a "
                                            "terminal, else a log line every REXRANK_PROGRESS_INTERVAL_S (default "
                                            "10) s. Default: on unless REXRANK_PROGRESS=0."),
) -> None:
    """Generate one report per study into OUT/predictions.json (ReXrank JSON) and OUT/reports.json."""
    from rexrank.errors import ConfigError
    from rexrank.evaluation.harness import check_device, check_writable
    from rexrank.generate import GenerateOptions, GenerationSettings, generate, load_adapter
    from rexrank.progress import enabled as progress_enabled

    # Absolute paths from here on: an inference.py model runs in its own folder, and every path it gets must hold.
    data_dir, input_json, image_root, out = (None if p is None else p.expanduser().absolute()
                                             for p in (data_dir, input_json, image_root, out))
    # Options first: a bad value fails before any study is read or any model loads.
    check_device(device)
    check_writable(out, "--out")
    settings = None
    if any(v is not None for v in (max_new_tokens, num_beams, temperature, top_p)) or do_sample or gen_arg:
        defaults = GenerationSettings()
        settings = GenerationSettings(
            max_new_tokens=defaults.max_new_tokens if max_new_tokens is None else max_new_tokens,
            num_beams=defaults.num_beams if num_beams is None else num_beams, do_sample=do_sample,
            temperature=temperature, top_p=top_p, extra=_key_values(gen_arg, "--gen-arg")).check()
    from rexrank.generate.adapters.sandbox import find_bwrap, sandbox_required

    use_sandbox = sandbox_required(sandbox, dataset is not None and _is_private(dataset), trust_model)
    if use_sandbox:
        find_bwrap()  # a missing bwrap fails before the studies are read
    records = _studies(dataset, split, data_dir, input_json, image_root, track, limit)
    _check_images(records, dataset, data_dir, input_json, image_root)  # before any adapter or model exists
    if prompt is not None and prompt.startswith("@"):
        path = Path(prompt[1:]).expanduser()
        if not path.is_file():
            raise ConfigError(f"--prompt file {path} does not exist")
        prompt = path.read_text(encoding="utf-8").strip()
    adapter = load_adapter(model, model_type, model_args=_key_values(model_arg, "--model-arg"), settings=settings,
                           dtype=dtype, trust_remote_code=trust_remote_code, chat_template=chat_template,
                           script_python=script_python, sandbox=use_sandbox,
                           hidden=_hidden_paths(dataset, data_dir, input_json, out) if use_sandbox else ())
    options = GenerateOptions(track=track, images=images, context=context, prompt=prompt, batch_size=batch_size,
                              retry_errors=retry_errors, overwrite=overwrite,
                              progress=progress_enabled(progress), device=device, trust_model=trust_model)
    try:
        result = generate(records, adapter, out, options)
    finally:
        if hasattr(adapter, "close"):  # a sandboxed model's process and staging folder
            adapter.close()
    # SystemExit rather than typer.Exit: rexrank.cli.main runs click with standalone_mode=False, where click turns
    # typer.Exit into a return value that main() does not pass on, so the exit status would be lost.
    failed = bool(result.errors) and not allow_errors
    if not _is_main_process():
        raise SystemExit(EXIT_STUDIES_FAILED if failed else 0)
    from rexrank.parallel import processes_line

    typer.echo(f"{result.n_ok} of {result.n_studies} reports -> {result.predictions_path} (ReXrank JSON) and "
               f"{result.reports_path} ({result.n_done_before} from an earlier run, {result.n_generated} generated "
               f"now in {result.seconds:.2f}s; {processes_line(result.n_processes)})")
    if result.n_empty:
        typer.secho(f"warning: {result.n_empty} reports are empty", fg=typer.colors.YELLOW, err=True)
    if result.errors:
        shown = list(result.errors.items())[:5]
        lines = "\n".join(f"  {study_id}: {error.splitlines()[0][:200]}" for study_id, error in shown)
        more = f"\n  ... and {len(result.errors) - len(shown)} more" if len(result.errors) > len(shown) else ""
        typer.secho(f"{len(result.errors)} studies failed (all in {out / 'errors.json'}):\n{lines}{more}\n"
                    "They are left out of the predictions. Fix the cause and rerun with --retry-errors.",
                    fg=typer.colors.RED, err=True)
        if failed:
            raise SystemExit(EXIT_STUDIES_FAILED)


def _is_private(dataset: str) -> bool:
    from rexrank.data.catalog import canonical_dataset, is_private

    return is_private(canonical_dataset(dataset))


def _hidden_paths(dataset, data_dir, input_json, out) -> list:
    """What a sandbox must never mount: the references (the data dir, an input JSON), the run folder, rexrank's
    caches and the datasets cache."""
    import os

    import datasets.config

    from rexrank.data import default_data_dir
    from rexrank.evaluation.cache import default_cache_dir

    hidden = [out, input_json, default_cache_dir(), datasets.config.HF_DATASETS_CACHE,
              os.environ.get("REXRANK_DATA_DIR")]
    if dataset is not None:
        hidden.append(data_dir if data_dir is not None else default_data_dir(dataset))
    return [p for p in hidden if p]


def _studies(dataset, split, data_dir, input_json, image_root, track, limit) -> list[dict]:
    from rexrank.errors import ConfigError

    if (dataset is None) == (input_json is None):
        raise ConfigError("pass exactly one of --dataset NAME or --input-json FILE")
    if input_json is None and image_root is not None:
        raise ConfigError("--image-root goes with --input-json")
    if input_json is not None and (split is not None or data_dir is not None):
        raise ConfigError("--split/--data-dir go with --dataset")
    from rexrank import data

    if dataset is not None:
        rows = data.load(dataset, data_dir=data_dir, split=split, track=track)
        if limit is not None:
            rows = rows.select(range(min(limit, len(rows))))
        return list(rows)
    records = data.read_rexrank_json(input_json, image_root=image_root)
    required = data.get_track(track).requires
    kept = [r for r in records if all(r.get(column) is not None for column in required)]
    if len(kept) < len(records):
        typer.secho(f"{track} track: {len(records) - len(kept)} of {len(records)} studies excluded "
                    f"(no {' or '.join(required)})", err=True)
    return kept[:limit] if limit is not None else kept


def _check_images(records, dataset, data_dir, input_json, image_root) -> None:
    """Every image of every study (all of them, whatever --images picks later: the adapter that decides does not
    exist yet) must be there; else one error naming the option that points at them."""
    from rexrank.generate.images import check_images
    from rexrank.generate.studies import image_paths_of

    if dataset is not None:
        from rexrank.data import default_data_dir, get_dataset_spec

        spec = get_dataset_spec(dataset)
        where = data_dir if data_dir is not None else default_data_dir(spec.name)
        layout = "\n".join(f"    {line}" for line in spec.layout.splitlines())
        fix = (f"Pass --data-dir pointing at the folder that holds the {spec.label} images (now: {where}), laid "
               f"out as:\n{layout}\nWhere to get them and how to check a copy: docs/generate.md, \"Where the images "
               "come from\".")
    else:
        root = image_root if image_root is not None else input_json.parent
        fix = (f"Pass --image-root pointing at the folder that the image paths in {input_json.name} are relative to "
               f"(now: {root}); see docs/generate.md, \"Where the images come from\".")
    check_images(((r.get("study_id"), [*image_paths_of(r), *([r["key_image"]] if r.get("key_image") else [])])
                  for r in records), fix)


def _key_values(items: list[str], option: str) -> dict:
    from rexrank.errors import ConfigError

    values = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{option} expects KEY=VALUE, got {item!r}")
        try:
            values[key.strip()] = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON (or absurdly nested / long): the text itself
            values[key.strip()] = raw
    return values


def _is_main_process() -> bool:
    from accelerate import PartialState  # the state generate() created (a singleton)

    return PartialState().is_main_process
