"""Reference for GREEN parity, run in .venv-ref (transformers 4.x): the official tokenizer and generation settings.

Reproduces what Stanford-AIMI/GREEN @d72c195 green_score/green.py does with a model directory (written for rexrank,
following the upstream calls): AutoTokenizer(add_eos_token=True, use_fast=True, padding_side="left"), the GREEN chat
template, pad = eos, apply_chat_template(tokenize=False, add_generation_prompt=True), batch_encode_plus(padding=True,
truncation=True, max_length=2048) in batches of 8; optionally fp32 greedy generate(max_length=2048) and
batch_decode(skip_special_tokens=True) followed by the clean_responses rules.

stdin: {"model_dir", "prompts": [...], "chat_template", "generate": bool, "batch_size": 8, "max_length": 2048}
stdout (last line): {"input_ids": [[...]], "attention_mask": [[...]], "analyses": [...] | null}
"""

import json
import sys


def clean(response: str) -> str:
    # The clean_responses rules: analysis after the last <|assistant|> / [Explanation]:, minus </s> and <unk>.
    if "[Explanation]:" in response:
        if "<|assistant|>" in response:
            response = response.rsplit("<|assistant|>", 1)[-1]
        if "[Explanation]:\n    <Explanation>\n" in response:
            response = response.split("[Explanation]:")[1]
        else:
            response = response.rsplit("[Explanation]:", 1)[-1]
    if "<|assistant|>" in response:
        response = response.rsplit("<|assistant|>", 1)[-1]
    return response.replace("</s>", "").replace("<unk>", "")


def main() -> None:
    payload = json.loads(sys.stdin.read())
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(payload["model_dir"], add_eos_token=True, use_fast=True,
                                        trust_remote_code=True, padding_side="left")
    tok.chat_template = payload["chat_template"]
    tok.pad_token = tok.eos_token
    tok.clean_up_tokenization_spaces = True
    model = None
    if payload.get("generate"):
        model = AutoModelForCausalLM.from_pretrained(payload["model_dir"], torch_dtype=torch.float32).eval()
    size, max_length = payload.get("batch_size", 8), payload.get("max_length", 2048)
    input_ids, masks, analyses = [], [], []
    prompts = payload["prompts"]
    for start in range(0, len(prompts), size):
        chats = [tok.apply_chat_template([{"from": "human", "value": p}, {"from": "gpt", "value": ""}],
                                         tokenize=False, add_generation_prompt=True)
                 for p in prompts[start:start + size]]
        batch = tok.batch_encode_plus(chats, return_tensors="pt", padding=True, truncation=True,
                                      max_length=max_length)
        for row, mask in zip(batch["input_ids"].tolist(), batch["attention_mask"].tolist()):
            input_ids.append([t for t, m in zip(row, mask) if m])
            masks.append(mask)
        if model is not None:
            with torch.inference_mode():
                out = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                     eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                                     max_length=max_length, do_sample=False, temperature=None, top_p=None)
            analyses.extend(clean(r) for r in tok.batch_decode(out, skip_special_tokens=True))
    print(json.dumps({"input_ids": input_ids, "attention_mask": masks, "analyses": analyses if model else None}))


if __name__ == "__main__":
    main()
