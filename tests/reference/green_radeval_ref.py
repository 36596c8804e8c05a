"""Reference for GREEN parity: radeval 2.2.1's GREEN (PyPI; radeval/metrics/green_score), run in .venv-ref on
transformers 4.57, plus the one point where radeval differs from the official Stanford-AIMI/GREEN, pinned below.

Everything that decides a token or a count is radeval's own code: ``GREEN(model_dir, cpu=True)`` loads the model
(float32 on CPU) and the tokenizer with its settings (add_eos_token=True, use_fast, padding_side="left",
pad = eos, clean_up_tokenization_spaces) and chat template; ``GREEN.__call__(refs, hyps)`` runs its ``make_prompt``
(300-word cut), chat rendering, batches of 8, ``tokenizer(..., truncation=True, max_length=GREEN.max_length)``,
greedy ``generate(max_length=GREEN.max_length)``, ``batch_decode(skip_special_tokens=True)``,
``clean_responses``, ``compute_green`` and ``parse_error_counts``.

radeval 2.2.1 against Stanford-AIMI/GREEN @d72c195 (green_score/utils.py, green_score/green.py), compared statement
by statement:
- identical: ``make_prompt`` and ``clean_responses`` (same syntax trees), the tokenizer settings, the chat
  messages, batch size 8, max_length 2048, greedy decoding, the section regex, the "No" rule, the (a)-(f) / (1)-(6)
  sub-category parsing and ``compute_green``;
- same rendering, different text: radeval writes the chat template's newlines as ``\\n`` escapes inside the Jinja
  string literals, the official code as real newlines; both render the same chat text (checked here against the
  official text, ``OFFICIAL_CHAT_TEMPLATE``);
- no effect on greedy outputs: the official generate() also passes temperature=None, top_p=None; the official
  loads fp16 even on CPU, radeval fp32 on CPU (rexrank's dtype="auto" is fp32 on CPU; both sides run fp32 here);
- DIFFERENT: the [Matched Findings] count. Official: ``re.findall(r"^\\b\\d+\\b(?=\\.)", body)`` (the number must
  open the section body); radeval adds ``re.MULTILINE`` (a number opening any later line counts). rexrank follows
  the official code (docs/green.md); ``official_matched`` below is the official rule, pinned from d72c195.

What this script adds: ``GREEN.max_length`` set per run (a small prompt+output budget instead of 2048, for speed; it
is radeval's own attribute and drives both truncation and generation exactly as 2048 does); a wrapper on
``model.generate`` that records the token ids radeval feeds it (with ``"generate": false`` it returns them unchanged,
i.e. no new tokens, to read the tokenisation alone); ``nltk.download`` stubbed (radeval.utils fetches punkt_tab at
import; GREEN does not use it).

stdin: {"model_dir", "refs": [...], "hyps": [...], "runs": [{"max_length": int, "generate": bool}], "parse": [...]}
stdout (last line): {"prompts": [...], "runs": [{"input_ids", "analyses", "scores", "significant", "matched"}],
                     "parse": [{"radeval": {...}, "official": {...}}], "chat_template_official": bool, "versions"}
"""

import importlib.metadata
import json
import re
import sys

# Stanford-AIMI/GREEN @d72c195 green_score/green.py: the chat template the official GREEN installs (real newlines).
OFFICIAL_CHAT_TEMPLATE = (
    "{% for message in messages %}\n{% if message['from'] == 'human' %}\n{{ '<|user|>\n' + message['value'] + "
    "eos_token }}\n{% elif message['from'] == 'system' %}\n{{ '<|system|>\n' + message['value'] + eos_token }}\n"
    "{% elif message['from'] == 'gpt' %}\n{{ '<|assistant|>\n'  + message['value'] + eos_token }}\n{% endif %}\n"
    "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}"
)


def official_matched(text):
    """Stanford-AIMI/GREEN @d72c195 GREEN.parse_error_counts(text, "Matched Findings"): the section body up to the
    first blank line; 0 if absent or starting with "No"; else the number that opens the body (no re.MULTILINE)."""
    found = re.search(r"\[Matched Findings\]:\s*(.*?)(?:\n\s*\n|\Z)", text, re.DOTALL)
    if not found or found.group(1).startswith("No"):
        return 0
    counts = re.findall(r"^\b\d+\b(?=\.)", found.group(1))
    return int(counts[0]) if counts else 0


def main():
    payload = json.loads(sys.stdin.read())
    import nltk

    nltk.download = lambda *args, **kwargs: True
    import torch

    torch.set_num_threads(1)
    from radeval.metrics.green_score.green import GREEN

    green = GREEN(payload["model_dir"], cpu=True)
    tok = green.tokenizer
    original_generate = green.model.generate
    recorded = []
    mode = {"generate": True}

    def recording_generate(**kwargs):
        ids, mask = kwargs["input_ids"], kwargs["attention_mask"]
        recorded.extend([t for t, m in zip(row, keep) if m] for row, keep in zip(ids.tolist(), mask.tolist()))
        return original_generate(**kwargs) if mode["generate"] else ids

    green.model.generate = recording_generate

    runs = []
    for run in payload["runs"]:
        recorded.clear()
        green.max_length = run["max_length"]
        mode["generate"] = run["generate"]
        _, _, scores, frame = green(payload["refs"], payload["hyps"])
        sig = [green.parse_error_counts(a, green.categories[0])[1] for a in green.completions]
        runs.append({"max_length": run["max_length"], "input_ids": list(recorded),
                     "analyses": list(green.completions) if run["generate"] else None,
                     "scores": [None if s is None else float(s) for s in scores], "significant": sig,
                     "matched": [int(x) for x in frame["Matched Findings"]]})
    prompts = list(green.dataset["prompt"])

    # The official template renders what radeval's renders, for every prompt.
    chats = [[{"from": "human", "value": p}, {"from": "gpt", "value": ""}] for p in prompts]
    ours = [tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in chats]
    official = [tok.apply_chat_template(c, chat_template=OFFICIAL_CHAT_TEMPLATE, tokenize=False,
                                        add_generation_prompt=True) for c in chats]

    parsed = []
    for text in payload.get("parse", []):
        sig_total, sig = green.parse_error_counts(text, green.categories[0])
        _, insig = green.parse_error_counts(text, green.categories[1])
        matched, _ = green.parse_error_counts(text, green.categories[2])
        off_matched = official_matched(text)
        official_score = 0 if off_matched == 0 else off_matched / (off_matched + sum(sig))
        parsed.append({"radeval": {"significant": sig, "insignificant": insig, "matched": matched,
                                   "score": green.compute_green(text)},
                       "official": {"significant": sig, "insignificant": insig, "matched": off_matched,
                                    "score": official_score}})
    print(json.dumps({"prompts": prompts, "runs": runs, "parse": parsed, "chat_template_official": ours == official,
                      "versions": {name: importlib.metadata.version(name) for name in
                                   ("radeval", "transformers", "torch")}}))


if __name__ == "__main__":
    main()
