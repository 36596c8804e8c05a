"""Sentence splitting exactly as RaTEScore does it: medspaCy's PyRuSH sentencizer.

Official (RaTEScore 0.5.0/0.6.0 ``utils.py``): ``nlp = medspacy.load(medspacy_enable=["medspacy_pyrush",
"medspacy_conte"])`` — the second name is a typo that enables nothing, and the medspaCy tokenizer is not enabled
either, so the pipeline is spaCy's blank English tokenizer + PyRuSH with medspaCy's bundled rules. Each
``doc.sents`` span is ``str()``-ed and stripped; whitespace-only and < 3-character sentences are dropped.

medspaCy is an optional dependency (``pip install "rexrank[ratescore]"``). PyRuSH logs every token at DEBUG
level through loguru; we disable its logger, which no one wants in a scoring run.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import threading

from rexrank.errors import RexrankError
from rexrank.metrics.ratescore.constants import MIN_SENTENCE_CHARS

INSTALL_HINT = ('RaTEScore splits sentences with medspaCy\'s PyRuSH, as the official package does. Install it with '
                '`pip install "rexrank[ratescore]"` (on Python 3.11 see docs/ratescore.md: medspacy 1.3.1 with '
                'spacy 3.8 and numpy 2).')


class MissingDependencyError(RexrankError, ImportError):
    """An optional dependency of a metric is not installed."""


_lock = threading.Lock()
_nlp = None


def check_available() -> None:
    if importlib.util.find_spec("medspacy") is None or importlib.util.find_spec("PyRuSH") is None:
        raise MissingDependencyError(f"ratescore needs medspacy, which is not installed. {INSTALL_HINT}")


def splitter_versions() -> dict[str, str]:
    """Versions that can change sentence boundaries (recorded in the metric config)."""
    out = {}
    for dist in ("medspacy", "PyRuSH", "spacy"):
        try:
            out[dist.lower()] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist.lower()] = "missing"
    return out


def pipeline():
    """The medspaCy pipeline of the official code (loaded once per process)."""
    global _nlp
    with _lock:
        if _nlp is None:
            check_available()
            try:
                from loguru import logger

                logger.disable("PyRuSH")
            except ImportError:  # pragma: no cover - loguru is a PyRuSH dependency
                pass
            try:
                import medspacy
            except Exception as exc:  # a broken install (e.g. missing quickumls) is still the user's to fix
                raise MissingDependencyError(f"ratescore: importing medspacy failed ({type(exc).__name__}: {exc}). "
                                             f"{INSTALL_HINT}") from None
            _nlp = medspacy.load(medspacy_enable=["medspacy_pyrush"])
    return _nlp


def keep_sentence(sentence: str) -> bool:
    """utils.sentence_split's filter, applied to the stripped sentence text."""
    return len(sentence.split()) > 0 and len(sentence) >= MIN_SENTENCE_CHARS


def split_reports(texts: list[str]) -> list[list[str]]:
    """Sentences of each text, in order. A text may yield none (empty, whitespace, or only < 3-char pieces)."""
    nlp = pipeline()
    longest = max((len(t) for t in texts), default=0)
    if longest >= nlp.max_length:
        # spaCy's limit guards parser/NER memory; a blank tokenizer + PyRuSH has no such need.
        nlp.max_length = longest + 1
    out: list[list[str]] = []
    for doc in nlp.pipe(texts):
        sentences = [str(span).strip() for span in doc.sents]
        out.append([s for s in sentences if keep_sentence(s)])
    return out
