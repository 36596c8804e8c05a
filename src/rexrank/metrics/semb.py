"""SembScore (column ``semb_score``): cosine of CheXbert [CLS] embeddings, plus CheXbert's 14 labels per report.

Official definition (rajpurkarlab/CXR-Report-Metric @9c9ecad, CXRMetric/run_eval.py ``add_semb_col`` and
CheXbert/src/encode.py): embed every reference and every hypothesis with CheXbert's last-layer [CLS] vector, then
score each pair by ``(a * b).sum() / (|a| |b|)``. Text rules and model facts are in ``rexrank.metrics.chexbert``.

Each unique text is run once (``Metric.per_text``): the same forward pass yields its embedding and its 14 labels,
cached together, so ``labels()`` after ``score()`` (or ``score()`` on texts already labelled) costs no model time.

Empty report: encoded as [CLS] [SEP] as upstream and scored like any other text (a defined cosine, not an error).
Reports longer than 512 tokens: clipped to [CLS] + 510 tokens + [SEP] as upstream.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rexrank.metrics import REGISTRY
from rexrank.errors import ConfigError, InputError, ModelNotAvailableError
from rexrank.metrics.base import Metric
from rexrank.metrics import chexbert
from rexrank.metrics.batching import determinism, pin_attention, policy, prepare_device
from rexrank.metrics.weights import file_sha256, resolve, source


def cosine_per_pair(hyp_embeddings: np.ndarray, ref_embeddings: np.ndarray) -> np.ndarray:
    """Functional core: row-wise cosine of two (n, d) arrays, in float64."""
    a = np.asarray(ref_embeddings, dtype=np.float64)
    b = np.asarray(hyp_embeddings, dtype=np.float64)
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _digest(path: Path) -> str:
    """sha256 of a file, memoised (rexrank.metrics.weights.file_sha256): a 440 MB checkpoint is hashed once."""
    return file_sha256(path)


class SembScore(Metric):
    """``get("semb", model=<chexbert.pth or Hub repo>, backbone=<bert dir or Hub id>, device=, batch_size=)``."""

    spec = REGISTRY.spec("semb")

    def __init__(self, model: str | Path | None = None, backbone: str | Path | None = None,
                 device: str | None = None, batch_size: int | None = None):
        self.checkpoint = resolve("chexbert", model)
        if self.checkpoint.is_dir():
            candidate = self.checkpoint / source("chexbert").filename
            if not candidate.is_file():
                raise ModelNotAvailableError(f"semb: {self.checkpoint} is a folder without chexbert.pth; "
                                             "pass model= the chexbert.pth file itself")
            self.checkpoint = candidate
        self.backbone = resolve("chexbert_backbone", backbone)
        # Only the official Hub file may need a full unpickle; a user's local file must hold tensors only.
        self._trusted = model is None or str(model) == source("chexbert").repo_id
        self.device = device or _default_device()
        # Texts per CheXbert pass (rexrank.metrics.batching); None: the device's default. Recorded in the config.
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size < 1):
            raise ConfigError(f"semb: batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size = batch_size
        self._model = None
        self._tokenizer = None
        self._config: dict[str, Any] | None = None

    def config(self) -> dict[str, Any]:
        # The batch shape and the device's settings move float bits (never by more than ~1e-6): they are part of
        # the fingerprint, so a cached value always comes from the shape that computes it (rexrank.metrics.batching).
        if self._config is None:
            backbone_files = {name: _digest(self.backbone / name)[:16] for name in ("config.json", "vocab.txt")
                              if (self.backbone / name).is_file()}
            self._config = {
                "checkpoint_sha256": _digest(self.checkpoint),
                "backbone": backbone_files,
                "embedding": "last-layer [CLS]",
                "text": "strip; \\n->space; collapse whitespace; strip; bert-base-uncased wordpiece",
                "max_tokens": chexbert.MAX_TOKENS,
                "empty": "[CLS] [SEP]",
                "batching": policy(self.device, self.batch_size),
                "determinism": determinism(self.device),
            }
        return self._config

    def _load(self):
        if self._model is None:
            self._announce_load(f"{self.checkpoint} on {self.backbone}")
            self._tokenizer = chexbert.load_tokenizer(self.backbone)
            prepare_device(self.device)
            self._model = chexbert.build_model(self.checkpoint, self.backbone, trusted=self._trusted).to(self.device)
            pin_attention(self._model.bert)
        return self._model, self._tokenizer

    def _compute(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        model, tokenizer = self._load()
        outs = chexbert.run(model, tokenizer, texts, batch_size=self.batch_size, device=self.device,
                            progress=self._report_progress)
        # The score cache stores plain values, not classes (rexrank.evaluation.cache): (embedding, classes).
        return [(o.embedding, o.classes) for o in outs]

    def outputs(self, texts: Sequence[str]) -> list[chexbert.TextOutputs]:
        """Embedding and labels of each text (cached per unique text)."""
        return [chexbert.TextOutputs(*value) for value in self.per_text("chexbert", list(texts), self._compute)]

    def embeddings(self, texts: Sequence[str]) -> np.ndarray:
        """(n, hidden) float32 [CLS] embeddings."""
        outs = self.outputs(_checked_texts(texts))
        if not outs:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([o.embedding for o in outs])

    def labels(self, texts: Sequence[str], codes: bool = True):
        """The 14 CheXbert labels per report as a DataFrame (columns = official condition names).

        codes=True gives the official labeller's CheXpert codes (1 positive, 0 negative, -1 uncertain, NaN blank);
        codes=False the raw head classes 0 Blank, 1 Positive, 2 Negative, 3 Uncertain."""
        outs = self.outputs(_checked_texts(texts))
        classes = np.stack([o.classes for o in outs]) if outs else np.zeros((0, len(chexbert.CONDITIONS)))
        return chexbert.classes_to_frame(classes, codes=codes)

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        outs = self.outputs(refs + hyps)  # one pass: duplicates across both sides are embedded once
        n = len(refs)
        ref_emb = np.stack([o.embedding for o in outs[:n]])
        hyp_emb = np.stack([o.embedding for o in outs[n:]])
        return cosine_per_pair(hyp_emb, ref_emb)


def _checked_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InputError("texts must be a list of report strings, not a single string")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"texts[{i}] is {'missing' if text is None else 'a ' + type(text).__name__}, "
                             f"not a report string: {text!r:.80}")
    return texts


def chexbert_labels(texts: Sequence[str], model: str | Path | None = None, backbone: str | Path | None = None,
                    device: str | None = None, batch_size: int | None = None, codes: bool = True):
    """Module-level labeller: the 14 CheXbert labels of each report (see ``SembScore.labels``)."""
    return SembScore(model=model, backbone=backbone, device=device, batch_size=batch_size).labels(texts, codes=codes)
