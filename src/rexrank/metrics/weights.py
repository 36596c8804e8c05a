"""Where metric weights come from: official Hub ids by default, or a local directory/file.

Every failure to get weights becomes one ``ModelNotAvailableError`` that names the metric, the file
and how to get it, never a stack trace from inside transformers or huggingface_hub.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
import socket
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from rexrank.errors import ModelNotAvailableError, RexrankError, UnknownNameError


@dataclass(frozen=True)
class ModelSource:
    key: str
    metric: str
    repo_id: str
    filename: str | None = None  # one file of the repo (e.g. chexbert.pth); None = whole snapshot
    what: str = ""
    repo_type: str = "model"
    # Snapshot filter: only what rexrank reads (repos also hold TF/Flax/ONNX copies of the same weights).
    allow_patterns: tuple[str, ...] | None = None
    # The files whose sha256 identifies the weights (``weight_digests``): alternatives in order of preference, each a
    # tuple of globs; the first alternative that matches anything is used (safetensors before .bin, as transformers
    # loads them). Compared with the official digests by ``rexrank.metrics.official``.
    digest_files: tuple[tuple[str, ...], ...] = ()
    # The metric option that overrides this source (``get(metric, <option>=PATH)``): what an error tells the user to set.
    option: str = "model"

    def fix(self) -> str:
        """The exact flags that point this source at a local copy, for the Python API and the CLI."""
        cli = (f"--model-path {self.metric}=PATH" if self.option == "model"
               else f"--option {self.metric}.{self.option}=PATH")
        return f"{self.option}=/path (CLI: {cli})"


_WEIGHTS = ("*.json", "*.txt", "*.model", "*.safetensors", "*.py")
_BIN_WEIGHTS = ("pytorch_model*.bin",)  # fetched only when a repo has no safetensors
_TOKENIZER_ONLY = ("config.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "tokenizer.json")
_HF_WEIGHTS = (("*.safetensors",), ("pytorch_model*.bin",))  # what from_pretrained loads, in its order
_ARCHIVE_WEIGHTS = (("weights.th", "*/weights.th"),)  # archives are sometimes extracted one level down


# Official sources (METRICS.md): bert_score's model_type for ReXrank is distilroberta-base; CheXbert and the
# RadGraph archives are mirrored in StanfordAIMI/RRG_scorers; RaTEScore and GREEN name their Hub models.
SOURCES: dict[str, ModelSource] = {
    s.key: s
    for s in (
        ModelSource("bertscore", "bertscore", "distilroberta-base", what="RoBERTa encoder for BERTScore",
                    allow_patterns=_WEIGHTS, digest_files=_HF_WEIGHTS),
        ModelSource("chexbert", "semb", "StanfordAIMI/RRG_scorers", "chexbert.pth", "CheXbert checkpoint",
                    digest_files=(("chexbert.pth",),)),
        # CheXbert's weights are all in chexbert.pth: of bert-base-uncased only the config and tokenizer are read.
        ModelSource("chexbert_backbone", "semb", "bert-base-uncased", what="BERT config + tokenizer for CheXbert",
                    allow_patterns=_TOKENIZER_ONLY, digest_files=(("config.json", "vocab.txt"),), option="backbone"),
        ModelSource("radgraph", "radgraph", "StanfordAIMI/RRG_scorers", "radgraph.tar.gz", "RadGraph DyGIE++ archive",
                    digest_files=_ARCHIVE_WEIGHTS),
        ModelSource("radgraph_xl", "radgraph", "StanfordAIMI/RRG_scorers", "radgraph-xl.tar.gz",
                    "RadGraph-XL DyGIE++ archive", digest_files=_ARCHIVE_WEIGHTS),
        ModelSource("ratescore_ner", "ratescore", "Angelakeke/RaTE-NER-Deberta", what="RaTEScore NER model",
                    allow_patterns=_WEIGHTS, digest_files=_HF_WEIGHTS, option="ner_model"),
        ModelSource("ratescore_embed", "ratescore", "FremyCompany/BioLORD-2023-C", what="RaTEScore entity encoder",
                    allow_patterns=_WEIGHTS, digest_files=_HF_WEIGHTS, option="embed_model"),
        ModelSource("green", "green", "StanfordAIMI/GREEN-RadLlama2-7b", what="GREEN judge LLM",
                    allow_patterns=_WEIGHTS, digest_files=_HF_WEIGHTS),
        # radeval 2.2.1 (radevalbertscore/adapter.py): RadEval-BERTScore's encoder
        ModelSource("radeval_bertscore", "radeval_bertscore", "IAMJB/RadEvalModernBERT",
                    what="radiology ModernBERT for RadEval-BERTScore", allow_patterns=_WEIGHTS, digest_files=_HF_WEIGHTS),
        # radeval 2.2.1 (SRRBert/srr_bert.py): the adapter's variant, and the tokenizer every variant reads
        ModelSource("srrbert", "srrbert", "StanfordAIMI/SRR-BERT-Leaves-with-Statuses",
                    what="SRR-BERT sentence classifier", allow_patterns=_WEIGHTS, digest_files=_HF_WEIGHTS),
        ModelSource("srrbert_tokenizer", "srrbert", "microsoft/BiomedVLP-CXR-BERT-general", what="CXR-BERT tokenizer",
                    allow_patterns=_TOKENIZER_ONLY, digest_files=(("vocab.txt",),), option="tokenizer"),
        # crimson-score 0.2.2 and radeval 2.2.1 (CRIMSONScore.DEFAULT_HF_MODEL): the CRIMSON judge, a MedGemma fine-tune
        ModelSource("crimson", "crimson", "rajpurkarlab/medgemma-4b-it-crimson", what="CRIMSON judge LLM",
                    allow_patterns=_WEIGHTS, digest_files=_HF_WEIGHTS),
        # radeval 2.2.1 (f1temporal): stanza 1.15's en radiology NER model, as its Hub repo and a stanza resources
        # folder hold it; the pipeline is loaded from a resources folder (rexrank.metrics.temporal_f1)
        ModelSource("temporal_f1", "temporal_f1", "stanfordnlp/stanza-en", what="stanza radiology NER model",
                    allow_patterns=("models/ner/radiology.pt",),
                    digest_files=(("en/ner/radiology.pt", "models/ner/radiology.pt"),)),
    )
}


def cache_dir() -> Path:
    """rexrank's own cache (extracted archives, scoring cache). Hub files stay in the HF cache."""
    return Path(os.environ.get("REXRANK_CACHE", Path.home() / ".cache" / "rexrank")).expanduser()


