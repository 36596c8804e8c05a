"""`rexrank score` as a function: validated inputs -> cached, sharded scoring -> per_study.parquet + results.json.

Writes nothing until every study is scored; the result files are rendered in memory, written to temporary names
and renamed (``write_files``), so a results folder never holds a half-written or mismatched pair of files. A full
disk, a quota or the file-size limit (``ulimit -f``) is one OutputError naming the folder, what the files need and
what is free, with nothing staged left behind. They get the permissions any new file gets (0666 less the umask),
like every other file the user writes.

A private test set (``rexrank.data.catalog.is_private``) goes through ``rexrank.evaluation.disclosure``: its
results are rounded and small subgroups suppressed, and its per-study table carries no reference labels, no
free text and no unkeyed reference hash (docs/harness.md, "What each output reveals").
"""

from __future__ import annotations

import errno
import functools
import hashlib
import io
import json
import logging
import os
import secrets
import shutil
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rexrank import parallel
from rexrank.errors import ConfigError, InputError, OutputError, RexrankError
from rexrank.evaluation import disclosure
from rexrank.evaluation.aggregate import build_results, corpus_metrics
from rexrank.evaluation.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, MAX_RESAMPLES
from rexrank.evaluation.inputs import Inputs
from rexrank.evaluation.predictions import megabytes
from rexrank.evaluation.paths import check_writable  # noqa: F401 - its owner; imported from here by the CLIs
from rexrank.evaluation.plan import check_model_budget, plan
from rexrank.evaluation.runner import (
    DEFAULT_CHUNK_PAIRS,
    LABEL_PREFIX,
    build_metrics,
    combine_composites,
    score_pairs,
    to_frame,
)
from rexrank.metrics import REGISTRY, boards
from rexrank.metrics.base import Metric

# pandas (~0.45 s of start-up) and the modules that build tables are imported where a table is built: a run served
# whole from the run memo (``RunMemo``) writes stored bytes and never needs them.
if TYPE_CHECKING:
    import pandas as pd

# What `rexrank score` runs when --metrics is not given: the columns every track of the default board edition shows
# (metrics/boards.py). The track-specific last columns (CRIMSON's 4B judge on Findings, FineRadScore's LLM API on
# Findings + Impression) are opt-in: --metrics leaderboard, or name them.
DEFAULT_SCORE_METRICS = boards.edition().shared_metrics()
PER_STUDY = "per_study.parquet"
RESULTS = "results.json"
MARKDOWN = "results.md"
MODEL_INDEX = "model_index.yaml"
# Free-text judge outputs may quote the reference: they stay in the private cache, never in per_study.parquet.
PRIVATE_DETAIL_SUFFIXES = ("_analysis",)
# Columns a private set's per_study.parquet keeps whatever their type (every other text column is left out: a
# judge's raw answer or error message may quote the reference).
_PRIVATE_TEXT_KEPT = ("study_id", "hyp_sha256", disclosure.REFERENCE_HMAC_COLUMN, "site")


# Option checks shared by `rexrank score`, `compare`, `generate` and the data/leaderboard commands: each raises
# ConfigError naming the option and the fix, and runs before any input is read or model loaded.
def check_statistics(resamples: int, confidence: float, seed: int, *, permutations: int | None = None) -> None:
    """Bootstrap (and randomization) settings: counts in [1, MAX_RESAMPLES], confidence in (0, 1), seed >= 0."""
    counts = {"--resamples": resamples, **({"--permutations": permutations} if permutations is not None else {})}
    for option, value in counts.items():
        if not 1 <= value <= MAX_RESAMPLES:
            raise ConfigError(f"{option} must be between 1 and {MAX_RESAMPLES:,} (the cap; got {value:,})")
    if not 0 < confidence < 1:
        raise ConfigError(f"--confidence must be between 0 and 1, e.g. 0.95 (got {confidence})")
    if seed < 0:  # numpy's generators take non-negative seeds only
        raise ConfigError(f"--seed must be 0 or more (got {seed})")


