"""GREEN (Ostmeier et al., EMNLP Findings 2024): a fine-tuned Llama judges a candidate report against a reference.

Interface facts reproduced from Stanford-AIMI/GREEN @d72c195 (no licence file; facts only, our own code):
- the prompt of ``green_score/utils.make_prompt(ref, cand, max_len=300)``: each report cut to its first 300
  whitespace-separated words (``PROMPT_TEMPLATE`` / ``make_prompt`` below);
- the chat template that ``green_score/green.py`` installs on the tokenizer (``CHAT_TEMPLATE``), applied to
  ``[{"from": "human", "value": prompt}, {"from": "gpt", "value": ""}]`` with ``add_generation_prompt=True``;
- tokenizer settings ``add_eos_token=True`` (BOS + text + EOS), ``padding_side="left"``, ``pad_token = eos_token``,
  truncation at ``max_length=2048``; greedy decoding (``do_sample=False``), ``max_length=2048`` prompt + output,
  batches of 8, fp16 weights; the whole sequence is decoded with ``skip_special_tokens=True`` and
  ``clean_up_tokenization_spaces=True`` (``cleanup_spaces``), then cut by ``green_score/utils.clean_responses``
  (``clean_response`` below);
- the parser ``GREEN.parse_error_counts`` and ``GREEN.compute_green``: score = 0 if matched == 0 else
  matched / (matched + sum of the six clinically significant error counts).

Where the official parser silently reads 0 (a missing section, a count written in words, a count without its
period), ours reads the number or reports a parse failure: a NaN counted in ``n_parse_failures`` and in the
``green_parse_error`` column, never a silent 0. On every output the official parser reads, ours gives the same
counts (tests/test_green_parse.py). Differences are listed in docs/green.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rexrank.errors import ConfigError
from rexrank.metrics import REGISTRY
from rexrank.metrics.base import Metric

log = logging.getLogger(__name__)

# --- interface facts of the fine-tuned model (Stanford-AIMI/GREEN @d72c195) -------------------------------------

MAX_WORDS = 300  # green_score/utils.py make_prompt(max_len=300)
MAX_LENGTH = 2048  # green_score/green.py GREEN.max_length and generate(max_length=2048)
BATCH_SIZE = 8  # green_score/green.py GREEN.batch_size
DEFAULT_MODEL = "StanfordAIMI/GREEN-RadLlama2-7b"

# The body of make_prompt, one entry per line. Every line after the first is indented by four spaces in the
# official f-string; empty lines carry no indentation. {reference} and {candidate} are the cut reports.
_PROMPT_LINES = (
    "Objective: Evaluate the accuracy of a candidate radiology report in comparison to a reference radiology "
    "report composed by expert radiologists.",
    "",
    "Process Overview: You will be presented with:",
    "",
    "1. The criteria for making a judgment.",
    "2. The reference radiology report.",
    "3. The candidate radiology report.",
    "4. The desired format for your assessment.",
    "",
    "1. Criteria for Judgment:",
    "",
    "For each candidate report, determine:",
    "",
    "The count of clinically significant errors.",
    "The count of clinically insignificant errors.",
    "",
    "Errors can fall into one of these categories:",
    "",
    "a) False report of a finding in the candidate.",
    "b) Missing a finding present in the reference.",
    "c) Misidentification of a finding's anatomic location/position.",
    "d) Misassessment of the severity of a finding.",
    "e) Mentioning a comparison that isn't in the reference.",
    "f) Omitting a comparison detailing a change from a prior study.",
    "Note: Concentrate on the clinical findings rather than the report's writing style. Evaluate only the findings "
    "that appear in both reports.",
    "",
    "2. Reference Report:",
    "{reference}",
    "",
    "3. Candidate Report:",
    "{candidate}",
    "",
    "4. Reporting Your Assessment:",
    "",
    "Follow this specific format for your output, even if no errors are found:",
    "```",
    "[Explanation]:",
    "<Explanation>",
    "",
    "[Clinically Significant Errors]:",
    "(a) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>",
    "....",
    "(f) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>",
    "",
    "[Clinically Insignificant Errors]:",
    "(a) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>",
    "....",
    "(f) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>",
    "",
    "[Matched Findings]:",
    "<The number of matched findings>. <Finding 1>; <Finding 2>; ...; <Finding n>",
    "```",
)
PROMPT_TEMPLATE = "\n".join([_PROMPT_LINES[0]] + [("    " + line) if line else "" for line in _PROMPT_LINES[1:]]) + "\n"

# The chat template green_score/green.py assigns to tokenizer.chat_template (note the two spaces before the last
# "+ message['value']"); transformers renders it with trim_blocks/lstrip_blocks.
CHAT_TEMPLATE = (
    "{% for message in messages %}\n"
    "{% if message['from'] == 'human' %}\n"
    "{{ '<|user|>\n' + message['value'] + eos_token }}\n"
    "{% elif message['from'] == 'system' %}\n"
    "{{ '<|system|>\n' + message['value'] + eos_token }}\n"
    "{% elif message['from'] == 'gpt' %}\n"
    "{{ '<|assistant|>\n'  + message['value'] + eos_token }}\n"
    "{% endif %}\n"
    "{% if loop.last and add_generation_prompt %}\n"
    "{{ '<|assistant|>' }}\n"
    "{% endif %}\n"
    "{% endfor %}"
)

# (letter, column suffix, wording in the official GREEN.sub_categories)
CATEGORIES = (
    ("a", "false_finding", "False report of a finding in the candidate"),
    ("b", "missing_finding", "Missing a finding present in the reference"),
    ("c", "wrong_location", "Misidentification of a finding's anatomic location/position"),
    ("d", "wrong_severity", "Misassessment of the severity of a finding"),
    ("e", "extra_comparison", "Mentioning a comparison that isn't in the reference"),
    ("f", "omitted_comparison", "Omitting a comparison detailing a change from a prior study"),
)
SIGNIFICANT = "Clinically Significant Errors"
INSIGNIFICANT = "Clinically Insignificant Errors"
MATCHED = "Matched Findings"
PARSER_VERSION = "1"


def cut_words(text: str, max_words: int = MAX_WORDS) -> str:
    """The first ``max_words`` whitespace-separated words joined by single spaces (as make_prompt does)."""
    return " ".join(text.split()[:max_words])


def make_prompt(reference: str, candidate: str, max_words: int = MAX_WORDS) -> str:
    """The GREEN prompt for one (reference, candidate) pair, exactly as the official make_prompt builds it."""
    return PROMPT_TEMPLATE.format(reference=cut_words(reference, max_words), candidate=cut_words(candidate, max_words))


def chat_messages(prompt: str) -> list[dict[str, str]]:
    """The conversation the official code renders: the prompt, then an empty assistant turn."""
    return [{"from": "human", "value": prompt}, {"from": "gpt", "value": ""}]


# transformers 4.x ``clean_up_tokenization`` rules, applied by batch_decode because the official code sets
# tokenizer.clean_up_tokenization_spaces = True; transformers 5 no longer applies them to BPE tokenizers.
_SPACE_CLEANUPS = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                   (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def cleanup_spaces(text: str) -> str:
    """Remove the space before punctuation and English contractions, in the order transformers 4 does."""
    for before, after in _SPACE_CLEANUPS:
        text = text.replace(before, after)
    return text


def clean_response(decoded: str) -> str:
    """What green_score/utils.clean_responses leaves of a decoded prompt+output sequence: the model's analysis.

    Upstream: when "[Explanation]:" occurs, keep what follows the last "<|assistant|>" and then what follows the
    last "[Explanation]:" (its first branch is unreachable: a non-empty string literal is always truthy in its
    ``(a or b) in s`` test, so it always tests only the first literal, which the output never contains verbatim);
    otherwise keep what follows the last "<|assistant|>". Finally drop "</s>" and "<unk>".
    """
    text = decoded
    if "[Explanation]:" in text:
        if "<|assistant|>" in text:
            text = text.split("<|assistant|>")[-1]
        if "[Explanation]:\n    <Explanation>\n" in text:
            text = text.split("[Explanation]:")[1]
        else:
            text = text.split("[Explanation]:")[-1]
    if "<|assistant|>" in text:
        text = text.split("<|assistant|>")[-1]
    return text.replace("</s>", "").replace("<unk>", "")


# --- parser ------------------------------------------------------------------------------------------------------

_SECTION_NAMES = ("Explanation", SIGNIFICANT, INSIGNIFICANT, MATCHED)
_ANY_HEADER = re.compile(r"\[(?:%s)\]" % "|".join(re.escape(n) for n in _SECTION_NAMES))
# Official count of one sub-category line: the first integer preceded by ": " and followed by ".".
_OFFICIAL_COUNT = re.compile(r"(?<=: )\b\d+\b(?=\.)")
_OFFICIAL_MATCHED = re.compile(r"^\b\d+\b(?=\.)")
_NONE_WORDS = re.compile(r"^(?:no|none|nothing|n/a)\b", re.IGNORECASE)
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_LEADING_NUMBER = re.compile(r"^\s*(\d+)\b")
_LEADING_WORD = re.compile(r"^\s*([A-Za-z]+)\b")


def _section(text: str, name: str) -> str | None:
    """The body of ``[name]:`` up to the next known header (or the end); None when the header is absent.

    Upstream ends a section at its first blank line; we end it at the next header, so a blank line inside a list
    does not hide its later lines (a documented difference that can only add counts upstream reads as 0).
    """
    header = re.search(r"\[%s\]\s*:?" % re.escape(name), text)
    if header is None:
        return None
    rest = text[header.end():]
    following = _ANY_HEADER.search(rest)
    body = rest[: following.start()] if following else rest
    return body.strip()


def _read_number(fragment: str) -> int | None:
    """A count written as digits, a number word (zero..twenty) or "no"/"none"; None when unreadable."""
    if (m := _LEADING_NUMBER.match(fragment)) is not None:
        return int(m.group(1))
    if _NONE_WORDS.match(fragment.strip()):
        return 0
    if (m := _LEADING_WORD.match(fragment)) is not None and m.group(1).lower() in _NUMBER_WORDS:
        return _NUMBER_WORDS[m.group(1).lower()]
    return None


def _read_category_counts(body: str | None) -> tuple[list[int | None], str | None]:
    """Six counts of an error section and, if something could not be read, why."""
    if body is None:
        return [None] * 6, "section missing"
    if _NONE_WORDS.match(body):
        return [0] * 6, None  # upstream: a section starting with "No" has no errors
    # As upstream: every "(x) ..." up to the end of its line, sorted; lettered (a)-(f), else numbered (1)-(6).
    lines = sorted(re.findall(r"\([a-f]\) .*", body))
    labels = [f"({c[0]}) " for c in CATEGORIES]
    if not lines:
        lines = sorted(re.findall(r"\([1-6]\) .*", body))
        labels = [f"({i}) " for i in range(1, 7)]
    if not lines:
        return [None] * 6, "no (a)-(f) lines"
    counts: list[int | None] = []
    problems: list[str] = []
    for letter, label in zip("abcdef", labels):
        mine = [line for line in lines if line.startswith(label)]
        official = None
        for line in mine:  # upstream: the last sorted line with a count wins
            if (found := _OFFICIAL_COUNT.findall(line)):
                official = int(found[0])
        if official is not None:
            counts.append(official)
        elif not mine:
            counts.append(0)  # upstream reads an absent line as 0; a truncated output fails on [Matched Findings]
        else:
            after_colon = mine[-1].split(":", 1)[1] if ":" in mine[-1] else ""
            value = _read_number(after_colon)
            counts.append(value)
            if value is None:
                problems.append(f"({letter}) count unreadable")
    return counts, "; ".join(problems) or None


def _read_matched(body: str | None) -> tuple[int | None, str | None]:
    if body is None:
        return None, "[Matched Findings] missing"
    if _NONE_WORDS.match(body):
        return 0, None
    if (found := _OFFICIAL_MATCHED.findall(body)):
        return int(found[0]), None
    value = _read_number(body)
    return value, None if value is not None else "[Matched Findings] count unreadable"


def green_from_counts(matched: int | None, significant: Sequence[int | None]) -> float:
    """Official formula; NaN when an input it needs is unknown."""
    if matched is None:
        return math.nan
    if matched == 0:
        return 0.0  # upstream returns 0 before looking at the errors
    if any(c is None for c in significant):
        return math.nan
    return matched / (matched + sum(significant))


def parse_output(text: str | None) -> dict[str, Any]:
    """Parse one GREEN analysis.

    Returns ``significant_errors`` and ``insignificant_errors`` (six counts (a)-(f) each; an entry is None when it
    cannot be read), ``matched_findings`` (int or None), ``score`` (float, NaN when it cannot be computed),
    ``error_free`` (no clinically significant error; None when unknown) and ``parse_error`` (None, or what failed).
    Never raises on any string.
    """
    if not isinstance(text, str) or not text.strip():
        return {"significant_errors": [None] * 6, "insignificant_errors": [None] * 6, "matched_findings": None,
                "score": math.nan, "error_free": None, "parse_error": "empty output"}
    significant, sig_problem = _read_category_counts(_section(text, SIGNIFICANT))
    insignificant, _ = _read_category_counts(_section(text, INSIGNIFICANT))
    matched, matched_problem = _read_matched(_section(text, MATCHED))
    score = green_from_counts(matched, significant)
    problems = [p for p in (matched_problem, f"[{SIGNIFICANT}] {sig_problem}" if sig_problem else None) if p]
    known = all(c is not None for c in significant)
    return {"significant_errors": significant, "insignificant_errors": insignificant, "matched_findings": matched,
            "score": score, "error_free": (sum(significant) == 0) if known else None,
            "parse_error": "; ".join(problems) if math.isnan(score) or problems else None}


# --- per-report table and summary ---------------------------------------------------------------------------------

def detail_columns() -> list[str]:
    """Names of the per-report columns ``Green.score_details`` returns after the score column."""
    sig = [f"green_sig_{c}_{name}" for c, name, _ in CATEGORIES]
    insig = [f"green_insig_{c}_{name}" for c, name, _ in CATEGORIES]
    return sig + insig + ["green_matched_findings", "green_error_free", "green_parse_error", "green_analysis"]


def details_frame(parsed: Sequence[dict[str, Any]], analyses: Sequence[str], score_column: str = "green"):
    import pandas as pd

    columns: dict[str, Any] = {score_column: np.array([p["score"] for p in parsed], dtype=np.float64)}
    for kind, key in (("sig", "significant_errors"), ("insig", "insignificant_errors")):
        for i, (c, name, _) in enumerate(CATEGORIES):
            columns[f"green_{kind}_{c}_{name}"] = pd.array([p[key][i] for p in parsed], dtype="Int64")
    columns["green_matched_findings"] = pd.array([p["matched_findings"] for p in parsed], dtype="Int64")
    columns["green_error_free"] = pd.array([p["error_free"] for p in parsed], dtype="boolean")
    columns["green_parse_error"] = pd.array([p["parse_error"] for p in parsed], dtype="string")
    columns["green_analysis"] = pd.array(list(analyses), dtype="string")
    return pd.DataFrame(columns)


def summarize(parsed: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean GREEN over parsed reports, parse-failure count, and error-free rates overall and per category (a)-(f).

    Rates are over the reports whose category could be read (upstream counts unparsed reports as error-free).
    """
    scores = np.array([p["score"] for p in parsed], dtype=np.float64)
    ok = ~np.isnan(scores)
    per_category: dict[str, float] = {}
    for i, (c, name, _) in enumerate(CATEGORIES):
        known = [p["significant_errors"][i] for p in parsed if p["significant_errors"][i] is not None]
        per_category[f"({c}) {name}"] = float(np.mean([k == 0 for k in known])) if known else math.nan
    free = [p["error_free"] for p in parsed if p["error_free"] is not None]
    return {"n": len(parsed), "n_scored": int(ok.sum()), "n_parse_failures": int((~ok).sum()),
            "mean": float(scores[ok].mean()) if ok.any() else math.nan,
            "std": float(scores[ok].std()) if ok.any() else math.nan,
            "error_free_rate": float(np.mean(free)) if free else math.nan,
            "error_free_rate_by_category": per_category}


