"""The CheXbert model: loading ``chexbert.pth``, the official text rules, [CLS] embeddings and the 14 labels.

Facts reproduced from rajpurkarlab/CXR-Report-Metric @9c9ecad, CXRMetric/CheXbert/src:
- models/bert_labeler.py: ``self.bert`` (BertModel, bert-base-uncased) + ``self.linear_heads`` = 13 x Linear(h, 4)
  and one Linear(h, 2); heads read the last layer's [CLS] vector (dropout is inactive in eval).
- encode.py / label.py: the checkpoint's state dict sits under ``"model_state_dict"`` with ``module.`` prefixes
  (saved from nn.DataParallel).
- bert_tokenizer.py: report text is stripped, "\\n" -> " ", runs of whitespace -> " ", stripped; tokenized with the
  bert-base-uncased tokenizer; ids longer than 512 become ids[:511] + [SEP]; an empty report is [CLS] [SEP].
- constants.py: CONDITIONS (the 14 label names, in head order) and CLASS_MAPPING 0 Blank, 1 Positive,
  2 Negative, 3 Uncertain; label.py save_preds writes CheXpert codes: blank NaN, positive 1, negative 0,
  uncertain -1 (No Finding's head has only blank/positive).
"""

from __future__ import annotations

import logging
import pickle
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rexrank.errors import ModelNotAvailableError
from rexrank.metrics.batching import batch_shape, run_fixed_shape

CONDITIONS = (
    "Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity", "Lung Lesion", "Edema", "Consolidation",
    "Pneumonia", "Atelectasis", "Pneumothorax", "Pleural Effusion", "Pleural Other", "Fracture",
    "Support Devices", "No Finding",
)
HEAD_CLASSES = (4,) * 13 + (2,)
CLASS_NAMES = ("Blank", "Positive", "Negative", "Uncertain")
# label.py save_preds: class index -> CheXpert code (NaN = blank/not mentioned).
CLASS_TO_CODE = {0: np.nan, 1: 1.0, 2: 0.0, 3: -1.0}
MAX_TOKENS = 512

_WHITESPACE = re.compile(r"\s+")


def clean_report(text: str) -> str:
    """bert_tokenizer.get_impressions_from_csv: strip, newline -> space, collapse whitespace, strip."""
    return _WHITESPACE.sub(" ", text.strip().replace("\n", " ")).strip()


