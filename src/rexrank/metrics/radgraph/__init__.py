"""RadGraph metrics: ReXrank's ``radgraph`` (radgraph_combined) and the radgraph package's reward levels.

Annotation is identical to radgraph 0.1.18 on the same archive (tests/test_radgraph_parity.py) but batched,
without allennlp, on transformers 5, CPU or GPU. Registry names (src/rexrank/metrics/__init__.py):

- ``radgraph``          (entity F1 + relation F1) / 2 as CXR-Report-Metric computes it: the ReXrank column.
- ``radgraph_simple``   F1RadGraph reward "simple"   (RG_E)
- ``radgraph_partial``  F1RadGraph reward "partial"  (RG_ER; what RadEval reports as "radgraph")
- ``radgraph_complete`` F1RadGraph reward "complete" (RG_ER-bar)

All four share one annotation cache (``Metric.per_text`` under the ``radgraph`` name), so asking for several
levels annotates each distinct report once. Empty or whitespace-only reports get no entities (score 0); see
docs/radgraph.md for every edge case.
"""

from __future__ import annotations

import copy
import os
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rexrank.errors import ConfigError, InputError
from rexrank.metrics import REGISTRY
from rexrank.metrics.base import Metric, check_pairs
from rexrank.metrics.batching import determinism, policy
from rexrank.metrics.radgraph.inference import Annotation, Annotator, resolve_device
from rexrank.metrics.radgraph.scores import REWARD_LEVELS, combined_scores, reward

__all__ = ["Annotation", "Annotator", "RadGraphCombined", "RadGraphRewardComplete", "RadGraphRewardPartial",
           "RadGraphRewardSimple", "combined_scores", "reward"]

# model= shorthands for the two official archives (rexrank.metrics.weights.SOURCES keys).
_ARCHIVE_KEYS = {"radgraph": "radgraph", "radgraph_xl": "radgraph_xl", "radgraph-xl": "radgraph_xl"}
_ANNOTATORS: dict[tuple, Annotator] = {}
_LOCK = threading.Lock()


def _digest(path: Path) -> str:
    """sha256 of a weight file, memoised (rexrank.metrics.weights.file_sha256)."""
    from rexrank.metrics.weights import file_sha256

    return file_sha256(path)


class _AnnotationStore(Metric):
    """Owner of the shared per-text cache namespace "radgraph:annotations:<fingerprint>"."""

    spec = REGISTRY.spec("radgraph")

    def __init__(self, config: dict[str, Any]):
        self._config = config

    def config(self) -> dict[str, Any]:
        return self._config


