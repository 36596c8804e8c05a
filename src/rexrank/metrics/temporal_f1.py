"""Temporal entity F1 (column ``temporal_f1``): does a report get change over time right, as radeval 2.2.1 scores it.

What radeval 2.2.1 computes (radeval/metrics/f1temporal/f1temporal.py, adopted from Libra's temporal_f1.py, and its
adapter ``TemporalF1Metric``), reproduced here:

- a report's temporal entities are the union of
  (a) stanza's ``en`` pipeline, ``Pipeline(lang="en", package="radiology", processors={"tokenize": "default",
      "ner": "radiology"})``: the lower-cased text of every entity typed OBSERVATION or OBSERVATION_MODIFIER that is
      one of the temporal keywords below, and
  (b) every whole-word match of a keyword in the lower-cased text after ``clean_text`` (newlines and runs of ``_``/
      ``-`` become a space, three placeholder patterns are removed, characters other than word characters, whitespace
      and ``.,:;()-`` are removed, runs of whitespace become one space);
- per pair: 1.0 when both sets are empty, epsilon (1e-10) when only the reference's is, else
  P = (tp+e)/(|hyp|+e), R = (tp+e)/(|ref|+e), F1 = 2PR/(P+R+e);
- radeval's aggregate is the mean over pairs.

The 44 keywords are the temporal keywords of Bannur et al., CVPR 2023 (BioViL-T, arXiv 2301.04558), as radeval lists
them. Since (a) keeps only entities equal to a keyword, (b) finds most of them too; (a) adds a keyword the regex
misses where the tokenizer splits text that ``clean_text`` glues together ("stable/unchanged" -> "stableunchanged").

Models: a stanza resources folder (``resources.json`` + ``en/<processor>/<package>.pt``): stanza's own default
(``$STANZA_RESOURCES_DIR``, else ``~/stanza_resources``), filled by ``stanza.download("en", package="radiology",
processors={"ner": "radiology"})`` exactly as radeval's adapter calls it, or ``model=FOLDER``. rexrank loads it
through stanza's ``Pipeline`` with ``download_method=None``: scoring never reaches the network. Needs stanza
(``pip install 'rexrank[temporal]'``).

Each distinct report is run through stanza once (per-text cache), in batches (stanza's bulk processing).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics import REGISTRY
from rexrank.metrics.base import Metric, check_pairs
from rexrank.metrics.weights import file_sha256, weight_digests

# radeval 2.2.1 f1temporal.py KEYWORDS (from BioViL-T, CVPR 2023): 44 words.
KEYWORDS = frozenset({
    "bigger", "change", "cleared", "constant", "decrease", "decreased", "decreasing", "elevated", "elevation",
    "enlarged", "enlargement", "enlarging", "expanded", "greater", "growing", "improved", "improvement",
    "improving", "increase", "increased", "increasing", "larger", "new", "persistence", "persistent",
    "persisting", "progression", "progressive", "reduced", "removal", "resolution", "resolved", "resolving",
    "smaller", "stability", "stable", "stably", "unchanged", "unfolded", "worse", "worsen", "worsened",
    "worsening", "unaltered",
})
EPSILON = 1e-10  # radeval's F1Temporal default
ENTITY_TYPES = frozenset({"OBSERVATION", "OBSERVATION_MODIFIER"})  # the NER types radeval keeps
# radeval's Pipeline arguments (f1temporal.py) and the model files they load (stanza 1.15 resources for en).
LANG, PACKAGE, PROCESSORS = "en", "radiology", {"tokenize": "default", "ner": "radiology"}
STANZA_VERSION = "1.15.0"  # what radeval 2.2.1's reference environment installs (pyproject extra "temporal")
DEFAULT_BATCH_SIZE = 64  # reports per stanza bulk call; batch composition changes nothing (checked in the tests)

# The keywords as one alternation of whole words. Sorted: radeval joins a set (order varies per process), which
# cannot change a match here, since no keyword followed by a word boundary is a prefix of another that is.
_KEYWORD_RE = re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(KEYWORDS)) + r")\b")
# radeval's clean_text, in its order (the second [_-]+ pass is a no-op after the first, kept for exactness).
_CLEAN = (
    (re.compile(r"\n+"), " "),
    (re.compile(r"[_-]+"), " "),
    (re.compile(r"\(___, __, __\)"), ""),
    (re.compile(r"---, ---, ---"), ""),
    (re.compile(r"\(__, __, ___\)"), ""),
    (re.compile(r"[_-]+"), " "),
    (re.compile(r"[^\w\s.,:;()-]"), ""),
)
_SPACES = re.compile(r"\s{2,}")

HYP_ENTITIES_COLUMN = "temporal_f1_hyp_entities"
REF_ENTITIES_COLUMN = "temporal_f1_ref_entities"


def clean_text(text: str) -> str:
    """radeval's ``clean_text``."""
    for pattern, replacement in _CLEAN:
        text = pattern.sub(replacement, text)
    return _SPACES.sub(" ", text).strip()


def keyword_matches(text: str) -> set[str]:
    """Part (b): the keywords found as whole words in the cleaned, lower-cased text."""
    return {m.group().lower() for m in _KEYWORD_RE.finditer(clean_text(text).lower())}


def keyword_entities(entities: Sequence[tuple[str, str]]) -> set[str]:
    """Part (a): of stanza's (text, type) entities, the lower-cased texts of the kept types that are keywords."""
    return {text.lower() for text, kind in entities if kind in ENTITY_TYPES} & KEYWORDS


