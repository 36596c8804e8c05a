"""Hugging Face report generators: vision-encoder-decoder and image-text-to-text models.

* vision-encoder-decoder (config model_type "vision-encoder-decoder"): AutoImageProcessor + AutoTokenizer +
  VisionEncoderDecoderModel, one image per study, no prompt — the layout of the ReXrank baselines on the Hub.
* image-text-to-text (anything else): AutoProcessor + AutoModelForImageTextToText, a chat-template prompt with one
  image slot per image, left padding so every row of a batch ends where generation starts.
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.generate.adapters.base import Adapter
from rexrank.generate.studies import StudyInput

KINDS = ("auto", "vision-encoder-decoder", "image-text-to-text")
DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass
class GenerationSettings:
    max_new_tokens: int = 256
    num_beams: int = 1
    do_sample: bool = False  # greedy by default: reports must be reproducible
    temperature: float | None = None
    top_p: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self) -> GenerationSettings:
        if self.max_new_tokens < 1:
            raise ConfigError(f"--max-new-tokens must be at least 1, got {self.max_new_tokens}")
        if self.num_beams < 1:
            raise ConfigError(f"--num-beams must be at least 1, got {self.num_beams}")
        if not self.do_sample and (self.temperature is not None or self.top_p is not None):
            raise ConfigError("--temperature/--top-p only apply with --do-sample (generation is greedy by default)")
        # The ranges transformers' logits processors accept (it raises inside generate, after the model loaded).
        if self.temperature is not None and not (self.temperature > 0 and math.isfinite(self.temperature)):
            raise ConfigError(f"--temperature must be a positive number, got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ConfigError(f"--top-p must be in (0, 1], got {self.top_p}")
        return self

    def kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "num_beams": self.num_beams,
                                  "do_sample": self.do_sample}
        if self.do_sample:
            kwargs.update({k: v for k, v in (("temperature", self.temperature), ("top_p", self.top_p))
                           if v is not None})
        return kwargs | self.extra


def detect_kind(model: str, trust_remote_code: bool = False) -> str:
    """'vision-encoder-decoder' or 'image-text-to-text' from the model's config.json."""
    config = _load_config(model, trust_remote_code)
    return "vision-encoder-decoder" if config.model_type == "vision-encoder-decoder" else "image-text-to-text"


def _load_config(model: str, trust_remote_code: bool):
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(model, trust_remote_code=trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - every loading failure becomes one actionable message
        raise _not_available(model, exc) from None


def _not_available(model: str, exc: Exception) -> Exception:
    text = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    if "trust_remote_code" in str(exc):
        return ConfigError(f"{model} contains custom code: rerun with --trust-remote-code if you trust it. ({text})")
    where = "local directory" if Path(model).expanduser().exists() else "Hub model (is it cached, or is the id right?)"
    return ModelNotAvailableError(f"cannot load the model {model!r} as a {where}: {text}")


def _torch_dtype(dtype: str):
    import torch

    if dtype not in DTYPES:
        raise ConfigError(f"Unknown --dtype {dtype!r}. Available: {', '.join(DTYPES)}")
    return "auto" if dtype == "auto" else getattr(torch, dtype)


class HFAdapter(Adapter):
    """Shared loading and generation of both Hugging Face kinds."""

    kind = ""

    def __init__(self, model: str, *, settings: GenerationSettings | None = None, dtype: str = "auto",
                 trust_remote_code: bool = False, chat_template: bool = True):
        self.model_id = os.fspath(model)
        self.settings = (settings or GenerationSettings()).check()
        self.dtype = dtype
        _torch_dtype(dtype)  # validate before loading anything
        self.trust_remote_code = trust_remote_code
        self.chat_template = chat_template
        self.name = self.model_id
        self.model = None
        self.device = "cpu"

    def config(self) -> dict[str, Any]:
        return {"adapter": self.kind, "model": _model_fingerprint(self.model_id), "dtype": self.dtype,
                "generation": self.settings.kwargs(), "chat_template": self.chat_template}

    def _load_model(self, cls, device: str):
        try:
            model = cls.from_pretrained(self.model_id, dtype=_torch_dtype(self.dtype),
                                        trust_remote_code=self.trust_remote_code)
        except Exception as exc:  # noqa: BLE001
            raise _not_available(self.model_id, exc) from None
        self.device = device
        return model.to(device).eval()

    def _to_device(self, encoded) -> dict[str, Any]:
        import torch

        dtype = self.model.dtype
        moved = {}
        for key, value in encoded.items():
            if isinstance(value, torch.Tensor):
                value = value.to(self.device)
                if value.is_floating_point():  # pixel values follow the model's dtype (bf16/fp16 runs)
                    value = value.to(dtype)
            moved[key] = value
        return moved


class VisionEncoderDecoderAdapter(HFAdapter):
    kind = "vision-encoder-decoder"
    multi_image = False
    uses_prompt = False

    def load(self, device: str) -> None:
        from transformers import AutoImageProcessor, AutoTokenizer, VisionEncoderDecoderModel

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_id, trust_remote_code=self.trust_remote_code)
            self.image_processor = AutoImageProcessor.from_pretrained(self.model_id,
                                                                      trust_remote_code=self.trust_remote_code)
        except Exception as exc:  # noqa: BLE001
            raise _not_available(self.model_id, exc) from None
        self.model = self._load_model(VisionEncoderDecoderModel, device)

    def prepare(self, batch: list[StudyInput]):
        images = [_open_rgb(study.images[0]) for study in batch]
        return self.image_processor(images=images, return_tensors="pt")

    def generate(self, prepared) -> list[str]:
        import torch

        inputs = self._to_device(prepared)
        with torch.inference_mode():
            output = self.model.generate(pixel_values=inputs["pixel_values"], **self.settings.kwargs())
        return self.tokenizer.batch_decode(output, skip_special_tokens=True)


