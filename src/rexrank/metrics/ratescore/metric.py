"""The RaTEScore metric object: model loading, per-text caching, batching; the formula lives in score.py.

Flow for a batch of pairs: every distinct report text is split into sentences (medspaCy PyRuSH) and every distinct
sentence goes through the NER model once, in length-sorted batches (``per_text("entities")``); every distinct
entity text is embedded once (``per_text("entity_embedding")``); then each pair is scored on CPU. A pair whose
nearest-neighbour picks meet a near tie between entity types is scored again on the official path, from its two
reports' entity embeddings computed as the official code batches them (``per_text("report_entity_embeddings")``),
so that the same candidate wins as officially (score.py).

Unlike the official package, a report that yields no sentence (empty, whitespace, only < 3-character pieces)
keeps its place: it has no entities, so its pair scores 0.5. The official ``run_ner`` drops it from the entity
list and silently shifts every later pair (docs/ratescore.md).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics import REGISTRY
from rexrank.metrics.base import Metric, check_pairs
from rexrank.metrics.batching import determinism, pin_attention, policy, prepare_device
from rexrank.metrics.ratescore import sentences
from rexrank.metrics.ratescore.constants import (EMBED_MAX_LENGTH, NER_MAX_LENGTH, NER_TIE_MARGIN,
                                                 SIMILARITY_TIE_MARGIN, variant as get_variant)
from rexrank.metrics.ratescore.score import pair_score
from rexrank.metrics.weights import file_sha256, resolve, weight_digests

_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
# Small files that also change the numbers (labels, tokenisation).
_SIDE_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
               "added_tokens.json", "vocab.txt", "spm.model")
_SNAPSHOT = re.compile(r"models--(?P<org>[^/]+?)--(?P<name>[^/]+)/snapshots/(?P<commit>[0-9a-f]{40})")


def _model_identity(path: Path) -> str:
    """A Hub snapshot names its commit; a local folder is identified by the sha256 of its weight and config files."""
    match = _SNAPSHOT.search(path.resolve().as_posix())
    if match:
        return f"{match['org']}/{match['name']}@{match['commit']}"
    parts = []
    for name in _WEIGHT_FILES + _SIDE_FILES:
        file = path / name
        if file.is_file():
            parts.append(f"{name}={file_sha256(file)}")
    if not parts:
        return f"path:{path}"
    return "sha256:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _split_model_arg(model: Any) -> tuple[Any, Any]:
    """``model=`` as one value: {"ner": .., "embed": ..} (or the stand-in keys) or a folder with ner/ and embed/."""
    if isinstance(model, Mapping):
        ner = model.get("ner", model.get("ratescore_ner"))
        embed = model.get("embed", model.get("ratescore_embed"))
        if ner is None or embed is None:
            raise ConfigError("ratescore: model= as a mapping needs the keys 'ner' and 'embed' "
                              f"(got {', '.join(map(str, model)) or 'none'})")
        return ner, embed
    folder = Path(os.fspath(model)).expanduser()
    if (folder / "ner").is_dir() and (folder / "embed").is_dir():
        return folder / "ner", folder / "embed"
    raise ConfigError(f"ratescore uses two models; model={os.fspath(model)!r} must be a folder holding ner/ and embed/ "
                      "(or pass ner_model= and embed_model=, or model={'ner': ..., 'embed': ...})")


class RaTEScore(Metric):
    """RaTEScore (Zhao et al., EMNLP 2024) with the official package's numbers, batched and cached.

    Options: ``ner_model`` (default Angelakeke/RaTE-NER-Deberta), ``embed_model`` (default
    FremyCompany/BioLORD-2023-C) — Hub ids or local folders; or ``model`` = a folder with ner/ and embed/ or a
    mapping {"ner": .., "embed": ..}. ``variant``: "v0.5" (default), "v0.6-long", "v0.6-short".
    ``device`` (default: cuda if available), ``batch_size`` (sentences per NER forward) and ``embed_batch_size``
    (entities per encoder forward): the rows of rexrank.metrics.batching's fixed-shape passes, the device's default
    when None; both recorded in the config.
    """

    spec = REGISTRY.spec("ratescore")

    def __init__(self, ner_model: Any = None, embed_model: Any = None, *, model: Any = None, variant: str | None = None,
                 device: str | None = None, batch_size: int | None = None, embed_batch_size: int | None = None):
        if model is not None:
            if ner_model is not None or embed_model is not None:
                raise ConfigError("ratescore: pass either model= or ner_model=/embed_model=, not both")
            ner_model, embed_model = _split_model_arg(model)
        self.variant = get_variant(variant)
        for name, value in (("batch_size", batch_size), ("embed_batch_size", embed_batch_size)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"ratescore: {name} must be a positive integer, got {value!r}")
        self.batch_size = batch_size
        self.embed_batch_size = embed_batch_size
        sentences.check_available()
        self.ner_path = resolve("ratescore_ner", ner_model)
        self.embed_path = resolve("ratescore_embed", embed_model)
        self._device_arg = device
        self._ner = None
        self._encoder = None
        self._config: dict[str, Any] | None = None
        self._all_official = False  # tests: score every pair on the official path (same numbers, slower)

    def config(self) -> dict[str, Any]:
        if self._config is None:
            self._config = {
                "ner_model": _model_identity(self.ner_path),
                "embed_model": _model_identity(self.embed_path),
                # sha256 of the weight files loaded (a Hub blob's name, else hashed once): the official-weights check
                "weight_digests": {"ratescore_ner": weight_digests("ratescore_ner", self.ner_path),
                                   "ratescore_embed": weight_digests("ratescore_embed", self.embed_path)},
                "variant": self.variant.name,
                "affinity_matrix": self.variant.matrix_name,
                "neg_weight": self.variant.neg_weight,
                "ner_max_length": NER_MAX_LENGTH,
                "embed_max_length": EMBED_MAX_LENGTH,
                "embedding": "last_hidden_state[CLS]",
                # near ties are redone in the official computation order (entities.py, score.py)
                "tie_margins": {"ner_logit": NER_TIE_MARGIN, "cosine": SIMILARITY_TIE_MARGIN},
                "sentence_splitter": {"pipeline": "medspacy_pyrush", **sentences.splitter_versions()},
                "batching": {"ner": policy(self._device(), self.batch_size),
                             "embed": policy(self._device(), self.embed_batch_size)},
                "determinism": determinism(self._device()),
            }
        return self._config

    # --- models -----------------------------------------------------------------------------------------------
    def _device(self):
        import torch

        if self._device_arg is None:
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            return torch.device(self._device_arg)
        except (RuntimeError, TypeError) as exc:
            raise ConfigError(f"ratescore: invalid device {self._device_arg!r}: {exc}") from None

    def _load(self) -> None:
        if self._ner is not None:
            return
        self._announce_load(f"{self.ner_path} and {self.embed_path}")
        from transformers import AutoModel, AutoModelForTokenClassification, AutoTokenizer

        from rexrank.metrics.ratescore.embedding import EntityEncoder
        from rexrank.metrics.ratescore.entities import NerRunner

        device = self._device()
        prepare_device(device)
        try:
            ner_tok = AutoTokenizer.from_pretrained(str(self.ner_path))
            ner_model = AutoModelForTokenClassification.from_pretrained(str(self.ner_path)).eval().to(device)
        except Exception as exc:  # noqa: BLE001 - any loading failure is one actionable message
            raise ModelNotAvailableError(f"ratescore: cannot load the NER model from {self.ner_path}: "
                                         f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
                                         ) from None
        try:
            emb_tok = AutoTokenizer.from_pretrained(str(self.embed_path))
            emb_model = AutoModel.from_pretrained(str(self.embed_path)).eval().to(device)
        except Exception as exc:  # noqa: BLE001
            raise ModelNotAvailableError(f"ratescore: cannot load the entity encoder from {self.embed_path}: "
                                         f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
                                         ) from None
        labels = set(ner_model.config.id2label.values())
        if not labels or not all(lab == "O" or lab[:2] in ("B-", "I-") for lab in labels):
            raise ModelNotAvailableError(f"ratescore: {self.ner_path} is not an IOB token classifier "
                                         f"(labels: {sorted(labels)[:12]})")
        pin_attention(ner_model)
        pin_attention(emb_model)
        self._ner = NerRunner(ner_tok, ner_model, device, self.batch_size)
        self._encoder = EntityEncoder(emb_tok, emb_model, device, self.embed_batch_size)

    # --- per-text work ----------------------------------------------------------------------------------------
    def _extract(self, texts: list[str]) -> list[list[tuple[str, str]]]:
        """Entities [(text, type)] of each report: all its sentences' entities, in order."""
        self._load()
        per_report = sentences.split_reports(texts)
        unique = list(dict.fromkeys(s for report in per_report for s in report))
        # Progress follows the NER pass, the bulk of the work (entity embedding and scoring follow it).
        found = dict(zip(unique, self._ner(unique, progress=self._report_progress)))
        return [[entity for s in report for entity in found[s]] for report in per_report]

    def _embed(self, entity_texts: list[str]) -> list[np.ndarray]:
        self._load()
        return self._encoder(entity_texts)

    def _embed_reports(self, texts: list[str]) -> list[np.ndarray]:
        """Each report's entity matrix as the official code computes it (one batch per report, duplicates kept)."""
        self._load()
        ents = self.per_text("entities", texts, self._extract)
        return [self._encoder.report_batch([name for name, _ in report]) for report in ents]

    def entities(self, texts: list[str]) -> list[list[tuple[str, str]]]:
        """Public helper: the (entity text, type) list RaTEScore extracts from each text."""
        return self.per_text("entities", list(texts), self._extract)

    # --- scoring ----------------------------------------------------------------------------------------------
    def _details(self, hyps: list[str], refs: list[str]) -> dict[str, np.ndarray]:
        """Fast path for every pair; pairs whose nearest-neighbour picks are not decided there (near ties between
        types, score.py) are scored again on the official path, from the official per-report embeddings."""
        ents = self.per_text("entities", refs + hyps, self._extract)
        ref_ents, hyp_ents = ents[: len(refs)], ents[len(refs):]
        names = list(dict.fromkeys(name for report in ents for name, _ in report))
        vectors = dict(zip(names, self.per_text("entity_embedding", names, self._embed))) if names else {}
        dim = next(iter(vectors.values())).shape[0] if vectors else 0
        out = {k: np.empty(len(refs)) for k in ("score", "ref_to_hyp", "hyp_to_ref", "n_ref", "n_hyp")}
        out["official_path"] = np.zeros(len(refs), dtype=bool)
        matrix, neg = self.variant.matrix, self.variant.neg_weight

        def stack(report):
            return np.stack([vectors[n] for n, _ in report]) if report else np.zeros((0, dim), np.float32)

        undecided = []
        for i, (r, h) in enumerate(zip(ref_ents, hyp_ents)):
            result = pair_score(stack(r), [t for _, t in r], stack(h), [t for _, t in h], matrix, neg)
            out["score"][i], out["ref_to_hyp"][i], out["hyp_to_ref"][i] = result[:3]
            out["n_ref"][i], out["n_hyp"][i] = len(r), len(h)
            if not result.decided or self._all_official:
                undecided.append(i)
        if undecided:
            texts = [refs[i] for i in undecided] + [hyps[i] for i in undecided]
            exact = self.per_text("report_entity_embeddings", texts, self._embed_reports)
            for k, i in enumerate(undecided):
                r, h = ref_ents[i], hyp_ents[i]
                result = pair_score(exact[k], [t for _, t in r], exact[len(undecided) + k], [t for _, t in h],
                                    matrix, neg, official=True)
                out["score"][i], out["ref_to_hyp"][i], out["hyp_to_ref"][i] = result[:3]
                out["official_path"][i] = True
        return out

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        return self._details(hyps, refs)["score"]

    def _score_details(self, hyps, refs):
        """Per pair: ``ratescore``, the two directional scores (NaN where a side has no entity), entity counts."""
        import pandas as pd

        hyps, refs = check_pairs(hyps, refs)
        d = self._details(hyps, refs) if hyps else {k: np.zeros(0) for k in
                                                    ("score", "ref_to_hyp", "hyp_to_ref", "n_ref", "n_hyp")}
        return pd.DataFrame({
            self.spec.name: d["score"],
            "ratescore_ref_to_hyp": d["ref_to_hyp"],
            "ratescore_hyp_to_ref": d["hyp_to_ref"],
            "ratescore_n_entities_ref": d["n_ref"].astype(np.int64),
            "ratescore_n_entities_hyp": d["n_hyp"].astype(np.int64),
        })