def encode_reports(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """Token ids per the official rules. Truncating to 512 with specials keeps [CLS] + 510 tokens + [SEP], which is
    exactly the official ids[:511] + [SEP]; an empty text encodes as [CLS] [SEP] as upstream."""
    cleaned = [clean_report(t) for t in texts]
    ids = tokenizer(cleaned, add_special_tokens=True, truncation=True, max_length=MAX_TOKENS)["input_ids"]
    return [list(x) for x in ids]


def _load_state_dict(checkpoint: Path, trusted: bool) -> dict:
    import torch

    try:
        try:
            blob = torch.load(checkpoint, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError:
            if not trusted:
                raise ModelNotAvailableError(
                    f"semb: {checkpoint} is not a tensors-only checkpoint (corrupt, or it pickles other objects, "
                    "which only the official Hub chexbert.pth may do). Re-save it as "
                    "torch.save({'model_state_dict': state_dict}, path).") from None
            blob = torch.load(checkpoint, map_location="cpu", weights_only=False)  # the official Hub file
    except ModelNotAvailableError:
        raise
    except Exception as exc:  # noqa: BLE001 - a corrupt/truncated file is a user-facing problem
        raise ModelNotAvailableError(f"semb: cannot read the CheXbert checkpoint {checkpoint}: "
                                     f"{type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(blob, dict) or "model_state_dict" not in blob:
        keys = list(blob)[:5] if isinstance(blob, dict) else type(blob).__name__
        raise ModelNotAvailableError(f"semb: {checkpoint} is not a CheXbert checkpoint (expected a dict with "
                                     f"'model_state_dict', found {keys})")
    state = blob["model_state_dict"]
    return {(k[len("module."):] if k.startswith("module.") else k): v for k, v in state.items()}


def build_model(checkpoint: Path, backbone: Path, trusted: bool = False):
    """CheXbert as an nn.Module with ``bert`` and ``linear_heads``, weights from ``checkpoint``, eval mode."""
    import torch
    from transformers import BertConfig, BertModel

    try:
        config = BertConfig.from_pretrained(str(backbone))
    except Exception as exc:  # noqa: BLE001
        raise ModelNotAvailableError(f"semb: cannot read the BERT config in {backbone} "
                                     f"({type(exc).__name__}); pass backbone= a bert-base-uncased folder") from None

    class CheXbert(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = BertModel(config, add_pooling_layer=True)
            self.linear_heads = torch.nn.ModuleList(torch.nn.Linear(config.hidden_size, n) for n in HEAD_CLASSES)

    model = CheXbert()
    state = _load_state_dict(checkpoint, trusted)
    # Older transformers saved the position_ids buffer in the state dict; it is a constant, not a weight.
    state.pop("bert.embeddings.position_ids", None)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ModelNotAvailableError(
            f"semb: {checkpoint} does not match a CheXbert model on the backbone config {backbone}: "
            f"missing {sorted(missing)[:4]}{'...' if len(missing) > 4 else ''}, "
            f"unexpected {sorted(unexpected)[:4]}{'...' if len(unexpected) > 4 else ''}")
    # The checkpoint holds BERT's pooler, but CheXbert reads the last layer's [CLS]: dropping it after the load
    # saves its ~10 operator dispatches per pass (issue 52 counts them) and changes no value.
    model.bert.pooler = None
    return model.eval()


def load_tokenizer(backbone: Path):
    from transformers import AutoTokenizer

    logging.getLogger("transformers.tokenization_utils_base").setLevel(logging.ERROR)
    try:
        return AutoTokenizer.from_pretrained(str(backbone))
    except Exception as exc:  # noqa: BLE001
        raise ModelNotAvailableError(f"semb: cannot load the bert-base-uncased tokenizer from {backbone} "
                                     f"({type(exc).__name__}: {str(exc)[:160]})") from None


@dataclass(frozen=True)
class TextOutputs:
    """What CheXbert gives for one report: the [CLS] embedding and the argmax class of each of the 14 heads."""

    embedding: np.ndarray  # float32, (hidden,)
    classes: np.ndarray  # int8, (14,), indices into CLASS_NAMES


def _head_runs() -> list[tuple[int, int]]:
    """HEAD_CLASSES as runs of (classes per head, heads): (4, 13), (2, 1)."""
    runs: list[tuple[int, int]] = []
    for width in HEAD_CLASSES:
        if runs and runs[-1][0] == width:
            runs[-1] = (width, runs[-1][1] + 1)
        else:
            runs.append((width, 1))
    return runs


def run(model, tokenizer, texts: Sequence[str], batch_size: int | None = None, device: str = "cpu",
        progress: Callable[[int, int], None] | None = None) -> list[TextOutputs]:
    """Embed and label ``texts`` in fixed-shape passes of ``batch_size`` rows (None: the device's;
    rexrank.metrics.batching: a text's outputs never depend on which texts a call runs); one pass gives both.

    ``progress(done, total)``: called after each queued pass with the texts so far (display only)."""
    import torch

    ids = encode_reports(tokenizer, texts)

    def forward(input_ids, mask):
        cls = model.bert(input_ids, attention_mask=mask)[0][:, 0, :]
        logits = torch.cat([head(cls) for head in model.linear_heads], dim=1)
        # One argmax per run of equal-width heads on views of the same logits, not one per head (fewer dispatches;
        # the same values and the same first-maximum ties as head(cls).argmax).
        classes, begin = [], 0
        for width, count in _head_runs():
            part = logits[:, begin:begin + width * count].reshape(len(cls), count, width)
            classes.append(part.argmax(dim=2))
            begin += width * count
        return cls.float(), torch.cat(classes, dim=1)

    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    widest = min(MAX_TOKENS, model.bert.config.max_position_embeddings)
    rows = run_fixed_shape(ids, batch_shape(device, batch_size, widest), pad_id, device, forward, progress=progress)
    return [TextOutputs(cls.copy(), classes.astype(np.int8)) for cls, classes in rows]


def classes_to_frame(classes: np.ndarray, codes: bool = True):
    """(n, 14) class indices -> DataFrame with the 14 CONDITIONS as columns.

    codes=True: CheXpert codes as the official labeller writes them (1 positive, 0 negative, -1 uncertain, NaN
    blank). codes=False: the raw head classes 0..3 (Blank, Positive, Negative, Uncertain)."""
    import pandas as pd

    classes = np.asarray(classes).reshape(-1, len(CONDITIONS))
    if not codes:
        return pd.DataFrame(classes.astype(np.int64), columns=list(CONDITIONS))
    lookup = np.array([CLASS_TO_CODE[i] for i in range(4)], dtype=np.float64)
    return pd.DataFrame(lookup[classes.astype(np.int64)], columns=list(CONDITIONS))