def _devices_here() -> list[str]:
    import torch

    found = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return found + (["mps"] if torch.backends.mps.is_available() else [])


def check_device(device: str | None, option: str = "--device") -> None:
    """cpu, cuda, cuda:N or mps, and only a device this machine has (torch is imported only for an accelerator)."""
    if device is None or device == "cpu":
        return
    kind, _, index = device.partition(":")
    if kind not in ("cuda", "mps") or (index and (kind != "cuda" or not index.isdigit())):
        raise ConfigError(f"{option} {device!r} is not a device: use cpu, cuda, cuda:N (N = 0, 1, ...) or mps")
    import torch

    if kind == "mps" and not torch.backends.mps.is_available():
        problem = "MPS (Apple GPU) is not available here"
    elif kind == "cuda" and not torch.cuda.is_available():
        problem = "CUDA is not available here"
    elif kind == "cuda" and int(index or 0) >= torch.cuda.device_count():
        problem = "no such CUDA device"
    else:
        return
    raise ConfigError(f"{option} {device}: {problem}; the devices here are {', '.join(_devices_here())}")


@dataclass
class ScoreOptions:
    metrics: Sequence[str] = DEFAULT_SCORE_METRICS
    model_paths: Mapping[str, Any] = field(default_factory=dict)
    metric_configs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    device: str | None = None
    batch_size: int | None = None
    use_cache: bool = True
    cache_dir: str | os.PathLike | None = None
    chunk_size: int = DEFAULT_CHUNK_PAIRS
    # Per-study budget of model-backed metrics, in prediction tokens (plan.check_model_budget); None: none.
    max_model_tokens: int | None = None
    progress: bool = False
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE

    def check(self) -> None:
        """Every option, before any input is read or model loaded (the CLI calls it first, evaluate() again)."""
        check_statistics(self.resamples, self.confidence, self.seed)
        if self.chunk_size < 1:
            raise ConfigError(f"--chunk-size must be at least 1 (got {self.chunk_size})")
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"--batch-size must be at least 1 (got {self.batch_size})")
        if self.max_model_tokens is not None and self.max_model_tokens < 1:
            raise ConfigError(f"--max-model-tokens must be at least 1 (got {self.max_model_tokens})")
        check_device(self.device)
        if self.use_cache:
            from rexrank.evaluation.cache import default_cache_dir

            check_writable(default_cache_dir() if self.cache_dir is None else self.cache_dir, "--cache-dir")
        # Each metric's constructor is the one owner of the options it takes (REGISTRY.options).
        for name, config in self.metric_configs.items():
            REGISTRY.check_options(name, config, flag="--option")
        for name in self.model_paths:
            REGISTRY.check_options(name, ["model"], flag="--model-path")


@dataclass
class Evaluation:
    per_study: pd.DataFrame  # what per_study.parquet holds (for a private set: the shareable columns only)
    results: dict[str, Any]  # what results.json holds (for a private set: disclosed)
    stats: dict[str, dict[str, int]]  # per metric: pairs, cached, computed (summed over processes)
    private: bool = False  # scored against a private test set


def expand_metrics(names: Sequence[str] | str | None) -> list[str]:
    """None -> DEFAULT_SCORE_METRICS; 'leaderboard' -> every column of the default board edition; 'all' -> every
    registered metric; else canonical names (aliases accepted, duplicates dropped)."""
    if names is None:
        return list(DEFAULT_SCORE_METRICS)
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if list(names) == ["all"]:
        return REGISTRY.names()
    if list(names) == ["leaderboard"]:
        return list(boards.edition().all_metrics())
    if not names:
        raise ConfigError("--metrics is empty; name at least one metric")
    return list(dict.fromkeys(REGISTRY.canonical(n) for n in names))


