"""A tiny random Gemma-3 judge in the layout of ``rajpurkarlab/medgemma-4b-it-crimson`` (the CRIMSON judge).

MedGemma 4B (and its CRIMSON fine-tune) is a ``Gemma3ForConditionalGeneration`` checkpoint: config.json with
``model_type: gemma3``, a ``text_config`` (gemma3_text: sliding-window and global attention layers, query
pre-attention scaling, soft-capping off) and a ``vision_config`` (SigLIP), safetensors with the weights under the
original checkpoint names (``language_model.model.*``, ``vision_tower.vision_model.*``, ``multi_modal_projector.*``;
both transformers 4.57 and 5 map them onto their own module names when loading), a byte-fallback BPE
``tokenizer.json`` with Gemma's special tokens (``<pad>`` ``<eos>`` ``<bos>`` ``<unk>`` ``<start_of_turn>``
``<end_of_turn>`` ``<start_of_image>`` ``<end_of_image>`` ``<image_soft_token>``), tokenizer_config.json with
Gemma 3's chat template (``CHAT_TEMPLATE``, which folds a system message into the first user turn) and a
generation_config.json stopping at ``<eos>`` or ``<end_of_turn>``.

What differs from the real repository: sizes (hidden 64, 2 text layers, one tiny vision layer; a 1,500-piece
vocabulary with the special tokens at small ids instead of Gemma's 262,144), and generation_config.json, which here
asks for greedy decoding with a short ``max_new_tokens`` so a CPU test ends quickly (the real file's contents could
not be read offline; radeval then uses the file as given, and so does rexrank; see docs/radeval_metrics.md).
Random weights write gibberish, so a stand-in judge's outputs do not parse: the stand-in proves plumbing, prompts,
token ids and generation parity, never the real model's numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

from rexrank.testing.corpus import SENTENCES
from rexrank.testing.standin_green import start_build

MODEL_DIR = "medgemma-4b-it-crimson"
# Gemma's special tokens in Gemma's order; the stand-in puts them first (ids 0..8), before the byte pieces.
SPECIAL_TOKENS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
                  "<end_of_image>", "<image_soft_token>"]
BYTE_PIECES = [f"<0x{i:02X}>" for i in range(256)]
# Generation length written into the stand-in's generation_config.json (the real judge writes up to thousands).
MAX_NEW_TOKENS = {"small": 40, "real": 64}

# Gemma 3's chat template (google/gemma-3-*-it and google/medgemma-4b-it tokenizer_config.json).
CHAT_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
"""

SIZES = {
    "small": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, bpe_vocab=1500),
    "real": dict(hidden_size=256, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=64, bpe_vocab=4000),
}


def _training_text() -> list[str]:
    """Radiology sentences plus the CRIMSON prompt and its JSON answer vocabulary."""
    from rexrank.metrics.crimson_prompt import SYSTEM_MESSAGE, build_prompt

    lines = SENTENCES.splitlines() + [SYSTEM_MESSAGE]
    lines += build_prompt("Reference findings.", "Predicted findings.", guidelines=True).splitlines()
    return [line for line in lines if line.strip()] + [SENTENCES.lower(), SENTENCES.upper()]


def build_tokenizer(bpe_vocab: int):
    """A Gemma-style byte-fallback BPE ``tokenizers.Tokenizer`` ("▁" for spaces, no dummy prefix)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    text = _training_text()
    trainer_model = Tokenizer(models.BPE(unk_token="<unk>"))
    trainer_model.normalizer = normalizers.Replace(" ", "▁")
    alphabet = sorted({c for line in text for c in line.replace(" ", "▁")} | {"▁"})
    trainer = trainers.BpeTrainer(vocab_size=bpe_vocab, min_frequency=2, special_tokens=SPECIAL_TOKENS + BYTE_PIECES,
                                  initial_alphabet=alphabet, show_progress=False)
    trainer_model.train_from_iterator(text, trainer=trainer)
    trained = json.loads(trainer_model.to_str())["model"]
    vocab = dict(sorted(trained["vocab"].items(), key=lambda kv: kv[1]))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in trained["merges"]]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tokenizer.normalizer = normalizers.Replace(" ", "▁")
    tokenizer.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in SPECIAL_TOKENS])
    return tokenizer


def _checkpoint_name(name: str) -> str:
    """The original MedGemma checkpoint name of a parameter of transformers' Gemma3ForConditionalGeneration."""
    for new, old in (("model.language_model.", "language_model.model."), ("lm_head.", "language_model.lm_head."),
                     ("model.vision_tower.", "vision_tower.vision_model."), ("model.multi_modal_projector.", "multi_modal_projector.")):
        if name.startswith(new):
            return old + name[len(new):]
    return name