# --- tokenisation ------------------------------------------------------------------------------------------------

def render_chat(tokenizer, prompt: str) -> str:
    """The chat text the official code tokenizes (its template, installed on a copy-free basis per call)."""
    return tokenizer.apply_chat_template(chat_messages(prompt), chat_template=CHAT_TEMPLATE, tokenize=False,
                                         add_generation_prompt=True)


def adds_bos(model_dir: str | Path | None) -> bool:
    """Whether the tokenizer adds BOS (Llama tokenizers do unless tokenizer_config.json says add_bos_token: false)."""
    if model_dir is not None:
        cfg = Path(model_dir) / "tokenizer_config.json"
        if cfg.is_file():
            return bool(json.loads(cfg.read_text()).get("add_bos_token", True))
    return True


def encode_prompts(tokenizer, prompts: Sequence[str], *, add_bos: bool = True,
                   max_length: int = MAX_LENGTH) -> list[list[int]]:
    """Token ids as the official tokenizer call gives them: [BOS] + chat text + [EOS] (add_eos_token=True),
    truncated on the right to ``max_length`` with BOS/EOS kept (how fast tokenizers truncate).

    Built explicitly so the ids do not depend on how a transformers version interprets ``add_eos_token``.
    """
    specials = [tokenizer.bos_token_id] if add_bos else []
    out = []
    for prompt in prompts:
        ids = tokenizer(render_chat(tokenizer, prompt), add_special_tokens=False)["input_ids"]
        ids = ids[: max(0, max_length - len(specials) - 1)]
        out.append(specials + list(ids) + [tokenizer.eos_token_id])
    return out


