"""Reference for CRIMSON parity: radeval 2.2.1's own CRIMSON (PyPI; radeval/metrics/crimson), run in .venv-ref on
transformers 4.57.

Everything that decides a prompt, a token, an answer or a score is radeval's code: ``CRIMSONScore(provider="hf",
model_name=model_dir)`` loads the judge with ``transformers.pipeline("text-generation", ..., torch_dtype=bfloat16,
device_map="auto")``, left padding, and picks its decoding branch from the model's generation config;
``scorer(refs, hyps)`` builds each prompt (``_build_evaluation_prompt``), sends the system message and the prompt
through the pipeline (``_hf_generate``, repetition penalty 1.1), parses the answer (``_parse_response``: JSON
extraction, ``parse_json_response``'s repairs, closing a cut-off object, the key check, ``_calculate_crimson``),
retries up to 3 attempts, and aggregates (``_aggregate``).

What this script adds: a wrapper on the pipeline model's ``generate`` that records the token ids radeval feeds it
and the ids it gets back (the first attempt of each pair; radeval retries an unparsable answer), and a wrapper on
``_hf_generate`` recording each answer text; ``nltk.download`` stubbed (radeval.utils fetches punkt_tab at import;
CRIMSON does not use it). Prompts for the other branches (the default judge's id, the OpenAI provider, a patient
context) come from radeval's ``_build_evaluation_prompt`` on a scorer whose provider and model name are set as its
constructor sets them (no second model load).

stdin: {"model_dir", "refs", "hyps", "outputs": [judge texts], "contexts": [{...}]}
stdout (last line): {"prompts": {"local", "default", "openai", "context"}, "input_ids", "output_ids", "answers",
                     "scores", "mean", "std", "frame", "parsed": [...], "request", "versions"}
"""

import importlib.metadata
import json
import math
import sys


def _plain(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def main():
    payload = json.loads(sys.stdin.read())
    import nltk

    nltk.download = lambda *args, **kwargs: True
    import torch

    torch.set_num_threads(1)
    from radeval.metrics.crimson.crimson import CRIMSONScore

    refs, hyps = payload["refs"], payload["hyps"]
    scorer = CRIMSONScore(provider="hf", model_name=payload["model_dir"])
    model = scorer.pipe.model
    original_generate = model.generate
    calls = []

    def recording_generate(*args, **kwargs):
        out = original_generate(*args, **kwargs)
        ids = kwargs["input_ids"] if "input_ids" in kwargs else args[0]
        calls.append((ids[0].tolist(), out[0, ids.shape[1]:].tolist()))
        return out

    model.generate = recording_generate
    original_hf_generate = scorer._hf_generate
    answers = []

    def recording_hf_generate(prompt):
        answers.append(original_hf_generate(prompt))
        return answers[-1]

    scorer._hf_generate = recording_hf_generate
    prompts_local = [scorer._build_evaluation_prompt(r, h) for r, h in zip(refs, hyps)]

    # One pair at a time, as radeval runs them, to know which recorded call is each pair's first attempt.
    first_calls, first_answers = [], []
    for ref, hyp in zip(refs, hyps):
        calls.clear()
        answers.clear()
        scorer._evaluate_one(ref, hyp)
        first_calls.append(calls[0])
        first_answers.append(answers[0])
    mean, std, scores, frame = scorer(refs, hyps)

    # The other prompt branches, from radeval's own builder with the constructor's settings for each.
    scorer.model_name = CRIMSONScore.DEFAULT_HF_MODEL
    prompts_default = [scorer._build_evaluation_prompt(r, h) for r, h in zip(refs, hyps)]
    scorer.provider, scorer.model_name = "openai", CRIMSONScore.DEFAULT_OPENAI_MODEL
    prompts_openai = [scorer._build_evaluation_prompt(r, h) for r, h in zip(refs, hyps)]
    request = scorer._build_request(refs[0], hyps[0])
    prompts_context = [scorer._build_evaluation_prompt(refs[0], hyps[0], patient_context=c)
                       for c in payload["contexts"]]
    scorer.provider, scorer.model_name = "hf", CRIMSONScore.DEFAULT_HF_MODEL
    prompts_context_default = [scorer._build_evaluation_prompt(refs[0], hyps[0], patient_context=c)
                               for c in payload["contexts"]]

    parsed = []
    for text in payload["outputs"]:
        try:
            result = scorer._parse_response(text)
        except Exception as exc:  # radeval's _evaluate_one catches everything and retries, then scores NaN
            parsed.append({"error": f"{type(exc).__name__}: {exc}"[:200]})
            continue
        parsed.append({"score": _plain(result["crimson_score"]), "error_counts": result["error_counts"],
                       "weighted": result["weighted_error_counts"], "terms": result["metrics"]})

    print(json.dumps({
        "prompts": {"local": prompts_local, "default": prompts_default, "openai": prompts_openai,
                    "context": prompts_context, "context_default": prompts_context_default},
        "input_ids": [c[0] for c in first_calls], "output_ids": [c[1] for c in first_calls],
        "answers": first_answers, "scores": [_plain(s) for s in scores], "mean": mean, "std": std,
        "frame": json.loads(frame.to_json(orient="records")), "parsed": parsed,
        "request": {k: v for k, v in request.items() if k != "messages"} | {"messages": request["messages"]},
        "has_generation_config": scorer._has_generation_config,
        "versions": {"radeval": importlib.metadata.version("radeval"),
                     "transformers": importlib.metadata.version("transformers")}}))


if __name__ == "__main__":
    main()