class _RadGraphMetric(Metric):
    """Shared model handling of the four RadGraph metrics."""

    def __init__(self, model: str | os.PathLike | None = None, device: str | int | None = None,
                 batch_size: int | None = None, encoder: str | os.PathLike | None = None, model_type: str | None = None):
        # Encoder segments per pass (rexrank.metrics.batching); None: the device's default. In the config.
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                                       or batch_size < 1):
            raise ConfigError(f"{self.spec.name}: batch_size must be a positive integer, got {batch_size!r}")
        self.model = model
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.encoder = encoder
        self.model_type = model_type
        self._archive_dir: Path | None = None
        self._store: _AnnotationStore | None = None

    # ---- where the weights are ------------------------------------------------------------------------------
    @property
    def archive_dir(self) -> Path:
        if self._archive_dir is None:
            from rexrank.metrics.weights import resolve

            text = os.fspath(self.model) if self.model is not None else None
            if text is None:
                self._archive_dir = resolve("radgraph")
            elif not Path(text).expanduser().exists() and text.lower() in _ARCHIVE_KEYS:
                self._archive_dir = resolve(_ARCHIVE_KEYS[text.lower()])  # "radgraph" / "radgraph_xl" shorthands
            else:
                self._archive_dir = resolve("radgraph", text)  # a local folder / .tar.gz, or a Hub repo id
        return self._archive_dir

    def locate_weights(self) -> None:
        self.archive_dir  # noqa: B018 - resolving the property finds (or downloads) the archive

    def _annotator(self) -> Annotator:
        key = (str(self.archive_dir), os.fspath(self.encoder) if self.encoder else None, self.model_type,
               str(self.device))
        with _LOCK:
            if key not in _ANNOTATORS:
                self._announce_load(self.archive_dir)
                _ANNOTATORS[key] = Annotator(self.archive_dir, self.device, self.encoder, self.model_type)
            return _ANNOTATORS[key]

    def annotation_config(self) -> dict[str, Any]:
        """Everything that can change an annotation: the archive's weights, config, vocabulary and encoder."""
        from rexrank.metrics.radgraph.archive import read_archive

        archive = read_archive(self.archive_dir, self.model_type)
        cfg = archive.config
        return {
            "annotator": "rexrank-dygie-1 (radgraph 0.1.18 parity)",
            "weights_sha256": _digest(archive.weights),
            "model_type": cfg.model_type,
            "encoder": os.fspath(self.encoder) if self.encoder else cfg.encoder_name,
            "max_length": cfg.max_length,
            "max_span_width": cfg.reader_max_span_width,
            "spans_per_word": cfg.relation_spans_per_word,
            "labels": [list(cfg.ner_labels), list(cfg.relation_labels)],
            "batching": policy(self.device, self.batch_size),
            "determinism": determinism(self.device),
        }

    def config(self) -> dict[str, Any]:
        # The weight hash identifies the model wherever it lies; a local path would only break cache reuse.
        return self.annotation_config()

    # ---- annotations ----------------------------------------------------------------------------------------
    def annotate(self, texts: Sequence[str]) -> list[Annotation]:
        """RadGraph annotations, one per text, shaped like radgraph 0.1.18's output for that report:
        ``{"text": words joined by spaces, "entities": {"1": {"tokens", "label", "start_ix", "end_ix",
        "relations": [[relation, entity number], ...]}, ...}}``. JSON-able; computed once per distinct text."""
        if isinstance(texts, str):
            raise InputError("annotate() takes a list of report strings, not a single string")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputError(f"texts[{i}] is a {type(text).__name__}, not a string: {text!r:.80}")
        return copy.deepcopy(self._annotations(texts))

    def _annotations(self, texts: list[str]) -> list[Annotation]:
        if self._store is None:
            self._store = _AnnotationStore(self.annotation_config())
        self._store.text_cache = self.text_cache
        values = self._store.per_text("annotations", texts, self._annotate_unique)
        self.text_cache = self._store.text_cache
        return values

    def _annotate_unique(self, texts: list[str]) -> list[Annotation]:
        annotator = self._annotator()
        annotator.progress = self._report_progress
        try:
            return annotator.annotate(texts, self.batch_size)
        finally:
            annotator.progress = None

    def _pair_annotations(self, hyps: list[str], refs: list[str]) -> tuple[list[Annotation], list[Annotation]]:
        annotations = self._annotations(hyps + refs)
        return annotations[:len(hyps)], annotations[len(hyps):]


class RadGraphCombined(_RadGraphMetric):
    """ReXrank's RadGraph column: (entity F1 + relation F1) / 2 per pair (CXR-Report-Metric radgraph_combined)."""

    spec = REGISTRY.spec("radgraph")

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        hyp_ann, ref_ann = self._pair_annotations(hyps, refs)
        return np.array([combined_scores(h, r)[2] for h, r in zip(hyp_ann, ref_ann)], dtype=np.float64)

    def _score_details(self, hyps: Sequence[str], refs: Sequence[str]):
        """Per pair: radgraph (combined), radgraph_entity_f1, radgraph_relation_f1."""
        import pandas as pd

        hyps, refs = check_pairs(hyps, refs)
        hyp_ann, ref_ann = self._pair_annotations(hyps, refs) if hyps else ([], [])
        rows = [combined_scores(h, r) for h, r in zip(hyp_ann, ref_ann)]
        return pd.DataFrame({
            self.spec.name: np.array([r[2] for r in rows], dtype=np.float64),
            "radgraph_entity_f1": np.array([r[0] for r in rows], dtype=np.float64),
            "radgraph_relation_f1": np.array([r[1] for r in rows], dtype=np.float64),
        })


class _RadGraphReward(_RadGraphMetric):
    level: str

    def config(self) -> dict[str, Any]:
        return {**super().config(), "reward_level": self.level}

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        hyp_ann, ref_ann = self._pair_annotations(hyps, refs)
        return np.array([reward(h, r, self.level) for h, r in zip(hyp_ann, ref_ann)], dtype=np.float64)


class RadGraphRewardSimple(_RadGraphReward):
    """radgraph package F1RadGraph(reward_level="simple"): RG_E, entities only."""

    spec = REGISTRY.spec("radgraph_simple")
    level = "simple"


class RadGraphRewardPartial(_RadGraphReward):
    """radgraph package F1RadGraph(reward_level="partial"): RG_ER, entities and whether they have relations."""

    spec = REGISTRY.spec("radgraph_partial")
    level = "partial"


class RadGraphRewardComplete(_RadGraphReward):
    """radgraph package F1RadGraph(reward_level="complete"): RG_ER-bar, entities with all their relations."""

    spec = REGISTRY.spec("radgraph_complete")
    level = "complete"


assert tuple(c.level for c in (RadGraphRewardSimple, RadGraphRewardPartial, RadGraphRewardComplete)) == REWARD_LEVELS
