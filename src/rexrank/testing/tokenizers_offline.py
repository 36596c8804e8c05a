"""Write tokenizer files by hand, in formats that both transformers 4.57 and 5.x load identically.

transformers 5 can save tokenizer files that 4.x misreads (seen: a RoBERTa tokenizer saved by 5.24 loads in 4.57
with a 5-token vocabulary), so stand-ins never use ``save_pretrained`` for tokenizers: we write the classic
vocabulary files and a minimal tokenizer_config.json ourselves.
"""

from __future__ import annotations

import json
from pathlib import Path

from rexrank.testing.corpus import SENTENCES, characters, words

BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_vocab(lowercase: bool = True, size: int | None = None) -> list[str]:
    """[PAD] [UNK] [CLS] [SEP] [MASK], single characters, ##characters, then corpus words.

    ``size`` pads with ``[unusedN]`` entries (as BERT vocabularies do) to reach a real vocabulary size.
    """
    chars = [c.lower() if lowercase else c for c in characters()]
    chars = list(dict.fromkeys(chars))
    vocab = BERT_SPECIALS + chars + ["##" + c for c in chars if c.isalnum()]
    vocab += [w for w in words() if w not in vocab and (lowercase or True)]
    if not lowercase:
        vocab += [w.capitalize() for w in words() if w.isalpha() and w.capitalize() not in vocab]
    if size is not None:
        if size < len(vocab):
            raise ValueError(f"vocabulary size {size} is below the {len(vocab)} base entries")
        vocab += [f"[unused{i}]" for i in range(size - len(vocab))]
    return vocab


def write_bert_tokenizer(directory: Path, lowercase: bool = True, size: int | None = None,
                         model_max_length: int = 512) -> int:
    """vocab.txt + tokenizer_config.json for BertTokenizer(Fast). Returns the vocabulary size."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    vocab = wordpiece_vocab(lowercase, size)
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    config = {"tokenizer_class": "BertTokenizer", "do_lower_case": lowercase, "model_max_length": model_max_length,
              "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
              "mask_token": "[MASK]"}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (directory / "special_tokens_map.json").write_text(json.dumps(
        {k: config[k] for k in ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token")}, indent=2))
    return len(vocab)


def write_roberta_bpe(directory: Path, vocab_size: int = 1000, model_max_length: int = 512) -> int:
    """vocab.json + merges.txt (byte-level BPE trained on the built-in corpus) for RobertaTokenizer(Fast).

    Returns the tokenizer's vocabulary size (the model's embedding matrix may be larger, as in real RoBERTa).
    """
    from tokenizers import ByteLevelBPETokenizer

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    lines = SENTENCES.splitlines() + [SENTENCES.lower(), SENTENCES.upper()]
    bpe.train_from_iterator(lines, vocab_size=vocab_size, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False)
    bpe.save_model(str(directory))  # writes exactly vocab.json and merges.txt
    config = {"tokenizer_class": "RobertaTokenizer", "model_max_length": model_max_length, "bos_token": "<s>",
              "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>", "unk_token": "<unk>",
              "pad_token": "<pad>", "mask_token": "<mask>", "add_prefix_space": False, "errors": "replace"}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return bpe.get_vocab_size()
