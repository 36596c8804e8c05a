"""Submissions: upload -> validate (the harness's own checks) -> queue -> score (worker) -> board.

Rules the page relies on:
- a model name belongs to whoever first registered it (the host for the published rows): a submission under a
  name registered by someone else (or a look-alike of it, ``records.name_key``: punctuation, spacing, case and
  look-alike letters ignored) is refused, and so is one under a published ReXrank model's name, whether or not this
  store holds the published tables (``published_names``: no submitter can block the host's import); an anonymous
  submission may only register a new name; a submission never changes a registered model's details;
- the parsed predictions identify a submission (``canonical_digest``: study ids and NFC, whitespace-collapsed
  reports): the same predictions twice, in any format or spacing, are rejected as a duplicate; the same bytes as a
  file this service queued are a duplicate before the name and the quotas are checked, and identical files sent at
  once are handled one at a time, so each of them gets that one answer;
- files over ``max_bytes`` are rejected before they are read (the Space also refuses larger uploads outright);
- metadata is sanitised (``ModelInfo.from_dict``) before it is stored, and escaped again when shown;
- quotas, in a rolling ``rate_window``: per logged-in user ``private_quota`` per private test set and ``rate_limit``
  over the public ones; an anonymous client (``leaderboard/clients.py``: its address, as far as the server trusts it)
  has ``rate_limit`` of its own, all of them together ``anonymous_limit`` accepted files, over the public sets;
  anonymous submissions are refused on private sets (log in first). What a user's or a client's quota counts is
  every attempt whose file is read (validation), whatever comes of it; the anonymous total counts only files that
  passed validation (``_reserve_shared``), so no client's rejected files spend everyone's quota. A request refused on what it says about itself, before its file is opened (no file, a missing
  one, another suffix, over the size limit, bad metadata, a name taken), is not counted: it costs a stat and a lookup,
  reveals nothing about a test set, and would otherwise let one client spend the shared anonymous quota with junk;
- the queue folder (``upload_dir``, ``<store>.uploads`` by default) is the service's own: created owner-only
  (0700), each queued file owner-only (0600) and named ``<digest>-<random>.<suffix>``. A file lives there only
  while its job is queued or running: the worker deletes it once the job is done or failed, a refused submission's
  copy is deleted at once, and ``clean_uploads`` (at worker start) deletes what a restart left for jobs already
  handled (the Space hands this service each request's own copy of its upload: ``leaderboard/uploads.py``);
- private test sets (ReXGradient): validation says only that the ids do not match (no ids, no counts, no text),
  and only aggregates, rounded as published, are stored;
- what a submission is scored with (``host_metrics``, unless the host names the metrics): every leaderboard metric
  whose official weights this host has (on disk, and their digests official: published or recorded with
  `rexrank models download --record-official`), decided once when the service starts and logged; a composite
  (RadCliQ-v1) only with all its components. ``scoring_note`` tells the submitter what that means for the rank.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shutil
import threading
import time
import unicodedata
import uuid
from pathlib import Path
from typing import Any

from rexrank.data.catalog import DATASETS, canonical_dataset, is_private
from rexrank.errors import InputError, RexrankError
from rexrank.evaluation.defaults import DEFAULT_RESAMPLES
from rexrank.leaderboard.limits import (DEFAULT_ANONYMOUS_LIMIT, DEFAULT_MAX_UPLOAD_MB, DEFAULT_PRIVATE_QUOTA,
                                        DEFAULT_RATE_LIMIT, DEFAULT_RATE_WINDOW_S, SUBMISSIONS_AT_ONCE,
                                        upload_bytes)
from rexrank.leaderboard.records import (PRIVATE_DATASETS, ModelInfo, ResultRecord, canonical_names, from_results_json,
                                         hf_identity, name_key)
from rexrank.leaderboard.store import LOST_UPLOAD, DuplicateSubmission, NameTaken, QuotaExceeded, Store
from rexrank.leaderboard.uploads import UPLOAD_GONE
from rexrank.metrics import REGISTRY, boards

log = logging.getLogger(__name__)

ALLOWED_SUFFIXES = (".json", ".jsonl", ".csv")
ANONYMOUS = "anonymous"  # the quota group of all anonymous submissions (each client: "anonymous:<digest>")
# What the total all anonymous clients share counts (``Submissions._reserve_shared``).
SHARED_QUOTA = "accepted anonymous submissions (all anonymous clients together; log in for your own quota)"
CLIENT_SECRET_FILE = "client-key"  # in the service's folder: the key of the clients' digests
# A queued file's name (``Submissions._submit``), with ``.part`` while it is being copied.
_QUEUED_FILE = re.compile(r"[0-9a-f]{64}-[0-9a-f]{12}\.(?:json|jsonl|csv)(?:\.part)?")
# A queue file that no job names yet may belong to a submission between its copy and its queue entry (another
# process may be submitting): only older ones are leftovers.
ORPHAN_GRACE_S = 3600.0


class LoginRequired(InputError):
    pass


# -- which metrics this host can score submissions with ---------------------------------------------------------------
def host_metrics(model_paths: dict[str, str] | None = None,
                 edition: str | None = None) -> tuple[list[str], dict[str, str]]:
    """(the board's metrics, every column of ``edition``, this host can score with official weights, {each other
    one: why not}).

    A metric qualifies when every weight source it reads (``rexrank.metrics.official.METRIC_SOURCES``) is on this
    host, as ``--model-path`` gives it or in the Hugging Face cache (``rexrank models download``; nothing is
    downloaded here), and the official-weights check passes for its files (``official.check_source``: a published
    digest, or one the host recorded with ``--record-official``). BLEU-2 needs no weights; a composite needs all of
    its components; FineRadScore never qualifies: its judge has no official weights to verify, and the worker
    stores official weights only.
    """
    from rexrank.metrics.official import NO_OFFICIAL_WEIGHTS

    paths = {REGISTRY.canonical(name): path for name, path in (model_paths or {}).items()}
    chosen: list[str] = []
    excluded: dict[str, str] = {}

    decided: dict[str, str | None] = {}

    def decide(name: str) -> str | None:  # None: qualifies; else the reason
        if name not in decided:
            decided[name] = _decide(name)
        return decided[name]

    def _decide(name: str) -> str | None:
        spec = REGISTRY.spec(name)
        if spec.components:
            missing = [c for c in spec.components if decide(c) is not None]
            return f"needs {', '.join(missing)}" if missing else None
        if not spec.needs_model:
            return None
        if name in NO_OFFICIAL_WEIGHTS:
            return NO_OFFICIAL_WEIGHTS[name] + "; the worker stores results scored with official weights only"
        return _weights_problem(name, paths.get(name))

    for name in boards.edition(edition).all_metrics():
        reason = decide(name)
        if reason is None:
            chosen.append(name)
        else:
            excluded[name] = reason
    return chosen, excluded


def _weights_problem(metric: str, override: str | None) -> str | None:
    """Why ``metric``'s weights on this host are not usable official ones (None: they are)."""
    from rexrank.metrics.official import METRIC_SOURCES, check_source
    from rexrank.metrics.weights import source, weight_digests

    for key in METRIC_SOURCES.get(metric, ()):
        path = _local_weights(key, override if source(key).option == "model" else None)
        if path is None:
            where = f"--model-path {metric}={override}" if override and source(key).option == "model" else \
                f"{source(key).repo_id} in the Hugging Face cache"
            return f"{source(key).what or key} not on this host ({where}): run `rexrank models download`"
        check = check_source(key, weight_digests(key, path))
        if check.status != "official":
            return f"{check.status} weights ({'; '.join(check.lines) or key})"
    return None


