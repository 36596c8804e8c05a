"""CRIMSON (Baharoon et al., arXiv 2603.06183): an LLM judge lists the findings of a reference and a candidate report,
matches them, and names false, missing and attribute errors; the score weights them by clinical significance.

Built as radeval 2.2.1 runs it (``radeval/metrics/crimson/``; the prompt, parser and formula are in
``crimson_prompt``). The judges:
- ``backend="transformers"`` (default): the fine-tuned ``rajpurkarlab/medgemma-4b-it-crimson`` (or any local chat
  model) through rexrank's local backend (``rexrank.llm.hf_local``), in bfloat16 as radeval loads it; the chat is
  the system message and the prompt through the model's own chat template; decoding as radeval's pipeline call: the
  model's generation_config.json when it has one, else at most 8192 new tokens; always greedy; repetition penalty 1.1;
- ``backend="vllm"``: the same prompt token ids and decoding through vLLM (``rexrank.llm.vllm_backend``);
- ``backend="openai"``: any OpenAI-compatible chat endpoint (``rexrank.llm.openai_http``; a vLLM server serving the
  judge, or an API model), with radeval's request: temperature 0, seed 42, a JSON-object response format.

Guidelines: radeval leaves the significance examples and attribute guidelines out of the prompt for its default
judge (trained without them) and puts them in for any other model. ``guidelines=None`` decides the same way, by the
judge's name: the default judge (however it is given: Hub id, or a local folder named ``medgemma-4b-it-crimson``)
gets none, any other model gets them; pass True/False to choose.

Retries: radeval asks up to 3 times while an answer cannot be parsed. A greedy local judge gives the same answer
every time, so rexrank asks a local judge once (same result); an HTTP judge is asked again up to ``max_retries``
times (radeval: 2). An answer that still cannot be parsed scores NaN, is counted in ``n_parse_failures`` and the
``crimson_parse_error`` column, and is logged once per call, as GREEN's are. Answers are cached per (judge
fingerprint, reference, candidate); a request that failed is not cached.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics import REGISTRY
from rexrank.metrics.base import text_keys
from rexrank.metrics.crimson_prompt import (
    COUNT_KEYS, PARSER_VERSION, TERM_KEYS, WEIGHTED_KEYS, build_prompt, chat_messages, evaluate_output,
)
from rexrank.metrics.green import JudgedMetric

log = logging.getLogger(__name__)

DEFAULT_MODEL = "rajpurkarlab/medgemma-4b-it-crimson"  # radeval 2.2.1 CRIMSONScore.DEFAULT_HF_MODEL
DEFAULT_MAX_NEW_TOKENS = 8192  # CRIMSONScore.DEFAULT_MAX_NEW_TOKENS, used when the model has no generation config
REPETITION_PENALTY = 1.1  # both branches of CRIMSONScore._hf_generate
HTTP_REQUEST = {"seed": 42, "response_format": {"type": "json_object"}}  # with temperature 0 (_build_request)
MAX_RETRIES = 2  # CRIMSONScore._evaluate_one(max_retries=2): three attempts
BATCH_SIZE = 8
VLLM_CONTEXT = 16384  # vLLM's max_model_len: a prompt (about 3,000 tokens with guidelines) plus 8,192 new tokens
BACKENDS = ("transformers", "vllm", "openai")


def is_default_judge(model: str | None) -> bool:
    """Whether ``model`` names radeval's default judge (its Hub id, or a folder with the repository's name)."""
    if model is None:
        return True
    return str(model).rstrip("/").split("/")[-1] == DEFAULT_MODEL.split("/")[-1]


def generation_settings(model_dir: str | Path) -> dict[str, Any]:
    """How radeval's pipeline call decodes for the judge in ``model_dir``.

    With a generation_config.json of the model's own (one not derived from config.json, whose file says
    ``"_from_model_config": true``), the pipeline generates with it: its ``max_new_tokens``, else its
    ``max_length`` (prompt + output; transformers' default 20 when absent), and its stop tokens. Otherwise at most
    8192 new tokens. rexrank always decodes greedily; ``sampling`` records whether the file asks to sample
    (radeval would then sample, rexrank does not).
    """
    path = Path(model_dir) / "generation_config.json"
    try:
        own = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        if not isinstance(own, dict) or own.get("_from_model_config"):
            return {"limit": {"max_new_tokens": DEFAULT_MAX_NEW_TOKENS}, "eos": None, "sampling": False}
        if own.get("max_new_tokens") is not None:
            limit = {"max_new_tokens": _positive_int(own["max_new_tokens"])}
        else:
            limit = {"max_length": _positive_int(own.get("max_length", 20))}
        eos = own.get("eos_token_id")
        if eos is not None:
            eos = [_positive_int(e, zero=True) for e in (eos if isinstance(eos, list) else [eos])]
    except (OSError, ValueError, TypeError) as exc:
        raise ModelNotAvailableError(f"crimson: cannot read {path} ({type(exc).__name__}: "
                                     f"{str(exc).splitlines()[0] if str(exc) else ''}); fix or remove the file") from None
    return {"limit": limit, "eos": eos, "sampling": bool(own.get("do_sample", False))}


def _positive_int(value: Any, zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        raise ValueError(f"{value!r} is not a {'non-negative' if zero else 'positive'} integer")
    return value


def detail_columns() -> list[str]:
    """The columns ``Crimson.score_details`` returns after the score column."""
    return ([f"crimson_{k}" for k in COUNT_KEYS] + [f"crimson_weighted_{k}" for k in WEIGHTED_KEYS]
            + [f"crimson_{k.lower()}" for k in TERM_KEYS] + ["crimson_parse_error", "crimson_analysis"])


def details_frame(parsed: Sequence[dict[str, Any]], analyses: Sequence[str | None], score_column: str = "crimson"):
    import pandas as pd

    columns: dict[str, Any] = {score_column: np.array([p["score"] for p in parsed], dtype=np.float64)}
    for key in COUNT_KEYS:
        columns[f"crimson_{key}"] = pd.array([p["error_counts"][key] if p["error_counts"] else None for p in parsed],
                                             dtype="Int64")
    for group, keys, prefix in (("weighted_error_counts", WEIGHTED_KEYS, "crimson_weighted_"),
                                ("terms", TERM_KEYS, "crimson_")):
        for key in keys:
            columns[prefix + key.lower()] = np.array([float(p[group][key]) if p[group] else math.nan for p in parsed],
                                                     dtype=np.float64)
    columns["crimson_parse_error"] = pd.array([p["parse_error"] for p in parsed], dtype="string")
    columns["crimson_analysis"] = pd.array(list(analyses), dtype="string")
    return pd.DataFrame(columns)


def summarize(scores: Sequence[float]) -> dict[str, Any]:
    """radeval's outputs of per-pair scores (NaN: unparsable): ``crimson``, the mean of the others, and
    ``crimson_std``, their population std (0.0, as radeval returns them, when fewer than one / two), with counts."""
    values = np.asarray(scores, dtype=np.float64)
    valid = values[~np.isnan(values)]
    return {"crimson": float(valid.mean()) if valid.size else 0.0,
            "crimson_std": float(valid.std()) if valid.size > 1 else 0.0,
            "n": int(values.size), "n_scored": int(valid.size), "n_parse_failures": int(values.size - valid.size)}


class Crimson(JudgedMetric):
    """CRIMSON per (candidate, reference) pair, with error counts and the formula's terms in ``score_details``.

    model: Hub id or local folder of the judge (default ``rajpurkarlab/medgemma-4b-it-crimson``; for
    backend="openai" the model name at the endpoint). backend: "transformers", "vllm" or "openai" (base_url,
    api_key_env, timeout, max_concurrency, ... go to ``OpenAIChatClient``; vLLM engine options to ``vllm.LLM``).
    generator: an object with ``generate(prompt_ids) -> completion_ids`` replacing the local model; client: an
    object with ``complete(conversations) -> texts`` replacing the HTTP client (tests, custom servers).
    max_new_tokens: an unofficial cap on the answer length (recorded in the fingerprint).
    """

    spec = REGISTRY.spec("crimson")
    parse_analysis = staticmethod(evaluate_output)

    def __init__(self, model: str | Path | None = None, backend: str = "transformers", *, device: str | None = None,
                 batch_size: int | None = None, dtype: str = "bfloat16", guidelines: bool | None = None,
                 max_new_tokens: int | None = None, max_retries: int = MAX_RETRIES, base_url: str | None = None,
                 api_key_env: str | None = "OPENAI_API_KEY", generator: Any = None, client: Any = None,
                 **backend_options: Any):
        if backend not in BACKENDS:
            raise ConfigError(f"crimson: unknown backend {backend!r}. Available: {', '.join(BACKENDS)}")
        from rexrank.llm.hf_local import DTYPES

        if dtype not in DTYPES:
            raise ConfigError(f"crimson: unknown dtype {dtype!r}. Available: {', '.join(DTYPES)}")
        if max_new_tokens is not None and int(max_new_tokens) < 1:
            raise ConfigError(f"crimson: max_new_tokens must be at least 1 (got {max_new_tokens})")
        self.backend = backend
        self.model_name = str(model) if model is not None else DEFAULT_MODEL
        self.guidelines = (not is_default_judge(self.model_name)) if guidelines is None else bool(guidelines)
        self.device = device
        self.batch_size = int(batch_size or BATCH_SIZE)
        self.dtype = dtype
        self.max_new_tokens = None if max_new_tokens is None else int(max_new_tokens)
        self.max_retries = max(0, int(max_retries))
        self._generator = generator
        self._client = client
        self._tokenizer = None
        self._judge_config: dict[str, Any]
        if backend == "openai":
            if backend_options.keys() & {"temperature", "extra_body", "max_tokens"}:
                raise ConfigError("crimson: temperature, max_tokens and extra_body are radeval's request; "
                                  "use max_new_tokens= to cap the answer")
            if client is None:
                from rexrank.llm.openai_http import OpenAIChatClient

                self._client = OpenAIChatClient(
                    base_url or "https://api.openai.com/v1", self.model_name, api_key_env=api_key_env,
                    temperature=0.0, max_tokens=self.max_new_tokens, extra_body=HTTP_REQUEST, metric="crimson",
                    **backend_options)
                self._judge_config = self._client.describe()
            else:
                self._judge_config = {"client": getattr(client, "name", type(client).__name__)}
            self.model_dir = None
        else:
            if base_url is not None or client is not None:
                raise ConfigError(f"crimson: base_url and client are for backend='openai', not {backend!r}")
            from rexrank.metrics.weights import resolve

            self.model_dir = resolve("crimson", model)
            self.backend_options = backend_options
            self.settings = generation_settings(self.model_dir)
            if self.max_new_tokens is not None:
                self.settings["limit"] = {"max_new_tokens": self.max_new_tokens}
            if self.settings["sampling"]:
                log.warning("crimson: %s/generation_config.json asks for sampling, as radeval would decode; rexrank "
                            "decodes greedily (reproducible, cacheable)", self.model_dir)
            self._judge_config = {}
        self.last_parsed: list[dict[str, Any]] = []
        self.n_parse_failures = 0

    def config(self) -> dict[str, Any]:
        """Everything that can change an answer: judge weights or endpoint, decoding, prompt, parser."""
        if self.model_dir is not None and not self._judge_config:
            from rexrank.llm.hf_local import model_fingerprint
            from rexrank.metrics.weights import weight_digests

            self._judge_config = {
                "model": Path(self.model_name).name if Path(self.model_name).exists() else self.model_name,
                "weights": model_fingerprint(self.model_dir),
                "dtype": self.dtype, **self.settings["limit"], "decoding": "greedy",
                **({"generator": type(self._generator).__name__} if self._generator is not None else {})}
            # sha256 of each weight shard, where the official-weights check reads them (metrics/official.py)
            self._weight_digests = {"crimson": weight_digests("crimson", self.model_dir)}
        prompt_hash = hashlib.sha256(json.dumps(chat_messages(build_prompt("{r}", "{c}", guidelines=self.guidelines)))
                                     .encode()).hexdigest()[:12]
        return {"backend": self.backend, "judge": self._judge_config,
                **({"weight_digests": self._weight_digests} if self.model_dir is not None else {}),
                "guidelines": self.guidelines,
                "prompt": prompt_hash, "parser": PARSER_VERSION, "repetition_penalty": REPETITION_PENALTY,
                **({"max_retries": self.max_retries} if self.backend == "openai" else {})}

    # --- local judges ---------------------------------------------------------------------------------------------

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from rexrank.llm.hf_local import load_tokenizer

            self._tokenizer = load_tokenizer(self.model_dir, padding_side="left", metric="crimson")
            if not getattr(self._tokenizer, "chat_template", None):
                raise ConfigError(f"crimson: the tokenizer in {self.model_dir} has no chat template")
        return self._tokenizer

    def prompt_ids(self, prompts: Sequence[str]) -> list[list[int]]:
        """Token ids of each chat as the pipeline tokenizes it: the rendered template, no extra special tokens."""
        tok = self.tokenizer
        return [list(tok(tok.apply_chat_template(chat_messages(p), tokenize=False, add_generation_prompt=True),
                         add_special_tokens=False)["input_ids"]) for p in prompts]

    def _stop_ids(self) -> list[int]:
        eos = self.settings["eos"]
        return [self.tokenizer.eos_token_id] if eos is None else eos

    def _local_generator(self):
        if self._generator is not None:
            return self._generator
        self._announce_load(self.model_dir)
        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        if self.backend == "vllm":
            from rexrank.llm.vllm_backend import VLLMGenerator

            if "max_length" in self.settings["limit"]:
                raise ConfigError("crimson: the vllm backend needs max_new_tokens (the model's generation config "
                                  "gives only max_length); pass max_new_tokens=")
            options = {"max_length": VLLM_CONTEXT, **self.backend_options}
            self._generator = VLLMGenerator(
                self.model_dir, dtype=self.dtype, max_new_tokens=self.settings["limit"]["max_new_tokens"],
                sampling_options={"repetition_penalty": REPETITION_PENALTY, "stop_token_ids": self._stop_ids()},
                **options)
        else:
            from rexrank.llm.hf_local import TransformersGenerator, load_causal_lm

            model = load_causal_lm(self.model_dir, device=self.device, dtype=self.dtype, metric="crimson")
            self._generator = TransformersGenerator(
                model, pad_token_id=pad, eos_token_id=self._stop_ids(), batch_size=self.batch_size,
                repetition_penalty=REPETITION_PENALTY, **self.settings["limit"], **self.backend_options)
        return self._generator

    def _decode_answer(self, prompt: Sequence[int], completion: Sequence[int]) -> str:
        """The pipeline's answer text: decode(prompt + completion) minus the length of decode(prompt), both without
        special tokens and with transformers 4's space clean-up (the pipeline's defaults)."""
        from rexrank.metrics.green import cleanup_spaces

        tok = self.tokenizer
        whole = cleanup_spaces(tok.decode(list(prompt) + list(completion), skip_special_tokens=True,
                                          clean_up_tokenization_spaces=False))
        head = cleanup_spaces(tok.decode(list(prompt), skip_special_tokens=True, clean_up_tokenization_spaces=False))
        return whole[len(head):]

    def _judge_local(self, prompts: list[str]) -> list[str]:
        ids = self.prompt_ids(prompts)
        completions = self._generate_in_batches(self._local_generator(), ids)
        return [self._decode_answer(p, c) for p, c in zip(ids, completions)]

    # --- HTTP judges ----------------------------------------------------------------------------------------------

    def _ask(self, prompts: list[str]) -> list[str | None]:
        conversations = [chat_messages(p) for p in prompts]
        if hasattr(self._client, "complete_results"):
            return [r.text for r in self._client.complete_results(conversations)]
        return list(self._client.complete(conversations))

    def _judge_http(self, prompts: list[str]) -> list[str | None]:
        """Ask every prompt; ask again (up to max_retries rounds) where the request failed or the answer does not
        parse, as radeval's retry loop does. The last answer stands."""
        answers: list[str | None] = [None] * len(prompts)
        pending = list(range(len(prompts)))
        for _ in range(1 + self.max_retries):
            for i, text in zip(pending, self._ask([prompts[i] for i in pending])):
                if text is not None or answers[i] is None:
                    answers[i] = text
            pending = [i for i in pending if math.isnan(evaluate_output(answers[i])["score"])]
            self._report_progress(len(prompts) - len(pending), len(prompts))
            if not pending:
                break
        return answers

    # --- scoring --------------------------------------------------------------------------------------------------

    def _judge(self, pair_keys: list[str]) -> list[str | None]:
        pairs = [json.loads(k) for k in pair_keys]
        prompts = [build_prompt(ref, cand, guidelines=self.guidelines) for ref, cand in pairs]
        return self._judge_http(prompts) if self.backend == "openai" else self._judge_local(prompts)

    def analyses(self, hyps: Sequence[str], refs: Sequence[str]) -> list[str | None]:
        """The judge's answer per pair (None where an HTTP request failed), from the cache where it has them."""
        from rexrank.metrics.base import MemoryTextCache

        if self.text_cache is None:
            self.text_cache = MemoryTextCache()
        namespace = f"{self.spec.name}:analysis:{self.fingerprint}"
        keys = [json.dumps([r, h], ensure_ascii=False) for h, r in zip(hyps, refs)]
        hashes = text_keys(keys)
        unique = dict(zip(hashes, keys))
        found = self.text_cache.get_many(namespace, list(unique))
        missing = [h for h in unique if h not in found]
        if missing:
            answers = dict(zip(missing, self._judge([unique[h] for h in missing])))
            found.update(answers)
            # A failed request is asked again next time; an answer, parsable or not, is the judge's and is kept.
            self.text_cache.put_many(namespace, {h: a for h, a in answers.items() if a is not None})
        return [found[h] for h in hashes]

    def _score_details(self, hyps: Sequence[str], refs: Sequence[str]):
        if not hyps:
            import pandas as pd

            return pd.DataFrame({self.spec.name: np.zeros(0)} | {c: [] for c in detail_columns()})
        parsed, analyses = self._parse_all(list(hyps), list(refs))
        return details_frame(parsed, analyses, self.spec.name)

    def summary(self) -> dict[str, Any]:
        """radeval's ``crimson`` and ``crimson_std`` of the last scored batch, with the counts (see ``summarize``)."""
        return summarize([p["score"] for p in self.last_parsed])


__all__ = ["Crimson", "DEFAULT_MODEL", "detail_columns", "generation_settings", "is_default_judge", "summarize"]
