"""A tiny random Llama in the layout of ``StanfordAIMI/GREEN-RadLlama2-7b`` (the GREEN judge model).

What the real repository holds (Hub file listing of StanfordAIMI/GREEN-RadLlama2-7b and its PrunaAI mirrors, read
2025): config.json (LlamaForCausalLM, vocab 32000, hidden 4096, 32 layers, 32 heads, bos 1, eos 2, bfloat16),
generation_config.json (183 bytes, Llama-2 style), sharded safetensors with model.safetensors.index.json,
special_tokens_map.json, tokenizer.model (SentencePiece), added_tokens.json and tokenizer_config.json.

The stand-in keeps the same config keys, special tokens (<unk>=0, <s>=1, </s>=2, byte-fallback pieces <0x00>..<0xFF>
at ids 3..258 as in Llama-2) and generation_config, and writes the tokenizer as a Llama-2-style ``tokenizer.json``
(BPE with byte fallback, "▁" word-boundary normaliser, the decoder chain of Llama-2's tokenizer.json) trained
offline with the ``tokenizers`` library, because SentencePiece models cannot be trained reproducibly here in a few
milliseconds. The contents of the real added_tokens.json could not be read offline: the stand-in adds none.
The chat template stored in tokenizer_config.json is the one the official GREEN code installs at load time
(rexrank installs it itself anyway, so a repository's own template never matters).

Random weights: the model writes gibberish, so every GREEN parse of a stand-in output fails (a counted NaN).
"""

from __future__ import annotations

import json
from pathlib import Path

from rexrank.testing.corpus import SENTENCES

# Llama-2 special tokens and byte-fallback pieces (meta-llama/Llama-2-7b-hf tokenizer.json): ids 0..258.
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>"]
BYTE_PIECES = [f"<0x{i:02X}>" for i in range(256)]

# (hidden, intermediate, layers, heads, tokenizer vocab, model vocab). "real" keeps the real vocabulary size;
# the 7B shape itself (hidden 4096, 32 layers) cannot be built or run on CPU here, so "real" is a benchmark size.
SIZES = {
    "small": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, bpe_vocab=1200),
    "real": dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=4, num_attention_heads=8, bpe_vocab=4000,
                 vocab_size=32000),
}


def _training_text() -> list[str]:
    """Radiology sentences plus the GREEN prompt and answer vocabulary, so prompts tokenize into real-looking pieces."""
    from rexrank.metrics.green import CHAT_TEMPLATE, make_prompt

    lines = SENTENCES.splitlines()
    lines += make_prompt("Reference report.", "Candidate report.").splitlines()
    lines += CHAT_TEMPLATE.splitlines()
    lines += [
        "[Explanation]:", "[Clinically Significant Errors]:", "[Clinically Insignificant Errors]:",
        "[Matched Findings]:",
        "(a) False report of a finding in the candidate: 0.", "(b) Missing a finding present in the reference: 1.",
        "(c) Misidentification of a finding's anatomic location/position: 2.",
        "(d) Misassessment of the severity of a finding: 3.",
        "(e) Mentioning a comparison that isn't in the reference: 4.",
        "(f) Omitting a comparison detailing a change from a prior study: 5.",
        "The candidate report has several discrepancies when compared to the reference report.",
        "<|user|> <|assistant|> <|system|>",
    ]
    return [line for line in lines if line.strip()] + [SENTENCES.lower(), SENTENCES.upper()]


