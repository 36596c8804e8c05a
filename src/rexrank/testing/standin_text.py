"""Stand-ins for the two text encoders of the classic metrics: BERTScore's RoBERTa and CheXbert.

``build_bertscore`` writes a folder in the distilroberta-base layout (config.json, model.safetensors with
``roberta.``-prefixed keys, vocab.json, merges.txt, tokenizer_config.json). ``build_chexbert`` writes a
bert-base-uncased-like folder (config.json, vocab.txt, tokenizer_config.json; no weights, as CheXbert never uses
the backbone's own weights) and ``chexbert.pth`` = ``{"model_state_dict": {"module.bert.*", "module.linear_heads.*"}}``
with the key names of CheXbert's ``bert_labeler`` (rajpurkarlab/CXR-Report-Metric @9c9ecad,
CXRMetric/CheXbert/src/models/bert_labeler.py: ``self.bert`` + ``self.linear_heads`` = 13 x Linear(h, 4) and one
Linear(h, 2), saved from an ``nn.DataParallel`` wrapper, hence ``module.``).

Weights are drawn from our own seeded generator in sorted key order, not by the transformers initialisers, so a
(size, seed) pair gives the same files under any transformers version. Two deliberate departures from plain
random init keep the stand-ins useful for parity tests:
- Linear weights are scaled so all token-vector cosines stay positive, as in trained encoders. bert-score pads
  its similarity matrix with zeros; with negative cosines that padding would change the greedy max, a regime no
  trained model is in.
- CheXbert heads get a large scale so the 14 argmax labels vary between reports and are not decided by float noise.
A stand-in proves plumbing and parity on identical weights, never the real models' numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rexrank.testing.tokenizers_offline import write_bert_tokenizer, write_roberta_bpe

# distilroberta-base config.json (Hub: distilroberta-base) and bert-base-uncased config.json (Hub: bert-base-uncased).
ROBERTA_SIZES = {
    "small": dict(hidden_size=32, num_hidden_layers=6, num_attention_heads=2, intermediate_size=64),
    "real": dict(hidden_size=768, num_hidden_layers=6, num_attention_heads=12, intermediate_size=3072),
}
ROBERTA_VOCAB = {"small": None, "real": 50265}  # None: the embedding matrix has exactly the tokenizer's size
BERT_SIZES = {
    "small": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64),
    "real": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}
BERT_VOCAB = {"small": None, "real": 30522}
BPE_VOCAB = {"small": 1000, "real": 4000}

CHEXBERT_HEADS = [4] * 13 + [2]  # bert_labeler: 13 heads over (blank, positive, negative, uncertain) + No Finding


def _roberta_config(size: str, vocab_size: int) -> dict:
    return {
        "architectures": ["RobertaForMaskedLM"], "model_type": "roberta",
        "attention_probs_dropout_prob": 0.1, "hidden_dropout_prob": 0.1, "hidden_act": "gelu",
        "initializer_range": 0.02, "layer_norm_eps": 1e-05, "max_position_embeddings": 514,
        "type_vocab_size": 1, "bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1,
        "vocab_size": vocab_size, **ROBERTA_SIZES[size],
    }


def _bert_config(size: str, vocab_size: int) -> dict:
    return {
        "architectures": ["BertForMaskedLM"], "model_type": "bert",
        "attention_probs_dropout_prob": 0.1, "hidden_dropout_prob": 0.1, "hidden_act": "gelu",
        "initializer_range": 0.02, "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
        "position_embedding_type": "absolute", "type_vocab_size": 2, "pad_token_id": 0,
        "vocab_size": vocab_size, **BERT_SIZES[size],
    }


def _shapes(model_cls, config_cls, config: dict) -> dict[str, torch.Size]:
    """Parameter names and shapes of the transformers model, without allocating it (meta device)."""
    fields = {k: v for k, v in config.items() if k != "architectures"}
    with torch.device("meta"):
        model = model_cls(config_cls(**fields), add_pooling_layer=True)
    return {name: tensor.shape for name, tensor in model.state_dict().items()}


def _random_weights(shapes: dict[str, torch.Size], seed: int, gain: float = 1.7) -> dict[str, torch.Tensor]:
    """Seeded weights in sorted key order. Linear weights ~ N(0, gain^2 / fan_in) at every size, so small and real
    stand-ins behave alike; gain 1.7 keeps token vectors distinct yet all pairwise cosines positive (measured on
    IU-Xray reports: min ~0.74 small, ~0.86 real), as in trained encoders."""
    gen = torch.Generator().manual_seed(seed)
    weights: dict[str, torch.Tensor] = {}
    for name in sorted(shapes):
        shape = shapes[name]
        if "LayerNorm" in name and name.endswith(".weight"):
            tensor = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        elif "LayerNorm" in name and name.endswith(".bias"):
            tensor = 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            tensor = 0.02 * torch.randn(shape, generator=gen)
        elif "embeddings" in name:
            tensor = 0.3 * torch.randn(shape, generator=gen)  # followed by LayerNorm: the scale only sets the mix
        else:
            tensor = (gain / shape[1] ** 0.5) * torch.randn(shape, generator=gen)
        weights[name] = tensor.contiguous()
    return weights


def build_bertscore(out: Path, size: str = "small", seed: int = 0) -> dict[str, str]:
    """RoBERTa folder in the distilroberta-base layout. Returns {"bertscore": folder}."""
    from safetensors.torch import save_file
    from transformers import RobertaConfig, RobertaModel

    folder = Path(out) / "distilroberta-base"
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer_vocab = write_roberta_bpe(folder, vocab_size=BPE_VOCAB[size], model_max_length=512)
    config = _roberta_config(size, ROBERTA_VOCAB[size] or tokenizer_vocab)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    shapes = _shapes(RobertaModel, RobertaConfig, config)
    # RobertaForMaskedLM has no pooler; the real checkpoint stores the encoder under "roberta.".
    shapes = {k: v for k, v in shapes.items() if not k.startswith("pooler.")}
    weights = _random_weights(shapes, seed)
    save_file({f"roberta.{k}": v for k, v in weights.items()}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    return {"bertscore": str(folder)}


def build_chexbert(out: Path, size: str = "small", seed: int = 0) -> dict[str, str]:
    """bert-base-uncased-like backbone folder + chexbert.pth. Returns {"semb": pth, "semb_backbone": folder}."""
    from transformers import BertConfig, BertModel

    out = Path(out)
    backbone = out / "bert-base-uncased"
    backbone.mkdir(parents=True, exist_ok=True)
    tokenizer_vocab = write_bert_tokenizer(backbone, lowercase=True, size=BERT_VOCAB[size], model_max_length=512)
    config = _bert_config(size, BERT_VOCAB[size] or tokenizer_vocab)
    (backbone / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    hidden = config["hidden_size"]
    weights = _random_weights(_shapes(BertModel, BertConfig, config), seed)
    state = {f"module.bert.{k}": v for k, v in weights.items()}
    gen = torch.Generator().manual_seed(seed + 1)
    for i, n_classes in enumerate(CHEXBERT_HEADS):
        state[f"module.linear_heads.{i}.weight"] = (3.0 / hidden**0.5) * torch.randn(n_classes, hidden, generator=gen)
        state[f"module.linear_heads.{i}.bias"] = torch.randn(n_classes, generator=gen)
    path = out / "chexbert.pth"
    torch.save({"model_state_dict": state}, path)
    return {"semb": str(path), "semb_backbone": str(backbone)}
