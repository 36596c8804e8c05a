"""vLLM backend (optional extra ``rexrank[vllm]``): the same prompt token ids as the transformers path.

Prompts go in as ``{"prompt_token_ids": ids}`` so vLLM never re-tokenizes the text (its tokenizer settings could
differ from GREEN's add_eos_token=True). Greedy (temperature 0). The length cap is per prompt:
``max_tokens = max_length - len(prompt)``; transformers counts max_length on the left-padded batch, so for a prompt
shorter than its batch's longest, vLLM may write more tokens before the cap (only outputs that hit the cap differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rexrank.errors import ConfigError

_VLLM_DTYPES = {"auto": "float16", "float16": "float16", "bfloat16": "bfloat16", "float32": "float32"}


def _import_vllm():
    try:
        import vllm
    except ImportError:
        raise ConfigError("the vllm backend needs the optional extra: pip install 'rexrank[vllm]' "
                          "(a CUDA machine), or use backend='transformers'") from None
    return vllm


class VLLMGenerator:
    """``generate(prompt_ids) -> completion ids``. ``engine``/``sampling_params_cls`` can be injected (tests)."""

    def __init__(self, model: str | Path, *, dtype: str = "auto", max_length: int = 2048, engine: Any = None,
                 sampling_params_cls: Any = None, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.9,
                 max_new_tokens: int | None = None, sampling_options: dict[str, Any] | None = None,
                 **engine_kwargs: Any):
        if dtype not in _VLLM_DTYPES:
            raise ConfigError(f"unknown dtype {dtype!r} for vllm. Available: {', '.join(_VLLM_DTYPES)}")
        self.max_length = int(max_length)
        # CRIMSON caps the answer, not prompt + answer, and adds radeval's repetition penalty and stop tokens.
        self.max_new_tokens = None if max_new_tokens is None else int(max_new_tokens)
        self.sampling_options = dict(sampling_options or {})
        if engine is None or sampling_params_cls is None:
            vllm = _import_vllm()
            sampling_params_cls = sampling_params_cls or vllm.SamplingParams
            if engine is None:
                engine = vllm.LLM(model=str(model), dtype=_VLLM_DTYPES[dtype],
                                  tensor_parallel_size=tensor_parallel_size,
                                  gpu_memory_utilization=gpu_memory_utilization, max_model_len=self.max_length,
                                  **engine_kwargs)
        self.engine = engine
        self.sampling_params_cls = sampling_params_cls
        self.name = "vllm"

    def requests(self, prompts: Sequence[Sequence[int]]) -> tuple[list[dict[str, list[int]]], list[Any]]:
        """The engine inputs: token-id prompts and one greedy SamplingParams per prompt."""
        inputs = [{"prompt_token_ids": [int(t) for t in ids]} for ids in prompts]
        params = [self.sampling_params_cls(
            temperature=0.0, max_tokens=self.max_new_tokens or max(1, self.max_length - len(ids)),
            skip_special_tokens=True, **self.sampling_options) for ids in prompts]
        return inputs, params

    def generate(self, prompts: Sequence[Sequence[int]]) -> list[list[int]]:
        if not prompts:
            return []
        inputs, params = self.requests(prompts)
        outputs = self.engine.generate(inputs, params, use_tqdm=False)
        if len(outputs) != len(prompts):
            raise RuntimeError(f"vllm returned {len(outputs)} outputs for {len(prompts)} prompts")
        return [list(out.outputs[0].token_ids) for out in outputs]
