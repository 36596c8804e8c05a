"""Submissions: upload -> validate (the harness's own checks) -> queue -> score (worker) -> board.

Rules the page relies on:
- a file's content hash identifies it: the same predictions twice are rejected as a duplicate;
- files over ``max_bytes`` are rejected before they are read;
- metadata is sanitised (``ModelInfo.from_dict``) before it is stored, and escaped again when shown;
- with Hub login, one user may submit at most ``rate_limit`` times per ``rate_window`` seconds;
- private test sets (ReXGradient): validation messages give counts only, never study ids or text, and only
  aggregates are stored.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from rexrank.data.catalog import DATASETS, canonical_dataset
from rexrank.errors import InputError, RexrankError
from rexrank.leaderboard.records import PRIVATE_DATASETS, ModelInfo, canonical_names, from_results_json
from rexrank.leaderboard.store import Store

log = logging.getLogger(__name__)

ALLOWED_SUFFIXES = (".json", ".jsonl", ".csv")


class Submissions:
    def __init__(self, store: Store, upload_dir: str | Path, *, metrics: list[str] | tuple[str, ...] = ("bleu2",),
                 model_paths: dict[str, str] | None = None, data_dir: str | None = None,
                 datasets: tuple[str, ...] | None = None, max_bytes: int = 200 * 1024 * 1024,
                 rate_limit: int = 5, rate_window: float = 24 * 3600.0, lease_seconds: float = 1800.0,
                 n_resamples: int = 1000, poll_seconds: float = 2.0):
        self.store = store
        self.upload_dir = Path(upload_dir)
        self.upload_dir.mkdir(parents=True, exist_ok=True)
        self.metrics = list(metrics)
        self.model_paths = dict(model_paths or {})
        self.data_dir = data_dir
        # Default: the sets every host can score without a licence (the catalog's ungated ones: IU-Xray).
        open_sets = [name for name, spec in DATASETS.items() if not spec.gated]
        self.datasets = tuple(dict.fromkeys(canonical_dataset(d) for d in (datasets or open_sets)))
        self.max_bytes = max_bytes
        self.rate_limit, self.rate_window = rate_limit, rate_window
        self.lease_seconds = lease_seconds
        self.n_resamples = n_resamples
        self.poll_seconds = poll_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what the page shows ------------------------------------------------------------------------------
    def public_datasets(self) -> list[str]:
        return [d for d in self.datasets if d not in PRIVATE_DATASETS] or list(self.datasets)

    def instructions(self) -> str:
        return ("Upload one report per study of the test set (ReXrank JSON with `model_prediction`, "
                "`{study_id: report}` JSON, JSONL or CSV with `study_id,report`). The file is checked at once; "
                f"valid files are queued and scored with {', '.join(self.metrics)}. Files over "
                f"{self.max_bytes // (1024 * 1024)} MB and files submitted before are rejected.")

    def queue(self, limit: int = 50) -> list[dict[str, Any]]:
        return self.store.submissions(limit)

    # -- submit -------------------------------------------------------------------------------------------
    def submit(self, path: str | Path | None, metadata: dict[str, Any], dataset: str, track: str,
               user: str | None = None) -> int:
        # The form (or the API) may send an alias; the queue and the store only ever see canonical names.
        # split None: the split the leaderboard scores (the catalog's leaderboard_split).
        dataset, split, track = canonical_names(dataset, None, track)
        if dataset not in self.datasets:
            raise InputError(f"this board does not accept submissions for {dataset}. "
                             f"Available: {', '.join(self.public_datasets())}")
        if not path:
            raise InputError("no predictions file was uploaded")
        path = Path(path)
        if path.suffix.lower() not in ALLOWED_SUFFIXES:
            raise InputError(f"predictions must be a .json, .jsonl or .csv file (got {path.suffix or 'no suffix'!r})")
        size = path.stat().st_size
        if size > self.max_bytes:
            raise InputError(f"the file is {size / 1e6:.1f} MB, over the {self.max_bytes / 1e6:.0f} MB limit")
        model = ModelInfo.from_dict(metadata)
        if user and self.rate_limit and self.store.submissions_since(user, time.time() - self.rate_window) >= \
                self.rate_limit:
            raise InputError(f"rate limit: at most {self.rate_limit} submissions per "
                             f"{self.rate_window / 3600:.0f} h per user")
        digest = _sha256(path)
        self._validate(path, dataset, split, track)
        stored = self.upload_dir / f"{digest}{path.suffix.lower()}"
        if not stored.exists():
            tmp = stored.with_suffix(stored.suffix + ".part")
            shutil.copyfile(path, tmp)
            tmp.replace(stored)  # atomic: the worker never sees half a file
        return self.store.enqueue(content_hash=digest, user=user, model=model, dataset=dataset,
                                  split=split, track=track, predictions_path=str(stored),
                                  metrics=self.metrics)

    def _validate(self, path: Path, dataset: str, split: str, track: str) -> None:
        from rexrank.evaluation.inputs import load_inputs
        from rexrank.evaluation.predictions import ValidationError

        try:
            load_inputs(path, track=track, dataset=dataset, split=split, data_dir=self._data_dir(dataset))
        except ValidationError as exc:
            if dataset in PRIVATE_DATASETS:  # never echo ids or text of a private reference set
                kinds = sorted(exc.problems.kinds())
                raise InputError(f"the predictions do not match the test set ({exc.problems.count()} problems: "
                                 f"{', '.join(kinds)})") from None
            raise InputError(str(exc)) from None

    def _data_dir(self, dataset: str) -> str | None:
        if self.data_dir is None:
            return None
        candidate = Path(self.data_dir) / dataset
        return str(candidate if candidate.exists() else self.data_dir)

    # -- worker -------------------------------------------------------------------------------------------
    def work_once(self) -> bool:
        """Claim one job and score it. Returns False when the queue is empty."""
        job = self.store.claim(lease_seconds=self.lease_seconds)
        if job is None:
            return False
        try:
            results = self._score(job)
            record = from_results_json(results, ModelInfo(**job["model"]), source="submission")
            self.store.finish(job["id"], record)
        except RexrankError as exc:
            self.store.fail(job["id"], _public_error(exc, job["dataset"]))
        except Exception as exc:  # noqa: BLE001 - a bad job must not kill the worker
            log.exception("submission %s failed", job["id"])
            self.store.fail(job["id"], f"internal error while scoring ({type(exc).__name__})")
        return True

    def _score(self, job: dict[str, Any]) -> dict[str, Any]:
        """Score through the harness, exactly as `rexrank score` does (same validation, cache and statistics)."""
        from rexrank.evaluation.harness import ScoreOptions, evaluate
        from rexrank.evaluation.inputs import load_inputs

        inputs = load_inputs(job["predictions_path"], track=job["track"], dataset=job["dataset"], split=job["split"],
                             data_dir=self._data_dir(job["dataset"]))
        options = ScoreOptions(metrics=job["metrics"], model_paths=self.model_paths, resamples=self.n_resamples,
                               cache_dir=self.upload_dir / "score-cache")
        evaluation = evaluate(inputs, model=job["model"]["name"], track=job["track"], dataset=job["dataset"],
                              split=job["split"], options=options)
        results = dict(evaluation.results)
        results.pop("inputs", None)  # local paths of the host: not for the page
        return results

    def run_worker(self) -> None:
        while not self._stop.is_set():
            if not self.work_once():
                self._stop.wait(self.poll_seconds)

    def start_worker(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.run_worker, name="rexrank-worker", daemon=True)
        self._thread.start()
        return self._thread

    def stop_worker(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _public_error(exc: Exception, dataset: str) -> str:
    if dataset in PRIVATE_DATASETS:
        return f"scoring failed ({type(exc).__name__}); the host has the details"
    return str(exc)[:2000]