def prepare_metrics(options: ScoreOptions, *, dataset: str | None = None) -> dict[str, Metric]:
    """Everything a run needs besides its inputs, checked before any input is read: the options
    (``ScoreOptions.check``), a private set's host settings (secret, minimum group size), and every base metric
    built on this process's device with its weights located, no model loaded. Each metric's constructor is the
    one owner of which option values and combinations it accepts (``--model-path ratescore=DIR`` with
    ``--option ratescore.embed_model=...`` is refused there), so building here is what makes every option check
    come before the dataset loads. Pass the result to ``evaluate(..., metrics=)``."""
    options.check()
    if disclosure.is_private(dataset):
        disclosure.host_secret()
        disclosure.min_group_size()
    base, _ = plan(expand_metrics(options.metrics))
    return _build(base, options, parallel.context())


def _build(base: Sequence[str], options: ScoreOptions, ctx) -> dict[str, Metric]:
    return build_metrics(base, model_paths=options.model_paths, metric_configs=options.metric_configs,
                         device=parallel.device_for(options.device, ctx), batch_size=options.batch_size)


def open_cache(options: ScoreOptions, dataset: str | None = None):
    from rexrank.evaluation.cache import MemoryPairCache, ScoreCache

    # dataset: tags what this run writes, so `rexrank data purge` finds it (rexrank.evaluation.cache).
    return ScoreCache(options.cache_dir, dataset=dataset) if options.use_cache else MemoryPairCache()


def _shard_frame(inputs: Inputs, positions: list[int], options: ScoreOptions, base, composites, ctx,
                 dataset: str | None = None, built: Mapping[str, Metric] | None = None):
    built = _build(base, options, ctx) if built is None else built
    cache = open_cache(options, dataset)
    try:
        # The harness owns process parallelism: each metric scores exactly this shard's pairs (rexrank.parallel).
        with parallel.local():
            scored = score_pairs([inputs.hyps[i] for i in positions], [inputs.refs[i] for i in positions], built,
                                 cache=cache, chunk_size=options.chunk_size, progress=options.progress,
                                 reference_labels=True, label=f" [process {ctx.rank}]" if ctx.distributed else "",
                                 corpus=inputs.refs,  # every study's reference, whichever shard this is
                                 keys=[(inputs.hyp_keys[i], inputs.ref_keys[i]) for i in positions])
    finally:
        cache.close()
    combine_composites(composites, scored)
    frame = to_frame(scored, list(base) + list(composites))
    if scored.labels is not None:
        import pandas as pd

        frame = pd.concat([frame, scored.labels], axis=1)
    return frame, scored.info, scored.stats