def pair_f1(hyp: set[str], ref: set[str], epsilon: float = EPSILON) -> float:
    """radeval's ``calculate_tem_score`` on two entity sets."""
    if not ref:
        return 1.0 if not hyp else epsilon
    tp = len(hyp & ref)
    precision = (tp + epsilon) / (len(hyp) + epsilon)
    recall = (tp + epsilon) / (len(ref) + epsilon)
    return (2 * precision * recall) / (precision + recall + epsilon)


def default_folder() -> Path:
    """stanza's default resources folder ($STANZA_RESOURCES_DIR, else its user cache), without importing stanza."""
    explicit = os.environ.get("STANZA_RESOURCES_DIR")
    if explicit:
        return Path(explicit).expanduser()
    try:
        from stanza.resources.common import DEFAULT_MODEL_DIR
    except ImportError:
        raise _no_stanza() from None
    return Path(DEFAULT_MODEL_DIR)


def _no_stanza() -> ModelNotAvailableError:
    return ModelNotAvailableError(f"temporal_f1 needs stanza: pip install 'rexrank[temporal]' "
                                  f"(stanza=={STANZA_VERSION})")


class TemporalF1(Metric):
    """``get("temporal_f1", model=<stanza resources folder>, device=, batch_size=)``."""

    spec = REGISTRY.spec("temporal_f1")

    def __init__(self, model: str | Path | None = None, device: str | None = None, batch_size: int | None = None):
        self.folder = Path(model).expanduser() if model is not None else default_folder()
        self.device = device
        self.batch_size = DEFAULT_BATCH_SIZE if batch_size is None else int(batch_size)
        if self.batch_size < 1:
            raise ConfigError(f"temporal_f1: batch_size must be >= 1, got {batch_size}")
        if not (self.folder / "resources.json").is_file():
            raise ModelNotAvailableError(
                f"temporal_f1: no stanza resources (resources.json) in {self.folder}. Run `python -c \"import stanza; "
                f"stanza.download('en', package='radiology', processors={{'ner': 'radiology'}})\"` (radeval's call; "
                f"set STANZA_RESOURCES_DIR to choose the folder) or pass model=FOLDER "
                f"(CLI: --model-path temporal_f1=FOLDER)")
        self._nlp = None
        self._config: dict[str, Any] | None = None

    def config(self) -> dict[str, Any]:
        if self._config is None:
            files = sorted(p for p in (self.folder / LANG).glob("*/*.pt") if p.is_file())
            self._config = {
                "pipeline": f"stanza {LANG} package={PACKAGE} processors={PROCESSORS}",
                "weight_digests": {"temporal_f1": weight_digests("temporal_f1", self.folder)},
                # every model file of the folder's en pipeline (the digest above names the NER model only)
                "files": {p.relative_to(self.folder).as_posix(): file_sha256(p) for p in files},
                "keywords": len(KEYWORDS),
                "rule": "stanza OBSERVATION/OBSERVATION_MODIFIER entities that are keywords | whole-word keyword "
                        "matches in clean_text; F1 with epsilon 1e-10 (1 when both empty, epsilon when only the "
                        "reference is)",
            }
        return self._config

    def _load(self):
        if self._nlp is not None:
            return self._nlp
        self._announce_load(str(self.folder))
        try:
            import stanza
        except ImportError:
            raise _no_stanza() from None
        options: dict[str, Any] = {}
        if self.device is not None:
            options["device"] = self.device
        try:
            self._nlp = stanza.Pipeline(lang=LANG, dir=str(self.folder), package=PACKAGE, processors=dict(PROCESSORS),
                                        logging_level="ERROR", verbose=False, download_method=None, **options)
        except Exception as exc:  # noqa: BLE001 - one clear message instead of stanza's traceback
            raise ModelNotAvailableError(f"temporal_f1: cannot load stanza's {LANG} radiology pipeline from "
                                         f"{self.folder} ({type(exc).__name__}: {str(exc)[:200]})") from None
        return self._nlp

    def stanza_entities(self, texts: list[str]) -> list[list[tuple[str, str]]]:
        """stanza's (text, type) entities of each text, in bulk calls of ``batch_size`` reports."""
        nlp = self._load()  # first: it turns a missing stanza into one clear error
        from stanza import Document

        out: list[list[tuple[str, str]]] = []
        for start in range(0, len(texts), self.batch_size):
            docs = nlp([Document([], text=t) for t in texts[start:start + self.batch_size]])
            out.extend([[(e.text, e.type) for e in doc.entities] for doc in docs])
            self._report_progress(len(out), len(texts))
        return out

    def entities(self, texts: Sequence[str]) -> list[set[str]]:
        """Each report's temporal entities: (a) | (b)."""
        found = self.per_text("entities", texts,
                              lambda todo: [sorted(keyword_entities(e) | keyword_matches(t))
                                            for t, e in zip(todo, self.stanza_entities(todo))])
        return [set(f) for f in found]

    def _sets(self, hyps: list[str], refs: list[str]):
        hyp_sets, ref_sets = self.entities(hyps), self.entities(refs)
        return np.array([pair_f1(h, r) for h, r in zip(hyp_sets, ref_sets)], dtype=np.float64), hyp_sets, ref_sets

    def _score(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        return self._sets(hyps, refs)[0]

    def _score_details(self, hyps, refs):
        """Per pair: ``temporal_f1`` and both entity sets ("; "-joined, sorted)."""
        import pandas as pd

        hyps, refs = check_pairs(hyps, refs)
        values, hyp_sets, ref_sets = self._sets(hyps, refs) if hyps else (np.zeros(0), [], [])
        return pd.DataFrame({"temporal_f1": values,
                             HYP_ENTITIES_COLUMN: ["; ".join(sorted(s)) for s in hyp_sets],
                             REF_ENTITIES_COLUMN: ["; ".join(sorted(s)) for s in ref_sets]})