def source(key: str) -> ModelSource:
    if key not in SOURCES:
        raise UnknownNameError(f"Unknown model {key!r}. Available: {', '.join(SOURCES)}")
    return SOURCES[key]


def resolve(key: str, override: str | os.PathLike | None = None, *, hf_cache_dir: str | None = None) -> Path:
    """Return a local path for model ``key``: ``override`` if it is a local path, else download from the Hub.

    ``override`` may be a local directory/file or another Hub repo id. A ``.tar.gz`` archive is extracted
    once under ``cache_dir()/extracted`` and the extracted folder is returned.
    """
    src = source(key)
    collector = _COLLECTOR.get()
    if collector is None:
        return _resolve(src, override, hf_cache_dir)
    try:
        return _resolve(src, override, hf_cache_dir)
    except ModelNotAvailableError as exc:
        collector.append(str(exc))
        return Path(os.devnull) / "missing" / src.key  # never read: the collecting block raises on exit


def _resolve(src: ModelSource, override, hf_cache_dir: str | None) -> Path:
    repo_id, filename = src.repo_id, src.filename
    if override is not None:
        candidate = Path(os.fspath(override)).expanduser()
        if candidate.exists():
            return _maybe_extract(candidate, src)
        text = os.fspath(override)
        if text.startswith((".", "/", "~")) or text.count("/") > 1 or text.endswith((".pth", ".tar.gz", ".th")):
            raise ModelNotAvailableError(
                f"{src.metric}: the {src.what or 'model'} path {text!r} does not exist. "
                f"Pass an existing local directory/file, or a Hub repo id (default: {src.repo_id}), as "
                f"{src.fix()}."
            )
        repo_id = text  # another Hub repo holding the same file layout
    return _maybe_extract(_download(src, repo_id, filename, hf_cache_dir), src)


