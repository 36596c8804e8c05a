"""The DyGIE++ forward pass RadGraph uses (NER + relations), as plain torch modules on a transformers BERT.

What the radgraph 0.1.18 model computes at inference (its bundled ``dygie/models/{dygie,ner,relation,
entity_beam_pruner}.py`` and allennlp's mismatched BERT embedder and endpoint span extractor):

1. word vector = mean of the word's BERT wordpiece vectors (zeros for a word with no wordpiece);
2. span = every (start, end) with end - start < max_span_width; span vector = [x_start, x_end, width_emb(end-start)];
3. NER: FeedForward(ReLU) -> Linear to n_labels - 1 scores, a constant 0 score prepended for the null label;
   argmax != 0 is an entity (overlapping spans are all kept);
4. relations: a mention pruner (FeedForward -> Linear -> 1) keeps the ceil(n_words * spans_per_word) best spans,
   in sentence order; every ordered pair (i, j), i == j included, gets
   Linear(FeedForward([s_i, s_j, s_i * s_j])) + m_i + m_j per relation label, 0 prepended for "no relation";
   argmax != 0 is a relation (only pairs whose two spans are entities survive radgraph's decoding).

Module names here are ours; ``load_dygie_state`` maps the package's state-dict keys onto them.
"""

from __future__ import annotations

import torch
from torch import nn

from rexrank.errors import ModelNotAvailableError
from rexrank.metrics.radgraph.archive import ENCODER_PREFIX, UNUSED_PREFIXES, ArchiveConfig


class FeedForward(nn.Module):
    """allennlp FeedForward as DyGIE builds it: Linear -> ReLU (-> dropout, a no-op at inference) per layer."""

    def __init__(self, input_dim: int, hidden_dims: tuple[int, ...]):
        super().__init__()
        dims = (input_dim, *hidden_dims)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class SpanScorer(nn.Module):
    """FeedForward then a Linear head (NER scorer, mention pruner)."""

    def __init__(self, input_dim: int, hidden_dims: tuple[int, ...], outputs: int):
        super().__init__()
        self.ff = FeedForward(input_dim, hidden_dims)
        self.out = nn.Linear(hidden_dims[-1], outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.ff(x))