def _local_weights(key: str, override: str | None) -> Path | None:
    """Where source ``key``'s weights lie on this host (extracted, for an archive), never downloading; None: absent."""
    from rexrank.errors import ModelNotAvailableError
    from rexrank.metrics.weights import extract, resolve, source

    src = source(key)
    try:
        if override is not None:
            local = Path(override).expanduser()
            return resolve(key, local) if local.exists() else None
        import huggingface_hub as hub

        if src.filename:
            found = hub.try_to_load_from_cache(src.repo_id, src.filename, repo_type=src.repo_type)
            return extract(key, Path(found)) if isinstance(found, str) else None
        patterns = list(src.allow_patterns) if src.allow_patterns else None
        return Path(hub.snapshot_download(src.repo_id, repo_type=src.repo_type, allow_patterns=patterns,
                                          local_files_only=True))
    except (ModelNotAvailableError, OSError, ValueError) as exc:
        log.debug("%s: no local weights (%s)", key, exc)
        return None
    except Exception as exc:  # noqa: BLE001 - huggingface_hub's "not in the cache" errors
        log.debug("%s: no local weights (%s)", key, type(exc).__name__)
        return None


def _labels(metrics: list[str] | tuple[str, ...]) -> str:
    names = [REGISTRY.spec(m).leaderboard_column or m for m in metrics]
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1] if names else "no metric"