def evaluate(inputs: Inputs, *, model: str, track: str, dataset: str | None = None, split: str | None = None,
             options: ScoreOptions | None = None, metrics: Mapping[str, Metric] | None = None) -> Evaluation | None:
    """Score validated inputs. In a launched job every process scores a shard; rank 0 returns the Evaluation and
    the other ranks return None. ``metrics``: what ``prepare_metrics(options)`` built before the inputs were read
    (else they are built here)."""
    options = options or ScoreOptions()
    options.check()
    if len(inputs) == 0:
        raise InputError("no study has both a prediction and a reference: nothing to score")
    private = inputs.private or disclosure.is_private(dataset)
    secret = disclosure.host_secret() if private else None  # a bad secret fails now, not after scoring
    min_group = disclosure.min_group_size() if private else None
    names = expand_metrics(options.metrics)
    base, composites = plan(names)
    check_model_budget(inputs.study_ids, inputs.hyps, base, options.max_model_tokens)  # before any model runs
    ctx = parallel.context()
    created = parallel.setup(ctx)
    try:
        positions = parallel.shard(len(inputs), ctx)
        try:
            payload = ("ok", positions, *_shard_frame(inputs, positions, options, base, composites, ctx, dataset,
                                                      _matching(metrics, base)))
        except Exception as exc:  # noqa: BLE001 - every rank must reach the gather, or rank 0 waits forever
            if not ctx.distributed:
                raise
            payload = ("error", ctx.rank, parallel.portable(exc, ctx.rank))
        parts = parallel.gather(payload, ctx)
        if not ctx.is_main:
            if payload[0] == "error":
                raise payload[2]
            return None
        failed = [p for p in parts if p[0] == "error"]
        if failed:
            raise failed[0][2]
        frame, info, stats = _assemble(parts, len(inputs))
    finally:
        parallel.teardown(created)
    from rexrank.evaluation.subgroups import metric_agreement, subgroup_summary

    # Statistics use every column (subgroups need the references' labels); the outputs get what may be shared.
    full = _full_table(inputs, frame)
    order = names + [b for b in base if b not in names]
    sources: dict[str, Any] = {"predictions": inputs.predictions_source, "references": inputs.references_source,
                               "predictions_sha256": _digest(inputs.hyp_keys, inputs.study_ids)}
    if not private:
        sources["references_sha256"] = _digest(inputs.ref_keys, inputs.study_ids)
    elif secret is not None:
        sources["references_hmac_sha256"] = disclosure.references_digest(inputs.study_ids, inputs.refs, secret)
    results = build_results(
        full, info, model=model, dataset=dataset, split=split, track=track, order=order,
        dropped=inputs.dropped,
        subgroups=subgroup_summary(full, order, resamples=options.resamples, seed=options.seed,
                                   confidence=options.confidence),
        analyses={**metric_agreement(full, order), "processes": ctx.world_size,
                  "cache": {n: s for n, s in stats.items()}},
        inputs=sources, resamples=options.resamples, seed=options.seed, confidence=options.confidence)
    if private:
        results = disclosure.disclose_results(results, min_group, private=True)
    per_study = shareable(full, private=private, refs=inputs.refs, secret=secret)
    return Evaluation(per_study, results, stats, private)


def _matching(metrics: Mapping[str, Metric] | None, base: Sequence[str]) -> Mapping[str, Metric] | None:
    if metrics is not None and list(metrics) != list(base):
        raise ValueError(f"evaluate(metrics=) holds {', '.join(metrics)}; these options plan {', '.join(base)}: "
                         "pass prepare_metrics(options) for the same options")
    return metrics


def _assemble(parts, n: int):
    import pandas as pd

    frames, positions = [], []
    info: dict[str, Any] = {}
    stats: dict[str, dict[str, int]] = {}
    for _, pos, frame, part_info, part_stats in parts:
        frames.append(frame)
        positions.extend(pos)
        for name, entry in part_info.items():
            info.setdefault(name, entry)
        for name, counts in part_stats.items():
            total = stats.setdefault(name, {"pairs": 0, "cached": 0, "computed": 0})
            for key, value in counts.items():
                total[key] += value
    frame = pd.concat(frames, ignore_index=True)
    if sorted(positions) != list(range(n)):
        raise RuntimeError("shards do not cover every study exactly once")
    frame.index = positions
    return frame.sort_index().reset_index(drop=True), info, stats


def _digest(keys: Sequence[str], ids: Sequence[str]) -> str:
    """sha256 over each study's id and its text's ``text_key`` (``Inputs.hyp_keys``/``ref_keys``: hashed once)."""
    h = hashlib.sha256()
    for study_id, key in zip(ids, keys):
        h.update(study_id.encode("utf-8", "surrogatepass") + b"\0" + key.encode() + b"\n")
    return h.hexdigest()


def _full_table(inputs: Inputs, scores: pd.DataFrame) -> pd.DataFrame:
    """Every column the statistics use, plain reference hashes and labels included: never written as such for a
    private set."""
    import pandas as pd

    from rexrank.evaluation.subgroups import add_error_free_column, add_normal_column

    head = {"study_id": inputs.study_ids, "hyp_sha256": inputs.hyp_keys,
            disclosure.REFERENCE_HASH_COLUMN: inputs.ref_keys}
    sites = [inputs.attributes.get(i, {}).get("site") for i in inputs.study_ids]
    if any(s not in (None, "") for s in sites):
        head["site"] = [None if s in (None, "") else str(s) for s in sites]
    scores = scores.drop(columns=[c for c in scores.columns if str(c).endswith(PRIVATE_DETAIL_SUFFIXES)])
    frame = pd.concat([pd.DataFrame(head), scores.reset_index(drop=True)], axis=1)
    add_normal_column(frame)
    add_error_free_column(frame)
    return frame