def build(out_dir: str | Path, size: str = "small", seed: int = 0) -> dict[str, str]:
    """Write the stand-in to ``out_dir/medgemma-4b-it-crimson`` and return {"crimson": path}."""
    import torch
    from safetensors.torch import save_file
    from tokenizers import processors
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration

    shape, bpe_vocab, _, target = start_build(SIZES, size, Path(out_dir) / MODEL_DIR)

    tokenizer = build_tokenizer(bpe_vocab)
    ids = {t: tokenizer.token_to_id(t) for t in SPECIAL_TOKENS}
    tokenizer.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A <bos> $B",
                                                             special_tokens=[("<bos>", ids["<bos>"])])
    tokenizer.save(str(target / "tokenizer.json"))
    vocab_size = tokenizer.get_vocab_size()

    added = {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                      "special": True} for t, i in ids.items()}
    special_map = {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>",
                   "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    (target / "tokenizer_config.json").write_text(json.dumps({
        "add_bos_token": True, "add_eos_token": False, "added_tokens_decoder": added, "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False, "extra_special_tokens": {k: special_map[k] for k in
                                                                        ("boi_token", "eoi_token", "image_token")},
        "model_max_length": 1000000000000000019884624838656, "padding_side": "left", "processor_class": "Gemma3Processor",
        "sp_model_kwargs": None, "spaces_between_special_tokens": False, "tokenizer_class": "GemmaTokenizer",
        "use_default_system_prompt": False, **{k: special_map[k] for k in ("bos_token", "eos_token", "pad_token",
                                                                           "unk_token")}}, indent=2))
    (target / "special_tokens_map.json").write_text(json.dumps(special_map, indent=2))

    text_config = dict(vocab_size=vocab_size, max_position_embeddings=131072, rms_norm_eps=1e-6, rope_theta=1000000.0,
                       rope_local_base_freq=10000.0, sliding_window=8,
                       # both kinds of Gemma-3 attention layer (the real model: five sliding per global one)
                       layer_types=["sliding_attention", "full_attention"] * (shape["num_hidden_layers"] // 2), query_pre_attn_scalar=shape["head_dim"],
                       hidden_activation="gelu_pytorch_tanh", rope_scaling={"factor": 8.0, "rope_type": "linear"},
                       pad_token_id=ids["<pad>"], bos_token_id=ids["<bos>"], eos_token_id=ids["<eos>"], **shape)
    config = Gemma3Config(
        text_config=text_config,
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                           image_size=28, patch_size=14, vision_use_head=False),
        mm_tokens_per_image=1, boi_token_index=ids["<start_of_image>"], eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"], tie_word_embeddings=True)
    torch.manual_seed(seed)
    model = Gemma3ForConditionalGeneration(config).eval()
    with torch.no_grad():  # wider random weights than the init's, so greedy outputs vary with the input
        for name, param in model.named_parameters():
            if param.dim() == 2:
                param.normal_(0.0, 0.02 if "embed" in name else 0.3)
    tensors = {_checkpoint_name(n): t.detach().to(torch.bfloat16).contiguous()
               for n, t in model.state_dict().items() if not n.startswith("lm_head.")}  # tied to the embeddings
    save_file(tensors, str(target / "model.safetensors"), metadata={"format": "pt"})

    # config.json written as the 4.x checkpoint has it (architectures, bf16, nested configs with their model types).
    cfg = config.to_dict()
    cfg["architectures"] = ["Gemma3ForConditionalGeneration"]
    for key in ("dtype", "torch_dtype"):
        cfg.pop(key, None)
        cfg["text_config"].pop(key, None)
        cfg["vision_config"].pop(key, None)
    cfg["torch_dtype"] = "bfloat16"
    # transformers 5 writes the rotary settings as rope_parameters per layer type; 4.x (and the real file) as
    # rope_theta (global layers), rope_local_base_freq (sliding layers) and rope_scaling. 5.x reads the 4.x keys.
    rope = cfg["text_config"].pop("rope_parameters", None)
    if rope is not None:
        full = dict(rope["full_attention"])
        cfg["text_config"]["rope_theta"] = full.pop("rope_theta")
        cfg["text_config"]["rope_local_base_freq"] = rope["sliding_attention"]["rope_theta"]
        cfg["text_config"]["rope_scaling"] = full
    (target / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True))
    (target / "generation_config.json").write_text(json.dumps({
        "bos_token_id": ids["<bos>"], "do_sample": False, "eos_token_id": [ids["<eos>"], ids["<end_of_turn>"]],
        "max_new_tokens": MAX_NEW_TOKENS[size], "pad_token_id": ids["<pad>"], "transformers_version": "4.57.1"},
        indent=2))
    return {"crimson": str(target)}
