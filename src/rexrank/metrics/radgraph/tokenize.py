"""How a report becomes the word list the RadGraph model reads (the "official pre-tokenisation").

Sources (facts reproduced, code our own):
- radgraph 0.1.18 ``radgraph/utils.py`` (``preprocess_reports``) and CXR-Report-Metric @9c9ecad
  (``CXRMetric/radgraph_inference/inference.py``) split an original-RadGraph report with the same regex below; the
  whole report is one "sentence".
- radgraph 0.1.18 sends every model type other than "radgraph" through ``radgraph_xl_preprocess_report``
  (its ``elif model_type == "radgraph-xl" or "modern-radgraph-xl"`` is always true), reproduced by ``xl_words``.
- dygie's reader (``DyGIEReader._normalize_word``) rewrites the words "/." and "/?" before the encoder sees them;
  the annotation text keeps the original words.
"""

from __future__ import annotations

import re

# radgraph/utils.py preprocess_reports (model_type "radgraph"). The class `,-,` is a range that equals ",", so
# hyphens are NOT split off: "left-sided" stays one word.
_RADGRAPH_SPLIT = re.compile("(?<! )(?=[/,-,:,.,!?()])|(?<=[/,-,:,.,!?()])(?! )")

# nltk.tokenize.wordpunct_tokenize (WordPunctTokenizer pattern), used by radgraph_xl_preprocess_report.
_WORDPUNCT = re.compile(r"\w+|[^\w\s]+", re.UNICODE | re.MULTILINE | re.DOTALL)
_WHITESPACE_RUN = re.compile(r"\s+")

# radgraph_xl_preprocess_report: literal escape sequences first (backslash + letter, as found in MIMIC dumps),
# then real newlines, then escaped quotes; after word-punct splitting a few glued pairs are separated again.
_XL_LITERAL_REPLACEMENTS = (("\\n", "  "), ("\\f", "  "), ("\\u2122", "      "), ("\n", " "), ('\\"', "``"))
_XL_GLUED_REPLACEMENTS = ((").", ") ."), ("%.", "% ."), (".'", ". '"), ("%,", "% ,"), ("%)", "% )"))


def radgraph_words(report: str) -> list[str]:
    """Original RadGraph (model_type "radgraph"): pad punctuation with spaces, split on whitespace."""
    return _RADGRAPH_SPLIT.sub(" ", report).split()


def xl_words(report: str) -> list[str]:
    """RadGraph-XL (and every other archive type radgraph 0.1.18 knows): word-punct tokenisation."""
    text = report
    for old, new in _XL_LITERAL_REPLACEMENTS:
        text = text.replace(old, new)
    text = " ".join(_WORDPUNCT.findall(_WHITESPACE_RUN.sub(" ", text)))
    for old, new in _XL_GLUED_REPLACEMENTS:
        text = text.replace(old, new)
    return text.split()


def words_for(report: str, model_type: str) -> list[str]:
    """The word list radgraph 0.1.18 builds for ``report`` under ``model_type``."""
    return radgraph_words(report) if model_type == "radgraph" else xl_words(report)


def encoder_word(word: str) -> str:
    """dygie's reader normalisation: "/." -> ".", "/?" -> "?" (only what the encoder sees)."""
    return word[1:] if word in ("/.", "/?") else word