def shareable(frame: pd.DataFrame, *, private: bool, refs: Sequence[str] | None = None,
              secret: bytes | None = None) -> pd.DataFrame:
    """The per-study table as it may leave the scorer. Open set: unchanged. Private set: no plain reference hash
    (``ref_hmac_sha256``, an HMAC-SHA256 under the host's secret, instead: only with ``refs`` and ``secret``; no
    reference key at all otherwise), no reference labels (``ref_chexbert_*``, ``ref_normal``), no free text."""
    if not private:
        return frame
    from rexrank.evaluation.subgroups import NORMAL_COLUMN

    # A corpus metric's per-study counts (CE F1: TP + FN is the reference's label) reveal the reference: only its
    # aggregated values (results.json) are shown.
    counts = {c for columns in corpus_metrics(frame).values() for c in columns}
    drop = [c for c in frame.columns if c == disclosure.REFERENCE_HASH_COLUMN or c == NORMAL_COLUMN
            or str(c).startswith(LABEL_PREFIX) or str(c).endswith(PRIVATE_DETAIL_SUFFIXES) or c in counts
            or (c not in _PRIVATE_TEXT_KEPT and _is_text(frame[c]))]
    out = frame.drop(columns=drop)
    if refs is not None and secret is not None and disclosure.REFERENCE_HMAC_COLUMN not in out.columns:
        out.insert(min(2, len(out.columns)), disclosure.REFERENCE_HMAC_COLUMN,
                   [disclosure.reference_key(t, secret) for t in refs])
    return out


def _is_text(column: pd.Series) -> bool:
    import pandas as pd

    if pd.api.types.is_string_dtype(column.dtype) and not pd.api.types.is_object_dtype(column.dtype):
        return True
    return bool(pd.api.types.is_object_dtype(column.dtype) and column.map(lambda v: isinstance(v, str)).any())


def _new_file(directory: Path, name: str) -> Path:
    """A new empty file for staging ``name``, created the way any new file is (0666 less the umask), unlike
    ``tempfile.mkstemp`` (always 0600): the renamed result then has normal permissions."""
    for _ in range(100):
        path = directory / f".{name}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return path
    raise FileExistsError(f"cannot create a staging file for {name} in {directory}")