class DyGIEHeads(nn.Module):
    """Everything after the encoder: span representation, NER scorer, mention pruner, relation scorer."""

    def __init__(self, cfg: ArchiveConfig, hidden_size: int):
        super().__init__()
        span_dim = 2 * hidden_size + cfg.feature_size
        self.width_embedding = nn.Embedding(cfg.model_max_span_width, cfg.feature_size)
        self.ner = SpanScorer(span_dim, cfg.ff_hidden_dims, len(cfg.ner_labels) - 1)
        self.pruner = SpanScorer(span_dim, cfg.ff_hidden_dims, 1)
        self.relation_ff = FeedForward(3 * span_dim, cfg.ff_hidden_dims)
        self.relation_out = nn.Linear(cfg.ff_hidden_dims[-1], len(cfg.relation_labels))

    def span_embeddings(self, words: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
        """words (B, W, H), starts/ends (B, S) -> (B, S, 2H + feature_size) ([x_start, x_end, width])."""
        index = starts.unsqueeze(-1).expand(-1, -1, words.size(-1))
        first = torch.gather(words, 1, index)
        last = torch.gather(words, 1, ends.unsqueeze(-1).expand(-1, -1, words.size(-1)))
        return torch.cat([first, last, self.width_embedding(ends - starts)], dim=-1)

    @staticmethod
    def with_null(scores: torch.Tensor) -> torch.Tensor:
        """Prepend the constant-zero score of the null class (DyGIE never scores it)."""
        return torch.cat([scores.new_zeros(*scores.shape[:-1], 1), scores], dim=-1)

    def ner_scores(self, spans: torch.Tensor) -> torch.Tensor:
        return self.with_null(self.ner(spans))

    def mention_scores(self, spans: torch.Tensor) -> torch.Tensor:
        return self.pruner(spans).squeeze(-1)

    def relation_scores(self, reports: list[tuple[torch.Tensor, torch.Tensor]]) -> list[torch.Tensor]:
        """For each report's (kept span vectors (K, D), mention scores (K,)): scores (K, K, n_relations + 1).

        The first relation layer sees [s_i, s_j, s_i * s_j]; we apply its weight in three column blocks,
        W1 s_i + W2 s_j + W3 (s_i * s_j), so the K*K x 3D pair matrix is never built (same value; only the
        float rounding order differs, far below any decision margin). Pairs of all given reports share each
        matrix multiply (every row is independent).
        """
        first, rest = self.relation_ff.layers[0], self.relation_ff.layers[1:]
        dim = reports[0][0].size(1)
        w_subject, w_object, w_product = first.weight.split(dim, dim=1)
        tops = [top for top, _ in reports]
        sizes = [top.size(0) for top in tops]
        stacked = torch.cat(tops)
        subject, obj = (stacked @ w_subject.T).split(sizes), (stacked @ w_object.T).split(sizes)
        products = torch.cat([(top.unsqueeze(1) * top.unsqueeze(0)).reshape(-1, dim) for top in tops])
        hidden = products @ w_product.T + first.bias
        pair_sum = torch.cat([(a.unsqueeze(1) + b.unsqueeze(0)).reshape(-1, a.size(1)) for a, b in zip(subject, obj)])
        hidden = torch.relu(hidden + pair_sum)
        for layer in rest:
            hidden = torch.relu(layer(hidden))
        flat = self.relation_out(hidden)
        out = []
        for (top, m), chunk in zip(reports, flat.split([k * k for k in sizes])):
            k = top.size(0)
            # relation.py: scores[i, j] += (m_i + m_j), then the zero null score is prepended.
            out.append(self.with_null(chunk.view(k, k, -1) + (m.view(k, 1, 1) + m.view(1, k, 1))))
        return out

    def relation_scores_fixed(self, top: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """Relation scores of a fixed-shape pass: ``top`` (R, K, D) holds R reports' kept span vectors (padded to K),
        ``m`` (R, K) their mention scores; returns (R, K, K, n_relations + 1). The formula of ``relation_scores``;
        every matrix multiply has the pass's shape, so a report's scores never depend on the other rows."""
        first, rest = self.relation_ff.layers[0], self.relation_ff.layers[1:]
        r, k, dim = top.shape
        w_subject, w_object, w_product = first.weight.split(dim, dim=1)
        flat = top.reshape(r * k, dim)
        subject, obj = (flat @ w_subject.T).view(r, k, 1, -1), (flat @ w_object.T).view(r, 1, k, -1)
        hidden = (top.unsqueeze(2) * top.unsqueeze(1)).reshape(r * k * k, dim) @ w_product.T + first.bias
        hidden = torch.relu(hidden + (subject + obj).reshape(r * k * k, -1))
        for layer in rest:
            hidden = torch.relu(layer(hidden))
        scores = self.relation_out(hidden).view(r, k, k, -1)
        return self.with_null(scores + (m.view(r, k, 1, 1) + m.view(r, 1, k, 1)))

    def relation_pair_width(self) -> int:
        """Floats held per scored pair by the widest intermediate (the [s_i * s_j] block or a hidden layer)."""
        first = self.relation_ff.layers[0]
        return max(first.in_features // 3, *(layer.out_features for layer in self.relation_ff.layers))

    def relation_score_rows(self, top: torch.Tensor, m: torch.Tensor, rows_per_block: int):
        """One report's relation scores in blocks of subject rows: yields (first row, scores (r, K, n_relations + 1)).

        Row i of the result is ``relation_scores([(top, m)])[0][i]`` (same formula, each pair independent); only
        ``rows_per_block * K`` pairs are held at once instead of K * K, so memory grows linearly with the report.
        """
        first, rest = self.relation_ff.layers[0], self.relation_ff.layers[1:]
        k, dim = top.shape
        w_subject, w_object, w_product = first.weight.split(dim, dim=1)
        subject, obj = top @ w_subject.T, top @ w_object.T
        for start in range(0, k, max(rows_per_block, 1)):
            block = top[start:start + rows_per_block]
            r = block.size(0)
            hidden = (block.unsqueeze(1) * top.unsqueeze(0)).reshape(-1, dim) @ w_product.T + first.bias
            pair_sum = (subject[start:start + r].unsqueeze(1) + obj.unsqueeze(0)).reshape(-1, subject.size(1))
            hidden = torch.relu(hidden + pair_sum)
            del pair_sum
            for layer in rest:
                hidden = torch.relu(layer(hidden))
            scores = self.relation_out(hidden).view(r, k, -1)
            del hidden
            yield start, self.with_null(scores + (m[start:start + r].view(r, 1, 1) + m.view(1, k, 1)))


def _head_key_map(cfg: ArchiveConfig) -> dict[str, str]:
    """radgraph 0.1.18 DyGIE state-dict key -> our DyGIEHeads key."""
    ner_ns, rel_ns = f"{cfg.model_type}__ner_labels", f"{cfg.model_type}__relation_labels"
    mapping = {"_endpoint_span_extractor._span_width_embedding.weight": "width_embedding.weight"}
    for p in ("weight", "bias"):
        for i in range(len(cfg.ff_hidden_dims)):
            mapping[f"_ner._ner_scorers.{ner_ns}.0._module._linear_layers.{i}.{p}"] = f"ner.ff.layers.{i}.{p}"
            mapping[f"_relation._mention_pruners.{rel_ns}._scorer.0._module._linear_layers.{i}.{p}"] = \
                f"pruner.ff.layers.{i}.{p}"
            mapping[f"_relation._relation_feedforwards.{rel_ns}._linear_layers.{i}.{p}"] = f"relation_ff.layers.{i}.{p}"
        mapping[f"_ner._ner_scorers.{ner_ns}.1._module.{p}"] = f"ner.out.{p}"
        mapping[f"_relation._mention_pruners.{rel_ns}._scorer.1._module.{p}"] = f"pruner.out.{p}"
        mapping[f"_relation._relation_scorers.{rel_ns}.{p}"] = f"relation_out.{p}"
    return mapping


def split_dygie_state(state: dict[str, torch.Tensor], cfg: ArchiveConfig, where: str
                      ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Split the package's state dict into (encoder state, heads state) under our names.

    Unused coref/event weights and the BERT pooler (never used by DyGIE) are dropped; anything else unknown, or a
    missing head weight, is an error naming the key.
    """
    mapping = _head_key_map(cfg)
    encoder, heads, unknown = {}, {}, []
    for key, tensor in state.items():
        if key in mapping:
            heads[mapping[key]] = tensor
        elif key.startswith(ENCODER_PREFIX):
            name = key[len(ENCODER_PREFIX):]
            if not name.startswith("pooler."):
                encoder[name] = tensor
        elif not key.startswith(UNUSED_PREFIXES):
            unknown.append(key)
    missing = sorted(set(mapping.values()) - set(heads))
    if missing or unknown:
        raise ModelNotAvailableError(
            f"radgraph: {where} does not match a DyGIE RadGraph model of this config "
            f"(missing: {missing[:5]}, unexpected: {unknown[:5]})")
    return encoder, heads


def dygie_state(encoder_state: dict[str, torch.Tensor], heads_state: dict[str, torch.Tensor], cfg: ArchiveConfig
                ) -> dict[str, torch.Tensor]:
    """The inverse of ``split_dygie_state`` (used by the stand-in builder); coref/event weights not included."""
    inverse = {ours: theirs for theirs, ours in _head_key_map(cfg).items()}
    state = {ENCODER_PREFIX + k: v for k, v in encoder_state.items()}
    state.update({inverse[k]: v for k, v in heads_state.items()})
    return state
