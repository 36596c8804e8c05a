"""Stand-ins for SRR-BERT: the sentence classifier, its CXR-BERT tokenizer and nltk's Punkt parameters.

``build`` writes, under ``out``:
- ``SRR-BERT-Leaves-with-Statuses/``: a ``BertForSequenceClassification`` checkpoint (config.json with the 163
  labels of radeval's leaves_with_statuses map as id2label, multi-label problem type; model.safetensors with
  ``bert.*`` (pooler included) and ``classifier.*``), random weights from standin_text's seeded generator. The
  classifier's weights are large and its biases are set from the built-in corpus (``_thresholds``) so that each label fires for a few
  sentences, not all, with its threshold in a wide gap (float rounding between implementations cannot flip it);
- ``microsoft/BiomedVLP-CXR-BERT-general/``: a lower-casing WordPiece vocab.txt + tokenizer_config.json (the real
  tokenizer's class and casing), written by hand (tokenizers_offline.py);
- ``nltk_data/tokenizers/punkt_tab/english/``: Punkt parameters in nltk's punkt_tab format (abbrev_types.txt,
  collocations.tab, sent_starters.txt, ortho_context.tab) with a few radiology abbreviations, so abbreviation
  handling is exercised; not nltk's english parameters (not downloadable here).
The tokenizer folder sits at the relative path radeval hard-codes, so radeval's own ``SRRBert.__init__`` loads it
when run from ``out``. A stand-in proves plumbing and parity, never the real numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rexrank.metrics.srrbert_labels import LABELS
from rexrank.testing.standin_text import BERT_SIZES, _bert_config, _random_weights, _shapes
from rexrank.testing.tokenizers_offline import write_bert_tokenizer

VARIANT = "leaves_with_statuses"
TOKENIZER = "microsoft/BiomedVLP-CXR-BERT-general"  # radeval 2.2.1 srr_bert.py's tokenizer id
ABBREVIATIONS = ("dr", "vs", "approx", "e.g", "i.e", "pt", "st")
SENT_STARTERS = ("there", "the", "no")


def _punkt(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "abbrev_types.txt").write_text("\n".join(ABBREVIATIONS) + "\n")
    (folder / "sent_starters.txt").write_text("\n".join(SENT_STARTERS) + "\n")
    (folder / "collocations.tab").write_text("##number##\tcm\n")
    (folder / "ortho_context.tab").write_text("the\t46\nno\t46\nthere\t46\n")


def _thresholds(weights: dict[str, torch.Tensor], config: dict, tokenizer: Path) -> torch.Tensor:
    """Classifier biases from the built-in corpus's sentences: label k fires for ~3-15% of them, its threshold in
    the widest gap between two sentences' logits there, so no corpus sentence sits near it."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from rexrank.testing.corpus import SENTENCES

    sentences = [s.strip() + "." for line in SENTENCES.splitlines() for s in line.split(".") if s.strip()]
    fields = {k: v for k, v in config.items() if k not in ("architectures", "id2label", "label2id", "problem_type")}
    model = BertModel(BertConfig(**fields), add_pooling_layer=True).eval()
    model.load_state_dict({k[len("bert."):]: v for k, v in weights.items() if k.startswith("bert.")})
    batch = AutoTokenizer.from_pretrained(str(tokenizer))(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        pooled = model(**batch).pooler_output
    logits, _ = torch.sort(pooled @ weights["classifier.weight"].T, dim=0)  # (sentences, labels), ascending
    n = logits.shape[0]
    lo, hi = int(0.85 * n), int(0.97 * n)
    gaps = logits[lo + 1:hi + 1] - logits[lo:hi]
    j = lo + gaps.argmax(dim=0)
    cols = torch.arange(logits.shape[1])
    return (-(logits[j, cols] + logits[j + 1, cols]) / 2).contiguous()


def build(out: Path, size: str = "small", seed: int = 0) -> dict[str, str]:
    """Returns {"srrbert": model folder, "srrbert_tokenizer": tokenizer folder, "srrbert_punkt": nltk_data root}."""
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel

    out = Path(out)
    tokenizer = out / TOKENIZER
    vocab = write_bert_tokenizer(tokenizer, lowercase=True, size=None if size == "small" else 30522)
    labels = LABELS[VARIANT]
    folder = out / "SRR-BERT-Leaves-with-Statuses"
    folder.mkdir(parents=True, exist_ok=True)
    config = _bert_config(size, vocab)
    shapes = _shapes(BertModel, BertConfig, config)
    config.update(architectures=["BertForSequenceClassification"], problem_type="multi_label_classification",
                  id2label={str(i): name for i, name in enumerate(labels)},
                  label2id={name: i for i, name in enumerate(labels)})
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    weights = {f"bert.{k}": v for k, v in _random_weights(shapes, seed).items()}
    gen = torch.Generator().manual_seed(seed + 1)
    hidden = BERT_SIZES[size]["hidden_size"]
    weights["classifier.weight"] = (8.0 / hidden ** 0.5) * torch.randn(len(labels), hidden, generator=gen)
    weights["classifier.bias"] = _thresholds(weights, config, tokenizer)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    nltk_data = out / "nltk_data"
    _punkt(nltk_data / "tokenizers" / "punkt_tab" / "english")
    return {"srrbert": str(folder), "srrbert_tokenizer": str(tokenizer), "srrbert_punkt": str(nltk_data)}