def format_size(n_bytes: float) -> str:
    """A byte count for people: 512 bytes, 3.4 KB, 1.2 MB, 2.0 GB (units of 1,024)."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n_bytes < 1024 or unit == "GB":
            return f"{int(n_bytes):,} {unit}" if unit == "bytes" else f"{n_bytes:,.1f} {unit}"
        n_bytes /= 1024
    return ""  # pragma: no cover


# Write failures that mean "this folder cannot hold these bytes": answered with the sizes, not a traceback.
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT)


def write_files(out_dir: str | os.PathLike, files: Mapping[str, bytes], *, option: str = "--out") -> dict[str, Path]:
    """Write ``files`` ({name: content}) into ``out_dir``: each to a staging name, then all renamed, so the folder
    never holds a half-written file. When the folder cannot take them (a full disk, a quota, the process's
    file-size limit ``ulimit -f``, any other OSError) every staged file is removed, files of an earlier run keep
    their content, and one OutputError names the folder, what the files need and what is free there."""
    out = Path(out_dir)
    staged: list[tuple[Path, Path]] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            tmp_path = _new_file(out, name)
            staged.append((tmp_path, out / name))
            tmp_path.write_bytes(data)
        for tmp_path, target in staged:
            os.replace(tmp_path, target)
    except OSError as exc:
        raise _write_error(exc, out, files, option) from None
    finally:
        for tmp_path, _ in staged:
            try:
                tmp_path.unlink(missing_ok=True)
            except OSError:  # nothing more can be done; the error above says what went wrong
                pass
    return {name: out / name for name in files}


def _write_error(exc: OSError, out: Path, files: Mapping[str, bytes], option: str) -> OutputError:
    need = sum(len(data) for data in files.values())
    what = f"{len(files)} files" if len(files) > 1 else "1 file"
    if exc.errno == errno.EFBIG:  # over RLIMIT_FSIZE (or the filesystem's largest file)
        name, largest = max(((n, len(d)) for n, d in files.items()), key=lambda item: item[1])
        return OutputError(f"cannot write the results in {out}: {name} ({format_size(largest)}) is over this "
                           f"process's file-size limit{_fsize_limit()}: raise it (`ulimit -f unlimited`) or write "
                           f"elsewhere with {option}")
    reason = exc.strerror or type(exc).__name__
    if exc.errno in _NO_ROOM:
        try:
            free = f", {format_size(shutil.disk_usage(out).free)} free there"
        except OSError:
            free = ""
        return OutputError(f"cannot write the results in {out}: {reason.lower()} (the {what} need "
                           f"{format_size(need)}{free}): free space there or pass another {option}")
    return OutputError(f"cannot write the results in {out}: {reason} ({what}, {format_size(need)}); pass another "
                       f"{option}")


def _fsize_limit() -> str:
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    except (ImportError, OSError, ValueError):  # no such limit on this platform
        return ""
    return "" if soft == resource.RLIM_INFINITY else f" (ulimit -f: {format_size(soft)})"


def write_outputs(evaluation: Evaluation, out_dir: str | os.PathLike) -> dict[str, Path]:
    """per_study.parquet, results.json, results.md, model_index.yaml: rendered in memory (``output_files``), then
    written together by ``write_files`` (each whole, then renamed; a full disk or a file-size limit is one
    OutputError)."""
    return _output_paths(write_files(out_dir, output_files(evaluation)))


def output_files(evaluation: Evaluation) -> dict[str, bytes]:
    """The four output files' bytes, {name: content}. A private set's outputs go through the disclosure policy
    here too (idempotent), whoever built the Evaluation."""
    private = evaluation.private or disclosure.is_private(evaluation.results.get("dataset"))
    results = disclosure.disclose_results(evaluation.results, private=True) if private else evaluation.results
    return _render(results, _parquet_bytes(shareable(evaluation.per_study, private=private)))


def _render(results: dict[str, Any], per_study: bytes) -> dict[str, bytes]:
    from rexrank.evaluation.report import markdown_table, model_index

    return {PER_STUDY: per_study,
            RESULTS: (json.dumps(results, indent=2, allow_nan=False) + "\n").encode("utf-8"),
            MARKDOWN: markdown_table(results).encode("utf-8"),
            MODEL_INDEX: model_index(results).encode("utf-8")}


def _output_paths(paths: Mapping[str, Path]) -> dict[str, Path]:
    return {"per_study": paths[PER_STUDY], "results": paths[RESULTS], "markdown": paths[MARKDOWN],
            "model_index": paths[MODEL_INDEX]}


# -- the run memo --------------------------------------------------------------------------------------------------
# Bump when what a memo holds, or what its key covers, changes: older memos then simply miss.
RUN_MEMO_FORMAT = 1


@dataclass
class Recalled:
    """A run served from its memo: what ``evaluate`` + ``output_files`` would give for the same inputs."""

    results: dict[str, Any]  # as written (created_at now; every pair counted as cached, as a warm run counts them)
    stats: dict[str, dict[str, int]]
    files: dict[str, bytes]  # the four output files
    note: str | None  # ``Inputs.drop_note`` of the run that wrote the memo

    def write(self, out_dir: str | os.PathLike) -> dict[str, Path]:
        """``write_outputs`` for a recalled run: the same files, written the same way."""
        return _output_paths(write_files(out_dir, self.files))


class RunMemo:
    """One `rexrank score` run's outputs, kept in the scoring cache (table ``runs``) under a key that covers
    everything a number depends on, so re-scoring the same files writes them back instead of reading, checking and
    hashing every line and every pair row again (docs/harness.md, "The run memo").

    The key (BLAKE2b) covers: the exact bytes of the predictions and references files (one BLAKE2b over each) and
    their paths as given (the path names the format and is written to results.json); the model name, track,
    dataset and split; every validation limit and --allow-missing; the metrics in order with each one's spec,
    options and fingerprint (weights digests included); the device, batch size, chunk size, resamples, seed and
    confidence; the package versions results.json records; and a digest of every file of the installed rexrank
    package. Same bytes under the same settings pass the same checks and give the same numbers, so a memo hit is
    exactly as strict as the run that wrote it: the inputs were validated then, and any other bytes miss.

    Used only when nothing outside those files decides the outcome: a persistent cache (not --no-cache),
    references from a file (not a dataset builder), an open test set (a private set's outputs depend on the host's
    secret and settings), one process (a launched job scores shards and never reads or writes memos), and regular
    files within --max-file-size-mb (anything else is left to ``load_inputs`` to read and report). A memo is
    written only if both files still have the bytes the key was made from once the run is done.
    """

    def __init__(self, key: str, cache_dir: str | os.PathLike | None, files: Sequence[tuple[str, str]],
                 max_file_size_mb: float) -> None:
        self.key = key
        self._cache_dir = cache_dir
        self._files = tuple(files)  # (path, digest) of both inputs when the key was made
        self._max_file_size_mb = max_file_size_mb

    @classmethod
    def for_run(cls, predictions: str | os.PathLike, references: str | os.PathLike | None, *, model: str, track: str,
                dataset: str | None, split: str | None, allow_missing: bool, max_file_size_mb: float,
                max_report_words: int, max_report_chars: int, options: ScoreOptions,
                metrics: Mapping[str, Metric]) -> RunMemo | None:
        """The memo of this run, or None when memos do not apply to it (see the class docstring)."""
        if (not options.use_cache or references is None or disclosure.is_private(dataset)
                or parallel.context().distributed):
            return None
        files = [(str(path), _file_digest(path, max_file_size_mb)) for path in (predictions, references)]
        if any(digest is None for _, digest in files):
            return None
        from rexrank.evaluation.aggregate import package_versions
        from rexrank.evaluation.runner import describe

        settings = {"format": RUN_MEMO_FORMAT, "code": _code_digest(), "versions": package_versions(),
                    "files": files, "model": model, "track": track, "dataset": dataset, "split": split,
                    "allow_missing": allow_missing, "max_file_size_mb": max_file_size_mb,
                    "max_report_words": max_report_words, "max_report_chars": max_report_chars,
                    "metrics": expand_metrics(options.metrics),
                    "built": {name: describe(metric) for name, metric in metrics.items()},
                    "options": {"model_paths": options.model_paths, "metric_configs": options.metric_configs,
                                "device": options.device, "batch_size": options.batch_size,
                                "chunk_size": options.chunk_size, "max_model_tokens": options.max_model_tokens,
                                "resamples": options.resamples,
                                "seed": options.seed, "confidence": options.confidence}}
        # repr for what JSON cannot hold (a Path in a metric's options): at worst a key that never matches.
        text = json.dumps(settings, sort_keys=True, default=repr)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=32,
                              person=b"rexrank-run-memo").hexdigest()
        return cls(key, options.cache_dir, files, max_file_size_mb)

    def _cache(self):
        from rexrank.evaluation.cache import ScoreCache

        return ScoreCache(self._cache_dir)

    def recall(self) -> Recalled | None:
        """The stored run, checked (checksum, then its shape); None on a miss. A corrupt or malformed memo logs one
        warning and is a miss: the run is recomputed and the memo replaced."""
        from rexrank.evaluation.aggregate import created_at

        cache = self._cache()
        try:
            memo = cache.get_run(self.key)
            if memo is None:
                return None
            recalled = _recalled(memo)
            if recalled is None:
                cache.report_corrupt_run()
                return None
        finally:
            cache.close()
        results, stats, per_study, note = recalled
        served = {name: {"pairs": counts["pairs"], "cached": counts["pairs"], "computed": 0}
                  for name, counts in stats.items()}
        results["analyses"]["cache"] = served
        results["created_at"] = created_at()
        return Recalled(results, served, _render(results, per_study), note)

    def remember(self, evaluation: Evaluation, files: Mapping[str, bytes], note: str | None) -> None:
        """Store this run (``files``: what ``output_files(evaluation)`` gave), if both inputs still have the bytes
        the key was made from. The outputs are written by then: a cache that cannot take the memo (a full disk,
        a file-size limit) costs the next run its shortcut, not this run its success, so that is one warning."""
        if any(_file_digest(path, self._max_file_size_mb) != digest for path, digest in self._files):
            return
        memo = {"results": json.dumps(evaluation.results, allow_nan=False), "per_study": files[PER_STUDY],
                "stats": {name: dict(counts) for name, counts in evaluation.stats.items()}, "note": note}
        cache = self._cache()
        try:
            cache.put_run(self.key, memo)
        except RexrankError as exc:
            logging.getLogger("rexrank.evaluation").warning("run memo not stored (the results are written): %s", exc)
        finally:
            cache.close()


def _recalled(memo: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, int]], bytes, str | None] | None:
    """(results, stats, per-study bytes, note) from a memo whose checksum held, or None if it is not shaped as
    ``RunMemo.remember`` writes it."""
    if set(memo) != {"results", "per_study", "stats", "note"}:
        return None
    text, per_study, stats, note = memo["results"], memo["per_study"], memo["stats"], memo["note"]
    if type(text) is not str or type(per_study) is not bytes or not (note is None or type(note) is str):
        return None
    if type(stats) is not dict or not all(
            type(name) is str and type(counts) is dict and set(counts) == {"pairs", "cached", "computed"}
            and all(type(v) is int and v >= 0 for v in counts.values()) for name, counts in stats.items()):
        return None
    try:
        results = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if type(results) is not dict or type(results.get("analyses")) is not dict \
            or results["analyses"].get("cache") != stats:
        return None
    return results, stats, per_study, note


def _file_digest(path: str | os.PathLike, max_file_size_mb: float) -> str | None:
    """BLAKE2b of a regular file's bytes; None for anything else (missing, a FIFO or device, over the size limit,
    unreadable), which ``load_inputs`` then reads and reports."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it changes nothing for a regular file.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > megabytes(max_file_size_mb):
            return None
        try:
            return hashlib.file_digest(handle, lambda: hashlib.blake2b(digest_size=32)).hexdigest()
        except OSError:
            return None


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """BLAKE2b over every file of the installed rexrank package (paths and bytes), compiled caches left out: any
    change of the code that computes or renders a number makes every earlier memo miss. The package folder is found
    from this file (rexrank/evaluation/harness.py), not by importing the package above this stage."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(digest_size=32)
    for path in sorted(p for p in root.rglob("*") if "__pycache__" not in p.parts and p.suffix != ".pyc"):
        if path.is_file():
            data = path.read_bytes()
            digest.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
            digest.update(data)
    return digest.hexdigest()


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype == object and frame[column].map(lambda v: isinstance(v, (list, tuple, dict))).any():
            # Nested per-pair details (e.g. a list of error counts) are stored as JSON text: parquet needs one type.
            frame[column] = frame[column].map(lambda v: None if v is None else json.dumps(v))
    frame.attrs = {}
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def check_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Same studies, same hashes and same metric values (NaN equal to NaN): two runs agree."""
    import pandas as pd

    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return False
    for column in a.columns:
        x, y = a[column], b[column]
        if pd.api.types.is_float_dtype(x):
            if not np.array_equal(x.to_numpy(), y.to_numpy(), equal_nan=True):
                return False
        elif not x.equals(y):
            return False
    return True