class ImageTextToTextAdapter(HFAdapter):
    kind = "image-text-to-text"
    multi_image = True
    uses_prompt = True

    def load(self, device: str) -> None:
        from transformers import AutoModelForImageTextToText, AutoProcessor

        try:
            self.processor = AutoProcessor.from_pretrained(self.model_id, trust_remote_code=self.trust_remote_code)
        except Exception as exc:  # noqa: BLE001
            raise _not_available(self.model_id, exc) from None
        tokenizer = getattr(self.processor, "tokenizer", None)
        if tokenizer is None:
            raise ConfigError(f"{self.model_id}: its processor has no tokenizer; is it an image-text-to-text model?")
        # Decoder-only batches must be left padded: generation continues from the last position of every row.
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if self.chat_template and not getattr(self.processor, "chat_template", None):
            raise ConfigError(f"{self.model_id} has no chat template: pass --no-chat-template (the prompt is "
                              "then sent as plain text after one image token per image)")
        # prepare() encodes on the runner's prefetch thread while generate() decodes on the main one. A fast
        # tokenizer reconfigures its Rust backend on each encode call, and sharing one between threads can raise
        # "Already borrowed": decoding uses its own copy instead of a lock that would serialise the two threads.
        self.decoder = copy.deepcopy(tokenizer)
        self.model = self._load_model(AutoModelForImageTextToText, device)
        self.image_token = getattr(self.processor, "image_token", None) or "<image>"

    def _text(self, study: StudyInput) -> str:
        if not self.chat_template:
            return self.image_token * len(study.images) + study.prompt
        content = [{"type": "image"} for _ in study.images] + [{"type": "text", "text": study.prompt}]
        messages = [{"role": "user", "content": content}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def prepare(self, batch: list[StudyInput]):
        texts = [self._text(study) for study in batch]
        images = [[_open_rgb(path) for path in study.images] for study in batch]
        return self.processor(text=texts, images=images, padding=True, return_tensors="pt")

    def generate(self, prepared) -> list[str]:
        import torch

        inputs = self._to_device(prepared)
        with torch.inference_mode():
            output = self.model.generate(**inputs, **self.settings.kwargs())
        # Left padding: every prompt ends at the same column, the answer is what follows it.
        answers = output[:, inputs["input_ids"].shape[1]:]
        return self.decoder.batch_decode(answers, skip_special_tokens=True)


def _open_rgb(path: str):
    from PIL import Image

    with Image.open(path) as image:
        return image.convert("RGB")


def _model_fingerprint(model: str) -> dict[str, Any]:
    """Hub id, or a local directory with the names and sizes of its weight files (sizes, not hashes: hashing
    billions of parameters per run costs minutes; mtimes change when a model folder is copied)."""
    path = Path(model).expanduser()
    if not path.exists():
        return {"id": model}
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".safetensors", ".bin", ".pt", ".pth"))
    return {"path": str(path.resolve()),
            "weights": [[str(p.relative_to(path)), p.stat().st_size] for p in files]}


def make_hf_adapter(model: str, kind: str = "auto", **options) -> HFAdapter:
    if kind not in KINDS:
        raise ConfigError(f"Unknown --model-type {kind!r}. Available: {', '.join(KINDS)}")
    if kind == "auto":
        kind = detect_kind(model, options.get("trust_remote_code", False))
    cls = VisionEncoderDecoderAdapter if kind == "vision-encoder-decoder" else ImageTextToTextAdapter
    return cls(model, **options)
