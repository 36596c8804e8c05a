"""SRR-BERT (column ``srrbert``): structured-report finding classification, scored as F1 over predicted findings.

What radeval 2.2.1 computes (radeval/metrics/SRRBert/srr_bert.py ``SRRBert.evaluate``, its adapter
``SRRBertMetric`` and ``radeval.utils.multilabel_prf_per_sample``), reproduced here:

- model: a BERT sequence classifier, ``StanfordAIMI/SRR-BERT-Leaves-with-Statuses`` by default (the adapter's
  variant; ``variant=`` picks leaves / upper / upper_with_statuses, each with its own Hub repo and label map,
  ``rexrank.metrics.srrbert_labels``); tokenizer ``microsoft/BiomedVLP-CXR-BERT-general``; text cut at 512 tokens;
- sentences: a report is cleaned of list numbering by five regular expressions (below), a capital letter glued to a
  period gets a space, a final period is added when the text ends without . ! or ?, then ``nltk.sent_tokenize``
  (Punkt, english parameters from nltk's ``punkt_tab`` data); every sentence is classified on its own;
- a sentence has label k when sigmoid(logit_k) > 0.5; a report's labels are the union over its sentences
  (a report with no sentence has none);
- per report (radeval's per_sample values; the registry value is the F1): over the labels in either set,
  the mean of tp/(tp+fp+eps), tp/(tp+fn+eps) and 2tp/(2tp+fp+fn+eps), eps = 1e-8; 1.0 when both sets are empty;
- radeval's aggregates ``srrbert_weighted_f1/precision/recall`` are scikit-learn's ``classification_report``
  weighted averages over labels (references as truth, zero_division 0): corpus-level, ``weighted_scores``.
  radeval rounds them to 4 decimals for display; rexrank does not.

Labels of each distinct sentence are cached (per-text cache); sentences are classified in fixed-shape batches
(rexrank.metrics.batching: a sentence's labels never depend on the sentences beside it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics import REGISTRY
from rexrank.metrics.base import Metric, check_pairs, file_digest, fingerprint_of
from rexrank.metrics.batching import batch_shape, determinism, pin_attention, policy, prepare_device, run_fixed_shape
from rexrank.metrics.semb import _default_device
from rexrank.metrics.srrbert_labels import LABELS
from rexrank.metrics.weights import resolve, weight_digests

# radeval 2.2.1 srr_bert.py SRRBert.MODEL_CONFIGS: variant -> Hub repo (the adapter uses leaves_with_statuses).
REPOS = {
    "leaves": "StanfordAIMI/SRR-BERT-Leaves",
    "upper": "StanfordAIMI/SRR-BERT-Upper",
    "leaves_with_statuses": "StanfordAIMI/SRR-BERT-Leaves-with-Statuses",
    "upper_with_statuses": "StanfordAIMI/SRRG-BERT-Upper-with-Statuses",
}
DEFAULT_VARIANT = "leaves_with_statuses"
MAX_TOKENS = 512
EPS = 1e-8  # radeval.utils.multilabel_prf_per_sample

# radeval 2.2.1 srr_bert.py srr_bert_parse_sentences: list-numbering clean-up, applied in this order (exact patterns).
_NUMBERING = (
    (re.compile(r'^\s*\d+\.(?!\d)\s*'), ''),
    (re.compile(r'(\w)\.(\d+)\.(?!\d)\s*'), r'\1. '),
    (re.compile(r'(\w)(\d+)\.(?!\d)\s*'), r'\1. '),
    (re.compile(r'(\w)\s+\d+\.(?!\d)\s*'), r'\1. '),
    (re.compile(r'([.!?])\s*\d+\.(?!\d)\s*'), r'\1 '),
    (re.compile(r'\.([A-Z])'), r'. \1'),
)

PRECISION_COLUMN = "srrbert_precision"
RECALL_COLUMN = "srrbert_recall"
HYP_LABELS_COLUMN = "srrbert_hyp_labels"
REF_LABELS_COLUMN = "srrbert_ref_labels"


def punkt_folder(path: str | Path | None) -> Path:
    """The Punkt parameter folder (``.../punkt_tab/english``): ``path`` (that folder, or an nltk_data root holding
    tokenizers/punkt_tab/english), else nltk's own search path."""
    if path is not None:
        root = Path(path).expanduser()
        for candidate in (root, root / "tokenizers" / "punkt_tab" / "english", root / "punkt_tab" / "english"):
            if (candidate / "sent_starters.txt").is_file():
                return candidate
        raise ModelNotAvailableError(f"srrbert: no Punkt parameters (punkt_tab/english/*.txt, *.tab) under {root}; "
                                     "pass punkt=<nltk_data or punkt_tab/english folder>")
    try:
        import nltk.data

        return Path(nltk.data.find("tokenizers/punkt_tab/english/"))
    except ImportError:
        raise ModelNotAvailableError("srrbert: splitting reports into sentences needs nltk: pip install nltk") from None
    except LookupError:
        raise ModelNotAvailableError("srrbert: nltk's punkt_tab data is not installed: run "
                                     "`python -m nltk.downloader punkt_tab` or pass punkt=<folder>") from None


