"""Stand-in for RadEval-BERTScore's encoder, IAMJB/RadEvalModernBERT: a ModernBERT folder in that layout.

The folder holds what the Hub repo holds and both transformers 4.57 (radeval's reference run) and 5.x read alike:
- ``config.json`` of a ``ModernBertForMaskedLM`` with 22 layers (ModernBERT-base's count, which radeval's
  ``num_layers=22`` requires), written in the 4.x key style (``global_attn_every_n_layers``, ``global_rope_theta``,
  ``local_rope_theta``, ``local_attention``) that 5.x converts on load; tiny widths; a local attention window of 8
  tokens so the sliding-window layers really differ from the global ones on report-length inputs;
- ``model.safetensors`` with the masked-LM checkpoint's keys (``model.`` encoder, ``head.``, ``decoder.bias``);
- ``tokenizer.json`` (byte-level BPE trained on rexrank's built-in corpus, no prefix space, ``[CLS] $A [SEP]``
  post-processing, as ModernBERT's) and a minimal ``tokenizer_config.json`` (PreTrainedTokenizerFast, its
  ``model_max_length`` 8192). Written by hand, never with ``save_pretrained`` (tokenizers_offline.py says why).

Weights come from our own seeded generator in sorted key order (standin_text's rule), so a (size, seed) pair gives
byte-identical files under any transformers version. A stand-in proves plumbing and parity, never the real numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rexrank.testing.corpus import SENTENCES

SIZES = {
    "small": dict(hidden_size=32, intermediate_size=64, num_attention_heads=2, local_attention=8),
    "real": dict(hidden_size=768, intermediate_size=1152, num_attention_heads=12, local_attention=128),
}
LAYERS = 22  # radeval's RadEvalBertScoreMetric passes num_layers=22: the model must have at least that many
SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
BPE_VOCAB = {"small": 1000, "real": 4000}


def _tokenizer(folder: Path, vocab_size: int) -> dict[str, int]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=1, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    lines = SENTENCES.splitlines() + [SENTENCES.lower(), SENTENCES.upper()]
    tok.train_from_iterator(lines, trainer=trainer)
    ids = {t: tok.token_to_id(t) for t in SPECIALS}
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
    tok.save(str(folder / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192, "clean_up_tokenization_spaces": True,
              "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]",
              "unk_token": "[UNK]", "model_input_names": ["input_ids", "attention_mask"]}
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    ids["vocab_size"] = tok.get_vocab_size()
    return ids


def _config(size: str, ids: dict[str, int]) -> dict:
    return {
        "architectures": ["ModernBertForMaskedLM"], "model_type": "modernbert", "vocab_size": ids["vocab_size"],
        "num_hidden_layers": LAYERS, "hidden_activation": "gelu", "max_position_embeddings": 8192,
        "norm_eps": 1e-05, "norm_bias": False, "global_rope_theta": 160000.0, "local_rope_theta": 10000.0,
        "global_attn_every_n_layers": 3, "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False,
        "mlp_dropout": 0.0, "embedding_dropout": 0.0, "decoder_bias": True, "tie_word_embeddings": True,
        "classifier_pooling": "mean", "initializer_range": 0.02, "torch_dtype": "float32",
        "pad_token_id": ids["[PAD]"], "bos_token_id": ids["[CLS]"], "eos_token_id": ids["[SEP]"],
        "cls_token_id": ids["[CLS]"], "sep_token_id": ids["[SEP]"], **SIZES[size],
    }


def _weights(config: dict, seed: int) -> dict[str, torch.Tensor]:
    from transformers import AutoConfig, ModernBertForMaskedLM

    cfg = AutoConfig.for_model(**{k: v for k, v in config.items() if k not in ("architectures", "model_type")},
                               model_type="modernbert")
    with torch.device("meta"):
        shapes = {k: v.shape for k, v in ModernBertForMaskedLM(cfg).state_dict().items()}
    shapes.pop("decoder.weight", None)  # tied to the token embeddings, not stored
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for name in sorted(shapes):
        shape = shapes[name]
        if "norm" in name:
            tensor = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith("bias"):
            tensor = 0.02 * torch.randn(shape, generator=gen)
        elif "embeddings" in name:
            tensor = 0.3 * torch.randn(shape, generator=gen)
        else:
            tensor = (1.7 / shape[1] ** 0.5) * torch.randn(shape, generator=gen)
        out[name] = tensor.contiguous()
    return out


def build(out: Path, size: str = "small", seed: int = 0) -> dict[str, str]:
    """Returns {"radeval_bertscore": folder}."""
    from safetensors.torch import save_file

    folder = Path(out) / "RadEvalModernBERT"
    folder.mkdir(parents=True, exist_ok=True)
    ids = _tokenizer(folder, BPE_VOCAB[size])
    config = _config(size, ids)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(_weights(config, seed), str(folder / "model.safetensors"), metadata={"format": "pt"})
    return {"radeval_bertscore": str(folder)}
