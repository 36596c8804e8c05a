"""Stand-in for temporal entity F1: a stanza resources folder with the ``en`` radiology NER pipeline, random weights.

``build`` writes, under ``out/stanza_resources``, what ``stanza.download("en", package="radiology",
processors={"ner": "radiology"})`` leaves in a resources folder for that pipeline, in stanza 1.15's formats:
``resources.json`` (md5 of every file, the NER model's dependencies, the ``default`` package naming the tokenizer
and MWT expander) and ``en/tokenize/combined.pt``, ``en/mwt/combined.pt``, ``en/ner/radiology.pt``,
``en/pretrain/mimic.pt``, ``en/forward_charlm/mimic.pt``, ``en/backward_charlm/mimic.pt``.

Every file is made by stanza's own classes with a tiny configuration (from stanza's own argument parsers) and saved
by their own save code: the tokenizer ``Trainer``, a dictionary-only MWT ``Trainer``, two ``CharacterLanguageModel``s,
a ``Pretrain`` read from a small word-vector text file, and the NER ``Trainer`` with a vocabulary built by stanza's
NER ``DataLoader``. The weights are random (seeded), with two deliberate settings so the pipeline behaves like one
worth comparing:
- the tokenizer's weights are set by hand (its LSTM zeroed, its width-3 residual convolution and classifiers
  reading whether a character and its right neighbour are a space, a letter/digit or something else): a token ends
  before a space, around every punctuation character, and a sentence after . ! ? before a space or at the end of a
  paragraph. Reports are thus split into words and punctuation, as a trained tokenizer would;
- the NER's output biases favour OBSERVATION and OBSERVATION_MODIFIER single-token tags, so the entities radeval
  keeps are common but, being random, not every keyword is one.
The resources' ``url`` is stanza's real model URL: with every file's md5 matching, stanza never downloads from it.
A (size, seed) pair gives the same weights and vocabularies; the files' bytes (and so their md5s in resources.json)
differ between builds, since stanza saves in torch's legacy format, whose storage keys change from run to run, and
its configs record the build's paths: both sides of a comparison read one build.
A stand-in proves plumbing and parity, never the real model's numbers.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import torch

from rexrank.metrics.temporal_f1 import KEYWORDS, STANZA_VERSION
from rexrank.testing.corpus import words

ENTITY_TYPES = ("ANATOMY", "ANATOMY_MODIFIER", "OBSERVATION", "OBSERVATION_MODIFIER", "UNCERTAINTY")  # RadGraph's
MODEL_URL = "https://huggingface.co/stanfordnlp/stanza-{lang}/resolve/v{resources_version}/models/{filename}"
WORD_DIM = 8


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _args(parse, argv: list[str]) -> dict:
    parsed = parse(argv)
    return parsed if isinstance(parsed, dict) else vars(parsed)


def _tokenizer(path: Path, chars: list[str]) -> None:
    from stanza.models import tokenizer as cli
    from stanza.models.tokenization.trainer import Trainer
    from stanza.models.tokenization.vocab import Vocab

    vocab = Vocab(data=[[(c, 0) for c in chars]], lang="en")
    args = _args(cli.parse_args, ["--lang", "en", "--shorthand", "en_combined", "--emb_dim", "4", "--hidden_dim", "4",
                                  "--conv_res", "3", "--rnn_layers", "1"])
    args.update(feat_funcs=list(cli.DEFAULT_FEAT_FUNCS), feat_dim=len(cli.DEFAULT_FEAT_FUNCS), vocab_size=len(vocab),
                use_mwt=False, hierarchical=False, num_dict_feat=0)
    trainer = Trainer(args=args, vocab=vocab, device="cpu")
    model = trainer.model
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        # character embedding: 0 space, 1 letter/digit, 2 anything else (unknown characters too), 3 . ! ?
        emb = model.embeddings.weight
        emb[1, 2] = 1
        for i in range(2, len(vocab)):
            unit = vocab.id2unit(i)
            emb[i, 0 if unit.isspace() else 1 if unit.isalnum() else 2] = 1
            emb[i, 3] = float(unit in ".!?")
        end_of_para = 4 + cli.DEFAULT_FEAT_FUNCS.index("end_of_para")  # features follow the 4 embedding dims
        conv = model.conv_res[0].weight  # (channels, inputs, taps x[t-1], x[t], x[t+1])
        for channel, (feature, tap) in enumerate(((2, 1), (0, 2), (2, 2), (end_of_para, 1), (0, 1), (3, 1))):
            conv[channel, feature, tap] = 1
        # channels: other(t), space(t+1), other(t+1), end of paragraph(t), space(t), . ! ?(t)
        model.tok_clf.weight[0, :6] = torch.tensor([10.0, 10.0, 10.0, 10.0, -30.0, 0.0])
        model.tok_clf.bias[0] = -5.0
        model.sent_clf.weight[0, :6] = torch.tensor([0.0, 10.0, 0.0, 20.0, -30.0, 10.0])
        model.sent_clf.bias[0] = -15.0
    path.parent.mkdir(parents=True, exist_ok=True)
    trainer.save(str(path))


def _mwt(path: Path) -> None:
    from stanza.models import mwt_expander as cli
    from stanza.models.mwt.trainer import Trainer
    from stanza.models.mwt.vocab import Vocab

    expansions = [("cannot", "can not")]
    vocab = Vocab(data=expansions, lang="en")
    args = _args(cli.parse_args, ["--shorthand", "en_combined", "--lang", "en", "--dict_only"])
    args["vocab_size"] = vocab.size
    trainer = Trainer(args=args, vocab=vocab, device="cpu")
    trainer.train_dict(expansions)
    path.parent.mkdir(parents=True, exist_ok=True)
    trainer.save(str(path))


def _charlms(folder: Path, chars: list[str], gen: torch.Generator) -> None:
    from stanza.models import charlm as cli
    from stanza.models.common.char_model import CharacterLanguageModel
    from stanza.models.common.vocab import CharVocab

    vocab = {"char": CharVocab(["".join(chars)], "en")}
    args = _args(cli.parse_args, ["--shorthand", "en_mimic", "--char_emb_dim", "8", "--char_hidden_dim", "8"])
    for direction in ("forward", "backward"):
        model = CharacterLanguageModel(args, vocab, is_forward_lm=direction == "forward")
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
        model.save(str(folder / f"{direction}_charlm" / "mimic.pt"))


def _pretrain(path: Path, vocabulary: list[str], gen: torch.Generator) -> None:
    from stanza.models.common.pretrain import Pretrain

    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.with_suffix(".vec")
    lines = [f"{len(vocabulary)} {WORD_DIM}"]
    lines += [w + " " + " ".join(f"{x:.6f}" for x in torch.randn(WORD_DIM, generator=gen).tolist()) for w in vocabulary]
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    Pretrain(str(path), str(text), save_to_file=True).load()  # reads the text vectors, saves stanza's .pt
    text.unlink()


def _ner(folder: Path, vocabulary: list[str], gen: torch.Generator) -> None:
    from stanza.models import ner_tagger as cli
    from stanza.models.common.doc import Document
    from stanza.models.common.pretrain import Pretrain
    from stanza.models.ner.data import DataLoader
    from stanza.models.ner.trainer import Trainer

    pretrain_file = folder / "pretrain" / "mimic.pt"
    args = _args(cli.parse_args, [
        "--shorthand", "en_radiology", "--wordvec_pretrain_file", str(pretrain_file), "--charlm",
        "--charlm_forward_file", str(folder / "forward_charlm" / "mimic.pt"),
        "--charlm_backward_file", str(folder / "backward_charlm" / "mimic.pt"),
        "--hidden_dim", "8", "--word_emb_dim", str(WORD_DIM), "--char_hidden_dim", "8"])
    # One training sentence carrying every BIOES tag: stanza's DataLoader builds the tag, char and delta vocabularies.
    tags = ["O"] + [f"{p}-{t}" for t in ENTITY_TYPES for p in "BIES"]
    sentence = [{"id": i + 1, "text": vocabulary[i % len(vocabulary)], "ner": tag} for i, tag in enumerate(tags)]
    pretrain = Pretrain(str(pretrain_file))
    loader = DataLoader(Document([sentence]), 4, args, pretrain, vocab=None, evaluation=False)
    trainer = Trainer(args=args, vocab=loader.vocab, pretrain=pretrain, device="cpu")
    with torch.no_grad():
        for name, p in trainer.model.named_parameters():
            if not name.startswith("word_emb"):  # the pretrained vectors stay those of the pretrain file
                p.copy_(0.8 * torch.randn(p.shape, generator=gen))
        known = list(loader.vocab["tag"].items(0))
        for tag in ("S-OBSERVATION", "S-OBSERVATION_MODIFIER"):
            trainer.model.tag_clfs[0].bias[known.index(tag)] += 2.0
    path = folder / "ner" / "radiology.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    trainer.save(str(path))


def build(out: Path, size: str = "small", seed: int = 0) -> dict[str, str]:
    """Returns {"temporal_f1": the stanza resources folder}."""
    root = Path(out) / "stanza_resources"
    lang = root / "en"
    # stanza's trainers log every step (its argument parsers turn its logger's level down): quiet while building
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        gen = torch.Generator().manual_seed(seed)
        chars = [chr(c) for c in range(32, 127)] + ["\n"]
        vocabulary = sorted(KEYWORDS) + [w for w in words() if w.isalpha() and w not in KEYWORDS]
        _tokenizer(lang / "tokenize" / "combined.pt", chars)
        _mwt(lang / "mwt" / "combined.pt")
        _charlms(lang, chars, gen)
        _pretrain(lang / "pretrain" / "mimic.pt", vocabulary, gen)
        _ner(lang, vocabulary, gen)
    finally:
        logging.disable(previous)

    def entry(processor: str, package: str, **extra) -> dict:
        return {package: {"md5": _md5(lang / processor / f"{package}.pt"), **extra}}

    mimic = [{"model": m, "package": "mimic"} for m in ("pretrain", "forward_charlm", "backward_charlm")]
    default = {"tokenize": "combined", "mwt": "combined"}
    resources = {
        "url": MODEL_URL,
        "en": {
            "lang_name": "English",
            "tokenize": entry("tokenize", "combined"),
            "mwt": entry("mwt", "combined"),
            "ner": entry("ner", "radiology", dependencies=mimic),
            "pretrain": entry("pretrain", "mimic"),
            "forward_charlm": entry("forward_charlm", "mimic"),
            "backward_charlm": entry("backward_charlm", "mimic"),
            "default_processors": default,
            "packages": {"default": default},
        },
    }
    (root / "resources.json").write_text(json.dumps(resources, indent=2) + "\n", encoding="utf-8")
    # stanza fetches resources_<version>.json from its resources URL; the same file, for a loopback server to serve
    (root / f"resources_{STANZA_VERSION}.json").write_text(json.dumps(resources, indent=2) + "\n", encoding="utf-8")
    return {"temporal_f1": str(root)}
