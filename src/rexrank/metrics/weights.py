"""Where metric weights come from: official Hub ids by default, or a local directory/file.

Every failure to get weights becomes one ``ModelNotAvailableError`` that names the metric, the file
and how to get it, never a stack trace from inside transformers or huggingface_hub.
"""

from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from rexrank.errors import ModelNotAvailableError, UnknownNameError


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


_WEIGHTS = ("*.json", "*.txt", "*.model", "*.safetensors", "*.py")
_BIN_WEIGHTS = ("pytorch_model*.bin",)  # fetched only when a repo has no safetensors
_TOKENIZER_ONLY = ("config.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "tokenizer.json")


# Official sources (METRICS.md): bert_score's model_type for ReXrank is distilroberta-base; CheXbert and the
# RadGraph archives are mirrored in StanfordAIMI/RRG_scorers; RaTEScore and GREEN name their Hub models.
SOURCES: dict[str, ModelSource] = {
    s.key: s
    for s in (
        ModelSource("bertscore", "bertscore", "distilroberta-base", what="RoBERTa encoder for BERTScore",
                    allow_patterns=_WEIGHTS),
        ModelSource("chexbert", "semb", "StanfordAIMI/RRG_scorers", "chexbert.pth", "CheXbert checkpoint"),
        # CheXbert's weights are all in chexbert.pth: of bert-base-uncased only the config and tokenizer are read.
        ModelSource("chexbert_backbone", "semb", "bert-base-uncased", what="BERT config + tokenizer for CheXbert",
                    allow_patterns=_TOKENIZER_ONLY),
        ModelSource("radgraph", "radgraph", "StanfordAIMI/RRG_scorers", "radgraph.tar.gz", "RadGraph DyGIE++ archive"),
        ModelSource("radgraph_xl", "radgraph", "StanfordAIMI/RRG_scorers", "radgraph-xl.tar.gz",
                    "RadGraph-XL DyGIE++ archive"),
        ModelSource("ratescore_ner", "ratescore", "Angelakeke/RaTE-NER-Deberta", what="RaTEScore NER model",
                    allow_patterns=_WEIGHTS),
        ModelSource("ratescore_embed", "ratescore", "FremyCompany/BioLORD-2023-C", what="RaTEScore entity encoder",
                    allow_patterns=_WEIGHTS),
        ModelSource("green", "green", "StanfordAIMI/GREEN-RadLlama2-7b", what="GREEN judge LLM",
                    allow_patterns=_WEIGHTS),
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
    repo_id, filename = src.repo_id, src.filename
    if override is not None:
        candidate = Path(os.fspath(override)).expanduser()
        if candidate.exists():
            return _maybe_extract(candidate, src)
        text = os.fspath(override)
        if text.startswith((".", "/", "~")) or text.count("/") > 1 or text.endswith((".pth", ".tar.gz", ".th")):
            raise ModelNotAvailableError(
                f"{src.metric}: the {src.what or 'model'} path {text!r} does not exist. "
                f"Pass an existing local directory/file, or a Hub repo id (default: {src.repo_id})."
            )
        repo_id = text  # another Hub repo holding the same file layout
    return _maybe_extract(_download(src, repo_id, filename, hf_cache_dir), src)


def _download(src: ModelSource, repo_id: str, filename: str | None, hf_cache_dir: str | None) -> Path:
    try:
        import huggingface_hub as hub

        if filename:
            return Path(hub.hf_hub_download(repo_id, filename, repo_type=src.repo_type, cache_dir=hf_cache_dir))
        patterns = list(src.allow_patterns) if src.allow_patterns else None
        folder = Path(hub.snapshot_download(repo_id, repo_type=src.repo_type, cache_dir=hf_cache_dir,
                                            allow_patterns=patterns))
        if patterns and "*.safetensors" in patterns and not any(folder.glob("*.safetensors")):
            folder = Path(hub.snapshot_download(repo_id, repo_type=src.repo_type, cache_dir=hf_cache_dir,
                                                allow_patterns=patterns + list(_BIN_WEIGHTS)))
        return folder
    except Exception as exc:  # noqa: BLE001 - every hub failure becomes one actionable message
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
        reason = type(exc).__name__
        detail = str(exc).splitlines()[0][:200] if str(exc) else ""
        hint = (
            "HF_HUB_OFFLINE is set and the file is not in the local Hugging Face cache"
            if offline
            else f"download failed ({reason}: {detail})"
        )
        what = f"{filename} from {repo_id}" if filename else repo_id
        raise ModelNotAvailableError(
            f"{src.metric}: cannot load the {src.what or 'model'} ({what}): {hint}. "
            f"Run `rexrank models download` on a machine with network access (it fills the cache for offline use), "
            f"or pass a local copy with model=/path (CLI: --model-path {src.metric}=PATH)."
        ) from None


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


def download_all(keys: list[str] | None = None, hf_cache_dir: str | None = None) -> dict[str, Path]:
    """Fetch every default model into the cache so later runs work with HF_HUB_OFFLINE=1."""
    return {key: resolve(key, hf_cache_dir=hf_cache_dir) for key in (keys or list(SOURCES))}
