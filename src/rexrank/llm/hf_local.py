"""Local transformers backend: load a causal LM and its tokenizer, generate greedily in left-padded batches.

Shared by GREEN (prompt token ids in, completion ids out) and FineRadScore's local judge (chat in, text out).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rexrank.errors import ConfigError, ModelNotAvailableError

DTYPES = ("auto", "float16", "bfloat16", "float32")  # what dtype= may be (metrics check it before loading)
# Weight/tokenizer files read whole into the fingerprint when small; big files contribute name, size, head, tail.
_SMALL = 16 << 20
_EDGE = 1 << 20


def model_fingerprint(path: str | Path) -> str:
    """A cheap, content-based fingerprint of a model directory or file (16 hex digits).

    Small files (configs, tokenizer) are hashed whole; each large weight file by its name, size and its first and
    last MiB, which differ between any two trained checkpoints. Hashing 13 GB of weights on every run would cost
    more than the cache saves.
    """
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    digest = hashlib.sha256()
    for file in files:
        rel = file.relative_to(path).as_posix() if path.is_dir() else file.name
        if rel.startswith(".") or "/." in rel:
            continue
        size = file.stat().st_size
        digest.update(f"{rel}\0{size}\0".encode())
        with open(file, "rb") as fh:
            if size <= _SMALL:
                digest.update(fh.read())
            else:
                digest.update(fh.read(_EDGE))
                fh.seek(size - _EDGE)
                digest.update(fh.read(_EDGE))
    return digest.hexdigest()[:16]


def pick_device(device: str | None):
    import torch

    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except RuntimeError as exc:
        raise ConfigError(f"invalid device {device!r}: {exc}") from None


def pick_dtype(dtype: str, device) -> Any:
    """"auto": float16 on GPU (what GREEN and most judges run in), float32 on CPU (fp16 CPU kernels are slow)."""
    import torch

    if dtype not in DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r}. Available: {', '.join(DTYPES)}")
    if dtype == "auto":
        return torch.float16 if device.type == "cuda" else torch.float32
    return getattr(torch, dtype)


def load_tokenizer(path: str | Path, *, padding_side: str = "left", metric: str = "llm", **kwargs):
    """AutoTokenizer from a local directory, with one clear error when the files are missing or unreadable."""
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(path), padding_side=padding_side, **kwargs)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelNotAvailableError(f"{metric}: cannot load the tokenizer from {path}: {str(exc).splitlines()[0]}") \
            from None
    if tok.eos_token_id is None:
        raise ModelNotAvailableError(f"{metric}: the tokenizer in {path} defines no EOS token")
    return tok


def load_causal_lm(path: str | Path, *, device: str | None = None, dtype: str = "auto", metric: str = "llm"):
    """AutoModelForCausalLM in eval mode on ``device`` with ``dtype``."""
    from transformers import AutoModelForCausalLM

    target = pick_device(device)
    torch_dtype = pick_dtype(dtype, target)
    try:
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch_dtype)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelNotAvailableError(f"{metric}: cannot load the model weights from {path}: "
                                     f"{str(exc).splitlines()[0]}") from None
    return model.to(target).eval()


def left_pad(batch: Sequence[Sequence[int]], pad_token_id: int):
    """(input_ids, attention_mask) tensors, sequences right-aligned as with padding_side="left"."""
    import torch

    width = max(len(ids) for ids in batch)
    input_ids = torch.full((len(batch), width), pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, ids in enumerate(batch):
        if ids:
            input_ids[row, width - len(ids):] = torch.tensor(list(ids), dtype=torch.long)
            mask[row, width - len(ids):] = 1
    return input_ids, mask


def cut_at_eos(ids: Sequence[int], eos_token_ids: set[int]) -> list[int]:
    """Completion ids up to and including the first EOS (what follows is padding)."""
    out = []
    for token in ids:
        out.append(int(token))
        if int(token) in eos_token_ids:
            break
    return out


class TransformersGenerator:
    """Greedy generation in input order, ``batch_size`` prompts at a time, left-padded.

    ``max_length`` (prompt + output, counted on the padded batch as transformers does) or ``max_new_tokens``.
    ``generate(prompts)`` takes token id lists and returns each prompt's completion ids (up to the first EOS).
    """

    def __init__(self, model, *, pad_token_id: int, eos_token_id: int | list[int], batch_size: int = 8,
                 max_length: int | None = None, max_new_tokens: int | None = None, **generate_kwargs: Any):
        if (max_length is None) == (max_new_tokens is None):
            raise ConfigError("give exactly one of max_length and max_new_tokens")
        self.model = model
        self.pad_token_id = pad_token_id
        self.eos_token_ids = {eos_token_id} if isinstance(eos_token_id, int) else set(eos_token_id)
        self.eos_token_id = eos_token_id
        self.batch_size = int(batch_size)
        self.limits = {"max_length": max_length} if max_length is not None else {"max_new_tokens": max_new_tokens}
        self.generate_kwargs = generate_kwargs

    def generate(self, prompts: Sequence[Sequence[int]]) -> list[list[int]]:
        import torch

        device = next(self.model.parameters()).device
        out: list[list[int]] = []
        for start in range(0, len(prompts), self.batch_size):
            batch = prompts[start:start + self.batch_size]
            input_ids, mask = left_pad(batch, self.pad_token_id)
            with torch.inference_mode():
                sequences = self.model.generate(
                    input_ids=input_ids.to(device), attention_mask=mask.to(device),
                    eos_token_id=self.eos_token_id, pad_token_id=self.pad_token_id,
                    do_sample=False, temperature=None, top_p=None, top_k=None,
                    **self.limits, **self.generate_kwargs)
            width = input_ids.shape[1]
            out.extend(cut_at_eos(row[width:].tolist(), self.eos_token_ids) for row in sequences)
        return out


class TransformersChat:
    """A local chat judge: conversations in, assistant texts out (greedy, batched). For FineRadScore.

    chat_template: overrides the tokenizer's (a model without one needs it).
    """

    def __init__(self, model: str | Path, *, device: str | None = None, dtype: str = "auto", batch_size: int = 4,
                 max_new_tokens: int = 1024, chat_template: str | None = None, metric: str = "llm"):
        self.tokenizer = load_tokenizer(model, padding_side="left", metric=metric)
        if chat_template is not None:
            self.tokenizer.chat_template = chat_template
        if not getattr(self.tokenizer, "chat_template", None):
            raise ConfigError(f"{metric}: the tokenizer in {model} has no chat template; pass chat_template=")
        self.model = load_causal_lm(model, device=device, dtype=dtype, metric=metric)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        self.generator = TransformersGenerator(self.model, pad_token_id=pad, eos_token_id=self.tokenizer.eos_token_id,
                                               batch_size=batch_size, max_new_tokens=max_new_tokens)
        self.name = f"transformers:{Path(str(model)).name}"

    def complete(self, conversations: Sequence[list[dict[str, str]]]) -> list[str | None]:
        prompts = []
        for messages in conversations:
            ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            prompts.append(list(ids))
        completions = self.generator.generate(prompts)
        return [self.tokenizer.decode(c, skip_special_tokens=True) for c in completions]

