"""Batched RadGraph annotation: reports in, radgraph-package-shaped annotations out.

Differences from radgraph 0.1.18 are only in how work is scheduled, never in what is computed:
- the encoder segments of all reports of a call run in the fixed-shape batches of ``rexrank.metrics.batching``
  (``batch_size`` rows, each padded to its length bucket, masked), so a segment's vectors are a function of the
  segment and the weights, never of the reports beside it. The heads follow the same rule (``Annotator._round``):
  word vectors are summed piece by piece per word; span passes (NER, mention pruning) take the reports of one
  word-count bucket, each padded to that bucket's spans; relation passes take the reports of one bucket of kept
  entity spans, padded to it; a bucket's last pass is filled with copies of its first report. A report's values
  therefore depend on the report and the weights alone, and a round of 256 reports costs a few dozen head passes,
  not a dozen operator calls per report. Before issue 52, reports ran in padded batches of up to 32 and the heads
  over the batch's padded span matrix: a top-2 NER gap of 2.86e-6 became 0 beside longer reports and an entity was
  dropped (issue 52);
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

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics.batching import WIDTHS, batch_shape, pin_attention, prepare_device, queue_fixed_shape
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

# Head passes (rexrank.metrics.batching's rule applied to the heads): reports of one bucket per pass, as many as the
# shape's rows unless one report's widest intermediate would make a pass hold more than this many floats (256 MiB);
# then fewer, a number fixed by the bucket. Span passes hold spans x (2 x hidden + width features) floats per
# report, relation passes pairs x the relation pair width.
SPAN_PASS_FLOATS = 1 << 26
RELATION_PASS_FLOATS = 1 << 26
# A report whose kept entity spans, padded to their bucket, make at most this many pairs always goes in a relation
# pass; beyond it (and beyond ``relation_block_floats``), alone in blocks of subject rows.
PAIRS_ALWAYS_BATCHED = 4096

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


@dataclass
class _Found:
    entities: list[tuple[tuple[int, int], str]]
    relations: list[tuple[tuple[int, int], tuple[int, int], str]]
    scores: dict[str, np.ndarray] | None  # raw head scores, when asked for (Annotator.head_scores)


def _ladder(n: int) -> int:
    """The padded size of a head-pass bucket holding ``n`` (words of a report, or its kept entity spans): the
    narrowest of the encoders' widths that holds it; beyond the last, ``n`` itself (a pass of its own)."""
    return next((w for w in WIDTHS if w >= n), n)


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
        self._span_cache: dict[int, tuple[list[tuple[int, int]], np.ndarray, np.ndarray]] = {}
        self._keep_cache: dict[int, int] = {}
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
        round's passes are queued together, so its reports finish one by one after them).
        ``batch_size``: rows per pass (rexrank.metrics.batching; None: the device's default)."""
        shape = self.batch_shape(batch_size)  # a bad batch size is refused before any work
        results, docs = self.prepare(list(texts))
        done = 0
        for begin in range(0, len(docs), REPORTS_PER_ROUND):
            chunk = docs[begin:begin + REPORTS_PER_ROUND]
            for doc, found in zip(chunk, self._round(chunk, shape)):
                results[doc.index] = build_annotation(doc.words, found.entities, found.relations)
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

    def _on_device(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array, dtype=np.int64)).to(self.device)

    def _word_table(self, docs: list[_Doc], shape) -> tuple[torch.Tensor, list[np.ndarray]]:
        """Every word vector of ``docs`` in one table (row 0: zeros, the padding row and the vector of a word without
        wordpieces) and, per report, the table rows of its words.

        A word vector is the mean of its wordpiece vectors (allennlp: masked sum / count). Words are grouped by
        their number of pieces c and summed piece by piece (c elementwise adds in piece order), so a word's bytes
        depend on its own pieces alone, not on the widest word beside it."""
        segments = [self._segments(doc) for doc in docs]
        rows = [row for doc_rows in segments for row in doc_rows]
        hidden_size = self.encoder.config.hidden_size
        passes = queue_fixed_shape(rows, shape, self.pad_id, self.device,
                                   lambda ids, mask: self.encoder(input_ids=ids, attention_mask=mask)[0])
        # Where each segment's first position lies once every pass's output is flattened and concatenated.
        row_start = np.zeros(len(rows), dtype=np.int64)
        parts, offset = [], 0
        for chunk, out in passes:
            n_rows, width = out.shape[:2]
            parts.append(out.reshape(n_rows * width, hidden_size))
            row_start[chunk] = offset + np.arange(len(chunk), dtype=np.int64) * width
            offset += n_rows * width
        # The output row of every wordpiece of the round (reports in order; piece p of a report sits in its
        # segment p // L after the start tokens), and each word's piece count.
        piece_rows, counts, segment = [], [], 0
        for doc, doc_rows in zip(docs, segments):
            p = np.arange(doc.n_pieces, dtype=np.int64)
            piece_rows.append(row_start[segment + p // self.segment_length] + len(self._start)
                              + p % self.segment_length)
            counts.append(np.array([len(w) for w in doc.pieces], dtype=np.int64))
            segment += len(doc_rows)
        all_pieces, all_counts = np.concatenate(piece_rows), np.concatenate(counts)
        first_piece = np.cumsum(all_counts) - all_counts
        table_row = np.zeros(len(all_counts), dtype=np.int64)
        groups = [torch.zeros(1, hidden_size, device=self.device)]
        if parts:
            pieces = torch.cat(parts)
            next_row = 1
            for c in np.unique(all_counts[all_counts > 0]).tolist():
                words = np.nonzero(all_counts == c)[0]
                index = all_pieces[first_piece[words, None] + np.arange(c)]
                vectors = pieces.index_select(0, self._on_device(index.reshape(-1))).view(len(words), c, hidden_size)
                total = vectors[:, 0]
                for j in range(1, c):
                    total = total + vectors[:, j]
                groups.append(total / c if c > 1 else total)
                table_row[words] = next_row + np.arange(len(words))
                next_row += len(words)
        ends = np.cumsum([len(doc.words) for doc in docs])
        return torch.cat(groups), np.split(table_row, ends[:-1])

    def word_vectors(self, docs: list[_Doc], batch_size: int | None = None) -> list[torch.Tensor]:
        """Each report's word vectors (1, words, H), its segments run in the fixed-shape encoder passes."""
        if not docs:
            return []
        table, word_rows = self._word_table(docs, self.batch_shape(batch_size))
        return [table[self._on_device(r)].unsqueeze(0) for r in word_rows]

    def _spans_of(self, n_words: int) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
        """The spans (start, end) of a report of ``n_words`` words in the dygie reader's order, and their starts and
        ends as arrays."""
        found = self._span_cache.get(n_words)
        if found is None:
            width = self.cfg.reader_max_span_width
            spans = [(s, e) for s in range(n_words) for e in range(s, min(s + width, n_words))]
            found = (spans, np.array([s for s, _ in spans], dtype=np.int64),
                     np.array([e for _, e in spans], dtype=np.int64))
            self._span_cache[n_words] = found
        return found

    def _keep(self, n_words: int) -> int:
        """relation.py _prune_spans: ceil(float32(n_words) * spans_per_word) spans kept, at least one."""
        if n_words not in self._keep_cache:
            keep = int(torch.ceil(torch.tensor([float(n_words)]) * self.cfg.relation_spans_per_word).long())
            self._keep_cache[n_words] = max(keep, 1)
        return self._keep_cache[n_words]

    def _pass_rows(self, rows: int, floats_per_report: int, budget: int) -> int:
        """Reports per head pass: the shape's rows, fewer where one report's widest intermediate is large (a
        function of the bucket alone, so every pass of a bucket has one shape)."""
        return max(1, min(rows, budget // max(floats_per_report, 1)))

    def _round(self, docs: list[_Doc], shape, keep_scores: bool = False) -> list[_Found]:
        """Entities and relations of ``docs``. Every pass has a shape fixed by its bucket: span passes take the
        reports of one word-count width (``WIDTHS``), each padded to that width's spans; relation passes take the
        reports whose kept entity spans fit one width of the same ladder, padded to it; the last pass of a bucket
        is filled with copies of its first report. So no value depends on a neighbour or on the round's size.
        ``keep_scores``: also return each report's raw scores (the invariance tests read their bytes)."""
        if not docs:
            return []
        table, word_rows = self._word_table(docs, shape)
        span_dim = 2 * table.size(1) + self.cfg.feature_size
        found = [_Found([], [], {} if keep_scores else None) for _ in docs]

        def gather(rows_: np.ndarray, s: np.ndarray, e: np.ndarray) -> torch.Tensor:
            # Exact copies: two table rows and the width's embedding per span.
            width_ids = self._on_device(e - s)
            return torch.cat([table.index_select(0, self._on_device(rows_[0].reshape(-1))),
                              table.index_select(0, self._on_device(rows_[1].reshape(-1))),
                              self.heads.width_embedding(width_ids.reshape(-1))], dim=-1)

        # -- span passes: NER labels, mention scores, the kept spans ------------------------------------------
        by_width: dict[int, list[int]] = {}
        for d, doc in enumerate(docs):
            by_width.setdefault(_ladder(len(doc.words)), []).append(d)
        span_passes = []
        for width in sorted(by_width):
            n_spans = len(self._spans_of(width)[0])
            rows = self._pass_rows(shape.rows, n_spans * span_dim, SPAN_PASS_FLOATS)
            top_k = min(self._keep(width), n_spans)
            members = by_width[width]
            for begin in range(0, len(members), rows):
                chunk = members[begin:begin + rows]
                starts = np.zeros((2, rows, n_spans), dtype=np.int64)  # table rows of each span's first, last word
                start_word = np.zeros((rows, n_spans), dtype=np.int64)
                end_word = np.zeros((rows, n_spans), dtype=np.int64)
                padding = np.ones((rows, n_spans), dtype=bool)
                for r, d in enumerate(chunk):
                    _, s, e = self._spans_of(len(docs[d].words))
                    starts[0, r, :len(s)], starts[1, r, :len(s)] = word_rows[d][s], word_rows[d][e]
                    start_word[r, :len(s)], end_word[r, :len(s)] = s, e
                    padding[r, :len(s)] = False
                for array in (starts[0], starts[1], start_word, end_word, padding):
                    array[len(chunk):] = array[0]
                vectors = gather(starts, start_word, end_word)
                ner = self.heads.ner_scores(vectors)
                mentions = self.heads.mention_scores(vectors).view(rows, n_spans)
                pad = torch.from_numpy(padding).to(self.device)
                top = mentions.masked_fill(pad, float("-inf")).topk(top_k, dim=1)[1]
                span_passes.append((chunk, n_spans, ner.max(dim=-1)[1].view(rows, n_spans), mentions, top,
                                    ner.view(rows, n_spans, -1) if keep_scores else None))
        all_mentions = torch.cat([p[3].reshape(-1) for p in span_passes])

        # -- read back: entities and, per report, the kept spans that are entities ----------------------------
        chosen: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(docs)
        mention_at: list[int] = [0] * len(docs)
        offset = 0
        for chunk, n_spans, labels, mentions, top, ner in span_passes:
            labels, top = labels.cpu().numpy(), top.cpu().numpy()
            for r, d in enumerate(chunk):
                n_words = len(docs[d].words)
                spans = self._spans_of(n_words)[0]
                own = labels[r, :len(spans)]
                found[d].entities = [(spans[k], self.cfg.ner_labels[own[k]]) for k in np.nonzero(own)[0].tolist()]
                kept = np.sort(top[r, :self._keep(n_words)])
                chosen[d] = kept[own[kept] != 0]
                mention_at[d] = offset + r * n_spans
                if keep_scores:
                    found[d].scores["ner"] = ner[r, :len(spans)].cpu().numpy()
                    found[d].scores["mentions"] = mentions[r, :len(spans)].cpu().numpy()
            offset += labels.size

        # -- relation passes over pairs of kept entity spans ----------------------------------------------------
        pair_width = self.heads.relation_pair_width()
        largest = max(PAIRS_ALWAYS_BATCHED, self.relation_block_floats // pair_width)
        by_k: dict[int, list[int]] = {}
        blocked = []
        for d, ids in enumerate(chosen):
            if len(ids):
                k_pad = _ladder(len(ids))
                (by_k.setdefault(k_pad, []) if k_pad * k_pad <= largest else blocked).append(d)
        relation_passes = []
        for k_pad in sorted(by_k):
            rows = self._pass_rows(shape.rows, k_pad * k_pad * pair_width, RELATION_PASS_FLOATS)
            members = by_k[k_pad]
            for begin in range(0, len(members), rows):
                chunk = members[begin:begin + rows]
                ends = np.zeros((2, rows, k_pad), dtype=np.int64)
                start_word = np.zeros((rows, k_pad), dtype=np.int64)
                end_word = np.zeros((rows, k_pad), dtype=np.int64)
                mention_rows = np.zeros((rows, k_pad), dtype=np.int64)
                for r, d in enumerate(chunk):
                    ids = chosen[d]
                    _, s, e = self._spans_of(len(docs[d].words))
                    ends[0, r, :len(ids)], ends[1, r, :len(ids)] = word_rows[d][s[ids]], word_rows[d][e[ids]]
                    start_word[r, :len(ids)], end_word[r, :len(ids)] = s[ids], e[ids]
                    mention_rows[r, :len(ids)] = mention_at[d] + ids
                for array in (ends[0], ends[1], start_word, end_word, mention_rows):
                    array[len(chunk):] = array[0]
                top = gather(ends, start_word, end_word).view(rows, k_pad, span_dim)
                m = all_mentions.index_select(0, self._on_device(mention_rows.reshape(-1))).view(rows, k_pad)
                scores = self.heads.relation_scores_fixed(top, m)
                relation_passes.append((chunk, scores.max(dim=-1)[1], scores if keep_scores else None))
        for chunk, labels, scores in relation_passes:
            labels = labels.cpu().numpy() - 1  # scorer index 0 is "no relation"
            for r, d in enumerate(chunk):
                k = len(chosen[d])
                spans = self._spans_of(len(docs[d].words))[0]
                ids = chosen[d].tolist()
                own = labels[r, :k, :k]
                for i, j in np.argwhere(own >= 0).tolist():
                    found[d].relations.append((spans[ids[i]], spans[ids[j]], self.cfg.relation_labels[own[i, j]]))
                if keep_scores:
                    found[d].scores["relations"] = scores[r, :k, :k].cpu().numpy()

        # -- reports with too many pairs for one pass: their own shape, in blocks of subject rows ---------------
        max_pairs = max(self.relation_block_floats // pair_width, 1)
        for d in blocked:
            ids = chosen[d]
            _, s, e = self._spans_of(len(docs[d].words))
            top = gather(np.stack([word_rows[d][s[ids]], word_rows[d][e[ids]]]), s[ids], e[ids])
            m = all_mentions.index_select(0, self._on_device(mention_at[d] + ids))
            blocks = []
            for start, scores in self.heads.relation_score_rows(top, m, max(max_pairs // len(ids), 1)):
                self._collect(found[d].relations, scores, start, ids, self._spans_of(len(docs[d].words))[0])
                if keep_scores:
                    blocks.append(scores.cpu().numpy())
            if keep_scores:
                found[d].scores["relations"] = np.concatenate(blocks)
        return found

    def head_scores(self, texts: list[str], batch_size: int | None = None) -> list[dict[str, np.ndarray] | None]:
        """Per text, the raw scores of its heads: "ner" (spans, labels), "mentions" (spans,), "relations" (K, K,
        relation labels + 1) for its K kept entity spans (absent without any); None for a text without words."""
        _, docs = self.prepare(list(texts))
        scores: list[dict[str, np.ndarray] | None] = [None] * len(texts)
        with torch.inference_mode():
            for doc, found in zip(docs, self._round(docs, self.batch_shape(batch_size), keep_scores=True)):
                scores[doc.index] = found.scores
        return scores

    def doc_span_vectors(self, doc: _Doc, words: torch.Tensor) -> tuple[list[tuple[int, int]], torch.Tensor]:
        """The report's spans (start, end), in the dygie reader's order, and their vectors (1, spans, D)."""
        width = self.cfg.reader_max_span_width
        n = len(doc.words)
        spans = [(s, e) for s in range(n) for e in range(s, min(s + width, n))]
        starts = torch.tensor([[s for s, _ in spans]], dtype=torch.long, device=self.device)
        ends = torch.tensor([[e for _, e in spans]], dtype=torch.long, device=self.device)
        return spans, self.heads.span_embeddings(words, starts, ends)

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