class Submissions:
    def __init__(self, store: Store, upload_dir: str | Path, *, metrics: list[str] | tuple[str, ...] | None = None,
                 model_paths: dict[str, str] | None = None, data_dir: str | None = None,
                 datasets: tuple[str, ...] | None = None, max_bytes: int = upload_bytes(DEFAULT_MAX_UPLOAD_MB),
                 rate_limit: int = DEFAULT_RATE_LIMIT, private_quota: int = DEFAULT_PRIVATE_QUOTA,
                 anonymous_limit: int = DEFAULT_ANONYMOUS_LIMIT, rate_window: float = DEFAULT_RATE_WINDOW_S,
                 lease_seconds: float = 1800.0, n_resamples: int = DEFAULT_RESAMPLES,
                 poll_seconds: float = 2.0):
        self.store = store
        self.upload_dir = Path(upload_dir)
        self.upload_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:  # also a folder made before queue files were owner-only (and mkdir's mode obeys the umask)
            self.upload_dir.chmod(0o700)
        except PermissionError:
            raise InputError(f"the submissions folder {self.upload_dir} is not this service's own (it cannot be made "
                             "owner-only): give the service a folder of its own") from None
        self.model_paths = dict(model_paths or {})
        # None: every leaderboard metric this host can score with official weights (``host_metrics``), decided now.
        self.excluded: dict[str, str] = {}
        if metrics is None:
            from rexrank.leaderboard.editions import edition_of

            self.metrics, self.excluded = host_metrics(self.model_paths, edition_of(store))
            log.info("submissions are scored with %s; not with %s", ", ".join(self.metrics) or "nothing",
                     "; ".join(f"{m} ({why})" for m, why in self.excluded.items()) or "-")
        else:
            self.metrics = list(dict.fromkeys(REGISTRY.canonical(m) for m in metrics))
            log.info("submissions are scored with %s (set by the host)", ", ".join(self.metrics))
        self.data_dir = data_dir
        # Default: the sets every host can score without a licence (the catalog's ungated ones: IU-Xray).
        open_sets = [name for name, spec in DATASETS.items() if not spec.gated]
        self.datasets = tuple(dict.fromkeys(canonical_dataset(d) for d in (datasets or open_sets)))
        self.max_bytes = max_bytes
        self.rate_limit, self.rate_window = rate_limit, rate_window
        self.private_quota, self.anonymous_limit = private_quota, anonymous_limit
        self.lease_seconds = lease_seconds
        self.n_resamples = n_resamples
        self.poll_seconds = poll_seconds
        self._stop = threading.Event()
        self._reading = threading.BoundedSemaphore(SUBMISSIONS_AT_ONCE)  # files read at once, whoever calls
        self._thread: threading.Thread | None = None
        self._secret: bytes | None = None  # ``_client_secret``, read once
        # sha256 of the bytes of each file this service queued -> its job (``_refuse_known_file``), and the locks that
        # make requests for one file's bytes wait their turn (``_same_file``).
        self._queued_files: dict[str, int] = {}
        self._file_locks: dict[str, list] = {}
        self._files_lock = threading.Lock()
        _note_shared_keys(store)

    # -- what the page shows ------------------------------------------------------------------------------
    def public_datasets(self) -> list[str]:
        return [d for d in self.datasets if d not in PRIVATE_DATASETS] or list(self.datasets)

    def scoring_note(self) -> str:
        """What a submission is scored with on this board and what that means for its rank (the page says it)."""
        from rexrank.leaderboard.board import PRIMARY

        from rexrank.leaderboard.editions import edition_of

        columns = boards.edition(edition_of(self.store)).all_metrics()
        shown = [m for m in self.metrics if m in columns]
        missing = [m for m in columns if m not in shown]
        text = f"It will be scored with {_labels(shown)}"
        if not missing:
            return text + ", every leaderboard metric, and ranked like every other row."
        text += f" (this board has no official weights for {_labels(missing)}, so those cells stay empty)."
        if PRIMARY in shown:
            return text + f" It is ranked by {_labels([PRIMARY])} as usual."
        return (text + f" Without {_labels([PRIMARY])} it has no overall rank: it is labelled with the metrics it "
                       "has and ranked when the table is sorted by one of them.")

    def instructions(self) -> str:
        return ("Upload one report per study of the test set (ReXrank JSON with `model_prediction`, "
                "`{study_id: report}` JSON, JSONL or CSV with `study_id,report`). The file is checked at once; "
                f"valid files are queued and scored. {self.scoring_note()} Files over "
                f"{self.max_bytes / 1e6:g} MB and predictions submitted before are rejected. A model name belongs "
                "to whoever registered it first: log in to keep submitting under yours (anonymous submissions may "
                "only register new names, and a registered model's details never change through a submission).")

    def queue(self, limit: int = 50) -> list[dict[str, Any]]:
        return self.store.submissions(limit)

    # -- submit -------------------------------------------------------------------------------------------
    def submit(self, path: str | Path | None, metadata: dict[str, Any], dataset: str, track: str,
               user: str | None = None, client: str | None = None) -> int:
        """Validate and queue a predictions file; the job id. ``user``: the submitter's Hugging Face username
        (None: anonymous). ``client``: where an anonymous request came from (``clients.request_client``; the Space
        always says), whose own quota it counts against; None (a caller on the host) counts against the anonymous
        total only, if accepted. Raises ``InputError`` (its subclasses) with a message for the submitter."""
        return self.submit_with_note(path, metadata, dataset, track, user=user, client=client)[0]

    def submit_with_note(self, path: str | Path | None, metadata: dict[str, Any], dataset: str, track: str,
                         user: str | None = None, client: str | None = None) -> tuple[int, str | None]:
        """``submit``, and a note for the submitter (e.g. that a registered model's details were kept)."""
        # The form (or the API) may send an alias; the queue and the store only ever see canonical names.
        # split None: the split the leaderboard scores (the catalog's leaderboard_split).
        dataset, split, track = canonical_names(dataset, None, track)
        if dataset not in self.datasets:
            raise InputError(f"this board does not accept submissions for {dataset}. "
                             f"Available: {', '.join(self.public_datasets())}")
        identity = hf_identity(user) if user else None
        if dataset in PRIVATE_DATASETS and identity is None:
            # A quota needs an identity: without one, a private set could be probed at will.
            raise LoginRequired(f"{dataset} is a private test set: log in with Hugging Face to submit to it (each "
                                f"user may submit {self.private_quota} times per {self.rate_window / 3600:g} h)")
        # What can be refused without reading the file is, before the quota: such a refusal costs nothing to check
        # and is not counted (one client's junk must not spend the anonymous quota everyone shares).
        path, model = self._check_request(path, metadata)
        # The same bytes as a file this service queued are a duplicate, whatever else the request says (name, client):
        # answered before the name and the quota, and identical files sent at once are handled one at a time, so
        # each of them gets that one answer (issue 49 point 7: twelve at once got "name taken", "quota reached" and
        # "already submitted").
        file_digest = _file_digest(path)
        with self._same_file(file_digest):
            self._refuse_known_file(file_digest)
            registered = self._check_name(model, identity)
            attempt = self._reserve(identity, dataset, split, track, client)
            try:
                with self._reading:
                    job_id, note = self._submit(path, model, registered, dataset, split, track, identity, user)
            except Exception as exc:
                reason = str(exc) if isinstance(exc, RexrankError) else f"internal error ({type(exc).__name__})"
                if attempt is not None:
                    self.store.finish_attempt(attempt, "rejected", reason)
                raise
            if attempt is not None:
                self.store.finish_attempt(attempt, "queued", submission_id=job_id)
            self._queued_files[file_digest] = job_id
        return job_id, note

    @contextlib.contextmanager
    def _same_file(self, file_digest: str):
        """Held while a request for a file with these bytes is handled: requests for the same bytes wait their turn
        (only those: others go on at once)."""
        with self._files_lock:
            entry = self._file_locks.setdefault(file_digest, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._files_lock:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._file_locks[file_digest]

    def _refuse_known_file(self, file_digest: str) -> None:
        """``DuplicateSubmission`` if this service queued a file of these bytes and its job still holds them (a job
        whose upload was lost in a restart may be sent again, as ``Store.enqueue`` allows)."""
        job_id = self._queued_files.get(file_digest)
        if job_id is None:
            return
        job = next((j for j in self.store.submissions(None) if j["id"] == job_id), None)
        if job is None or (job["status"] == "failed" and job["error"] == LOST_UPLOAD):
            self._queued_files.pop(file_digest, None)
            return
        raise DuplicateSubmission(f"these predictions were already submitted (submission #{job_id}, "
                                  f"{job['status']}); files that differ only in format or whitespace count as the "
                                  "same predictions")

    def _reserve(self, identity: str | None, dataset: str, split: str, track: str,
                 client: str | None) -> int | None:
        """Record the attempt against the submitter's quota (it counts whatever comes of it), or refuse it.
        Called once the request itself is acceptable (``_check_request``), right before its file is read.
        An anonymous request counts here against its client's own quota (``rate_limit``, as a user's; a client is
        a /48 at most: ``clients``); the total all anonymous clients share counts accepted files only
        (``_reserve_shared``), so no client's rejected files can spend it."""
        window = self.rate_window
        if dataset in PRIVATE_DATASETS:
            return self.store.reserve_attempt(identity, dataset, split, track, limit=self.private_quota,
                                              window=window, scope=(dataset,),
                                              what=f"submissions per user to {dataset}")
        public = self._public_scope()
        if identity is None:
            if client is None:  # a caller on the host: counted against the anonymous total only, if accepted
                return None
            return self.store.reserve_attempt(self.client_identity(client), dataset, split, track,
                                              limit=self.rate_limit, window=window, scope=public,
                                              what="anonymous submissions from your address (log in for your own "
                                                   "quota)")
        return self.store.reserve_attempt(identity, dataset, split, track, limit=self.rate_limit, window=window,
                                          scope=public, what="submissions per user")

    def _public_scope(self) -> tuple[str, ...]:
        return tuple(d for d in self.datasets if d not in PRIVATE_DATASETS)

    def _reserve_shared(self, dataset: str, split: str, track: str) -> int:
        """Count an anonymous file that passed validation against the total all anonymous clients share
        (``anonymous_limit``): attempts under the group's own identity, ``ANONYMOUS``, which only this records.
        Atomic (``Store.reserve_attempt``), so concurrent accepted files cannot all pass."""
        try:
            return self.store.reserve_attempt(ANONYMOUS, dataset, split, track, limit=self.anonymous_limit,
                                              window=self.rate_window, scope=self._public_scope(),
                                              what=SHARED_QUOTA)
        except QuotaExceeded as exc:
            # The store's refusal says every attempt counts ("rejected ones included"): true of the client's quota,
            # not of this total, which only accepted files reach.
            raise QuotaExceeded(str(exc).replace(", rejected ones included", "")) from None

    def client_identity(self, client: str) -> str:
        """The quota identity of an anonymous client: ``anonymous:`` and a digest of the client keyed by this
        service's secret (the store never holds an address; the secret keeps the digest from being reversed by
        trying every IPv4 address)."""
        digest = hmac.new(self._client_secret(), str(client).encode("utf-8"), hashlib.sha256).hexdigest()
        return f"{ANONYMOUS}:{digest[:32]}"

    def _client_secret(self) -> bytes:
        """32 random bytes in the service's folder (owner-only, created once: every process of the service, and a
        restart, count a client under the same identity)."""
        if self._secret is None:
            path = self.upload_dir / CLIENT_SECRET_FILE
            if not path.exists():
                fresh = path.with_name(f"{CLIENT_SECRET_FILE}-{uuid.uuid4().hex}.part")
                with os.fdopen(os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as fh:
                    fh.write(secrets.token_bytes(32))
                try:
                    os.link(fresh, path)  # appears whole; of two processes creating it, the first one's is kept
                except FileExistsError:
                    pass
                finally:
                    fresh.unlink()
            secret = path.read_bytes()
            if len(secret) != 32:
                raise InputError(f"{path} is not this service's client secret (32 bytes): delete it (anonymous "
                                 "quotas then start again)")
            self._secret = secret
        return self._secret

    def _check_request(self, path: str | Path | None, metadata: dict[str, Any]) -> tuple[Path, ModelInfo]:
        """What the request says about itself, checked without reading its file: (the file, the sanitised model).
        ``InputError`` naming the problem otherwise."""
        if not path:
            raise InputError("no predictions file was uploaded")
        path = Path(path)
        if path.suffix.lower() not in ALLOWED_SUFFIXES:
            raise InputError(f"predictions must be a .json, .jsonl or .csv file (got {path.suffix or 'no suffix'!r})")
        if not path.is_file():
            raise InputError(UPLOAD_GONE)
        size = path.stat().st_size
        if size > self.max_bytes:
            raise InputError(f"the file is {size / 1e6:.1f} MB, over the {self.max_bytes / 1e6:g} MB limit")
        return path, ModelInfo.from_dict(metadata)

    def _check_name(self, model: ModelInfo, identity: str | None) -> dict[str, Any] | None:
        """The registered model of ``model``'s name, or None if it is free; ``NameTaken`` if it is someone else's,
        or if it is free here but a published ReXrank model's (``published_names``): a name the published tables
        list belongs to the published model, whether or not this store holds those tables yet, so no submitter can
        block the host's import of them (issue 49 point 4)."""
        registered = self.store.check_name(model.name, identity)
        if registered is None:
            published = published_names().get(name_key(model.name))
            if published is not None:
                same = "" if published == model.name else f" (as {published!r}: names are compared ignoring case, " \
                                                          "spacing, punctuation and look-alike letters)"
                raise NameTaken(f"the model name {model.name!r} is a published ReXrank model's{same}: it is kept for "
                                "the leaderboard host's import of the published tables. Choose another name.")
        return registered

    def _submit(self, path: Path, model: ModelInfo, registered: dict[str, Any] | None, dataset: str, split: str,
                track: str, identity: str | None, user: str | None) -> tuple[int, str | None]:
        digest = canonical_digest(self._validate(path, dataset, split, track), dataset, split, track)
        # An anonymous file that passed validation now counts against the total all anonymous clients share.
        shared = self._reserve_shared(dataset, split, track) if identity is None and \
            dataset not in PRIVATE_DATASETS else None
        # This attempt's own copy (no other job shares it, so a refusal can always delete it), owner-only.
        stored = self.upload_dir / f"{digest}-{uuid.uuid4().hex[:12]}{path.suffix.lower()}"
        tmp = stored.with_name(stored.name + ".part")
        try:
            with open(path, "rb") as source, os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
                                                        "wb") as target:
                shutil.copyfileobj(source, target)
            tmp.replace(stored)  # atomic: the worker never sees half a file
            job_id = self.store.enqueue(content_hash=digest, user=user, identity=identity, model=model,
                                        dataset=dataset, split=split, track=track, predictions_path=str(stored),
                                        metrics=self.metrics)
        except BaseException as exc:  # refused (duplicate, name taken meanwhile) or failed: keep nothing of it
            tmp.unlink(missing_ok=True)
            stored.unlink(missing_ok=True)
            if shared is not None:
                self.store.finish_attempt(shared, "rejected", str(exc) if isinstance(exc, RexrankError) else
                                          f"internal error ({type(exc).__name__})")
            raise
        if shared is not None:
            self.store.finish_attempt(shared, "queued", submission_id=job_id)
        note = None
        if registered is not None and _details(registered) != _details(vars(model)):
            note = (f"{registered['name']!r} is a registered model: its details (institution, link, year, type, "
                    "training sets) stay as registered; the host can change them")
        return job_id, note

    def _validate(self, path: Path, dataset: str, split: str, track: str):
        """The harness's checks (the same as `rexrank score`); the validated inputs."""
        from rexrank.evaluation.inputs import load_inputs
        from rexrank.evaluation.plan import SUBMISSION_MAX_MODEL_TOKENS, check_model_budget
        from rexrank.evaluation.predictions import ValidationError

        try:
            inputs = load_inputs(path, track=track, dataset=dataset, split=split, data_dir=self._data_dir(dataset),
                                 max_file_size_mb=self.max_bytes / 1e6)
            check_model_budget(inputs.study_ids, inputs.hyps, self.metrics, SUBMISSION_MAX_MODEL_TOKENS)
            return inputs
        except ValidationError as exc:
            # Validation on a private set already reports id problems as one category without ids or counts
            # (evaluation/predictions.py); this layer still never echoes its text, in case a check ever does.
            if dataset in PRIVATE_DATASETS:
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
        """Claim one job and score it. Returns False when the queue is empty.

        Once the job is marked done or failed its file is deleted; if marking it fails (the store raised), the job
        keeps its file for the retry after its lease."""
        job = self.store.claim(lease_seconds=self.lease_seconds)
        if job is None:
            return False
        try:
            results, arena_rows = self._score(job)
            from rexrank.metrics.official import refuse_unofficial  # the worker stores official weights only

            refuse_unofficial(results, log=log, context=f"submission {job['id']}")  # else: host log + job error
            # The result is stored with the model's registered details, never the submission's own.
            model = self.store.model_info(job["model"]["name"]) or ModelInfo(**job["model"])
            record = from_results_json(results, model, source="submission")
            self.store.finish(job["id"], record)
            self._keep_for_arena(job, record, arena_rows)
        except RexrankError as exc:
            self.store.fail(job["id"], _public_error(exc, job["dataset"]))
        except Exception as exc:  # noqa: BLE001 - a bad job must not kill the worker
            log.exception("submission %s failed", job["id"])
            self.store.fail(job["id"], f"internal error while scoring ({type(exc).__name__})")
        self._discard(job["predictions_path"])
        return True

    def _discard(self, predictions_path: str | None) -> None:
        """Delete a handled job's file: only a file of this queue folder (a job restored from elsewhere names
        none, and nothing outside the folder is ever deleted)."""
        if not predictions_path:
            return
        path = Path(predictions_path)
        if path.parent.resolve() == self.upload_dir.resolve() and _QUEUED_FILE.fullmatch(path.name):
            path.unlink(missing_ok=True)

    def clean_uploads(self) -> int:
        """Delete the queue files no queued or running job needs: those of jobs already done or failed (a worker
        stopped between marking a job and deleting its file), and files older than ``ORPHAN_GRACE_S`` that no job
        names (a process killed while submitting). Only files named as the queue names them are touched (the
        folder also holds the score cache). How many were deleted."""
        jobs = self.store.submissions(None)
        needed = {Path(j["predictions_path"]).name for j in jobs
                  if j["predictions_path"] and j["status"] in ("queued", "running")}
        handled = {Path(j["predictions_path"]).name for j in jobs if j["predictions_path"]} - needed
        removed = 0
        now = time.time()
        for path in self.upload_dir.iterdir():
            if not _QUEUED_FILE.fullmatch(path.name) or path.name in needed or not path.is_file():
                continue
            if path.name in handled or now - path.stat().st_mtime > ORPHAN_GRACE_S:
                path.unlink(missing_ok=True)
                removed += 1
        if removed:
            log.info("deleted %d queue files of handled submissions from %s", removed, self.upload_dir)
        return removed

    def _keep_for_arena(self, job: dict[str, Any], record: ResultRecord, rows: list | None) -> None:
        """A public set's scored reports stay in the store for the Arena (``Store.keep_reports``; never a private
        set's: ``rows`` is None for those). A failure here is logged and never undoes the stored result."""
        if not rows:
            return
        try:
            self.store.keep_reports(dataset=job["dataset"], split=job["split"], track=job["track"],
                                    model=record.model.name, result_hash=record.content_hash(), rows=rows)
        except Exception:  # noqa: BLE001 - the result is stored; the Arena just lacks this model
            log.exception("submission %s: its reports were not kept for the Arena", job["id"])

    def _score(self, job: dict[str, Any]) -> tuple[dict[str, Any], list | None]:
        """Score through the harness, exactly as `rexrank score` does (same validation, cache and statistics).
        Also the Arena's rows for a public set (study, report, reference, per-study metric values), else None."""
        from rexrank.evaluation.harness import ScoreOptions, evaluate
        from rexrank.evaluation.inputs import load_inputs
        from rexrank.evaluation.plan import SUBMISSION_MAX_MODEL_TOKENS

        if not job["predictions_path"] or not Path(job["predictions_path"]).is_file():
            raise InputError(LOST_UPLOAD)  # restored from the Hub's requests repo, which never holds the file
        inputs = load_inputs(job["predictions_path"], track=job["track"], dataset=job["dataset"], split=job["split"],
                             data_dir=self._data_dir(job["dataset"]))
        options = ScoreOptions(metrics=job["metrics"], model_paths=self.model_paths, resamples=self.n_resamples,
                               cache_dir=self.upload_dir / "score-cache", max_model_tokens=SUBMISSION_MAX_MODEL_TOKENS)
        evaluation = evaluate(inputs, model=job["model"]["name"], track=job["track"], dataset=job["dataset"],
                              split=job["split"], options=options)
        results = dict(evaluation.results)
        results.pop("inputs", None)  # local paths of the host: not for the page
        if evaluation.private or is_private(job["dataset"]):
            return results, None
        columns = {name: REGISTRY.spec(name).column for name in job["metrics"] if name in REGISTRY}
        table = evaluation.per_study.set_index("study_id")
        rows = []
        for study, hyp, ref in zip(inputs.study_ids, inputs.hyps, inputs.refs):
            values = {name: float(table.at[study, column]) for name, column in columns.items()
                      if column in table.columns and table.at[study, column] == table.at[study, column]}
            rows.append((str(study), hyp, ref, values))
        return results, rows

    def run_worker(self) -> None:
        """Score queued jobs until ``stop_worker``; first deletes what an earlier run left (``clean_uploads``)."""
        self.clean_uploads()
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


_WHITESPACE = re.compile(r"\s+")


def canonical_report(text: str) -> str:
    """A report as duplicate detection compares it: NFC, whitespace runs as one space, trimmed."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", str(text))).strip()


def canonical_digest(inputs: Any, dataset: str, split: str, track: str) -> str:
    """Identity of a submission: sha256 of the test set, track and sorted {study_id: canonical report} that will
    be scored. The same predictions as JSON, JSONL or CSV, re-indented, reordered or with extra whitespace give
    the same digest; the same file for another track does not. Reference text never enters it."""
    pairs = sorted((str(sid), canonical_report(hyp)) for sid, hyp in zip(inputs.study_ids, inputs.hyps))
    payload = json.dumps({"dataset": dataset, "split": split, "track": track, "predictions": pairs},
                         ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _details(model: dict[str, Any]) -> tuple:
    trained = model.get("trained_on") or []
    if isinstance(trained, str):
        trained = json.loads(trained)
    return (model.get("institution"), model.get("url"), model.get("year"), model.get("model_type"), list(trained))


def _public_error(exc: Exception, dataset: str) -> str:
    if str(exc) == LOST_UPLOAD:  # says nothing about the predictions; its exact text lets the file be sent again
        return LOST_UPLOAD
    if dataset in PRIVATE_DATASETS:
        return f"scoring failed ({type(exc).__name__}); the host has the details"
    return str(exc)[:2000]


def _file_digest(path: Path) -> str:
    """sha256 of a file's bytes (at most the upload limit: ``_check_request`` checked its size)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def published_names() -> dict[str, str]:
    """``name_key`` -> name of every model in the bundled published tables, of every board edition: the names only
    the host registers (``Submissions._check_name``). Read once (the tables ship with rexrank)."""
    from rexrank.leaderboard.published import bundled_files, read_tables

    names: dict[str, str] = {}
    for edition in boards.EDITIONS:
        tables, _ = read_tables(bundled_files(edition))
        for table in tables:
            for record in table.records:
                names.setdefault(name_key(record.model.name), record.model.name)
    return names


def _note_shared_keys(store: Store) -> None:
    """One log line naming the registered names that share a key with a name registered before them (a store
    written under an earlier ``records.name_key``: ``NAME_KEY_VERSION``). They keep their names, owners and rows;
    no new name with that key can be registered; the host may hand them over or leave them."""
    keyless = sorted(row["name"] for row in store.models() if row.get("name_key") is None)
    if keyless:
        log.warning("%d registered names compare equal to names registered before them (names are now compared "
                    "ignoring punctuation too): they keep their names, owners and rows, and no look-alike of them can "
                    "be registered: %s", len(keyless), ", ".join(repr(n) for n in keyless[:20]))
