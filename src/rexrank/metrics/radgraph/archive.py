"""Read a RadGraph model archive (config.json, vocabulary/, weights.th) without allennlp.

The layout is the one radgraph 0.1.18 extracts from ``radgraph.tar.gz`` / ``radgraph-xl.tar.gz``
(StanfordAIMI/RRG_scorers) and loads in ``RadGraph.__init__``: an allennlp/DyGIE++ training config, an allennlp
vocabulary folder and the DyGIE model's state dict. Everything that can change an annotation is read here and
checked, so a wrong or truncated archive fails with one message naming the file, never deep inside torch.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rexrank.errors import ModelNotAvailableError

# allennlp Vocabulary: files are split on this regex, a trailing empty entry is dropped, and these markers are
# rewritten (radgraph/allennlp/data/vocabulary.py: _NEW_LINE_REGEX, set_from_file, DEFAULT_* tokens).
_VOCAB_LINES = re.compile(r"\n|\r\n")
_PADDING_TOKEN = "@@PADDING@@"
_NEWLINE_MARKER = "@@NEWLINE@@"

# Keys of weights.th that belong to DyGIE modules the RadGraph configs switch off (coref: loss weight 0 and
# coref_prop 0; events: loss weight 0). The package builds and loads them but never runs them.
UNUSED_PREFIXES = ("_coref.", "_events.")
ENCODER_PREFIX = "_embedder.token_embedder_bert._matched_embedder.transformer_model."


@dataclass(frozen=True)
class ArchiveConfig:
    """The numbers of a DyGIE archive that shape inference."""

    model_type: str  # the dataset name of the vocabulary namespaces: "radgraph", "radgraph-xl", ...
    ner_labels: tuple[str, ...]  # index 0 is the null label ""
    relation_labels: tuple[str, ...]  # no null entry: scorer index 0 is the (implicit, zero-scored) null
    encoder_name: str  # config model_name: absolute path of a BERT folder or a Hub id
    max_length: int | None  # wordpieces per encoder segment (allennlp folds longer inputs into segments)
    reader_max_span_width: int  # spans enumerated by the dataset reader
    model_max_span_width: int  # rows of the span-width embedding
    feature_size: int
    ff_hidden_dims: tuple[int, ...]
    relation_spans_per_word: float
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Archive:
    path: Path
    config: ArchiveConfig
    weights: Path


def _namespace_match(pattern: str, namespace: str) -> bool:
    # allennlp.data.vocabulary.namespace_match: "*suffix" matches by suffix, else exact.
    if pattern.startswith("*") and namespace.endswith(pattern[1:]):
        return True
    return pattern == namespace


def read_vocabulary(directory: Path) -> dict[str, list[str]]:
    """namespace -> tokens by index, as allennlp ``Vocabulary.from_files`` builds it."""
    padding_file = directory / "non_padded_namespaces.txt"
    if not padding_file.is_file():
        raise ModelNotAvailableError(f"radgraph: {padding_file} is missing; not a RadGraph/allennlp archive")
    patterns = [line.strip() for line in padding_file.read_text(encoding="utf-8").splitlines(keepends=True)]
    vocab: dict[str, list[str]] = {}
    for entry in sorted(directory.iterdir()):
        if entry.name == padding_file.name or entry.name.startswith(".") or not entry.is_file():
            continue
        namespace = entry.name.replace(".txt", "")
        lines = _VOCAB_LINES.split(entry.read_text(encoding="utf-8"))
        if lines and lines[-1] == "":
            lines = lines[:-1]
        tokens = [line.replace(_NEWLINE_MARKER, "\n") for line in lines]
        if not any(_namespace_match(p, namespace) for p in patterns):
            tokens = [_PADDING_TOKEN] + tokens
        if len(set(tokens)) != len(tokens):
            raise ModelNotAvailableError(f"radgraph: vocabulary file {entry} repeats a label")
        vocab[namespace] = tokens
    return vocab


def _get(mapping: Any, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if not isinstance(mapping, dict) or key not in mapping:
            return default
        mapping = mapping[key]
    return mapping


def _require(mapping: dict, path: Path, *keys: str) -> Any:
    value = _get(mapping, *keys)
    if value is None:
        raise ModelNotAvailableError(f"radgraph: {path} has no {'.'.join(keys)}; not a DyGIE RadGraph config")
    return value


def read_archive(path: str | os.PathLike, model_type: str | None = None, *, need_weights: bool = True) -> Archive:
    """Validate and read an extracted archive folder (``need_weights=False``: config and vocabulary only)."""
    root = Path(path)
    if root.is_dir() and not (root / "config.json").is_file():
        # Archives are sometimes extracted one level down (radgraph/ inside the target folder).
        inner = [p for p in root.iterdir() if p.is_dir() and (p / "config.json").is_file()]
        if len(inner) == 1:
            root = inner[0]
    config_path, weights, vocab_dir = root / "config.json", root / "weights.th", root / "vocabulary"
    for needed in (config_path, weights, vocab_dir) if need_weights else (config_path, vocab_dir):
        if not needed.exists():
            raise ModelNotAvailableError(
                f"radgraph: {needed} is missing. A RadGraph archive folder holds config.json, vocabulary/ and "
                f"weights.th (radgraph.tar.gz from StanfordAIMI/RRG_scorers, extracted)."
            )
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(f"radgraph: cannot read {config_path}: {exc}") from None
    vocab = read_vocabulary(vocab_dir)

    datasets = sorted(ns[: -len("__ner_labels")] for ns in vocab if ns.endswith("__ner_labels"))
    if model_type is None:
        if len(datasets) != 1:
            raise ModelNotAvailableError(
                f"radgraph: {vocab_dir} holds NER labels for {datasets or 'no dataset'}; pass model_type= to choose")
        model_type = datasets[0]
    ner_ns, rel_ns = f"{model_type}__ner_labels", f"{model_type}__relation_labels"
    for ns in (ner_ns, rel_ns):
        if ns not in vocab:
            raise ModelNotAvailableError(f"radgraph: {vocab_dir} has no {ns}.txt (model_type {model_type!r})")
    if vocab[ner_ns][0] != "":
        # dygie NERTagger asserts this: the unscored dummy class must be the null label.
        raise ModelNotAvailableError(f"radgraph: the first NER label in {vocab_dir / (ner_ns + '.txt')} must be empty")

    model = _require(config, config_path, "model")
    reader_bert = _get(config, "dataset_reader", "token_indexers", "bert", default={})
    model_bert = _require(model, config_path, "embedder", "token_embedders", "bert")
    encoder_name = _require(model_bert, config_path, "model_name")
    max_length = model_bert.get("max_length")
    if reader_bert.get("max_length", max_length) != max_length or reader_bert.get("model_name", encoder_name) != encoder_name:
        raise ModelNotAvailableError(
            f"radgraph: {config_path}: the dataset reader and the embedder disagree on the BERT model or max_length")
    loss_weights = _require(model, config_path, "loss_weights")
    modules = _require(model, config_path, "modules")
    if (loss_weights.get("coref", 0) > 0 or _get(modules, "coref", "coref_prop", default=0) > 0
            or loss_weights.get("events", 0) > 0 or loss_weights.get("ner", 0) <= 0
            or loss_weights.get("relation", 0) <= 0):
        raise ModelNotAvailableError(
            f"radgraph: {config_path} enables coreference/event modules or disables NER/relations; RadGraph "
            f"archives use NER + relations only (loss_weights {loss_weights})")
    ff = _require(model, config_path, "feedforward_params")
    hidden = ff["hidden_dims"]
    hidden_dims = tuple(hidden) if isinstance(hidden, list) else (int(hidden),) * int(ff["num_layers"])
    cfg = ArchiveConfig(
        model_type=model_type,
        ner_labels=tuple(vocab[ner_ns]),
        relation_labels=tuple(vocab[rel_ns]),
        encoder_name=str(encoder_name),
        max_length=int(max_length) if max_length is not None else None,
        reader_max_span_width=int(_require(config, config_path, "dataset_reader", "max_span_width")),
        model_max_span_width=int(_require(model, config_path, "max_span_width")),
        feature_size=int(_require(model, config_path, "feature_size")),
        ff_hidden_dims=hidden_dims,
        relation_spans_per_word=float(_require(modules, config_path, "relation", "spans_per_word")),
    )
    if cfg.reader_max_span_width > cfg.model_max_span_width:
        raise ModelNotAvailableError(f"radgraph: {config_path}: reader spans are wider than the width embedding")
    return Archive(root, cfg, weights)


def encoder_location(archive: Archive, override: str | os.PathLike | None = None) -> str:
    """Where the BERT config + tokenizer live: ``override``, the config's path, or its Hub id.

    A stand-in archive names an absolute local folder; the real archives name a Hub id (PubMedBERT).
    A relative folder next to the archive is accepted too, so an archive can be moved with its encoder.
    """
    name = os.fspath(override) if override is not None else archive.config.encoder_name
    candidate = Path(name).expanduser()
    if candidate.is_dir():
        return str(candidate)
    beside = archive.path / name
    if not candidate.is_absolute() and beside.is_dir():
        return str(beside)
    if candidate.is_absolute() or name.startswith((".", "~")):
        raise ModelNotAvailableError(
            f"radgraph: the BERT folder {name!r} named in {archive.path / 'config.json'} does not exist; "
            f"pass encoder=PATH (a folder with the BERT config.json and vocab.txt)")
    return name