def fetch(key: str, *, hf_cache_dir: str | None = None) -> Path:
    """The official download of ``key`` as the Hub cache holds it (an archive is NOT extracted): a file or a
    snapshot folder under ``models--ORG--NAME/snapshots/<commit>/``. ``rexrank models download --record-official``
    reads the official digests from here."""
    src = source(key)
    return _download(src, src.repo_id, src.filename, hf_cache_dir)


def extract(key: str, archive: Path) -> Path:
    """The extracted folder of a downloaded archive (extracted once, as ``resolve`` does)."""
    return _maybe_extract(archive, source(key))


def _download(src: ModelSource, repo_id: str, filename: str | None, hf_cache_dir: str | None) -> Path:
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    # An unreachable Hub is detected once, in seconds, instead of huggingface_hub's retry loop per file: then
    # only the local cache is read.
    unreachable = None if offline else _unreachable_hub()
    local_only = offline or unreachable is not None
    try:
        import huggingface_hub as hub

        if filename:
            return Path(hub.hf_hub_download(repo_id, filename, repo_type=src.repo_type, cache_dir=hf_cache_dir,
                                            local_files_only=local_only))
        patterns = list(src.allow_patterns) if src.allow_patterns else None
        folder = Path(hub.snapshot_download(repo_id, repo_type=src.repo_type, cache_dir=hf_cache_dir,
                                            allow_patterns=patterns, local_files_only=local_only))
        if patterns and "*.safetensors" in patterns and not any(folder.glob("*.safetensors")):
            folder = Path(hub.snapshot_download(repo_id, repo_type=src.repo_type, cache_dir=hf_cache_dir,
                                                allow_patterns=patterns + list(_BIN_WEIGHTS),
                                                local_files_only=local_only))
        return folder
    except Exception as exc:  # noqa: BLE001 - every hub failure becomes one actionable message
        reason = type(exc).__name__
        detail = str(exc).splitlines()[0][:200] if str(exc) else ""
        if offline:
            hint = "HF_HUB_OFFLINE is set and the file is not in the local Hugging Face cache"
        elif unreachable is not None:
            hint = f"the Hub cannot be reached from here ({unreachable}) and the file is not in the local cache"
        else:
            hint = f"download failed ({reason}: {detail})"
        what = f"{filename} from {repo_id}" if filename else repo_id
        raise ModelNotAvailableError(
            f"{src.metric}: cannot load the {src.what or 'model'} ({what}): {hint}. "
            f"Run `rexrank models download` on a machine with network access (it fills the cache for offline use), "
            f"or pass a local copy with {src.fix()}."
        ) from None


# Seconds to wait for a TCP connection to the Hub before calling it unreachable.
HUB_PROBE_TIMEOUT_S = 3.0
_probe: dict[str, str | None] = {}
_probe_lock = threading.Lock()


def _unreachable_hub() -> str | None:
    """None when the Hub endpoint accepts a TCP connection, else why not (checked once per process and endpoint)."""
    try:
        from huggingface_hub import constants

        endpoint = constants.ENDPOINT
    except Exception:  # noqa: BLE001 - no hub package: the download itself reports it
        return None
    with _probe_lock:
        if endpoint not in _probe:
            parts = urlsplit(endpoint)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            try:
                with socket.create_connection((parts.hostname or "", port), timeout=HUB_PROBE_TIMEOUT_S):
                    _probe[endpoint] = None
            except OSError as exc:
                _probe[endpoint] = f"{endpoint}: {exc.strerror or type(exc).__name__}"
        return _probe[endpoint]


_COLLECTOR: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("rexrank_missing_models", default=None)


@contextlib.contextmanager
def report_all_missing():
    """Inside this block ``resolve`` records each model it cannot find instead of stopping at the first; on leaving,
    one ModelNotAvailableError lists them all, each with its fix. Paths returned for missing models are placeholders
    that must not be read (build metrics here, load weights later)."""
    missing: list[str] = []
    token = _COLLECTOR.set(missing)
    try:
        yield missing
    except RexrankError as exc:
        if not missing:
            raise
        missing.append(str(exc))  # another problem, reported with the missing models
    finally:
        _COLLECTOR.reset(token)
    if missing:
        unique = list(dict.fromkeys(missing))
        if len(unique) == 1:
            raise ModelNotAvailableError(unique[0])
        raise ModelNotAvailableError(f"{len(unique)} problems with metric models:\n"
                                     + "\n".join(f"  - {m}" for m in unique))


