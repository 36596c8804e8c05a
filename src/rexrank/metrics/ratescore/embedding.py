"""Entity embeddings: the encoder's last-layer [CLS] vector of each entity text, max 30 tokens.

Official (RaTEScore 0.5.0/0.6.0 ``score.process_embedding``): per report, all its entity texts (duplicates
included, in order) in one padded batch, ``truncation=True, max_length=30``, ``last_hidden_state[:, 0, :]``.

Two ways, used by score.py's two paths:
- ``__call__``: each distinct entity text once, in the fixed-shape batches of rexrank.metrics.batching over all
  reports: an entity's vector is a function of its text and the weights, whatever entities share its pass (the
  shape moves it from the official vector by float noise, ~1e-6, which score.py's tie margin covers).
- ``report_batch``: one report's entity texts as the official code batches them, giving the official vectors bit for
  bit (same device, library and thread count). Used only for pairs whose nearest-neighbour choice is a near tie.
"""

from __future__ import annotations

import numpy as np
import torch

from rexrank.metrics.batching import batch_shape, run_fixed_shape
from rexrank.metrics.ratescore.constants import EMBED_MAX_LENGTH


class EntityEncoder:
    def __init__(self, tokenizer, model, device: torch.device, batch_size: int | None):
        self.tokenizer = tokenizer
        self.model = model
        self.device = device
        self.batch_size = batch_size

    def __call__(self, texts: list[str]) -> list[np.ndarray]:
        """One vector per text (fast path). Texts with the same input ids share one forward pass."""
        if not texts:
            return []
        keys = [tuple(ids) for ids in self.tokenizer(texts, max_length=EMBED_MAX_LENGTH, truncation=True)["input_ids"]]
        distinct = list(dict.fromkeys(keys))
        vectors = dict(zip(distinct, self._encode([list(k) for k in distinct])))
        return [vectors[key] for key in keys]

    def _encode(self, encoded: list[list[int]]) -> list[np.ndarray]:
        def forward(input_ids, mask):
            return self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state[:, 0, :].float()

        shape = batch_shape(self.device, self.batch_size, EMBED_MAX_LENGTH)
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        return [row.copy() for row in run_fixed_shape(encoded, shape, pad_id, self.device, forward)]

    def report_batch(self, texts: list[str]) -> np.ndarray:
        """[len(texts), dim] float32: one report's entity texts in the official batch (process_embedding)."""
        if not texts:
            return np.zeros((0, self.model.config.hidden_size), np.float32)
        encoded = self.tokenizer(texts, truncation=True, padding=True, return_tensors="pt", max_length=EMBED_MAX_LENGTH)
        with torch.no_grad():
            hidden = self.model(**encoded.to(self.device)).last_hidden_state
        return hidden[:, 0, :].cpu().numpy().copy()