# --- the metric ---------------------------------------------------------------------------------------------------

class JudgedMetric(Metric):
    """A metric whose score is an LLM judge's analysis of each pair, parsed (GREEN, CRIMSON): the one place that
    parses a batch's analyses, keeps them for ``summary`` and counts and logs the unreadable ones (NaN scores).

    A subclass provides ``analyses(hyps, refs)`` (one analysis text per pair), ``parse_analysis`` (a text -> a dict
    whose "score" is NaN when the text could not be read), ``backend`` and ``batch_size`` (``_generate_in_batches``
    deals a local judge's prompts by them)."""

    parse_analysis: Any

    def _parse_all(self, hyps, refs) -> tuple[list[dict[str, Any]], list]:
        analyses = self.analyses(hyps, refs)
        parsed = [self.parse_analysis(a) for a in analyses]
        self.last_parsed = parsed
        self.n_parse_failures = sum(math.isnan(p["score"]) for p in parsed)
        if self.n_parse_failures:
            log.warning("%s: %d of %d judge outputs could not be parsed and score NaN (see %s_parse_error)",
                        self.spec.name, self.n_parse_failures, len(parsed), self.spec.name)
        return parsed, analyses

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        parsed, _ = self._parse_all(hyps, refs)
        return np.array([p["score"] for p in parsed], dtype=np.float64)

    def _generate_in_batches(self, generator, prompt_ids: list) -> list:
        """``generator.generate`` over the prompts' token ids, the completions in order. The transformers backend
        runs batch_size prompts at a time anyway: one batch per call gives the same batches (same padding, same
        outputs) and lets progress move per batch. vLLM and custom generators schedule their own batches, so they
        get every prompt at once."""
        step = (self.batch_size if self.backend == "transformers" else len(prompt_ids)) or 1
        completions: list[Any] = []
        for start in range(0, len(prompt_ids), step):
            completions.extend(generator.generate(prompt_ids[start:start + step]))
            self._report_progress(len(completions), len(prompt_ids))
        return completions


