"""Batched RadGraph annotation: reports in, radgraph-package-shaped annotations out.

Differences from radgraph 0.1.18 are only in how work is scheduled, never in what is computed:
- the encoder segments of all reports of a call run in the fixed-shape batches of ``rexrank.metrics.batching``
  (``batch_size`` rows, each padded to its length bucket, masked), so a segment's vectors are a function of the
  segment and the weights, never of the reports beside it; every step after the encoder (word vectors, spans,
  NER, pruning, relations) runs per report on tensors of that report's own shape. Before issue 52, reports ran in
  padded batches of up to 32 and the heads over the batch's padded span matrix: a top-2 NER gap of 2.86e-6 became
  0 beside longer reports and an entity was dropped (issue 52);
- relations are scored only for pairs of two kept spans that are entities (radgraph's decoding drops every other
  pair, and each pair's score is its own); a long report's pairs are scored in blocks of subject rows
  (``RELATION_BLOCK_FLOATS``), so memory grows linearly with report length, not with its square;
- no autograd, no allennlp data pipeline; wordpieces of each distinct word are computed once.

Long reports: allennlp's mismatched indexer/embedder with ``max_length`` (512 in the RadGraph configs) does not
truncate. It cuts the report's wordpieces into consecutive segments of ``max_length - 2`` wordpieces, encodes
each as ``[CLS] segment [SEP]`` independently and stitches the vectors back together (a word cut in two takes
pieces from both segments). We do the same, so nothing past 510 wordpieces is dropped. An archive without
``max_length`` (the package would crash past the encoder's positions) is folded at the encoder's
``max_position_embeddings``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics.batching import batch_shape, pin_attention, prepare_device, run_fixed_shape
from rexrank.metrics.radgraph.archive import Archive, encoder_location, read_archive
from rexrank.metrics.radgraph.model import DyGIEHeads, split_dygie_state
from rexrank.metrics.radgraph.tokenize import encoder_word, words_for

Annotation = dict[str, Any]  # {"text": str, "entities": {"1": {"tokens", "label", "start_ix", "end_ix", "relations"}}}

# Reports whose encoder outputs are held at once (their segments still run in fixed-shape passes, so this bounds
# memory and never changes a value).
REPORTS_PER_ROUND = 256

# Relation scoring holds, per scored pair of kept spans, a vector as wide as the widest intermediate (the span
# product block, 2 x BERT hidden + 20, or a 150-wide hidden layer). All K * K pairs of a report at once grow with
# the square of its length (K = half its words; BERT-base-sized stand-in: 1,000 words 5.2 GB peak); a report whose
# pairs would hold more than this many floats is scored in blocks of subject rows (4 MiB per intermediate, at least
# one row). Smaller blocks were also faster on CPU (cache-resident): 2,000 words on the small stand-in took 5.5 s
# at 2**20, 9.5 s at 2**22, 14 s at 2**24 (docs/radgraph.md, "Memory").
RELATION_BLOCK_FLOATS = 1 << 20

# BERT buffers some checkpoints saved as persistent state; they are constants (aranges / zeros), safe to skip.
_IGNORABLE_ENCODER_KEYS = ("embeddings.position_ids", "embeddings.token_type_ids")


def empty_annotation() -> Annotation:
    """A report without words (empty or blank): no entities. radgraph 0.1.18 annotates "" as the word "None" and
    crashes on blank reports; CXR-Report-Metric skips empty reports, i.e. gives them no entities."""
    return {"text": "", "entities": {}}


@dataclass
class _Doc:
    index: int  # position in the caller's list
    words: list[str]
    pieces: list[list[int]]  # wordpiece ids per word (possibly empty)
    n_pieces: int


def resolve_device(device: str | int | torch.device | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if isinstance(device, int):
        device = "cpu" if device < 0 else f"cuda:{device}"
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ConfigError(f"radgraph: invalid device {device!r}: {exc}") from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"radgraph: device {device!r} requested but CUDA is not available")
    return resolved


class Annotator:
    """Loads one archive and annotates reports. Thread-unsafe; one per (archive, device)."""

    # Reports annotated so far, after each batch (display only; the metric sets it around a call).
    progress: Callable[[int, int], None] | None = None

    def __init__(self, archive_dir: str | os.PathLike, device: str | torch.device | None = None,
                 encoder: str | os.PathLike | None = None, model_type: str | None = None):
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        self.archive: Archive = read_archive(archive_dir, model_type)
        self.cfg = self.archive.config
        self.device = resolve_device(device)
        location = encoder_location(self.archive, encoder)
        try:
            # allennlp's PretrainedTransformerTokenizer asks AutoTokenizer for the fast tokenizer (use_fast=True).
            self.tokenizer = AutoTokenizer.from_pretrained(location)
            bert_config = AutoConfig.from_pretrained(location)
        except (OSError, ValueError) as exc:
            raise ModelNotAvailableError(
                f"radgraph: cannot load the BERT config/tokenizer {location!r} named by "
                f"{self.archive.path / 'config.json'}: {str(exc).splitlines()[0][:200]}. Pass encoder=PATH to a local "
                f"copy (config.json + vocab.txt).") from None
        self._start, self._end = self._special_tokens()
        positions = getattr(bert_config, "max_position_embeddings", 512)
        self.segment_length = (self.cfg.max_length or positions) - len(self._start) - len(self._end)
        if self.segment_length <= 0:
            raise ModelNotAvailableError(f"radgraph: max_length {self.cfg.max_length} leaves no room for wordpieces")
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0

        try:
            # mmap: tensors are read from the file as they are copied into the modules, not held twice in memory.
            state = torch.load(self.archive.weights, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:  # legacy (non-zip) torch.save format cannot be memory-mapped
            state = self._load_weights_plainly()
        except Exception as exc:  # noqa: BLE001 - any unpickling failure is an unusable archive
            raise ModelNotAvailableError(f"radgraph: cannot load {self.archive.weights}: {exc}") from None
        encoder_state, heads_state = split_dygie_state(state, self.cfg, str(self.archive.weights))
        for key in _IGNORABLE_ENCODER_KEYS:
            encoder_state.pop(key, None)
        # The package builds the encoder with AutoModel.from_config (weights come from weights.th only).
        self.encoder = AutoModel.from_config(bert_config)
        missing, unexpected = self.encoder.load_state_dict(encoder_state, strict=False)
        missing = [k for k in missing if not k.startswith("pooler.") and k not in _IGNORABLE_ENCODER_KEYS]
        if missing or unexpected:
            raise ModelNotAvailableError(
                f"radgraph: encoder weights in {self.archive.weights} do not fit {location!r} "
                f"(missing {missing[:5]}, unexpected {unexpected[:5]})")
        self.heads = DyGIEHeads(self.cfg, bert_config.hidden_size)
        try:
            self.heads.load_state_dict(heads_state, strict=True)
        except RuntimeError as exc:
            raise ModelNotAvailableError(f"radgraph: {self.archive.weights}: {str(exc)[:300]}") from None
        prepare_device(self.device)
        pin_attention(self.encoder)
        self.encoder.to(self.device).eval()
        self.heads.to(self.device).eval()
        self._piece_cache: dict[str, list[int]] = {}
        self.relation_block_floats = RELATION_BLOCK_FLOATS  # changes memory and speed, never an annotation

    def _load_weights_plainly(self) -> dict[str, torch.Tensor]:
        try:
            return torch.load(self.archive.weights, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - any unpickling failure is an unusable archive
            raise ModelNotAvailableError(f"radgraph: cannot load {self.archive.weights}: {exc}") from None

    # ---- text -> wordpieces ---------------------------------------------------------------------------------
    def _special_tokens(self) -> tuple[list[int], list[int]]:
        """Tokens the tokenizer adds around one sequence ([CLS] / [SEP] for BERT), found by probing as allennlp does."""
        for probe in ("a", "1"):
            bare = self.tokenizer(probe, add_special_tokens=False)["input_ids"]
            full = self.tokenizer(probe, add_special_tokens=True)["input_ids"]
            for i in range(len(full) - len(bare) + 1):
                if bare and full[i:i + len(bare)] == bare:
                    return list(full[:i]), list(full[i + len(bare):])
        raise ModelNotAvailableError("radgraph: cannot tell which special tokens the encoder's tokenizer adds")

    def _pieces(self, words: list[str]) -> list[list[int]]:
        """Each word encoded on its own, no special tokens, no truncation (allennlp intra_word_tokenize)."""
        new = [w for w in dict.fromkeys(words) if w not in self._piece_cache]
        if new:
            encoded = self.tokenizer(new, add_special_tokens=False)["input_ids"]
            self._piece_cache.update(zip(new, (list(ids) for ids in encoded)))
        return [self._piece_cache[w] for w in words]

    def prepare(self, texts: list[str]) -> tuple[list[Annotation | None], list[_Doc]]:
        """Pre-tokenise; reports without any word get their (empty) annotation right away."""
        done: list[Annotation | None] = [None] * len(texts)
        docs = []
        for i, text in enumerate(texts):
            words = words_for(text, self.cfg.model_type)
            if not words:
                done[i] = empty_annotation()
                continue
            pieces = self._pieces([encoder_word(w) for w in words])
            docs.append(_Doc(i, words, pieces, sum(len(p) for p in pieces)))
        return done, docs

    # ---- model ----------------------------------------------------------------------------------------------
    @torch.inference_mode()
    def annotate(self, texts: list[str], batch_size: int | None = None) -> list[Annotation]:
        """One annotation per text; ``self.progress(done, total)``, when set, hears of each annotated report (a
        round's encoder passes are queued together, so its reports finish one by one after them).
        ``batch_size``: encoder segments per pass (rexrank.metrics.batching; None: the device's default)."""
        self.batch_shape(batch_size)  # a bad batch size is refused before any work
        results, docs = self.prepare(list(texts))
        done = 0
        for begin in range(0, len(docs), REPORTS_PER_ROUND):
            chunk = docs[begin:begin + REPORTS_PER_ROUND]
            for doc, words in zip(chunk, self.word_vectors(chunk, batch_size)):
                results[doc.index] = self._annotate_doc(doc, words)
                done += 1
                if self.progress is not None:
                    self.progress(done, len(docs))
        return results  # type: ignore[return-value]

    def batch_shape(self, batch_size: int | None):
        """The fixed shape of the encoder's passes (rows: ``batch_size``; widths up to a whole segment)."""
        try:
            return batch_shape(self.device, batch_size, self.segment_length + len(self._start) + len(self._end))
        except ConfigError as exc:
            raise ConfigError(f"radgraph: {exc}") from None

    def _segments(self, doc: _Doc) -> list[list[int]]:
        """The encoder rows of one report: its wordpieces cut into ``segment_length`` pieces, each wrapped in the
        special tokens (allennlp's mismatched embedder folds long reports this way)."""
        flat = [p for word in doc.pieces for p in word]
        return [self._start + flat[s:s + self.segment_length] + self._end
                for s in range(0, len(flat), self.segment_length)]

    def _words(self, doc: _Doc, rows: list[list[int]], hidden: list[torch.Tensor]) -> torch.Tensor:
        """Word vectors (1, words, H): mean of each word's wordpiece vectors, zeros where a word has none."""
        hidden_size = self.encoder.config.hidden_size
        if not rows:  # every word has no wordpiece (e.g. only zero-width characters)
            return torch.zeros(1, len(doc.words), hidden_size, device=self.device)
        # Each segment's real positions, specials cut off, in report order: row k of `pieces` is wordpiece k.
        pieces = torch.cat([h[len(self._start):len(row) - len(self._end)] for row, h in zip(rows, hidden)])
        max_pieces = max(max((len(p) for p in doc.pieces), default=0), 1)
        index = torch.zeros((len(doc.words), max_pieces), dtype=torch.long)
        piece_mask = torch.zeros_like(index, dtype=torch.bool)
        k = 0
        for w, word_pieces in enumerate(doc.pieces):
            index[w, :len(word_pieces)] = torch.arange(k, k + len(word_pieces))
            piece_mask[w, :len(word_pieces)] = True
            k += len(word_pieces)
        index, piece_mask = index.to(self.device), piece_mask.to(self.device)
        # Reduced like allennlp: masked sum / count.
        gathered = pieces[index.view(-1)].view(*index.shape, hidden_size) * piece_mask.unsqueeze(-1)
        counts = piece_mask.sum(-1, keepdim=True)
        words = gathered.sum(1) / torch.clamp_min(counts, 1)
        return words.masked_fill(counts == 0, 0.0).unsqueeze(0)

    def doc_span_vectors(self, doc: _Doc, words: torch.Tensor) -> tuple[list[tuple[int, int]], torch.Tensor]:
        """The report's spans (start, end), in the dygie reader's order, and their vectors (1, spans, D)."""
        width = self.cfg.reader_max_span_width
        n = len(doc.words)
        spans = [(s, e) for s in range(n) for e in range(s, min(s + width, n))]
        starts = torch.tensor([[s for s, _ in spans]], dtype=torch.long, device=self.device)
        ends = torch.tensor([[e for _, e in spans]], dtype=torch.long, device=self.device)
        return spans, self.heads.span_embeddings(words, starts, ends)

    def word_vectors(self, docs: list[_Doc], batch_size: int | None = None) -> list[torch.Tensor]:
        """Each report's word vectors (1, words, H), its segments run in the fixed-shape encoder passes."""
        segments = [self._segments(doc) for doc in docs]
        hidden = run_fixed_shape([row for rows in segments for row in rows], self.batch_shape(batch_size),
                                 self.pad_id, self.device,
                                 lambda ids, mask: self.encoder(input_ids=ids, attention_mask=mask)[0], to_cpu=False)
        out, k = [], 0
        for doc, rows in zip(docs, segments):
            out.append(self._words(doc, rows, hidden[k:k + len(rows)]))
            k += len(rows)
        return out

    def span_vectors(self, docs: list[_Doc]) -> tuple[list[list[tuple[int, int]]], torch.Tensor]:
        """Each report's spans and their vectors stacked (B, max_spans, D), zero rows past a report's spans (the
        stand-in's calibration reads them; annotation runs ``doc_span_vectors`` per report)."""
        pairs = [self.doc_span_vectors(doc, words) for doc, words in zip(docs, self.word_vectors(docs))]
        most = max(v.size(1) for _, v in pairs)
        vectors = torch.zeros(len(docs), most, pairs[0][1].size(-1), device=self.device)
        for b, (_, v) in enumerate(pairs):
            vectors[b, :v.size(1)] = v[0]
        return [spans for spans, _ in pairs], vectors

    def kept_spans(self, n_words: int, mentions: torch.Tensor) -> tuple[torch.Tensor, int]:
        """relation.py _prune_spans + Pruner: indices of the kept spans (sentence order) and how many count."""
        # ceil(float32(n_words) * spans_per_word), computed in float32 as the package does; at least one is kept.
        keep = int(torch.ceil(torch.tensor([float(n_words)]) * self.cfg.relation_spans_per_word).long())
        scores = mentions.reshape(1, -1, 1)
        return scores.topk(max(keep, 1), 1)[1].view(-1).sort()[0], keep

    def _annotate_doc(self, doc: _Doc, words: torch.Tensor) -> Annotation:
        """One report's annotation from its word vectors; every tensor here has that report's own shape."""
        spans, span_vectors = self.doc_span_vectors(doc, words)
        ner_labels = self.heads.ner_scores(span_vectors).max(dim=-1)[1][0].cpu()
        mentions = self.heads.mention_scores(span_vectors)
        kept = [self.kept_spans(len(doc.words), mentions[0])]
        relations = self._relations(span_vectors, mentions, kept, [spans], [ner_labels != 0])
        entities = [(spans[k], self.cfg.ner_labels[lab]) for k, lab in enumerate(ner_labels.tolist()) if lab != 0]
        return build_annotation(doc.words, entities, relations[0])

    def _relations(self, span_vectors, mentions, kept, spans, is_entity, budget: int = 4096) -> list[list[tuple]]:
        """(subject span, object span, label) per report, in the package's order (row-major over kept pairs).

        Only pairs of two kept entity spans are scored: build_annotation drops every relation whose subject or
        object is no entity, and each pair's score is the same formula on its own two vectors (no pair sees
        another), so scoring the others could change no annotation. Pairs grow with the square of the report, so
        on a long one this was most of the work: 4,900 words of IU-Xray findings took 55.6 s scoring all kept
        pairs and 7.7 s scoring the entity pairs, the same annotation (small stand-in, 1 thread,
        bench/radgraph_memory.py --text iu_xray). Reports whose pairs would hold more than ``relation_block_floats``
        floats in the widest intermediate are scored in blocks of subject rows (``DyGIEHeads.relation_score_rows``):
        memory linear in the report.
        """
        results: list[list[tuple]] = [[] for _ in kept]
        # Per report: the kept spans that may take part in a relation, in kept (sentence) order. relation.py
        # _predict_sentence masks columns beyond `keep`; rows equal `keep` whenever keep >= 1 (keep 0: none).
        chosen = []
        for (top, keep), entity in zip(kept, is_entity):
            positions = top[:keep]
            chosen.append(positions[entity[positions.cpu()].to(positions.device)])
        max_pairs = max(self.relation_block_floats // self.heads.relation_pair_width(), 1)
        b = 0
        while b < len(kept):
            k = len(chosen[b])
            if k == 0:
                b += 1
                continue
            if k * k > max(budget, max_pairs):
                blocks = self.heads.relation_score_rows(span_vectors[b, chosen[b]], mentions[b, chosen[b]],
                                                        max(max_pairs // k, 1))
                for start, scores in blocks:
                    self._collect(results[b], scores, start, chosen[b], spans[b])
                b += 1
                continue
            group, pairs = [], 0
            while b < len(kept) and (not group or pairs + len(chosen[b]) ** 2 <= budget):
                if len(chosen[b]):
                    group.append(b)
                    pairs += len(chosen[b]) ** 2
                b += 1
            scored = self.heads.relation_scores([(span_vectors[g, chosen[g]], mentions[g, chosen[g]]) for g in group])
            for g, scores in zip(group, scored):
                self._collect(results[g], scores, 0, chosen[g], spans[g])
        return results

    def _collect(self, out: list[tuple], scores: torch.Tensor, start: int, chosen: torch.Tensor,
                 spans: list[tuple[int, int]]) -> None:
        """Append the relations of score rows ``start..start + len(scores)`` of one report's matrix of pairs of
        ``chosen`` spans (indices into ``spans``)."""
        labels = scores.max(dim=-1)[1].cpu() - 1  # scorer index 0 is "no relation"
        chosen_list = chosen.tolist()
        for i, j in (labels >= 0).nonzero().tolist():
            out.append((spans[chosen_list[start + i]], spans[chosen_list[j]],
                        self.cfg.relation_labels[int(labels[i, j])]))


def build_annotation(words: list[str], entities: list[tuple[tuple[int, int], str]],
                     relations: list[tuple[tuple[int, int], tuple[int, int], str]]) -> Annotation:
    """radgraph utils.get_entity: entities numbered from "1" in span order; each keeps the relations whose
    subject is its span and whose object is also an entity (others are dropped), in relation order."""
    first_entity = {}
    for number, (span, _) in enumerate(entities, start=1):
        first_entity.setdefault(span, number)
    by_subject: dict[tuple[int, int], list[list[str]]] = {}
    for subject, obj, label in relations:
        if obj in first_entity:
            by_subject.setdefault(subject, []).append([label, str(first_entity[obj])])
    return {
        "text": " ".join(words),
        "entities": {
            str(number): {"tokens": " ".join(words[span[0]:span[1] + 1]), "label": label,
                          "start_ix": span[0], "end_ix": span[1], "relations": list(by_subject.get(span, []))}
            for number, (span, label) in enumerate(entities, start=1)
        },
    }
