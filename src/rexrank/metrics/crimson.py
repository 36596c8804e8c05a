"""CRIMSON (Baharoon et al., arXiv 2603.06183): an LLM judge lists the findings of a reference and a candidate report,
matches them, and names false, missing and attribute errors; the score weights them by clinical significance.

Two variants, one prompt and one score formula (``crimson_prompt``); they differ in decoding and in how the judge's
answer is read (docs/radeval_metrics.md, "CRIMSON: the two implementations", lists every difference):

- ``crimson`` (``Crimson``, the board's CRIMSON column): as the authors' package crimson-score 0.2.2 runs it
  (``CRIMSON/generate_score.py``): greedy, no repetition penalty, the model's generation_config.json when it has
  one, else at most 8,192 new tokens (transformers); vLLM with max_model_len 8,192 (prompt and answer); one request
  per pair over HTTP (no retry); its reader (``crimson_prompt.evaluate_output``), except that an answer without the
  four top-level keys is NaN, not a number (crimson-score scores ``{}`` 1.0), counted in ``n_deviations`` and the
  ``crimson_deviation`` column.
- ``crimson_radeval`` (``CrimsonRadeval``): as radeval 2.2.1 runs it (``radeval/metrics/crimson/``): repetition
  penalty 1.1 (radeval has no vLLM path: rexrank's runs the same settings with a 16,384-token context), up to 3
  HTTP attempts, radeval's reader.

The judges, for both:
- ``backend="transformers"`` (default): the fine-tuned ``rajpurkarlab/medgemma-4b-it-crimson`` (or any local chat
  model) through rexrank's local backend (``rexrank.llm.hf_local``), in bfloat16 as both packages load it; the chat
  is the system message and the prompt through the model's own chat template;
- ``backend="vllm"``: the same prompt token ids through vLLM (``rexrank.llm.vllm_backend``);
- ``backend="openai"``: any OpenAI-compatible chat endpoint (``rexrank.llm.openai_http``; a vLLM server serving the
  judge, or an API model), with both packages' request: temperature 0, seed 42, a JSON-object response format.

Guidelines: both packages leave the significance examples and attribute guidelines out of the prompt for the default
judge (trained without them) and put them in for any other model. ``guidelines=None`` decides by the judge's name:
the default judge (however it is given: Hub id, a local folder named ``medgemma-4b-it-crimson``, or that name behind
an endpoint) gets none, any other model gets them; pass True/False to choose.

Retries: a greedy local judge gives the same answer every time, so rexrank asks a local judge once (radeval asks up
to 3 times: same result); an HTTP judge is asked again up to ``max_retries`` times (``crimson``: 0, as
crimson-score; ``crimson_radeval``: 2). An answer that cannot be read scores NaN, is counted in
``n_parse_failures`` and the ``<name>_parse_error`` column, and is logged once per call, as GREEN's are. Answers
are cached per (judge fingerprint, reference, candidate); a request that failed is not cached.
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
    COUNT_KEYS, PARSER_VERSION, RADEVAL_PARSER_VERSION, TERM_KEYS, WEIGHTED_KEYS, build_prompt, chat_messages,
    evaluate_output, evaluate_output_radeval,
)
from rexrank.metrics.green import JudgedMetric

log = logging.getLogger(__name__)

# crimson-score 0.2.2 and radeval 2.2.1 CRIMSONScore.DEFAULT_HF_MODEL
DEFAULT_MODEL = "rajpurkarlab/medgemma-4b-it-crimson"
# CRIMSONScore.DEFAULT_MAX_NEW_TOKENS in both packages, used when the model has no generation config
DEFAULT_MAX_NEW_TOKENS = 8192
# Both packages' OpenAI request, with temperature 0 (crimson-score _chat_completion, radeval _build_request)
HTTP_REQUEST = {"seed": 42, "response_format": {"type": "json_object"}}
BATCH_SIZE = 8
BACKENDS = ("transformers", "vllm", "openai")


def is_default_judge(model: str | None) -> bool:
    """Whether ``model`` names the default judge (its Hub id, or a folder or served model with the repository's
    name). crimson-score compares the exact Hub id; rexrank counts a local copy of the official weights too."""
    if model is None:
        return True
    return str(model).rstrip("/").split("/")[-1] == DEFAULT_MODEL.split("/")[-1]


def generation_settings(model_dir: str | Path) -> dict[str, Any]:
    """How both packages' pipeline call decodes for the judge in ``model_dir``.

    With a generation_config.json of the model's own (one not derived from config.json, whose file says
    ``"_from_model_config": true``), the pipeline generates with it: its ``max_new_tokens``, else its
    ``max_length`` (prompt + output; transformers' default 20 when absent), its stop tokens and its repetition
    penalty (``penalty``; radeval overrides it with 1.1). Otherwise at most 8192 new tokens, no penalty. rexrank always decodes greedily; ``sampling`` records whether the file asks to sample
    (both packages would then sample, rexrank does not).
    """
    path = Path(model_dir) / "generation_config.json"
    try:
        own = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        if not isinstance(own, dict) or own.get("_from_model_config"):
            return {"limit": {"max_new_tokens": DEFAULT_MAX_NEW_TOKENS}, "eos": None, "sampling": False,
                    "penalty": None}
        if own.get("max_new_tokens") is not None:
            limit = {"max_new_tokens": _positive_int(own["max_new_tokens"])}
        else:
            limit = {"max_length": _positive_int(own.get("max_length", 20))}
        eos = own.get("eos_token_id")
        if eos is not None:
            eos = [_positive_int(e, zero=True) for e in (eos if isinstance(eos, list) else [eos])]
        penalty = own.get("repetition_penalty")
        if penalty is not None and (isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or penalty <= 0):
            raise ValueError(f"repetition_penalty {penalty!r} is not a positive number")
    except (OSError, ValueError, TypeError) as exc:
        raise ModelNotAvailableError(f"crimson: cannot read {path} ({type(exc).__name__}: "
                                     f"{str(exc).splitlines()[0] if str(exc) else ''}); fix or remove the file") from None
    return {"limit": limit, "eos": eos, "sampling": bool(own.get("do_sample", False)),
            "penalty": None if penalty in (None, 1, 1.0) else float(penalty)}


def _positive_int(value: Any, zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        raise ValueError(f"{value!r} is not a {'non-negative' if zero else 'positive'} integer")
    return value


def detail_columns(name: str = "crimson") -> list[str]:
    """The columns ``score_details`` of the metric ``name`` returns after its score column."""
    return ([f"{name}_{k}" for k in COUNT_KEYS] + [f"{name}_weighted_{k}" for k in WEIGHTED_KEYS]
            + [f"{name}_{k.lower()}" for k in TERM_KEYS]
            + [f"{name}_parse_error", f"{name}_deviation", f"{name}_analysis"])


def details_frame(parsed: Sequence[dict[str, Any]], analyses: Sequence[str | None], name: str = "crimson"):
    import pandas as pd

    columns: dict[str, Any] = {name: np.array([p["score"] for p in parsed], dtype=np.float64)}
    for key in COUNT_KEYS:
        columns[f"{name}_{key}"] = pd.array([p["error_counts"][key] if p["error_counts"] else None for p in parsed],
                                            dtype="Int64")
    for group, keys, prefix in (("weighted_error_counts", WEIGHTED_KEYS, f"{name}_weighted_"),
                                ("terms", TERM_KEYS, f"{name}_")):
        for key in keys:
            columns[prefix + key.lower()] = np.array([float(p[group][key]) if p[group] else math.nan for p in parsed],
                                                     dtype=np.float64)
    columns[f"{name}_parse_error"] = pd.array([p["parse_error"] for p in parsed], dtype="string")
    columns[f"{name}_deviation"] = pd.array([p["deviation"] for p in parsed], dtype="string")
    columns[f"{name}_analysis"] = pd.array(list(analyses), dtype="string")
    return pd.DataFrame(columns)


def summarize(scores: Sequence[float], deviations: Sequence[bool] = (), name: str = "crimson") -> dict[str, Any]:
    """The outputs of per-pair scores (NaN: unreadable): ``<name>``, the mean of the readable ones, and
    ``<name>_std``, their population std (0.0, as radeval returns them, when fewer than one / two), with counts:
    ``n_parse_failures`` (NaNs) and ``n_deviations`` (the pairs marked in ``deviations``: answers crimson-score would
    have scored, see ``crimson_prompt.evaluate_output``)."""
    values = np.asarray(scores, dtype=np.float64)
    valid = values[~np.isnan(values)]
    return {name: float(valid.mean()) if valid.size else 0.0,
            f"{name}_std": float(valid.std()) if valid.size > 1 else 0.0,
            "n": int(values.size), "n_scored": int(valid.size), "n_parse_failures": int(values.size - valid.size),
            "n_deviations": int(sum(bool(d) for d in deviations))}


class Crimson(JudgedMetric):
    """The board's CRIMSON (crimson-score 0.2.2) per (candidate, reference) pair, with error counts, the formula's
    terms and the deviation mark in ``score_details``.

    model: Hub id or local folder of the judge (default ``rajpurkarlab/medgemma-4b-it-crimson``; for
    backend="openai" the model name at the endpoint). backend: "transformers", "vllm" or "openai" (base_url,
    api_key_env, timeout, max_concurrency, ... go to ``OpenAIChatClient``; vLLM engine options to ``vllm.LLM``).
    generator: an object with ``generate(prompt_ids) -> completion_ids`` replacing the local model; client: an
    object with ``complete(conversations) -> texts`` replacing the HTTP client (tests, custom servers).
    max_new_tokens: an unofficial cap on the answer length (recorded in the fingerprint).
    """

    spec = REGISTRY.spec("crimson")
    parse_analysis = staticmethod(evaluate_output)
    parser_version = PARSER_VERSION
    # crimson-score 0.2.2 generate_score.py: no repetition penalty in either local path (None: not passed)
    repetition_penalty: float | None = None
    # crimson-score's _chat_completion: one request per pair, no retry
    default_retries = 0
    # crimson-score's vLLM engine: LLM(max_model_len=8192), SamplingParams(max_tokens=8192): the answer stops where
    # prompt + answer reach 8,192 tokens (the engine's context), so the cap is the context, not a count of new tokens
    vllm_context = 8192
    vllm_caps_new_tokens = False

    def __init__(self, model: str | Path | None = None, backend: str = "transformers", *, device: str | None = None,
                 batch_size: int | None = None, dtype: str = "bfloat16", guidelines: bool | None = None,
                 max_new_tokens: int | None = None, max_retries: int | None = None, base_url: str | None = None,
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
        self.max_retries = max(0, int(self.default_retries if max_retries is None else max_retries))
        self._generator = generator
        self._client = client
        self._tokenizer = None
        self._judge_config: dict[str, Any]
        if backend == "openai":
            if backend_options.keys() & {"temperature", "extra_body", "max_tokens"}:
                raise ConfigError(f"{self.spec.name}: temperature, max_tokens and extra_body are the package's request; "
                                  "use max_new_tokens= to cap the answer")
            if client is None:
                from rexrank.llm.openai_http import OpenAIChatClient

                self._client = OpenAIChatClient(
                    base_url or "https://api.openai.com/v1", self.model_name, api_key_env=api_key_env,
                    temperature=0.0, max_tokens=self.max_new_tokens, extra_body=HTTP_REQUEST, metric=self.spec.name,
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
                log.warning("%s: %s/generation_config.json asks for sampling, as the packages would decode; rexrank "
                            "decodes greedily (reproducible, cacheable)", self.spec.name, self.model_dir)
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
                "prompt": prompt_hash, "parser": self.parser_version,
                "repetition_penalty": self.local_penalty if self.backend == "transformers" else self.repetition_penalty,
                **({"vllm_context": self.vllm_context} if self.backend == "vllm" else {}),
                **({"max_retries": self.max_retries} if self.backend == "openai" else {})}

    # --- local judges ---------------------------------------------------------------------------------------------

    @property
    def local_penalty(self) -> float | None:
        """The transformers backend's repetition penalty: the variant's own (radeval passes 1.1), else the one in the
        judge's own generation_config.json, which crimson-score's pipeline call applies with the whole file."""
        if self.repetition_penalty is not None or self.model_dir is None:
            return self.repetition_penalty
        return self.settings["penalty"]

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

            options = {"max_length": self.vllm_context, **self.backend_options}
            if self.vllm_caps_new_tokens or self.max_new_tokens is not None:
                if "max_length" in self.settings["limit"]:
                    raise ConfigError(f"{self.spec.name}: the vllm backend needs max_new_tokens (the model's "
                                      "generation config gives only max_length); pass max_new_tokens=")
                options["max_new_tokens"] = self.settings["limit"]["max_new_tokens"]
            self._generator = VLLMGenerator(
                self.model_dir, dtype=self.dtype, sampling_options={
                    **({"repetition_penalty": self.repetition_penalty} if self.repetition_penalty else {}),
                    "stop_token_ids": self._stop_ids()}, **options)
        else:
            from rexrank.llm.hf_local import TransformersGenerator, load_causal_lm

            model = load_causal_lm(self.model_dir, device=self.device, dtype=self.dtype, metric="crimson")
            self._generator = TransformersGenerator(
                model, pad_token_id=pad, eos_token_id=self._stop_ids(), batch_size=self.batch_size,
                **({"repetition_penalty": self.local_penalty} if self.local_penalty else {}),
                **self.settings["limit"], **self.backend_options)
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
        parse, as radeval's retry loop does (crimson-score: max_retries 0). The last answer stands."""
        answers: list[str | None] = [None] * len(prompts)
        pending = list(range(len(prompts)))
        for _ in range(1 + self.max_retries):
            for i, text in zip(pending, self._ask([prompts[i] for i in pending])):
                if text is not None or answers[i] is None:
                    answers[i] = text
            pending = [i for i in pending if math.isnan(self.parse_analysis(answers[i])["score"])]
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

    @property
    def n_deviations(self) -> int:
        """Answers of the last batch that crimson-score would have scored but rexrank reads as NaN (see
        ``crimson_prompt.evaluate_output``); always 0 for ``crimson_radeval``."""
        return sum(p.get("deviation") is not None for p in self.last_parsed)

    def summary(self) -> dict[str, Any]:
        """The mean and std of the last scored batch (radeval's ``crimson`` / ``crimson_std``, under the metric's
        name), with the counts (see ``summarize``)."""
        return summarize([p["score"] for p in self.last_parsed],
                         [p.get("deviation") is not None for p in self.last_parsed], self.spec.name)


class CrimsonRadeval(Crimson):
    """radeval 2.2.1's CRIMSON (``crimson_radeval``): the same prompt and formula, radeval's decoding and reader."""

    spec = REGISTRY.spec("crimson_radeval")
    parse_analysis = staticmethod(evaluate_output_radeval)
    parser_version = RADEVAL_PARSER_VERSION
    repetition_penalty = 1.1  # both branches of radeval's CRIMSONScore._hf_generate
    default_retries = 2  # radeval CRIMSONScore._evaluate_one(max_retries=2): three attempts
    # radeval has no vLLM path: rexrank runs its transformers settings on vLLM, with a context of 16,384 (a prompt
    # of about 3,000 tokens with guidelines plus 8,192 new tokens), the answer capped by the generation config's
    # count of new tokens
    vllm_context = 16384
    vllm_caps_new_tokens = True


__all__ = ["Crimson", "CrimsonRadeval", "DEFAULT_MODEL", "detail_columns", "generation_settings", "is_default_judge", "summarize"]