def _maybe_extract(path: Path, src: ModelSource) -> Path:
    if path.is_file() and path.name.endswith((".tar.gz", ".tgz")):
        target = cache_dir() / "extracted" / f"{src.key}-{path.stat().st_size}-{int(path.stat().st_mtime)}"
        marker = target / ".complete"
        if not marker.exists():
            target.mkdir(parents=True, exist_ok=True)
            try:
                with tarfile.open(path) as tar:
                    tar.extractall(target, filter="data")
            except (tarfile.TarError, OSError) as exc:
                raise ModelNotAvailableError(f"{src.metric}: cannot extract archive {path}: {exc}") from None
            marker.touch()
        return target
    return path


# -- digests of weight files -------------------------------------------------------------------------------------
# huggingface_hub stores an LFS file once, as blobs/<sha256 of its content> (the Hub's LFS oid), and links it from
# snapshots/<commit>/<name>: the digest of a Hub download is its blob's name, no 14 GB hashing needed. Any other
# file is hashed once per process (and, when large, once per machine: a memo keyed by path, size and mtime).
_BLOB_SHA256 = re.compile(r"[0-9a-f]{64}")
_SNAPSHOT = re.compile(r"models--(?P<repo>[^/]+)/snapshots/(?P<commit>[0-9a-f]{40})(/|$)")
_MEMO_MIN_BYTES = 256 << 20
_memo: dict[tuple[str, int, int], str] = {}
_memo_lock = threading.Lock()


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file's content: a Hub-cache blob's name, else hashed (memoised by path, size and mtime)."""
    real = Path(path).resolve()
    if real.parent.name == "blobs" and _BLOB_SHA256.fullmatch(real.name):
        return real.name
    stat = real.stat()
    key = (str(real), stat.st_size, stat.st_mtime_ns)
    with _memo_lock:
        if key in _memo:
            return _memo[key]
    persistent = stat.st_size >= _MEMO_MIN_BYTES
    memo_key = f"{key[0]}|{key[1]}|{key[2]}"
    digest = _read_memo().get(memo_key) if persistent else None
    if digest is None:
        from rexrank.metrics.base import file_digest  # base imports numpy: not for a command that only checks digests

        digest = file_digest(real, 1 << 22)
        if persistent:
            _write_memo(memo_key, digest)
    with _memo_lock:
        _memo[key] = digest
    return digest


def _memo_path() -> Path:
    return cache_dir() / "file_sha256.json"


def _read_memo() -> dict[str, str]:
    try:
        data = json.loads(_memo_path().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_memo(key: str, digest: str) -> None:
    try:
        path = _memo_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _read_memo()
        data[key] = digest
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=0, sort_keys=True), encoding="utf-8")
        tmp.replace(path)  # atomic: a concurrent writer loses at most its own entry
    except OSError:
        pass  # the memo only saves time


def weight_files(key: str, path: str | os.PathLike) -> dict[str, Path]:
    """The files of source ``key`` at a resolved ``path`` whose digests identify its weights, by file name.

    A single-file source given as a file is named by its official file name (a renamed chexbert.pth is still the
    chexbert.pth role)."""
    src = source(key)
    path = Path(path)
    if path.is_file():
        return {src.filename or path.name: path}
    for alternative in src.digest_files:
        found = {}
        for pattern in alternative:
            for file in sorted(path.glob(pattern)):
                if file.is_file():
                    found.setdefault(file.name, file)
        if found:
            return found
    return {}


def weight_digests(key: str, path: str | os.PathLike) -> dict[str, str]:
    """{file name: sha256} of the weight files of source ``key`` at ``path`` (what a metric's config reports as
    ``weight_digests`` and the registry of official weights compares)."""
    return {name: file_sha256(file) for name, file in weight_files(key, path).items()}


def hub_snapshot(path: str | os.PathLike) -> tuple[str, str] | None:
    """(repo id, commit) when ``path`` lies in a Hub cache snapshot, else None."""
    match = _SNAPSHOT.search(Path(path).absolute().as_posix())
    return (match["repo"].replace("--", "/"), match["commit"]) if match else None