class SentenceSplitter:
    """radeval's ``srr_bert_parse_sentences`` with the Punkt parameters of one folder."""

    def __init__(self, folder: Path):
        from nltk.tabdata import PunktDecoder
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

        # nltk's load_punkt_params, on files we open ourselves: nltk 3.10 refuses to open data outside its own
        # search path, and punkt= may name any folder.
        self.folder = folder
        params, decode = PunktParameters(), PunktDecoder()
        try:
            with open(folder / "collocations.tab", encoding="utf-8") as f:
                params.collocations = set(decode.tab2tups(f))
            with open(folder / "sent_starters.txt", encoding="utf-8") as f:
                params.sent_starters = decode.txt2set(f)
            with open(folder / "abbrev_types.txt", encoding="utf-8") as f:
                params.abbrev_types = decode.txt2set(f)
            with open(folder / "ortho_context.tab", encoding="utf-8") as f:
                params.ortho_context = decode.tab2intdict(f)
        except (OSError, ValueError) as exc:
            raise ModelNotAvailableError(f"srrbert: cannot read the Punkt parameters in {folder} ({exc})") from None
        self._punkt = PunktSentenceTokenizer(params)

    def __call__(self, text: str) -> list[str]:
        for pattern, replacement in _NUMBERING:
            text = pattern.sub(replacement, text)
        if not text.strip().endswith(('.', '!', '?')):
            text = text.strip() + '.'
        return self._punkt.tokenize(text)


def sample_prf(hyp: set[int], ref: set[int]) -> tuple[float, float, float]:
    """radeval's per-sample (P, R, F1): means over the labels in either set; (1, 1, 1) when both are empty."""
    union = hyp | ref
    if not union:
        return 1.0, 1.0, 1.0
    tp = len(hyp & ref)
    fp, fn = len(hyp - ref), len(ref - hyp)
    # Each label is a tp, an fp or an fn; per label: p = tp/(tp+fp+eps), r = tp/(tp+fn+eps), f = 2tp/(2tp+fp+fn+eps).
    p = tp * (1.0 / (1.0 + EPS))
    f = tp * (2.0 / (2.0 + EPS))
    n = len(union)
    return p / n, p / n, f / n


def weighted_scores(hyp_sets: Sequence[set[int]], ref_sets: Sequence[set[int]], n_labels: int) -> dict[str, float]:
    """scikit-learn ``classification_report(refs, hyps, zero_division=0)["weighted avg"]``: per-label precision,
    recall and F1 from summed counts, averaged with the references' label counts as weights (0 without any)."""
    tp, fp, fn = (np.zeros(n_labels) for _ in range(3))
    for hyp, ref in zip(hyp_sets, ref_sets):
        tp[list(hyp & ref)] += 1
        fp[list(hyp - ref)] += 1
        fn[list(ref - hyp)] += 1
    support = tp + fn

    def ratio(a, b):
        return np.divide(a, b, out=np.zeros_like(a), where=b > 0)

    values = {"srrbert_weighted_precision": ratio(tp, tp + fp), "srrbert_weighted_recall": ratio(tp, support),
              "srrbert_weighted_f1": ratio(2 * tp, 2 * tp + fp + fn)}
    total = support.sum()
    return {k: (float((v * support).sum() / total) if total > 0 else 0.0) for k, v in values.items()}