class Green(JudgedMetric):
    """GREEN score per (candidate, reference) pair, with error counts in ``score_details``.

    model: Hub id, local directory (default ``StanfordAIMI/GREEN-RadLlama2-7b``). backend: "transformers"
    (batched, left padding, CPU/GPU; data-parallel when launched with ``accelerate launch``) or "vllm" (optional
    extra ``rexrank[vllm]``). generator: any object with ``generate(prompt_ids) -> completion_ids`` replaces the
    backend (tests, custom servers). dtype: "auto" (fp16 on GPU as upstream, fp32 on CPU), "float16", "bfloat16",
    "float32". Analyses are cached per (model fingerprint, reference, candidate) through ``Metric.per_text``.
    """

    spec = REGISTRY.spec("green")
    parse_analysis = staticmethod(parse_output)

    def __init__(self, model: str | Path | None = None, device: str | None = None, batch_size: int | None = None,
                 backend: str = "transformers", dtype: str = "auto", max_length: int = MAX_LENGTH,
                 max_words: int = MAX_WORDS, max_new_tokens: int | None = None, generator: Any = None,
                 **backend_options: Any):
        """``max_new_tokens`` caps the analysis length instead of the official prompt+output ``max_length`` (an
        unofficial budget for smoke tests and quick looks; it is recorded in the fingerprint)."""
        from rexrank.metrics.weights import resolve

        if backend not in ("transformers", "vllm"):
            raise ConfigError(f"green: unknown backend {backend!r}. Available: transformers, vllm")
        if dtype not in ("auto", "float16", "bfloat16", "float32"):
            raise ConfigError(f"green: unknown dtype {dtype!r}. Available: auto, float16, bfloat16, float32")
        self.model_name = str(model) if model is not None else DEFAULT_MODEL
        self.model_dir = resolve("green", model)
        self.device = device
        self.batch_size = int(batch_size or BATCH_SIZE)
        self.backend = backend if generator is None else f"custom:{type(generator).__name__}"
        self.dtype = dtype
        self.max_length = int(max_length)
        self.max_words = int(max_words)
        self.max_new_tokens = None if max_new_tokens is None else int(max_new_tokens)
        if self.max_new_tokens is not None and backend == "vllm":
            raise ConfigError("green: max_new_tokens applies to the transformers backend only")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ConfigError(f"green: max_new_tokens must be at least 1 (got {max_new_tokens})")
        self.backend_options = backend_options
        self._generator = generator
        self._tokenizer = None
        self._weights_fingerprint: str | None = None
        self._weight_digests: dict[str, dict[str, str]] = {}
        self.last_parsed: list[dict[str, Any]] = []
        self.n_parse_failures = 0

    # Everything that can change an analysis: weights, decoding length, prompt, backend numerics, parser.
    def config(self) -> dict[str, Any]:
        from rexrank.llm.hf_local import model_fingerprint
        from rexrank.metrics.weights import weight_digests

        if self._weights_fingerprint is None:
            self._weights_fingerprint = model_fingerprint(self.model_dir)
            # sha256 of each weight shard: the Hub cache's blob names (free), else hashed once per machine
            self._weight_digests = {"green": weight_digests("green", self.model_dir)}
        prompt_hash = hashlib.sha256((PROMPT_TEMPLATE + CHAT_TEMPLATE).encode()).hexdigest()[:12]
        return {"model": Path(self.model_name).name if Path(self.model_name).exists() else self.model_name,
                "weights": self._weights_fingerprint, "weight_digests": self._weight_digests,
                "backend": self.backend, "dtype": self.dtype,
                "max_length": self.max_length, "max_words": self.max_words, "decoding": "greedy",
                "prompt": prompt_hash, "parser": PARSER_VERSION,
                **({"max_new_tokens": self.max_new_tokens} if self.max_new_tokens is not None else {})}

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from rexrank.llm.hf_local import load_tokenizer

            self._tokenizer = load_tokenizer(self.model_dir, padding_side="left", metric="green")
        return self._tokenizer

    def _make_generator(self):
        if self._generator is not None:
            return self._generator
        self._announce_load(self.model_dir)
        tok = self.tokenizer
        if self.backend == "vllm":
            from rexrank.llm.vllm_backend import VLLMGenerator

            self._generator = VLLMGenerator(self.model_dir, dtype=self.dtype, max_length=self.max_length,
                                            **self.backend_options)
        else:
            from rexrank.llm.hf_local import TransformersGenerator, load_causal_lm

            model = load_causal_lm(self.model_dir, device=self.device, dtype=self.dtype, metric="green")
            # Upstream generate(): eos = pad = tokenizer EOS, greedy, max_length counts the (padded) prompt.
            limit = ({"max_new_tokens": self.max_new_tokens} if self.max_new_tokens is not None
                     else {"max_length": self.max_length})
            self._generator = TransformersGenerator(
                model, pad_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, batch_size=self.batch_size,
                **limit, **self.backend_options)
        return self._generator

    def _analyse(self, pair_keys: list[str]) -> list[str]:
        """Generate and clean the analyses of pairs given as JSON [reference, candidate] strings.

        All of them, here: which process judges which pairs is decided before this call (rexrank.parallel).
        """
        pairs = [json.loads(k) for k in pair_keys]
        prompts = [make_prompt(ref, cand, self.max_words) for ref, cand in pairs]
        prompt_ids = encode_prompts(self.tokenizer, prompts, add_bos=adds_bos(self.model_dir),
                                    max_length=self.max_length)
        completions = self._generate_in_batches(self._make_generator(), prompt_ids)
        tok = self.tokenizer
        # As upstream: decode prompt + output without special tokens (with the 4.x space clean-up), keep the analysis.
        return [clean_response(cleanup_spaces(tok.decode(list(p) + list(c), skip_special_tokens=True,
                                                         clean_up_tokenization_spaces=False)))
                for p, c in zip(prompt_ids, completions)]

    def analyses(self, hyps: Sequence[str], refs: Sequence[str]) -> list[str]:
        keys = [json.dumps([r, h], ensure_ascii=False) for h, r in zip(hyps, refs)]
        return self.per_text("analysis", keys, self._analyse)

    def _score_details(self, hyps: Sequence[str], refs: Sequence[str]):
        from rexrank.metrics.base import check_pairs

        hyps, refs = check_pairs(hyps, refs)
        if not hyps:
            import pandas as pd

            return pd.DataFrame({self.spec.name: np.zeros(0)} | {c: [] for c in detail_columns()})
        parsed, analyses = self._parse_all(hyps, refs)
        return details_frame(parsed, analyses, self.spec.name)

    def summary(self) -> dict[str, Any]:
        """Summary of the last scored batch (see ``summarize``)."""
        return summarize(self.last_parsed)


__all__ = ["CATEGORIES", "CHAT_TEMPLATE", "Green", "PROMPT_TEMPLATE", "clean_response", "cleanup_spaces",
           "encode_prompts", "green_from_counts", "make_prompt", "parse_output", "summarize"]
