"""Model adapters, chosen from `--model`:

* `path/to/inference.py` (an existing .py file): the upstream submission contract, run as a subprocess;
* `package.module:function` or `file.py:function`: a Python entry point called with batches of studies;
* anything else: a Hugging Face model (local directory or Hub id), vision-encoder-decoder or image-text-to-text.

Any of them can run in a bubblewrap sandbox (`sandbox.py`, `load_adapter(..., sandbox=True)`): the child process
builds the adapter with this same `load_adapter`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rexrank.errors import ConfigError
from rexrank.generate.adapters.base import Adapter
from rexrank.generate.adapters.entrypoint import EntryPointAdapter, looks_like_entry_point
from rexrank.generate.adapters.hf import GenerationSettings, make_hf_adapter
from rexrank.generate.adapters.script import InferenceScriptAdapter

__all__ = ["Adapter", "GenerationSettings", "adapter_kind", "load_adapter"]

ADAPTER_KINDS = ("auto", "hf", "vision-encoder-decoder", "image-text-to-text", "entrypoint", "script")


def adapter_kind(model: str) -> str:
    """'script', 'entrypoint' or 'hf' for a --model value."""
    path = Path(model).expanduser()
    if model.endswith(".py") and path.is_file():
        return "script"
    if model.endswith(".py"):
        raise ConfigError(f"inference script {model} does not exist")
    if looks_like_entry_point(model) and not path.exists():
        return "entrypoint"
    return "hf"


def load_adapter(model: str, kind: str = "auto", *, model_args: dict[str, Any] | None = None,
                 settings: GenerationSettings | None = None, dtype: str = "auto", trust_remote_code: bool = False,
                 chat_template: bool = True, script_python: str | None = None, sandbox: bool = False,
                 hidden: tuple = ()) -> Adapter:
    """An adapter for --model; options that do not apply to the chosen kind are an error, not silently ignored.

    ``sandbox``: the adapter is built and run in a bubblewrap child (adapters/sandbox.py) by this same function;
    this process never imports the model's code. ``hidden``: host paths the sandbox must not mount.
    """
    if kind not in ADAPTER_KINDS:
        raise ConfigError(f"Unknown --model-type {kind!r}. Available: {', '.join(ADAPTER_KINDS)}")
    if sandbox:
        from dataclasses import asdict

        from rexrank.generate.adapters.sandbox import AdapterSpec, SandboxedAdapter

        return SandboxedAdapter(AdapterSpec(model, kind, dict(model_args or {}),
                                            None if settings is None else asdict(settings), dtype, trust_remote_code,
                                            chat_template, script_python), hidden=hidden)
    if kind == "auto":
        kind = adapter_kind(model)
    model_args = dict(model_args or {})
    if kind == "script":
        _reject(kind, model_args=model_args, trust_remote_code=trust_remote_code, settings=settings,
                dtype=dtype != "auto", chat_template=not chat_template)
        return InferenceScriptAdapter(model, python=script_python)
    if script_python:
        raise ConfigError("--script-python only applies to an inference.py model")
    if kind == "entrypoint":
        _reject(kind, trust_remote_code=trust_remote_code, settings=settings, dtype=dtype != "auto",
                chat_template=not chat_template)
        return EntryPointAdapter(model, model_args)
    _reject("Hugging Face", model_args=model_args)
    hf_kind = "auto" if kind == "hf" else kind
    return make_hf_adapter(model, hf_kind, settings=settings, dtype=dtype, trust_remote_code=trust_remote_code,
                           chat_template=chat_template)


def _reject(kind: str, **given: Any) -> None:
    names = {"model_args": "--model-arg", "trust_remote_code": "--trust-remote-code", "dtype": "--dtype",
             "settings": "generation settings (--max-new-tokens, --num-beams, --do-sample, ...)",
             "chat_template": "--no-chat-template"}
    for key, value in given.items():
        if value:
            raise ConfigError(f"{names[key]} does not apply to {'an' if kind[0] in 'aeiou' else 'a'} {kind} model")