class SRRBert(Metric):
    """``get("srrbert", model=, tokenizer=, punkt=, variant="leaves_with_statuses", device=, batch_size=)``."""

    spec = REGISTRY.spec("srrbert")

    def __init__(self, model: str | Path | None = None, tokenizer: str | Path | None = None,
                 punkt: str | Path | None = None, variant: str = DEFAULT_VARIANT, device: str | None = None,
                 batch_size: int | None = None):
        if variant not in REPOS:
            raise ConfigError(f"srrbert: unknown variant {variant!r}; choose one of {', '.join(REPOS)}")
        self.variant = variant
        self.labels = LABELS[variant]
        self.model_path = resolve("srrbert", model if model is not None else REPOS[variant])
        self.tokenizer_path = resolve("srrbert_tokenizer", tokenizer)
        self.punkt = punkt
        self.device = device or _default_device()
        # Sentences per pass (rexrank.metrics.batching; radeval uses 4); None: the device's default, in the config.
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size < 1):
            raise ConfigError(f"srrbert: batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size = batch_size
        self._model = self._tokenizer = self._splitter = None
        self._config: dict[str, Any] | None = None

    def splitter(self) -> SentenceSplitter:
        if self._splitter is None:
            self._splitter = SentenceSplitter(punkt_folder(self.punkt))
        return self._splitter

    def config(self) -> dict[str, Any]:
        if self._config is None:
            folder = self.splitter().folder
            self._config = {
                "variant": self.variant,
                "model": REPOS[self.variant] if self.model_path.parent.name == "snapshots" else "local",
                "weight_digests": {"srrbert": weight_digests("srrbert", self.model_path),
                                   "srrbert_tokenizer": weight_digests("srrbert_tokenizer", self.tokenizer_path)},
                "punkt": fingerprint_of({p.name: file_digest(p) for p in sorted(folder.iterdir()) if p.is_file()}),
                "labels": len(self.labels),
                "rule": "sentences (radeval regexes + Punkt) -> sigmoid > 0.5 per label -> union per report; "
                        "per-report mean P/R/F1 over the union of labels (eps 1e-8; 1 when both empty)",
                "batching": policy(self.device, self.batch_size),
                "determinism": determinism(self.device),
            }
        return self._config

    def _load(self):
        if self._model is not None:
            return self._model, self._tokenizer
        import torch
        from transformers import AutoTokenizer, BertForSequenceClassification
        from transformers.utils import logging as hf_logging

        previous = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(self.tokenizer_path))
            model = BertForSequenceClassification.from_pretrained(str(self.model_path), num_labels=len(self.labels),
                                                                  dtype=torch.float32)
        except Exception as exc:  # noqa: BLE001 - one clear message instead of a transformers traceback
            raise ModelNotAvailableError(f"srrbert: cannot load the classifier from {self.model_path} or the "
                                         f"tokenizer from {self.tokenizer_path} ({type(exc).__name__}: "
                                         f"{str(exc)[:200]})") from None
        finally:
            hf_logging.set_verbosity(previous)
            if bars:
                hf_logging.enable_progress_bar()
        prepare_device(self.device)
        pin_attention(model)
        self._model, self._tokenizer = model.eval().to(self.device), tokenizer
        return self._model, self._tokenizer

    def classify(self, sentences: list[str]) -> list[list[int]]:
        """Label indices (sigmoid > 0.5, i.e. logit > 0) of each sentence, in fixed-shape batches."""
        import torch

        model, tokenizer = self._load()
        ids = tokenizer(sentences, add_special_tokens=True, truncation=True, max_length=MAX_TOKENS)["input_ids"]

        def forward(input_ids, mask):
            return torch.sigmoid(model(input_ids=input_ids, attention_mask=mask).logits.float()) > 0.5

        widest = min(MAX_TOKENS, model.config.max_position_embeddings)
        positive = run_fixed_shape(ids, batch_shape(self.device, self.batch_size, widest), tokenizer.pad_token_id,
                                   self.device, forward, progress=self._report_progress)
        return [[int(k) for k in np.flatnonzero(row)] for row in positive]

    def report_labels(self, texts: Sequence[str]) -> list[set[int]]:
        """Each report's label set: the union of its sentences' labels."""
        split = self.splitter()
        sentences = self.per_text("sentences", texts, lambda todo: [split(t) for t in todo])
        flat = [s for group in sentences for s in group]
        labels = self.per_text("labels", flat, self.classify) if flat else []
        out, k = [], 0
        for group in sentences:
            found: set[int] = set()
            for row in labels[k:k + len(group)]:
                found.update(row)
            k += len(group)
            out.append(found)
        return out

    def _prf(self, hyps: list[str], refs: list[str]):
        hyp_sets, ref_sets = self.report_labels(hyps), self.report_labels(refs)
        return np.array([sample_prf(h, r) for h, r in zip(hyp_sets, ref_sets)]).reshape(-1, 3), hyp_sets, ref_sets

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        return self._prf(hyps, refs)[0][:, 2]

    def _score_details(self, hyps, refs):
        """Per pair: ``srrbert`` (F1), precision, recall, and both label sets ("; "-joined label names)."""
        import pandas as pd

        hyps, refs = check_pairs(hyps, refs)
        values, hyp_sets, ref_sets = self._prf(hyps, refs) if hyps else (np.zeros((0, 3)), [], [])

        def names(sets):
            return ["; ".join(self.labels[k] for k in sorted(s)) for s in sets]

        return pd.DataFrame({"srrbert": values[:, 2], PRECISION_COLUMN: values[:, 0], RECALL_COLUMN: values[:, 1],
                             HYP_LABELS_COLUMN: names(hyp_sets), REF_LABELS_COLUMN: names(ref_sets)})

    def weighted(self, hyps: Sequence[str], refs: Sequence[str]) -> dict[str, float]:
        """radeval's aggregates (``srrbert_weighted_f1``, ``_precision``, ``_recall``) over these pairs."""
        hyps, refs = check_pairs(hyps, refs)
        return weighted_scores(self.report_labels(hyps), self.report_labels(refs), len(self.labels))
