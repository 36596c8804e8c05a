"""Stand-ins for RaTEScore's two models, in the real Hub layouts, with seeded random weights.

- NER (``Angelakeke/RaTE-NER-Deberta``): a DeBERTa-v2 (v3-style) token classifier with the 11 IOB labels over
  ABNORMALITY, NON-ABNORMALITY, DISEASE, NON-DISEASE, ANATOMY. The real folder holds config.json,
  model.safetensors, spm.model, tokenizer.json, tokenizer_config.json, special_tokens_map.json and
  added_tokens.json (Hub file listing of Angelakeke/RaTE-NER-Deberta). We write everything but spm.model: a
  hand-built Unigram ``tokenizer.json`` with DeBERTa-v3's special tokens ([PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3),
  which both transformers 4.57 and 5.x load identically. The official code skips tokens by the strings "[CLS]" and
  "[SEP]" (RaTEScore 0.5.0/0.6.0 utils.post_process), so those names matter.
- Entity encoder (``FremyCompany/BioLORD-2023-C``): an MPNet model (sentence-transformers layout; RaTEScore
  loads it with AutoModel/AutoTokenizer and takes the last-layer [CLS] = ``<s>`` vector) with an MPNet WordPiece
  ``vocab.txt`` written by hand.

Departures from plain random init, so the stand-ins exercise the metric (METRICS.md, "Stand-in facts"):
- the classifier is scaled up (token-dependent labels) and its biases calibrated (O ~70%, every entity label
  present) so an IU-Xray report gets about 8 entities of all five types;
- LayerNorm weights and biases are drawn widely, so entity [CLS] cosines spread out instead of all being ~1.

Weights come from our own generator in sorted key order and config.json is written by hand, so a (size, seed)
pair gives identical files under any transformers version. ``small`` = tiny; ``real`` = deberta-v3-base /
mpnet-base sizes (benchmarks). A stand-in proves plumbing and parity on identical weights, never real numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rexrank.testing.corpus import SENTENCES, characters, words

# Label names and order of the real model's config id2label: the entity types are the keys of RaTEScore's
# affinity matrices (scorer.py DEFAULT_MATRIX, upper-cased) behind "B-"/"I-" (utils.post_process strips label[2:]);
# the id order follows the RaTE-NER label map as published with the dataset. Our metric reads id2label from
# config.json, so the order never changes a score.
NER_LABELS = ["B-ABNORMALITY", "I-ABNORMALITY", "B-NON-ABNORMALITY", "I-NON-ABNORMALITY", "B-DISEASE", "I-DISEASE",
              "B-NON-DISEASE", "I-NON-DISEASE", "B-ANATOMY", "I-ANATOMY", "O"]

# DeBERTa-v3 special tokens and ids (microsoft/deberta-v3-base spm.model: [PAD]=0, [CLS]=1, [SEP]=2, [UNK]=3).
DEBERTA_SPECIALS = ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]
# MPNet tokenizer specials (microsoft/mpnet-base and BioLORD-2023-C tokenizer_config / vocab.txt head).
MPNET_HEAD = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]"]

DEBERTA_SIZES = {  # microsoft/deberta-v3-base config.json
    "small": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64),
    "real": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}
DEBERTA_VOCAB = {"small": None, "real": 128100}
MPNET_SIZES = {  # microsoft/mpnet-base (BioLORD-2023-C's backbone) config.json
    "small": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64),
    "real": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}
MPNET_VOCAB = {"small": None, "real": 30527}

# Label rates the classifier biases are calibrated to on the built-in corpus ("O" = O, "B-"/"I-" = each such label).
LABEL_RATES = {"O": 0.70, "B-": 0.04, "I-": 0.02}


def _pieces() -> list[str]:
    """Subword pieces for both tokenizers: corpus words (lower and capitalised) and their 2-4 letter fragments."""
    base = [w for w in words() if w.isalnum()]
    seen: dict[str, None] = {}
    for w in base + [w.capitalize() for w in base if w.isalpha()]:
        seen.setdefault(w, None)
    for w in base:
        for n in (2, 3, 4):
            for i in range(len(w) - n + 1):
                seen.setdefault(w[i:i + n], None)
    return list(seen)


def write_deberta_tokenizer(directory: Path, model_max_length: int = 512) -> tuple[int, int]:
    """tokenizer.json (Unigram + Metaspace, [CLS] $A [SEP]) and configs. Returns (vocab size, [MASK] id)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    vocab: list[tuple[str, float]] = [(t, 0.0) for t in DEBERTA_SPECIALS]
    seen = set(DEBERTA_SPECIALS)

    def add(piece: str, score: float) -> None:
        if piece not in seen:
            seen.add(piece)
            vocab.append((piece, score))

    # Unigram picks the segmentation with the highest summed log-probability: whole words beat fragments, which
    # beat single characters, so unseen words split into a few pieces as a trained sentencepiece model does.
    for piece in _pieces():
        add("\u2581" + piece, -2.0 - 0.1 * (8 - min(len(piece), 8)))
        add(piece, -4.0 - 0.1 * (8 - min(len(piece), 8)))
    add("\u2581", -6.0)
    for ch in characters():
        add("\u2581" + ch, -8.0)
        add(ch, -9.0)
    mask_id = len(vocab)
    vocab.append(("[MASK]", 0.0))

    tok = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")])
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    from tokenizers import AddedToken

    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in DEBERTA_SPECIALS + ["[MASK]"]])
    tok.save(str(directory / "tokenizer.json"))
    specials = {"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "[UNK]", "sep_token": "[SEP]",
                "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}
    config = {"tokenizer_class": "DebertaV2Tokenizer", "do_lower_case": False, "split_by_punct": False,
              "vocab_type": "spm", "model_max_length": model_max_length, **specials}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (directory / "special_tokens_map.json").write_text(json.dumps(specials, indent=2) + "\n")
    (directory / "added_tokens.json").write_text(json.dumps({"[MASK]": mask_id}) + "\n")
    return len(vocab), mask_id


def write_mpnet_tokenizer(directory: Path, model_max_length: int = 512) -> int:
    """MPNet WordPiece vocab.txt (lower-cased) + tokenizer_config.json. Returns the vocabulary size."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    chars = list(dict.fromkeys(c.lower() for c in characters()))
    vocab = MPNET_HEAD + chars + ["##" + c for c in chars if c.isalnum()]
    seen = set(vocab)
    for piece in _pieces():
        for entry in (piece.lower(), "##" + piece.lower()):
            if entry not in seen:
                seen.add(entry)
                vocab.append(entry)
    vocab.append("<mask>")  # last, as in the real MPNet vocabulary
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    specials = {"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
                "unk_token": "[UNK]", "pad_token": "<pad>", "mask_token": "<mask>"}
    config = {"tokenizer_class": "MPNetTokenizer", "do_lower_case": True, "strip_accents": None,
              "tokenize_chinese_chars": True, "model_max_length": model_max_length, **specials}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (directory / "special_tokens_map.json").write_text(json.dumps(specials, indent=2) + "\n")
    return len(vocab)


def _deberta_config(size: str, vocab_size: int) -> dict:
    # microsoft/deberta-v3-base config.json, with our sizes and RaTE-NER's labels.
    return {
        "architectures": ["DebertaV2ForTokenClassification"], "model_type": "deberta-v2",
        "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "initializer_range": 0.02, "layer_norm_eps": 1e-7, "max_position_embeddings": 512,
        "max_relative_positions": -1, "norm_rel_ebd": "layer_norm", "pad_token_id": 0,
        "pooler_dropout": 0, "pooler_hidden_act": "gelu", "pooler_hidden_size": DEBERTA_SIZES[size]["hidden_size"],
        "pos_att_type": ["p2c", "c2p"], "position_biased_input": False, "position_buckets": 256,
        "relative_attention": True, "share_att_key": True, "type_vocab_size": 0, "vocab_size": vocab_size,
        "id2label": {str(i): label for i, label in enumerate(NER_LABELS)},
        "label2id": {label: i for i, label in enumerate(NER_LABELS)},
        **DEBERTA_SIZES[size],
    }


def _mpnet_config(size: str, vocab_size: int) -> dict:
    # microsoft/mpnet-base config.json (BioLORD-2023-C: architectures MPNetModel).
    return {
        "architectures": ["MPNetModel"], "model_type": "mpnet", "attention_probs_dropout_prob": 0.1,
        "bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "initializer_range": 0.02, "layer_norm_eps": 1e-5, "max_position_embeddings": 514,
        "relative_attention_num_buckets": 32, "vocab_size": vocab_size, **MPNET_SIZES[size],
    }


def _shapes(model_cls, config_cls, config: dict) -> dict[str, torch.Size]:
    """Parameter names and shapes without allocating the model (meta device)."""
    fields = {k: v for k, v in config.items() if k != "architectures"}
    with torch.device("meta"):
        model = model_cls(config_cls(**fields))
    return {name: tensor.shape for name, tensor in model.state_dict().items()}


def _random_weights(shapes: dict[str, torch.Size], seed: int, ln_spread: float) -> dict[str, torch.Tensor]:
    """Seeded weights in sorted key order; Linear weights ~ N(0, 1/fan_in) so small and real sizes behave alike.

    ``ln_spread`` draws LayerNorm gains/biases widely: with near-identity LayerNorms every random [CLS] vector
    points the same way and all cosines land near 1 (METRICS.md, stand-in facts).
    """
    gen = torch.Generator().manual_seed(seed)
    weights: dict[str, torch.Tensor] = {}
    for name in sorted(shapes):
        shape = shapes[name]
        is_norm = "LayerNorm" in name or "layer_norm" in name or name.endswith("norm.weight") or name.endswith("norm.bias")
        if is_norm and name.endswith(".weight"):
            tensor = 1.0 + ln_spread * torch.randn(shape, generator=gen)
        elif is_norm and name.endswith(".bias"):
            tensor = ln_spread * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            tensor = 0.02 * torch.randn(shape, generator=gen)
        elif len(shape) == 1:
            tensor = 0.02 * torch.randn(shape, generator=gen)
        elif "embeddings" in name:
            tensor = 0.5 * torch.randn(shape, generator=gen)
        else:
            tensor = (1.0 / shape[1] ** 0.5) * torch.randn(shape, generator=gen)
        weights[name] = tensor.contiguous()
    return weights


def _calibrate_bias(folder: Path, config: dict, weights: dict[str, torch.Tensor]) -> None:
    """Set the classifier biases so corpus tokens get each label at LABEL_RATES (O ~70%, each B- 4%, each I- 2%).

    A random classifier favours a few labels; matching target rates (iterative log-ratio updates on the fixed
    logits of the built-in corpus, deterministic) gives every entity type and about 8 entities per IU-Xray report.
    """
    from transformers import AutoTokenizer, DebertaV2Config, DebertaV2ForTokenClassification

    fields = {k: v for k, v in config.items() if k != "architectures"}
    model = DebertaV2ForTokenClassification(DebertaV2Config(**fields)).eval()
    model.load_state_dict(weights, strict=True)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    lines = [s.strip() + "." for s in SENTENCES.replace("\n", " ").split(".") if s.strip()]
    with torch.no_grad():
        enc = tokenizer(lines, padding=True, return_tensors="pt")
        logits = model(**enc).logits[enc["attention_mask"].bool()].double()
    target = torch.tensor([LABEL_RATES[label[:2]] for label in NER_LABELS], dtype=torch.float64)
    bias = torch.zeros(len(NER_LABELS), dtype=torch.float64)
    for _ in range(300):
        counts = torch.bincount((logits + bias).argmax(-1), minlength=len(NER_LABELS)).double()
        freq = (counts + 0.5) / (counts.sum() + 0.5 * len(NER_LABELS))
        bias += 0.3 * torch.log(target / freq)
    weights["classifier.bias"] = bias.float()


def build_ner(out: Path, size: str = "small", seed: int = 0) -> Path:
    from safetensors.torch import save_file
    from transformers import DebertaV2Config, DebertaV2ForTokenClassification

    folder = Path(out)
    tokenizer_vocab, _ = write_deberta_tokenizer(folder)
    config = _deberta_config(size, DEBERTA_VOCAB[size] or tokenizer_vocab)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    weights = _random_weights(_shapes(DebertaV2ForTokenClassification, DebertaV2Config, config), seed, ln_spread=0.3)
    hidden = config["hidden_size"]
    gen = torch.Generator().manual_seed(seed + 1)
    # Large classifier weights: labels then depend on the token, not on float noise.
    weights["classifier.weight"] = (4.0 / hidden**0.5) * torch.randn(len(NER_LABELS), hidden, generator=gen)
    weights["classifier.bias"] = torch.zeros(len(NER_LABELS))
    _calibrate_bias(folder, config, weights)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


def build_embed(out: Path, size: str = "small", seed: int = 0) -> Path:
    from safetensors.torch import save_file
    from transformers import MPNetConfig, MPNetModel

    folder = Path(out)
    tokenizer_vocab = write_mpnet_tokenizer(folder)
    config = _mpnet_config(size, MPNET_VOCAB[size] or tokenizer_vocab)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    weights = _random_weights(_shapes(MPNetModel, MPNetConfig, config), seed + 2, ln_spread=1.0)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    # sentence-transformers files of BioLORD-2023-C (unused by RaTEScore, present in the real repo).
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}], indent=2))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": config["hidden_size"], "pooling_mode_mean_tokens": True}, indent=2))
    return folder


def build(out: Path, size: str = "small", seed: int = 0) -> dict[str, str]:
    """Write out/ratescore/{ner,embed}. Returns {"ratescore_ner": dir, "ratescore_embed": dir}.

    ``model=out/ratescore`` (one folder holding ner/ and embed/) also works for the metric.
    """
    root = Path(out) / "ratescore"
    ner = build_ner(root / "ner", size, seed)
    embed = build_embed(root / "embed", size, seed)
    return {"ratescore_ner": str(ner), "ratescore_embed": str(embed)}