def build_tokenizer(bpe_vocab: int, total_vocab: int | None = None):
    """A Llama-2-style byte-fallback BPE ``tokenizers.Tokenizer`` (deterministic for given sizes)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, trainers

    # Train on "▁"-joined words, as Llama's normaliser presents text to the model.
    trainer_model = Tokenizer(models.BPE(unk_token="<unk>"))
    trainer_model.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    alphabet = sorted({c for line in _training_text() for c in line.replace(" ", "▁")} | {"▁"})
    trainer = trainers.BpeTrainer(vocab_size=bpe_vocab, min_frequency=2, special_tokens=SPECIAL_TOKENS + BYTE_PIECES,
                                  initial_alphabet=alphabet, show_progress=False)
    trainer_model.train_from_iterator(_training_text(), trainer=trainer)
    trained = json.loads(trainer_model.to_str())["model"]
    vocab: dict[str, int] = dict(sorted(trained["vocab"].items(), key=lambda kv: kv[1]))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in trained["merges"]]
    if total_vocab is not None:
        # Filler pieces up to the real vocabulary size: decodable, never produced by encoding (no merges reach them).
        for i in range(total_vocab - len(vocab)):
            vocab[f"▁<filler{i}>"] = len(vocab)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                           decoders.Strip(" ", 1, 0)])
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in SPECIAL_TOKENS])
    return tokenizer


def start_build(sizes: dict[str, dict], size: str, target: Path) -> tuple[dict, int, int | None, Path]:
    """The opening every stand-in judge's build shares (this one and standin_gemma3's): ``size`` checked against
    ``sizes``, its model shape without the tokenizer's sizes, the BPE vocabulary, the model vocabulary (None: the
    tokenizer's) and ``target``, created."""
    if size not in sizes:
        raise ValueError(f"Unknown size {size!r}. Available: {', '.join(sizes)}")
    shape = dict(sizes[size])
    bpe_vocab = shape.pop("bpe_vocab")
    total_vocab = shape.pop("vocab_size", None)
    target.mkdir(parents=True, exist_ok=True)
    return shape, bpe_vocab, total_vocab, target


def build(out_dir: str | Path, size: str = "small", seed: int = 0) -> dict[str, str]:
    """Write the stand-in to ``out_dir/GREEN-RadLlama2-7b`` and return {"green": path}."""
    import torch
    from tokenizers import processors
    from transformers import LlamaConfig, LlamaForCausalLM

    from rexrank.metrics.green import CHAT_TEMPLATE

    shape, bpe_vocab, total_vocab, target = start_build(SIZES, size, Path(out_dir) / "GREEN-RadLlama2-7b")

    tokenizer = build_tokenizer(bpe_vocab, total_vocab)
    # Llama-2's tokenizer.json post-processor: BOS only (GREEN adds EOS through add_eos_token=True at load time).
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    tokenizer.save(str(target / "tokenizer.json"))
    vocab_size = tokenizer.get_vocab_size()

    # Keys as in the real tokenizer_config/special_tokens_map of a Llama-2 fine-tune (transformers 4.38 era).
    added = {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                      "special": True} for i, t in enumerate(SPECIAL_TOKENS)}
    (target / "tokenizer_config.json").write_text(json.dumps({
        "add_bos_token": True, "add_eos_token": False, "added_tokens_decoder": added, "bos_token": "<s>",
        "chat_template": CHAT_TEMPLATE, "clean_up_tokenization_spaces": False, "eos_token": "</s>", "legacy": True,
        "model_max_length": 4096, "pad_token": None, "padding_side": "right", "sp_model_kwargs": {},
        "tokenizer_class": "LlamaTokenizer", "unk_token": "<unk>", "use_default_system_prompt": False}, indent=2))
    (target / "special_tokens_map.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}, indent=2))

    config = LlamaConfig(
        vocab_size=vocab_size, max_position_embeddings=4096, hidden_act="silu", rms_norm_eps=1e-5, rope_theta=10000.0,
        bos_token_id=1, eos_token_id=2, pad_token_id=None, tie_word_embeddings=False, attention_bias=False,
        num_key_value_heads=shape["num_attention_heads"], use_cache=False, **shape)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(target, safe_serialization=True)
    # Llama-2 base generation_config (sampling defaults that GREEN overrides with do_sample=False).
    (target / "generation_config.json").write_text(json.dumps({
        "bos_token_id": 1, "do_sample": True, "eos_token_id": 2, "max_length": 4096, "pad_token_id": 0,
        "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.38.0.dev0"}, indent=2))
    return {"green": str(target)}
