"""BERTScore (column ``bertscore``) as ReXrank computes it, reimplemented on transformers 5.

ReXrank (rajpurkarlab/CXR-Report-Metric @9c9ecad, CXRMetric/run_eval.py ``add_bertscore_col``) calls bert-score
0.3.13 as ``BERTScorer(model_type="distilroberta-base", batch_size=256, lang="en", rescale_with_baseline=True,
idf=use_idf, idf_sents=refs)`` on ``re.sub(r' +', ' ', text)`` of both sides and keeps the rescaled F1.
bert-score itself cannot be used on transformers 5 (its RoBERTa tokenisation silently loses the prefix space), so
the facts below, read from bert_score 0.3.13 (``utils.py``, ``scorer.py``), are reproduced here:

- tokenisation (``sent_encode``): text stripped; an empty text is just <s> </s>; otherwise the model tokenizer with
  special tokens, ``add_prefix_space=True`` for byte-level BPE (RoBERTa/GPT-2), truncated to
  ``tokenizer.model_max_length`` (512 for distilroberta-base) tokens including the specials;
- model: the first ``num_layers`` layers (``model2layers["distilroberta-base"] = 5``), output of the last kept
  layer, float32, no dropout;
- greedy matching (``greedy_cos_idf``): token vectors L2-normalised; every token, specials included, is a match
  candidate; each token's weight is its idf, with idf off = 1 for every token except <s>/</s> (weight 0);
  P = weighted mean over hypothesis tokens of the best cosine in the reference, R the converse, F = 2PR/(P+R);
- empty side (only the two specials): raw P = R = F = 0 (bert-score prints a warning), then rescaled like any
  value, so an empty hypothesis or reference scores (0 - b_F) / (1 - b_F) = -5.5501;
- idf (``get_idf_dict``): over the idf sentences (the references, duplicates counted), token sets from the same
  encoding, idf(t) = ln((N + 1) / (df(t) + 1)), unseen tokens ln(N + 1);
- rescaling: x' = (x - b) / (1 - b) with bert-score's baseline table for distilroberta-base (below), applied
  whatever path the weights come from.

One deliberate difference: bert-score pads its similarity matrices with zeros inside a batch of pairs, so a token
whose cosines with every token of the other text are negative would get 0 instead of its best (negative) cosine,
depending on which pairs share its batch. Trained encoders never produce such tokens (distilroberta layer-5 cosines
are positive); we always take the true maximum, so a pair's score never depends on its neighbours.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics import REGISTRY
from rexrank.metrics.base import Metric, fingerprint_of
from rexrank.metrics.batching import batch_shape, determinism, pin_attention, policy, prepare_device, run_fixed_shape
from rexrank.metrics.semb import _default_device, _digest
from rexrank.metrics.weights import file_sha256, resolve, weight_digests

# bert_score 0.3.13, bert_score/rescale_baseline/en/distilroberta-base.tsv: LAYER -> (P, R, F).
# Row 5 is the one ReXrank uses (also in ../shared/reference/radcliq_constants.json).
DISTILROBERTA_BASELINES = {
    0: (0.42608285, 0.4272089, 0.42462298),
    1: (0.7367886, 0.7370362, 0.736573),
    2: (0.79922664, 0.799593, 0.7991632),
    3: (0.8329021, 0.8333321, 0.83291864),
    4: (0.8442, 0.84462386, 0.84425896),
    5: (0.84732, 0.84759504, 0.8473319),
    6: (0.89334005, 0.8935088, 0.8933471),
}
DEFAULT_LAYERS = 5  # bert_score utils.model2layers["distilroberta-base"]
# score_details columns beside the F1: bert-score's P and R per pair, rescaled like the F1 (the evaluate module's
# precision/recall lists read them).
PRECISION_COLUMN = "bertscore_precision"
RECALL_COLUMN = "bertscore_recall"

_SPACES = re.compile(r" +")


def preprocess(text: str) -> str:
    """ReXrank's ``re.sub(r' +', ' ', text)``, then bert-score's ``strip()``."""
    return _SPACES.sub(" ", text).strip()


def rescale(values: np.ndarray, baseline: float) -> np.ndarray:
    return (values - baseline) / (1.0 - baseline)


def idf_weights(token_ids: Sequence[Sequence[int]]) -> tuple[dict[int, float], float]:
    """bert-score ``get_idf_dict``: ({token: ln((N+1)/(df+1))}, weight of unseen tokens ln(N+1))."""
    n_docs = len(token_ids)
    df = Counter(t for ids in token_ids for t in set(ids))
    return {t: math.log((n_docs + 1) / (c + 1)) for t, c in df.items()}, math.log(n_docs + 1)


def greedy_f1(hyp_emb, hyp_w, ref_emb, ref_w) -> tuple[float, float, float]:
    """Raw (P, R, F) of one pair from L2-normalised token vectors (torch, float32) and token weights.

    Empty sides are the caller's business (bert-score zeroes them); an undefined F (P + R = 0, or all weights 0)
    is 0 as in bert-score."""
    sim = hyp_emb @ ref_emb.T
    precision = (sim.max(dim=1).values * hyp_w).sum() / hyp_w.sum()
    recall = (sim.max(dim=0).values * ref_w).sum() / ref_w.sum()
    f1 = 2 * precision * recall / (precision + recall)
    p, r, f = (float(x) for x in (precision, recall, f1))
    return p, r, (0.0 if math.isnan(f) else f)


class BertScore(Metric):
    """``get("bertscore", model=<Hub id or folder>, device=, batch_size=, idf=False, num_layers=5)``.

    ``idf_sents``: sentences for idf weights (default: the references of each ``score`` call, as ReXrank does).
    ``batch_size``: texts per encoder pass (default: the device's, rexrank.metrics.batching.DEFAULT_ROWS); every
    pass has a fixed shape, so a text's vectors never depend on its neighbours; the shape is in the config.
    ``cache_refs``: keep reference-side token embeddings in the per-text cache (repeated scoring against the
    same references, e.g. a validation loop, then runs the encoder on hypotheses only).
    """

    spec = REGISTRY.spec("bertscore")

    def __init__(self, model: str | Path | None = None, device: str | None = None, batch_size: int | None = None,
                 idf: bool = False, idf_sents: Sequence[str] | None = None, num_layers: int = DEFAULT_LAYERS,
                 rescale_with_baseline: bool = True, cache_refs: bool = True):
        self.model_path = resolve("bertscore", model)
        self.model_id = str(model) if model is not None and not Path(str(model)).expanduser().exists() else None
        if model is None:
            self.model_id = "distilroberta-base"
        self.device = device or _default_device()
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size < 1):
            raise ConfigError(f"bertscore: batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size = batch_size
        if num_layers not in DISTILROBERTA_BASELINES and rescale_with_baseline:
            raise ConfigError(f"bertscore: no distilroberta-base baseline for num_layers={num_layers} "
                              f"(available: 0-6); pass rescale_with_baseline=False")
        self.num_layers = int(num_layers)
        self.idf = bool(idf)
        self.idf_sents = None if idf_sents is None else [preprocess(t) for t in idf_sents]
        if self.idf_sents is not None and not self.idf:
            raise ConfigError("bertscore: idf_sents given but idf=False; pass idf=True to use them")
        self.rescale_with_baseline = bool(rescale_with_baseline)
        self.cache_refs = bool(cache_refs)
        self._model = None
        self._tokenizer = None
        self._max_length: int | None = None
        self._config: dict[str, Any] | None = None

    # ---------------------------------------------------------------- configuration
    def _weights_identity(self) -> str:
        path = self.model_path
        if path.parent.name == "snapshots" and self.model_id:  # a Hub snapshot: repo id + commit
            return f"hub:{self.model_id}@{path.name}"
        for name in ("model.safetensors", "pytorch_model.bin"):
            if (path / name).is_file():
                return f"sha256:{file_sha256(path / name)}"
        raise ModelNotAvailableError(f"bertscore: no model.safetensors or pytorch_model.bin in {path}")

    def config(self) -> dict[str, Any]:
        if self._config is None:
            files = {n: _digest(self.model_path / n)[:16] for n in ("config.json", "vocab.json", "merges.txt")
                     if (self.model_path / n).is_file()}
            baseline = DISTILROBERTA_BASELINES.get(self.num_layers) if self.rescale_with_baseline else None
            self._config = {
                "model": self.model_id or "local",
                "weights": self._weights_identity(),
                # sha256 of the weight files loaded (a Hub blob's name, else hashed once): the official-weights check
                "weight_digests": {"bertscore": weight_digests("bertscore", self.model_path)},
                "files": files,
                "num_layers": self.num_layers,
                "baseline": ({"source": "bert_score 0.3.13 rescale_baseline/en/distilroberta-base.tsv",
                              "layer": self.num_layers, "P": baseline[0], "R": baseline[1], "F": baseline[2]}
                             if baseline else None),
                "idf": self.idf,
                "idf_source": (None if not self.idf else "references of each call" if self.idf_sents is None
                               else f"idf_sents:{fingerprint_of({'s': self.idf_sents})}"),
                "tokenisation": "re.sub(' +',' ') + strip; tokenizer with specials, byte-level BPE "
                                "add_prefix_space=True; truncate to model max length incl. specials",
                "value": "rescaled F1" if baseline else "F1",
                "batching": policy(self.device, self.batch_size),
                "determinism": determinism(self.device),
            }
        return self._config

    # ---------------------------------------------------------------- model
    def _load(self):
        if self._model is not None:
            return self._model, self._tokenizer
        self._announce_load(self.model_path)
        tokenizer, model = load_encoder(self.spec.name, self.model_path)
        _force_prefix_space(tokenizer)
        layers = _encoder_layers(model)
        if not 0 <= self.num_layers <= len(layers):
            raise ConfigError(f"bertscore: num_layers={self.num_layers} but {self.model_path} has {len(layers)} layers")
        del layers[self.num_layers:]  # bert-score drops the unused top layers; output = last kept layer
        model.config.num_hidden_layers = self.num_layers
        self._max_length = _max_length(tokenizer, model.config)
        prepare_device(self.device)
        pin_attention(model)
        self._model, self._tokenizer = model.eval().to(self.device), tokenizer
        return self._model, self._tokenizer

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """bert-score ``sent_encode`` of preprocessed texts."""
        _, tokenizer = self._load()
        texts = [preprocess(t) for t in texts]
        empty = [tokenizer.cls_token_id, tokenizer.sep_token_id]  # build_inputs_with_special_tokens([])
        nonempty = [i for i, t in enumerate(texts) if t]
        out = [list(empty) for _ in texts]
        if nonempty:
            ids = tokenizer([texts[i] for i in nonempty], add_special_tokens=True, truncation=True,
                            max_length=self._max_length)["input_ids"]
            for i, row in zip(nonempty, ids):
                out[i] = list(row)
        return out

    def _embed(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text: (token ids int32, L2-normalised token vectors float32), in fixed-shape passes
        (rexrank.metrics.batching: a text's vectors never depend on which texts a call embeds)."""
        model, tokenizer = self._load()
        ids = self.encode(texts)

        def forward(input_ids, mask):
            hidden = model(input_ids=input_ids, attention_mask=mask)[0].float()
            return hidden / hidden.norm(dim=-1, keepdim=True)

        shape = batch_shape(self.device, self.batch_size, self._max_length)
        rows = run_fixed_shape(ids, shape, tokenizer.pad_token_id, self.device, forward, progress=self._report_progress)
        return [(np.asarray(ids[i], dtype=np.int32), rows[i][:len(ids[i])].copy()) for i in range(len(ids))]

    # ---------------------------------------------------------------- scoring
    def _embed_pass(self, texts: list[str], before: int, total: int):
        """``_embed(texts)``, its progress reported as ``before`` + its own count of ``total`` texts."""
        outer = self.progress_hook
        if outer is None:
            return self._embed(texts)
        self.progress_hook = lambda done, _: outer(before + done, total)
        try:
            return self._embed(texts)
        finally:
            self.progress_hook = outer

    def _scores(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        """(n, 3) rescaled (or raw) P, R, F."""
        import torch

        _, tokenizer = self._load()
        # Progress counts the texts this call embeds as one count: the references missing from the cache, then
        # the rest (each _embed pass reports its own count; _embed_pass shifts it into the whole).
        ref_set = set(refs) if self.cache_refs else set()
        n_rest = len(dict.fromkeys(t for t in hyps if t not in ref_set))
        n_refs = 0

        def embed_refs(texts: list[str]):
            nonlocal n_refs
            n_refs = len(texts)
            return self._embed_pass(texts, 0, n_refs + n_rest)

        ref_out = self.per_text("tokens", refs, embed_refs) if self.cache_refs else None
        # Every text not already embedded for the references is run once (hypotheses repeating a reference too).
        known = dict(zip(refs, ref_out)) if ref_out is not None else {}
        todo = list(dict.fromkeys(t for t in (hyps if ref_out is not None else refs + hyps) if t not in known))
        known.update(zip(todo, self._embed_pass(todo, n_refs, n_refs + len(todo))) if todo else ())
        ref_out = [known[t] for t in refs]
        hyp_out = [known[t] for t in hyps]

        specials = {tokenizer.cls_token_id, tokenizer.sep_token_id}
        if self.idf:
            # bert-score get_idf_dict over idf_sents (ReXrank: the references, duplicates counted)
            idf_ids = [known[t][0] for t in refs] if self.idf_sents is None else self.encode(self.idf_sents)
            table, unseen = idf_weights([list(x) for x in idf_ids])

            def weights(ids):
                return torch.tensor([table.get(int(t), unseen) for t in ids], dtype=torch.float32)
        else:
            def weights(ids):
                return torch.tensor([0.0 if int(t) in specials else 1.0 for t in ids], dtype=torch.float32)

        out = np.zeros((len(hyps), 3), dtype=np.float64)
        for k, ((h_ids, h_emb), (r_ids, r_emb)) in enumerate(zip(hyp_out, ref_out)):
            h_w, r_w = weights(h_ids), weights(r_ids)
            if len(h_ids) == 2 or len(r_ids) == 2:  # bert-score: mask sum == 2 means an empty sentence
                continue
            out[k] = greedy_f1(torch.from_numpy(h_emb), h_w, torch.from_numpy(r_emb), r_w)
        if self.rescale_with_baseline:
            out = rescale(out, np.asarray(DISTILROBERTA_BASELINES[self.num_layers], dtype=np.float64))
        return out

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        return self._scores(hyps, refs)[:, 2]

    def _score_details(self, hyps, refs):
        """Per pair: ``bertscore`` (F1) plus precision and recall, rescaled like F1."""
        import pandas as pd

        from rexrank.metrics.base import check_pairs

        hyps, refs = check_pairs(hyps, refs)
        values = self._scores(hyps, refs) if hyps else np.zeros((0, 3))
        return pd.DataFrame({"bertscore": values[:, 2], PRECISION_COLUMN: values[:, 0], RECALL_COLUMN: values[:, 1]})


def _force_prefix_space(tokenizer) -> None:
    """bert-score encodes RoBERTa/GPT-2 text with add_prefix_space=True; set it on the backend pre-tokenizer, where
    transformers 5 honours it (an encode() keyword is silently ignored there)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return
    from tokenizers import pre_tokenizers

    if isinstance(backend.pre_tokenizer, pre_tokenizers.ByteLevel):
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
        probe = tokenizer.tokenize("a")
        if not probe or not probe[0].startswith("\u0120"):
            raise ModelNotAvailableError("bertscore: could not make the tokenizer add the prefix space bert-score uses")


def _encoder_layers(model):
    """The layer list bert-score truncates (bert/roberta: model.encoder.layer)."""
    encoder = getattr(model, "encoder", None)
    layers = getattr(encoder, "layer", None)
    if layers is None:
        raise ConfigError(f"bertscore: unsupported encoder {type(model).__name__} (expected a BERT/RoBERTa-like model)")
    return layers


def _max_length(tokenizer, config) -> int:
    """bert-score truncates to tokenizer.model_max_length; a folder without that setting falls back to the
    position-embedding limit (RoBERTa reserves pad_token_id + 1 positions)."""
    limit = tokenizer.model_max_length
    positions = getattr(config, "max_position_embeddings", None)
    if positions and getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        positions -= (config.pad_token_id or 0) + 1
    if not limit or limit > 100_000:
        if not positions:
            raise ConfigError("bertscore: the tokenizer has no model_max_length and the config no position limit")
        return int(positions)
    return int(min(limit, positions)) if positions else int(limit)


def load_encoder(metric: str, path) -> tuple:
    """(tokenizer, fp32 encoder) from a local folder, transformers' own warnings and bars silenced (the unused pooler
    or masked-LM head is expected), any failure one ``ModelNotAvailableError`` naming the metric and the folder."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        model = AutoModel.from_pretrained(str(path), dtype=torch.float32)
    except Exception as exc:  # noqa: BLE001 - one clear message instead of a transformers traceback
        raise ModelNotAvailableError(f"{metric}: cannot load the encoder from {path} "
                                     f"({type(exc).__name__}: {str(exc)[:200]})") from None
    finally:
        hf_logging.set_verbosity(previous)
        if bars:
            hf_logging.enable_progress_bar()
    return tokenizer, model
