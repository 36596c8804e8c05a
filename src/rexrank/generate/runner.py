"""Generate one report per study with any adapter, on one process or many (accelerate / torchrun), resumably.

Flow per process: the main process locks the output folder (one run per folder, generate/lock.py); then check the
output folder belongs to this run (run.json), collect the studies already done (from
every process's part file, shared across processes), form batches over the pending studies, take every
world_size-th batch, generate (preparing the next batch on a thread meanwhile), append each finished batch to this
process's JSONL, and at the end gather all records and write the predictions in input order on the main process.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rexrank.data.private_files import make_private, private_file
from rexrank.data.rexrank_json import MODEL_PREDICTION
from rexrank.data.tracks import DEFAULT_TRACK
from rexrank.errors import ConfigError, InputError
from rexrank.generate.adapters.base import Adapter
from rexrank.generate.images import check_images, image_identity, same_images
from rexrank.generate.lock import RunLock
from rexrank.generate.prompts import DEFAULT_PROMPTS, check_template, format_report
from rexrank.generate.sharding import batches_for_process, in_input_order, make_batches
from rexrank.generate.store import PARTS_DIR, PartWriter, latest_by_id, part_path, read_parts
from rexrank.generate.studies import (StudyInput, build_inputs, image_root_of, private_dataset,
                                      resolve_image_mode, rexrank_record)

log = logging.getLogger("rexrank.generate")

RUN_FILE = "run.json"
PREDICTIONS_FILE = "predictions.json"  # ReXrank JSON: input record + "model_prediction"
REPORTS_FILE = "reports.json"  # {study_id: report}
ERRORS_FILE = "errors.json"  # {study_id: error message}
WORK_DIR = "work"
DEFAULT_BATCH_SIZE = 8
# What to do when a study's images are missing (the CLI passes a sharper, dataset-specific sentence).
IMAGES_FIX = ("Point every study's image paths at existing files (rexrank generate: --data-dir with --dataset, "
              "--image-root with --input-json; see docs/generate.md, \"Where the images come from\").")


@dataclass
class GenerateOptions:
    track: str = DEFAULT_TRACK
    images: str = "auto"  # auto | all | key
    context: bool | None = None  # None: off (opt in with True); only for models that read context
    prompt: str | None = None  # template; None: DEFAULT_PROMPTS[track]
    batch_size: int | None = None  # None: the adapter's default
    retry_errors: bool = False  # on resume, generate again the studies that failed before
    overwrite: bool = False  # discard an earlier run in the same folder
    progress: bool = True
    device: str | None = None  # None: accelerate's device for this process
    # A private test set's studies go only to a sandboxed adapter (load_adapter(..., sandbox=True)) unless the host
    # vouches for the code (the CLI's --no-sandbox --i-trust-this-model).
    trust_model: bool = False
    # The folder the run's files name images relative to (the data dir; an input JSON's image root); None: the
    # deepest folder holding every image of the run. No absolute host path goes into the run's files.
    image_root: str | os.PathLike | None = None


@dataclass
class GenerateResult:
    out_dir: Path
    n_studies: int
    n_done_before: int  # finished by an earlier (interrupted) run
    n_generated: int  # studies this run attempted (all processes)
    errors: dict[str, str] = field(default_factory=dict)  # study_id -> error, input order
    n_empty: int = 0
    seconds: float = 0.0  # generation phase: every process's model loaded -> last process done
    n_processes: int = 1  # processes that took part (accelerate's count, not the launcher's ask)

    @property
    def n_ok(self) -> int:
        return self.n_studies - len(self.errors)

    @property
    def predictions_path(self) -> Path:
        return self.out_dir / PREDICTIONS_FILE

    @property
    def reports_path(self) -> Path:
        return self.out_dir / REPORTS_FILE


def generate(records: Iterable[Mapping[str, Any]], adapter: Adapter, out_dir: str | os.PathLike,
             options: GenerateOptions | None = None, *, state=None) -> GenerateResult:
    """Generate reports for `records` (Study dicts, in the order the outputs will have) into `out_dir`.

    Adapters get StudyInputs built from the allow-listed fields of each record only (studies.model_view); the full
    records are read here again only to write predictions.json. Raises ConfigError when another run holds out_dir,
    and InputError, before the adapter loads its model, when an image of a study is missing.
    """
    options = options or GenerateOptions()
    from rexrank.data.tracks import get_track

    get_track(options.track)
    out = Path(out_dir).expanduser().absolute()  # handed to adapters that run elsewhere (inference.py's folder)
    records = list(records)
    if not getattr(adapter, "sandboxed", False) and not options.trust_model \
            and any(private_dataset(r.get("dataset")) for r in records):
        raise ConfigError(f"these studies are from a private test set and {adapter.name} runs in this process, where "
                          "it could read the reference reports: build the adapter with load_adapter(..., "
                          "sandbox=True) (rexrank generate does so by default), or set GenerateOptions(trust_model="
                          "True) if you have vetted the code")
    image_mode = resolve_image_mode(options.images, adapter.multi_image, adapter.name)
    use_context = _context_setting(options.context, adapter)
    if options.prompt is not None and not adapter.uses_prompt:
        raise ConfigError(f"--prompt does not apply to {adapter.name}: it takes no text prompt")
    template = check_template(options.prompt if options.prompt is not None else DEFAULT_PROMPTS[options.track])
    batch_size = options.batch_size or getattr(adapter, "default_batch_size", DEFAULT_BATCH_SIZE)
    if batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1, got {batch_size}")
    inputs = build_inputs(records, image_mode=image_mode, use_context=use_context, prompt_template=template)
    if not inputs:
        raise InputError("no studies to generate reports for")
    check_images(((s.study_id, s.images) for s in inputs), IMAGES_FIX)

    root = os.path.abspath(os.path.expanduser(options.image_root)) if options.image_root is not None \
        else image_root_of(records)
    state = state or _partial_state(options.device)
    fingerprint = {"adapter": adapter.config(), "track": options.track, "images": image_mode,
                   "context": use_context, "prompt": template if adapter.uses_prompt else None}
    lock = _lock_run(state, out)
    try:
        return _generate(records, inputs, adapter, out, options, state, fingerprint, batch_size,
                         _HostPaths(root, str(out)))
    finally:
        if lock is not None:
            lock.release()


def _lock_run(state, out: Path) -> RunLock | None:
    """The main process locks `out`; every process learns whether it could, and all raise the same error if not
    (a rank left waiting for a main process that gave up would hang)."""
    lock, error = None, None
    if state.is_main_process:
        try:
            lock = RunLock.acquire(out)
        except ConfigError as exc:
            error = str(exc)
    errors = [e for e in _gather(state, [error] if state.is_main_process else []) if e]
    if errors:
        if lock is not None:
            lock.release()
        raise ConfigError(errors[0])
    return lock


def _generate(records: list, inputs: list[StudyInput], adapter: Adapter, out: Path, options: GenerateOptions,
              state, fingerprint: dict, batch_size: int, paths: _HostPaths) -> GenerateResult:
    rank, world = state.process_index, state.num_processes
    if not options.overwrite:
        _check_run_file(out, fingerprint)
    state.wait_for_everyone()
    if state.is_main_process:
        _start_run_folder(out, fingerprint, options.overwrite)
    state.wait_for_everyone()

    done = latest_by_id(_read_all_parts(state, out))
    by_id = {s.study_id: s for s in inputs}
    # A failed study is kept as failed (until --retry-errors) only while its images are the same files: a rerun
    # that fixes --data-dir retries it without being asked.
    finished = {i for i, r in done.items() if i in by_id and (
        r.get("error") is None or not (options.retry_errors or _images_changed(r, by_id[i])))}
    _check_same_images(out, [s for s in inputs if s.study_id in finished], done)
    pending = [s for s in inputs if s.study_id not in finished]
    batches = make_batches(pending, batch_size)
    mine = batches_for_process(batches, rank, world)
    if state.is_main_process:
        log.info("%d studies: %d done before, %d to generate on %d process(es), batches of %d",
                 len(inputs), len(finished), len(pending), world, batch_size)
        from rexrank.parallel import launch_shortfall

        if shortfall := launch_shortfall(world):
            log.warning("warning: %s", shortfall)

    if mine:  # a process with nothing to do (a finished run) loads no model
        adapter.load(options.device or str(state.device))
        if hasattr(adapter, "workdir"):
            adapter.workdir = out / WORK_DIR / f"process-{rank:05d}"
    state.wait_for_everyone()  # generation time is measured from the moment every model is loaded
    started = time.perf_counter()
    if mine:
        with PartWriter(part_path(out, rank)) as writer:
            _run_batches(adapter, mine, writer, options.track, paths,
                         progress=options.progress and state.is_main_process, world=world)
    state.wait_for_everyone()
    seconds = time.perf_counter() - started

    final = latest_by_id(_read_all_parts(state, out))
    ordered = in_input_order([s.study_id for s in inputs], final)
    missing = [s.study_id for s, r in zip(inputs, ordered, strict=True) if r is None]
    if missing:  # a process wrote nothing for studies it was given: never let that pass silently
        raise RuntimeError(f"{len(missing)} studies have no record after generation (first: {missing[:5]})")
    errors = {r["study_id"]: r["error"] for r in ordered if r.get("error") is not None}
    n_empty = sum(1 for r in ordered if r.get("error") is None and not r["report"].strip())
    if state.is_main_process:
        _write_outputs(out, inputs, records, ordered, paths.root)
        make_private([out])  # what a library or an adapter (inference.py's work folder) created with its own mode
    state.wait_for_everyone()
    return GenerateResult(out, len(inputs), len(finished), len(pending), errors, n_empty, seconds, world)


def _read_all_parts(state, out: Path) -> list[dict]:
    """Every part record, read once per node (the local main process) and shared; a damaged part file fails every
    process with the same error (a rank left waiting in the gather would hang)."""
    error, records = None, []
    if state.is_local_main_process:
        try:
            records = read_parts(out)
        except InputError as exc:
            error = str(exc)
    pieces = _gather(state, [(error, records)] if state.is_local_main_process else [])
    errors = [e for e, _ in pieces if e]
    if errors:
        raise InputError(errors[0])
    return [r for _, part in pieces for r in part]


def _check_same_images(out: Path, kept: list[StudyInput], done: dict[str, dict]) -> None:
    """A finished study is kept only if it was generated from the very files this run gives it (path and size):
    the image folder is part of a run's settings, study by study, so a `--limit` trial still resumes into the full
    run while a rerun with another --data-dir is refused. Failed studies (no report to mix) and records written
    before images were recorded are not compared."""
    changed = [s for s in kept if done[s.study_id].get("error") is None and _images_changed(done[s.study_id], s)]
    if changed:
        study = changed[0]
        raise ConfigError(
            f"{out} holds reports generated from other image files than this run's ({len(changed)} of {len(kept)} "
            f"finished studies; {study.study_id}: now {_describe_images(study.images)}, other files or sizes "
            "then): its reports would be mixed with this run's. Resume with that run's --data-dir (or "
            "--image-root), or use another --out, or pass --overwrite to discard it.")


def _images_changed(record: dict, study: StudyInput) -> bool:
    """The study's images resolve to other files (or ones that were absent now exist) since ``record`` was written
    (a record from before images were recorded counts as unchanged)."""
    before = record.get("images")
    return before is not None and not same_images(before, study.images)


def _describe_images(images: tuple[str, ...]) -> str:
    return ", ".join(f"{path} ({'absent' if size is None else f'{size} bytes'})"
                     for path, (_, size) in zip(images, image_identity(images), strict=True))


@dataclass(frozen=True)
class _HostPaths:
    """The host folders the run's files name paths relative to: ``root`` for images, ``out`` for the run's own."""

    root: str
    out: str

    def relative(self, text: str) -> str:
        """``text`` (an error message) with the image root and the run folder left out of every path in it."""
        for folder in sorted({self.root.rstrip(os.sep), self.out.rstrip(os.sep)}, key=len, reverse=True):
            if folder:  # the file system's root: every path would lose its first slash, and nothing is hidden
                text = text.replace(folder + os.sep, "")
        return text


def _context_setting(requested: bool | None, adapter: Adapter) -> bool:
    uses_context = getattr(adapter, "uses_context", adapter.uses_prompt)
    if requested and not uses_context:
        raise ConfigError(f"--context does not apply to {adapter.name}: it takes no text input")
    return bool(requested) and uses_context


def _partial_state(device: str | None):
    """accelerate's process state. Without any accelerator, processes started by torchrun / accelerate launch
    must ask for CPU explicitly, or accelerate sees one process each (distributed_type NO) and they all duplicate
    the whole run."""
    from accelerate import PartialState

    return PartialState(cpu=device == "cpu" or not _has_accelerator())


def _has_accelerator() -> bool:
    import torch

    if torch.cuda.is_available():
        return True
    from accelerate.utils import is_mlu_available, is_npu_available, is_xpu_available

    return is_xpu_available() or is_npu_available() or is_mlu_available()


def _gather(state, items: list) -> list:
    if state.num_processes == 1:
        return items
    from accelerate.utils import gather_object

    return gather_object(items)


def _check_run_file(out: Path, fingerprint: dict) -> None:
    path = out / RUN_FILE
    if not path.exists():
        if (out / PARTS_DIR).is_dir() and any((out / PARTS_DIR).iterdir()):
            raise ConfigError(f"{out} holds generated studies but no {RUN_FILE}: use another --out or --overwrite")
        return
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))["fingerprint"]
    except (ValueError, KeyError, TypeError):  # ValueError: bad JSON, or bytes that are not UTF-8
        raise ConfigError(f"{path} is not a rexrank generate run file: use another --out or --overwrite") from None
    current = json.loads(json.dumps(fingerprint))  # same JSON normalisation as the stored copy
    if previous != current:
        changed = sorted(k for k in set(previous) | set(current) if previous.get(k) != current.get(k))
        raise ConfigError(
            f"{out} holds a run with different settings ({', '.join(changed)}): its reports would be mixed with "
            "this run's. Resume with the same settings, or use another --out, or pass --overwrite to discard it.")


def _start_run_folder(out: Path, fingerprint: dict, overwrite: bool) -> None:
    if overwrite:
        for name in (PARTS_DIR, WORK_DIR):
            shutil.rmtree(out / name, ignore_errors=True)
        for name in (RUN_FILE, PREDICTIONS_FILE, REPORTS_FILE, ERRORS_FILE):
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    make_private([out])  # an earlier run's files, written before run folders were owner-only
    if not (out / RUN_FILE).exists():
        _write_json(out / RUN_FILE, {"fingerprint": fingerprint, "created": time.strftime("%Y-%m-%dT%H:%M:%S")})


def _run_batches(adapter: Adapter, batches: list[list[StudyInput]], writer: PartWriter, track: str,
                 paths: _HostPaths, *, progress: bool, world: int) -> None:
    from rexrank.progress import task

    total = sum(len(b) for b in batches)
    desc = "generate" if world == 1 else f"generate (process 0 of {world})"
    with task(total, desc, unit="study", enabled=progress) as bar, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="rexrank-prepare") as pool:
        # Prepare batch k+1 (read images, tokenise) while batch k generates.
        upcoming = pool.submit(_prepare, adapter, batches[0])
        for k, batch in enumerate(batches):
            prepared = upcoming.result()
            if k + 1 < len(batches):
                upcoming = pool.submit(_prepare, adapter, batches[k + 1])
            writer.write(_finish(adapter, batch, prepared, track, paths))
            bar.update(len(batch))


def _prepare(adapter: Adapter, batch: list[StudyInput]):
    """(studies to run, their prepared input or the exception preparing them, {study_id: error})."""
    errors: dict[str, str] = {}
    runnable = []
    for study in batch:
        if not study.images:
            errors[study.study_id] = "InputError: the study has no images"
        elif missing := study.missing_images():  # the full paths: _finish makes them relative
            errors[study.study_id] = f"FileNotFoundError: image(s) not found: {', '.join(missing)}"
        else:
            runnable.append(study)
    if not runnable:
        return runnable, None, errors
    try:
        return runnable, adapter.prepare(runnable), errors
    except Exception as exc:  # noqa: BLE001 - one unreadable image must not fail the run: isolated below
        return runnable, exc, errors


def _finish(adapter: Adapter, batch: list[StudyInput], prepared, track: str, paths: _HostPaths) -> list[dict]:
    runnable, inputs, errors = prepared
    answers: dict[str, str | Exception] = {}
    if runnable:
        outputs = _call(adapter, inputs, len(runnable))
        if isinstance(outputs, Exception) and adapter.isolate_failures and len(runnable) > 1:
            outputs = [_single(adapter, study) for study in runnable]
        elif isinstance(outputs, Exception):
            outputs = [outputs] * len(runnable)
        answers = {s.study_id: o for s, o in zip(runnable, outputs, strict=True)}
    records = []
    for study in batch:
        record = {"index": study.index, "study_id": study.study_id, "report": None, "raw": None, "error": None,
                  "images": image_identity(study.images)}
        answer = answers.get(study.study_id)
        if study.study_id in errors:
            record["error"] = paths.relative(errors[study.study_id])
        elif isinstance(answer, Exception):
            record["error"] = paths.relative(_describe(answer))
        elif not isinstance(answer, str):
            record["error"] = f"TypeError: the model returned {type(answer).__name__}, not a report string"
        elif not _is_unicode(answer):  # a lone surrogate: no file can hold it as UTF-8
            record["error"] = "ValueError: the model returned a report that is not Unicode text (a lone surrogate)"
        else:
            record["raw"], record["report"] = answer, format_report(answer, track)
        records.append(record)
    return records


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _call(adapter: Adapter, inputs, n: int):
    if isinstance(inputs, Exception):
        return inputs
    try:
        outputs = adapter.generate(inputs)
    except Exception as exc:  # noqa: BLE001 - recorded per study, reported at the end
        return exc
    if len(outputs) != n:
        return RuntimeError(f"the model returned {len(outputs)} reports for {n} studies")
    return outputs


def _single(adapter: Adapter, study: StudyInput):
    try:
        outputs = _call(adapter, adapter.prepare([study]), 1)
    except Exception as exc:  # noqa: BLE001
        return exc
    return outputs if isinstance(outputs, Exception) else outputs[0]


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _write_outputs(out: Path, inputs: list[StudyInput], records: list, ordered: list[dict], root: str) -> None:
    """The run's files, from the full Study records (not from what the model was given)."""
    predictions, reports, errors = {}, {}, {}
    for study, record in zip(inputs, ordered, strict=True):
        if record.get("error") is not None:
            errors[study.study_id] = record["error"]
            continue
        predictions[study.study_id] = rexrank_record(records[study.index], root) | {MODEL_PREDICTION: record["report"]}
        reports[study.study_id] = record["report"]
    _write_json(out / PREDICTIONS_FILE, predictions)
    _write_json(out / REPORTS_FILE, reports)
    _write_json(out / ERRORS_FILE, errors)


def _write_json(path: Path, payload: Any) -> None:
    tmp = private_file(path.with_name(path.name + ".tmp"))  # owner-only from the start: it may hold licensed text
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def summary(result: GenerateResult) -> dict[str, Any]:
    data = asdict(result)
    data["out_dir"] = str(result.out_dir)
    data["n_ok"] = result.n_ok
    return data
