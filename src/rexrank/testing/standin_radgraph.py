"""Random-weight RadGraph archive in the exact layout radgraph 0.1.18 loads (``RadGraph(model_type="radgraph",
model_cache_dir=D)`` reads D/radgraph/).

Written: ``<out>/radgraph/{config.json, vocabulary/, weights.th}`` and the BERT folder its config names by absolute
path, ``<out>/radgraph_encoder/{config.json, vocab.txt, tokenizer_config.json, special_tokens_map.json}`` (the
package reads only the encoder's config and tokenizer from it; all weights come from weights.th).

- config.json: DyGIE++ template values as configured for RadGraph training (StanfordMIMI/RaLEs
  fine_tuning/utils/dygiepp/training_config/custom_template.libsonnet and radgraph_*.jsonnet; loss weights and
  keys also in METRICS.md "Stand-in facts"): max_span_width 8, feature_size 20, feedforward 2 x 150 (dropout 0.4),
  max_length 512, loss weights ner 0.2 / relation 1 / coref 0 / events 0, relation spans_per_word 0.5.
- vocabulary/: allennlp files; NER labels with the empty null label first, relation labels without null
  (radgraph label set: ANAT-DP, OBS-DP, OBS-U, OBS-DA; modify, located_at, suggestive_of).
- weights.th: the DyGIE state dict with the package's key names, including the BERT pooler and the coref/event
  modules the package builds (and never runs).

Random heads predict almost every span as an entity, so the NER scorer, the mention pruner and the relation scorer
are rescaled on the built-in corpus to give ~10-15 entities and a handful of relations per report, with score
margins far above float noise. Calibrated constants are rounded so a (size, seed) pair always writes the same
numbers. The pruner reuses the NER feedforward (scored by the mean NER label score) so kept spans tend to be
entities and relations survive radgraph's entity filter. A stand-in proves plumbing and parity, not RadGraph's
real annotations.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rexrank.testing.corpus import SENTENCES
from rexrank.testing.tokenizers_offline import write_bert_tokenizer

NER_LABELS = ["", "ANAT-DP", "OBS-DP", "OBS-U", "OBS-DA"]
RELATION_LABELS = ["modify", "located_at", "suggestive_of"]
BERT_SIZES = {  # real = BERT-base (PubMedBERT's shape); small keeps tests fast
    "small": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64),
    "real": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}
BERT_VOCAB = {"small": None, "real": 30522}
# Residual-branch gain of the random encoder: at 12 layers a unit gain washes out token identity (every word
# vector nearly equal), so the real-sized stand-in uses smaller branches, as trained BERTs effectively have.
ENCODER_GAIN = {"small": 1.0, "real": 0.5}
FEATURE_SIZE, MAX_SPAN_WIDTH, FF_HIDDEN, FF_LAYERS = 20, 8, 150, 2
# Calibration targets: share of all candidate spans tagged as entities (~12 of ~280 spans of a 37-word IU-Xray report),
# share of kept span pairs given a relation, and the score spreads that keep decisions far from float noise.
ENTITY_SHARE, RELATION_SHARE = 0.055, 0.15
NER_SCORE_STD, RELATION_SCORE_STD = 4.0, 3.0


def _bert_config(size: str, vocab_size: int) -> dict:
    # Keys both transformers 4.57 (reference venv) and 5.x read identically.
    return {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": vocab_size,
            "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02,
            "layer_norm_eps": 1e-12, "pad_token_id": 0, "position_embedding_type": "absolute", **BERT_SIZES[size]}


def _archive_config(encoder_dir: Path) -> dict:
    bert = {"type": "pretrained_transformer_mismatched", "model_name": str(encoder_dir.resolve()), "max_length": 512}
    return {
        "dataset_reader": {"type": "dygie", "token_indexers": {"bert": dict(bert)}, "max_span_width": MAX_SPAN_WIDTH},
        "model": {
            "type": "dygie",
            "embedder": {"token_embedders": {"bert": dict(bert)}},
            "initializer": {"regexes": [["_span_width_embedding.weight", {"type": "xavier_normal"}]]},
            "module_initializer": {"regexes": [[".*weight", {"type": "xavier_normal"}],
                                               [".*weight_matrix", {"type": "xavier_normal"}]]},
            "loss_weights": {"ner": 0.2, "relation": 1.0, "coref": 0.0, "events": 0.0},
            "feature_size": FEATURE_SIZE,
            "max_span_width": MAX_SPAN_WIDTH,
            "target_task": "relation",
            "feedforward_params": {"num_layers": FF_LAYERS, "hidden_dims": FF_HIDDEN, "dropout": 0.4},
            "modules": {
                "coref": {"spans_per_word": 0.3, "max_antecedents": 100, "coref_prop": 0},
                "ner": {},
                "relation": {"spans_per_word": 0.5},
                "events": {"trigger_spans_per_word": 0.3, "argument_spans_per_word": 0.8,
                           "loss_weights": {"trigger": 0.2, "arguments": 1.0}},
            },
        },
    }


def _write_vocabulary(directory: Path, model_type: str) -> None:
    # Namespaces are "<dataset>__ner_labels" / "<dataset>__relation_labels"; radgraph 0.1.18 passes its
    # model_type as the dataset, so the file names must carry it.
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "non_padded_namespaces.txt").write_text("*tags\n*labels\n", encoding="utf-8")
    (directory / f"{model_type}__ner_labels.txt").write_text("\n".join(NER_LABELS) + "\n", encoding="utf-8")
    (directory / f"{model_type}__relation_labels.txt").write_text("\n".join(RELATION_LABELS) + "\n",
                                                                   encoding="utf-8")


def _random(shapes: dict[str, tuple[int, ...]], gen: torch.Generator, gain: float = 1.0) -> dict[str, torch.Tensor]:
    """Seeded weights in sorted key order (independent of any library's initialisers); Linear ~ N(0, gain^2/fan_in)."""
    out = {}
    for name in sorted(shapes):
        shape = shapes[name]
        if "LayerNorm" in name:
            base = 1.0 if name.endswith(".weight") else 0.0
            tensor = base + 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            tensor = 0.02 * torch.randn(shape, generator=gen)
        elif "embedding" in name:
            tensor = 0.5 * torch.randn(shape, generator=gen)
        else:
            tensor = (gain / shape[1] ** 0.5) * torch.randn(shape, generator=gen)
        out[name] = tensor.contiguous()
    return out


def _unused_module_shapes(hidden: int) -> dict[str, tuple[int, ...]]:
    """Coref and event parameters DyGIE builds for these configs (dygie/models/coref.py, events.py)."""
    span = 2 * hidden + FEATURE_SIZE
    shapes: dict[str, tuple[int, ...]] = {"_coref._distance_embedding.weight": (10, FEATURE_SIZE),
                                          "_events._distance_embedding.weight": (10, FEATURE_SIZE)}
    for prefix, first in (("_coref._antecedent_feedforward._module._linear_layers", 3 * span + FEATURE_SIZE),
                          ("_coref._mention_pruner._scorer.0._module._linear_layers", span)):
        dims = [first] + [FF_HIDDEN] * FF_LAYERS
        for i in range(FF_LAYERS):
            shapes[f"{prefix}.{i}.weight"] = (dims[i + 1], dims[i])
            shapes[f"{prefix}.{i}.bias"] = (dims[i + 1],)
    for prefix in ("_coref._mention_pruner._scorer.1._module", "_coref._antecedent_scorer._module"):
        shapes[f"{prefix}.weight"], shapes[f"{prefix}.bias"] = (1, FF_HIDDEN), (1,)
    shapes["_coref._f_network._linear_layers.0.weight"] = (span, 2 * span)
    shapes["_coref._f_network._linear_layers.0.bias"] = (span,)
    return shapes


def _round(value: float) -> float:
    return float(f"{value:.4g}")


def _calibration_reports() -> list[str]:
    lines = [line for line in SENTENCES.splitlines() if line.strip()]
    return [" ".join(lines[i:i + 3]) for i in range(0, len(lines), 3)]


@torch.inference_mode()
def _calibrate(archive_dir: Path) -> dict[str, torch.Tensor]:
    """Rescale the heads of the written archive; returns the heads' new state (our names)."""
    from rexrank.metrics.radgraph.inference import Annotator

    annotator = Annotator(archive_dir, device="cpu")
    heads = annotator.heads
    _, docs = annotator.prepare(_calibration_reports())
    spans, vectors = annotator.span_vectors(docs)
    real = torch.cat([vectors[b, :len(s)] for b, s in enumerate(spans)])

    # NER: spread the label scores, then lower them so ENTITY_SHARE of spans beat the null label's 0.
    raw = heads.ner(real)
    scale = _round(NER_SCORE_STD / float(raw.std()))
    best = (raw * scale).max(dim=-1)[0]
    shift = _round(float(torch.quantile(best, 1 - ENTITY_SHARE)))
    heads.ner.out.weight.mul_(scale)
    heads.ner.out.bias.mul_(scale).sub_(shift)

    # Mention pruner: the NER feedforward scored by the mean label score, centred, unit spread.
    heads.pruner.ff.load_state_dict(heads.ner.ff.state_dict())
    heads.pruner.out.weight.copy_(heads.ner.out.weight.mean(0, keepdim=True))
    heads.pruner.out.bias.copy_(heads.ner.out.bias.mean().view(1))
    mentions = heads.mention_scores(real)
    m_scale, m_shift = _round(1.0 / float(mentions.std())), _round(float(mentions.median()))
    heads.pruner.out.bias.sub_(m_shift).mul_(m_scale)
    heads.pruner.out.weight.mul_(m_scale)

    # Relation scorer: spread, then lower so RELATION_SHARE of kept pairs get a relation.
    mention_rows = heads.mention_scores(vectors)
    raw_pairs, pair_mentions = [], []
    for b, doc in enumerate(docs):
        top, _ = annotator.kept_spans(len(doc.words), mention_rows[b, :len(spans[b])])
        m = mention_rows[b, top]
        # relation_scores adds m_i + m_j and the null column; take them back out to get the scorer's raw output.
        scores = heads.relation_scores([(vectors[b, top], m)])[0][..., 1:]
        raw_pairs.append((scores - (m.view(-1, 1, 1) + m.view(1, -1, 1))).reshape(-1, scores.size(-1)))
        pair_mentions.append((m.view(-1, 1) + m.view(1, -1)).reshape(-1, 1))
    raw, m = torch.cat(raw_pairs), torch.cat(pair_mentions)
    r_scale = _round(RELATION_SCORE_STD / float(raw.std()))
    best = (raw * r_scale + m).max(dim=-1)[0]
    r_shift = _round(float(torch.quantile(best, 1 - RELATION_SHARE)))
    heads.relation_out.weight.mul_(r_scale)
    heads.relation_out.bias.mul_(r_scale).sub_(r_shift)
    return {k: v.clone() for k, v in heads.state_dict().items()}


def build(out: Path, size: str = "small", seed: int = 0, model_type: str = "radgraph") -> dict[str, str]:
    """Write the stand-in archive; returns {"radgraph": archive folder}.

    ``model_type="radgraph-xl"`` writes the same network under radgraph-xl's names (folder and label
    namespaces), returned as {"radgraph_xl": folder}: radgraph 0.1.18 then uses its XL pre-tokenisation.
    """
    from transformers import BertConfig, BertModel

    from rexrank.metrics.radgraph.archive import read_archive
    from rexrank.metrics.radgraph.model import DyGIEHeads, dygie_state

    out = Path(out)
    encoder_dir, archive_dir = out / f"{model_type}_encoder", out / model_type
    encoder_dir.mkdir(parents=True, exist_ok=True)
    n_vocab = write_bert_tokenizer(encoder_dir, lowercase=True, size=BERT_VOCAB[size], model_max_length=512)
    bert = _bert_config(size, BERT_VOCAB[size] or n_vocab)
    (encoder_dir / "config.json").write_text(json.dumps(bert, indent=2) + "\n")
    archive_dir.mkdir(parents=True, exist_ok=True)
    (archive_dir / "config.json").write_text(json.dumps(_archive_config(encoder_dir), indent=2) + "\n")
    _write_vocabulary(archive_dir / "vocabulary", model_type)

    gen = torch.Generator().manual_seed(seed)
    fields = {k: v for k, v in bert.items() if k != "architectures"}
    with torch.device("meta"):
        encoder = BertModel(BertConfig(**fields), add_pooling_layer=True)
        heads = DyGIEHeads(read_archive(archive_dir, need_weights=False).config, bert["hidden_size"])
    encoder_shapes = {k: tuple(v.shape) for k, v in encoder.state_dict().items()}
    head_shapes = {k: tuple(v.shape) for k, v in heads.state_dict().items()}
    encoder_state = _random(encoder_shapes, gen, ENCODER_GAIN[size])
    head_state = _random(head_shapes, gen)
    unused = _random(_unused_module_shapes(bert["hidden_size"]), gen)

    def save(heads_state: dict[str, torch.Tensor]) -> None:
        state = dygie_state(encoder_state, heads_state, read_archive(archive_dir, need_weights=False).config)
        state.update(unused)
        torch.save(state, archive_dir / "weights.th")

    save(head_state)
    save(_calibrate(archive_dir))
    return {"radgraph" if model_type == "radgraph" else model_type.replace("-", "_"): str(archive_dir)}
