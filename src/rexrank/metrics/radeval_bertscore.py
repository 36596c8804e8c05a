"""RadEval-BERTScore (column ``radeval_bertscore``): BERTScore F1 with RadEval's radiology ModernBERT.

What radeval 2.2.1 computes (radeval/metrics/radevalbertscore/adapter.py ``RadEvalBertScoreMetric``, its
``RadEvalBERTScorer`` and the bert-score 0.3.13 copy in radeval/metrics/bertscore/_vendor), reproduced here:

- encoder ``IAMJB/RadEvalModernBERT`` (``AutoModel``: a ``ModernBertModel``), ``num_layers=22``: its layer list cut
  to the first 22 (all of ModernBERT-base's), the output the model's first output, i.e. after ModernBERT's final
  norm; fast tokenizer; no idf; no baseline rescaling (raw F1);
- text: ``strip()`` only (no space collapsing, unlike ReXrank's BERTScore); an empty text is
  ``tokenizer.encode("")`` ([CLS] [SEP]); otherwise ``tokenizer.encode(text)`` with specials, truncated to
  ``tokenizer.model_max_length`` (8192 for ModernBERT); no prefix space (the model id names no RoBERTa/GPT-2/BART);
- matching as bert-score's: L2-normalised token vectors, [CLS]/[SEP] weight 0, every other token 1, greedy max
  cosine, F = 2PR/(P+R) (0 when undefined), an empty side (two tokens) scores 0.
- the per-report value is radeval's ``per_sample`` list; its ``radeval_bertscore`` aggregate is their mean.

The greedy loop, caching, batching and progress are rexrank's BERTScore (``rexrank.metrics.bertscore``), with its
one documented difference (the true maximum even when every cosine is negative; bert-score's padded batches would
give 0). Weights are loaded in float32 (what radeval's ``from_pretrained`` gives on transformers 4.x).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rexrank.errors import ConfigError
from rexrank.metrics import REGISTRY
from rexrank.metrics.batching import determinism, pin_attention, policy, prepare_device
from rexrank.metrics.bertscore import BertScore, load_encoder
from rexrank.metrics.semb import _default_device, _digest
from rexrank.metrics.weights import resolve, weight_digests

MODEL_ID = "IAMJB/RadEvalModernBERT"  # radeval 2.2.1 radevalbertscore/adapter.py
DEFAULT_LAYERS = 22  # same file: num_layers=22


class RadEvalBertScore(BertScore):
    """``get("radeval_bertscore", model=<Hub id or folder>, device=, batch_size=, num_layers=22)``."""

    spec = REGISTRY.spec("radeval_bertscore")

    def __init__(self, model: str | Path | None = None, device: str | None = None, batch_size: int | None = None,
                 num_layers: int = DEFAULT_LAYERS, cache_refs: bool = True):
        self.model_path = resolve("radeval_bertscore", model)
        self.model_id = MODEL_ID if model is None else (
            str(model) if not Path(str(model)).expanduser().exists() else None)
        self.device = device or _default_device()
        # Texts per encoder pass (rexrank.metrics.batching; RadEvalBERTScorer's own default is 64): the device's
        # default when None, recorded in the config.
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size < 1):
            raise ConfigError(f"radeval_bertscore: batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size = batch_size
        if int(num_layers) < 0:
            raise ConfigError(f"radeval_bertscore: num_layers must be >= 0, got {num_layers}")
        self.num_layers = int(num_layers)
        self.idf, self.idf_sents, self.rescale_with_baseline = False, None, False
        self.cache_refs = bool(cache_refs)
        self._model = None
        self._tokenizer = None
        self._max_length: int | None = None
        self._config: dict[str, Any] | None = None

    def config(self) -> dict[str, Any]:
        if self._config is None:
            files = {n: _digest(self.model_path / n)[:16] for n in ("config.json", "tokenizer.json")
                     if (self.model_path / n).is_file()}
            self._config = {
                "model": self.model_id or "local",
                "weights": self._weights_identity(),
                "weight_digests": {"radeval_bertscore": weight_digests("radeval_bertscore", self.model_path)},
                "files": files,
                "num_layers": self.num_layers,
                "tokenisation": "strip; fast tokenizer with specials, no prefix space; truncate to model_max_length",
                "value": "F1 (no idf, no baseline), as radeval 2.2.1",
                "batching": policy(self.device, self.batch_size),
                "determinism": determinism(self.device),
            }
        return self._config

    def _load(self):
        if self._model is not None:
            return self._model, self._tokenizer
        self._announce_load(self.model_path)
        tokenizer, model = load_encoder(self.spec.name, self.model_path)
        layers = getattr(model, "layers", None)
        if layers is None:
            raise ConfigError(f"radeval_bertscore: unsupported encoder {type(model).__name__} (expected ModernBERT)")
        if self.num_layers > len(layers):
            raise ConfigError(f"radeval_bertscore: num_layers={self.num_layers} but {self.model_path} has "
                              f"{len(layers)} layers")
        del layers[self.num_layers:]  # as radeval's get_model: keep the first num_layers, final norm still applied
        limit = tokenizer.model_max_length
        if not limit or limit > 1_000_000:
            raise ConfigError(f"radeval_bertscore: the tokenizer in {self.model_path} declares no model_max_length")
        self._max_length = int(limit)
        prepare_device(self.device)
        pin_attention(model)
        self._model, self._tokenizer = model.eval().to(self.device), tokenizer
        return self._model, self._tokenizer

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """radeval's ``sent_encode``: strip, then the tokenizer with specials, truncated to model_max_length."""
        _, tokenizer = self._load()
        texts = [t.strip() for t in texts]
        empty = list(tokenizer("", add_special_tokens=True)["input_ids"])
        nonempty = [i for i, t in enumerate(texts) if t]
        out = [list(empty) for _ in texts]
        if nonempty:
            ids = tokenizer([texts[i] for i in nonempty], add_special_tokens=True, truncation=True,
                            max_length=self._max_length)["input_ids"]
            for i, row in zip(nonempty, ids):
                out[i] = list(row)
        return out

    def _score_details(self, hyps, refs):
        """Per pair: ``radeval_bertscore`` (F1) plus raw precision and recall."""
        import numpy as np
        import pandas as pd

        from rexrank.metrics.base import check_pairs

        hyps, refs = check_pairs(hyps, refs)
        values = self._scores(hyps, refs) if hyps else np.zeros((0, 3))
        return pd.DataFrame({"radeval_bertscore": values[:, 2], "radeval_bertscore_precision": values[:, 0],
                             "radeval_bertscore_recall": values[:, 1]})
