"""Reference for the board's CRIMSON: the authors' package crimson-score 0.2.2 (PyPI; ``CRIMSON/``), run in .venv-ref.

The package requires Python >= 3.12 and transformers >= 5; scripts/setup_ref.sh installs it with --no-deps
--ignore-requires-python, because what this script calls is pure Python on 3.11: its prompt builder
(``CRIMSONScore._build_evaluation_prompt``, ``prompt_parts.build_prompt``), its reader (``parse_json_response``),
its formula (``_calculate_crimson``) and the per-answer error handling of ``evaluate_batch``.

Decoding is read from the package's own calls, not run: its constructors and ``_chat_completion*`` are given fake
``transformers.pipeline``, ``vllm`` and ``openai`` objects that record what the package asks of them (pipeline and
generate keyword arguments for a model with and without its own generation config, the vLLM engine and sampling
parameters, the OpenAI request). The judge's answers themselves are the written ones in the payload.

stdin: {"refs", "hyps", "outputs": [judge texts], "answer": the fake judges' answer, "contexts": [{...}], "model_dir"}
stdout (last line): {"prompts": {"local", "default", "openai", "vllm_default", "context", "context_default"},
                     "system", "parsed": [...], "batch": [...], "decoding": {...}, "request", "versions"}
"""

import importlib.metadata
import json
import math
import sys
import types


def _plain(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


class _Recorder:
    """Stands in for a transformers pipeline, a vLLM engine or an OpenAI client; records every call."""

    def __init__(self, answer):
        self.calls, self.answer = [], answer

    def pipeline(self, task, **kwargs):
        self.calls.append({"pipeline": task, **{k: str(v) for k, v in kwargs.items()}})
        recorder = self

        class Pipe:
            tokenizer = types.SimpleNamespace(padding_side="right")
            model = types.SimpleNamespace(generation_config=types.SimpleNamespace(_from_model_config=True))

            def __call__(self, messages, **kw):
                recorder.calls.append({"generate": {k: (v if k != "generation_config" else "model's own")
                                                    for k, v in kw.items()}, "messages": messages})
                return [{"generated_text": messages + [{"role": "assistant", "content": recorder.answer}]}]

        return Pipe()


def _fake_modules(recorder):
    torch = types.ModuleType("torch")
    torch.bfloat16 = "torch.bfloat16"
    transformers = types.ModuleType("transformers")
    transformers.pipeline = recorder.pipeline
    vllm = types.ModuleType("vllm")

    class LLM:
        def __init__(self, **kwargs):
            recorder.calls.append({"vllm_engine": kwargs})

        def chat(self, messages, sampling_params=None, use_tqdm=False):
            recorder.calls.append({"vllm_chat": len(messages), "messages": messages})
            out = types.SimpleNamespace(outputs=[types.SimpleNamespace(text=recorder.answer)])
            return [out for _ in messages]

    def sampling_params(**kwargs):
        recorder.calls.append({"vllm_sampling": kwargs})
        return kwargs

    vllm.LLM, vllm.SamplingParams = LLM, sampling_params
    openai = types.ModuleType("openai")

    class OpenAI:
        def __init__(self, **kwargs):
            def create(**request):
                recorder.calls.append({"openai_request": request})
                return types.SimpleNamespace(choices=[types.SimpleNamespace(
                    message=types.SimpleNamespace(content=recorder.answer))])

            self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=create))

    openai.OpenAI = OpenAI
    return {"torch": torch, "transformers": transformers, "vllm": vllm, "openai": openai}


def main():
    payload = json.loads(sys.stdin.read())
    refs, hyps, model_dir = payload["refs"], payload["hyps"], payload["model_dir"]
    recorder = _Recorder(payload["answer"])
    sys.modules.update(_fake_modules(recorder))
    from CRIMSON import utils
    from CRIMSON.generate_score import CRIMSONScore

    utils.resolve_model_for_vllm = lambda name: name  # the package's Hub snapshot lookup: no network here
    import CRIMSON.generate_score as generate_score

    generate_score.resolve_model_for_vllm = utils.resolve_model_for_vllm

    decoding = {}
    # HF, a model without its own generation config (the branch that passes the package's own kwargs).
    local = CRIMSONScore(api="hf", model_name=model_dir, device="cpu")
    recorder.calls.clear()
    local.evaluate(refs[0], hyps[0])
    decoding["hf_no_generation_config"] = recorder.calls[0]["generate"]
    system = recorder.calls[0]["messages"][0]
    local._has_generation_config = True
    recorder.calls.clear()
    local._chat_completion_batch(["p"], batch_size=1)
    decoding["hf_generation_config"] = recorder.calls[0]["generate"]
    recorder.calls.clear()
    CRIMSONScore(api="vllm", model_name=model_dir)
    decoding["vllm_engine"] = recorder.calls[0]["vllm_engine"]
    decoding["vllm_sampling"] = recorder.calls[1]["vllm_sampling"]
    openai = CRIMSONScore(api="openai")
    recorder.calls.clear()
    openai.evaluate(refs[0], hyps[0])
    request = recorder.calls[0]["openai_request"]

    default = CRIMSONScore(api="hf", device="cpu")  # model_name None: the package's default judge
    vllm_default = CRIMSONScore(api="vllm")
    prompts = {
        "local": [local._build_evaluation_prompt(r, h) for r, h in zip(refs, hyps)],
        "default": [default._build_evaluation_prompt(r, h) for r, h in zip(refs, hyps)],
        "vllm_default": [vllm_default._build_evaluation_prompt(r, h) for r, h in zip(refs, hyps)],
        "openai": [openai._build_evaluation_prompt(r, h) for r, h in zip(refs, hyps)],
        "context": [local._build_evaluation_prompt(refs[0], hyps[0], c) for c in payload["contexts"]],
        "context_default": [default._build_evaluation_prompt(refs[0], hyps[0], c) for c in payload["contexts"]],
    }

    # The reader and formula on every written answer, as evaluate_batch applies them (an exception: None).
    parsed = []
    for text in payload["outputs"]:
        try:
            result = CRIMSONScore._calculate_crimson(local, CRIMSONScore._parse_json_response(text))
        except Exception as exc:  # evaluate_batch: "[warn] sample failed", the result None
            parsed.append({"error": f"{type(exc).__name__}: {exc}"[:200]})
            continue
        parsed.append({"score": _plain(result["crimson_score"]), "error_counts": result["error_counts"],
                       "weighted": result["weighted_error_counts"], "terms": result["metrics"]})

    # evaluate_batch end to end on the written answers (one answer per call of the fake pipeline).
    answers = iter(payload["outputs"])

    def batch_answers(prompts, batch_size=1):
        return [next(answers) for _ in prompts]

    local._chat_completion_batch = batch_answers
    batch = local.evaluate_batch([refs[0]] * len(payload["outputs"]), [hyps[0]] * len(payload["outputs"]))
    print(json.dumps({
        "prompts": prompts, "system": system, "parsed": parsed,
        "batch": [None if r is None else _plain(r["crimson_score"]) for r in batch],
        "decoding": decoding, "request": request,
        "versions": {"crimson-score": importlib.metadata.version("crimson-score")}}))


if __name__ == "__main__":
    main()
