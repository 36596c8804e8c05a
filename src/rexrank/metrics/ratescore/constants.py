"""RaTEScore's interface constants: entity types, affinity matrices, negation weights, named variants.

Sources (PyPI sdists of ``RaTEScore``, MIT licence; MAGIC-AI4Med/RaTEScore @a970406):
- 0.5.0 ``RaTEScore/scorer.py`` ``DEFAULT_MATRIX`` (the "long" matrix) and ``RaTEScore/utils.py`` ``compute``:
  ``neg_weight = 0.3612`` hard-coded and the eight polarity-contradicting type pairs ``neg_class``.
- 0.6.0 ``RaTEScore/scorer.py`` ``DEFAULT_MATRIX_LONG`` (same 25 values as 0.5.0, plus
  ``"neg_weight": 0.8716553966489615``) and ``DEFAULT_MATRIX_SHORT`` (``"neg_weight": 0.3611577852354489``);
  0.6.0 ``utils.compute`` reads ``neg_weight`` from the chosen matrix; ``affinity_matrix="long"`` is its default.
The values are reproduced exactly (tests/test_ratescore_parity.py compares them with the installed packages).
"""

from __future__ import annotations

from dataclasses import dataclass

from rexrank.errors import ConfigError

# Entity types as the NER labels name them (B-/I- prefixes stripped) and as the matrix keys spell them upper-cased.
TYPES = ("ABNORMALITY", "NON-ABNORMALITY", "DISEASE", "NON-DISEASE", "ANATOMY")

# Row = type of the entity being matched (the side whose entities are iterated), column = type of its
# cosine-nearest entity on the other side: weight W[(row, col)].
_LONG_ROWS = (
    (0.4276119164393705, 0.5431049700217344, 0.0034478181112993847, 0.27005425386213877, 0.6240929990607657),
    (0.16546764653692908, 0.0009357166071730684, 0.719397354576018, 0.0927333564267591, 0.018670610691852826),
    (0.8396510075734789, 0.9820689020512646, 0.8460555030578727, 0.3789136708096537, 0.9950209388542061),
    (0.7759420231214385, 0.03860183811876373, 0.10073046076318157, 0.34065681486566446, 0.1839139293714062),
    (0.7487824274337533, 0.02097055139911715, 0.4592143222158069, 0.00013736314126696204, 0.2856134859160784),
)
_SHORT_ROWS = (
    (0.4070293318365468, 0.9479148658006686, 0.28342529466226446, 0.23875064111146294, 0.6952639610605605),
    (0.1712744286898638, 0.0007887930317199857, 0.00045065329822896076, 0.8555432840895761, 0.4485149671497294),
    (0.8840397619834857, 0.6962283914800402, 0.19018958438059513, 0.943727057946997, 0.9637659445696822),
    (0.9555801066212176, 0.05650711141169969, 0.6072996585919443, 0.3214769399791204, 0.13122106162635216),
    (0.5829759950441763, 0.794672584951181, 0.0006059634829551632, 0.27982942400798977, 0.7709590751917746),
)


def _matrix(rows) -> dict[tuple[str, str], float]:
    return {(a, b): rows[i][j] for i, a in enumerate(TYPES) for j, b in enumerate(TYPES)}


LONG_MATRIX = _matrix(_LONG_ROWS)
SHORT_MATRIX = _matrix(_SHORT_ROWS)

# utils.compute ``neg_class`` (identical in 0.5.0 and 0.6.0): the matched pair contradicts in polarity.
NEGATION_PAIRS = frozenset({
    ("NON-DISEASE", "DISEASE"), ("NON-ABNORMALITY", "ABNORMALITY"), ("DISEASE", "NON-DISEASE"),
    ("ABNORMALITY", "NON-ABNORMALITY"), ("NON-DISEASE", "ABNORMALITY"), ("NON-ABNORMALITY", "DISEASE"),
    ("DISEASE", "NON-ABNORMALITY"), ("ABNORMALITY", "NON-DISEASE"),
})

NEG_WEIGHT_V05 = 0.3612  # 0.5.0 utils.compute, hard-coded
NEG_WEIGHT_LONG = 0.8716553966489615  # 0.6.0 DEFAULT_MATRIX_LONG["neg_weight"]
NEG_WEIGHT_SHORT = 0.3611577852354489  # 0.6.0 DEFAULT_MATRIX_SHORT["neg_weight"]

# Official model inputs: NER sentences tokenized with max_length=512 (score.run_ner), entities with
# max_length=30 and the last-layer [CLS] vector as embedding (score.process_embedding).
NER_MAX_LENGTH = 512
EMBED_MAX_LENGTH = 30
MIN_SENTENCE_CHARS = 3  # utils.sentence_split drops stripped sentences shorter than this
NO_ENTITY_SCORE = 0.5  # scorer.compute_score: either side without entities scores 0.5

# Ours, not the package's: where our batched computation could decide differently from the official one-by-one
# computation, we redo that piece in the official order (entities.py, score.py). Batching moves logits by
# ~1e-5 and cosines by ~1e-6 (measured on IU-Xray with stand-ins); the margins leave a wide berth.
NER_TIE_MARGIN = 1e-3  # a token whose two best logits are closer than this: its sentence is run alone
SIMILARITY_TIE_MARGIN = 1e-4  # candidates of different types within this cosine of the best: exact pair path


@dataclass(frozen=True)
class Variant:
    name: str
    matrix_name: str
    matrix: dict
    neg_weight: float
    description: str


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("v0.5", "long", LONG_MATRIX, NEG_WEIGHT_V05,
            "RaTEScore 0.5.0 (Oct 2024; most likely what the ReXrank leaderboard ran): long matrix, negation weight 0.3612"),
    Variant("v0.6-long", "long", LONG_MATRIX, NEG_WEIGHT_LONG,
            "RaTEScore 0.6.0 default (affinity_matrix='long'): long matrix, negation weight 0.8717"),
    Variant("v0.6-short", "short", SHORT_MATRIX, NEG_WEIGHT_SHORT,
            "RaTEScore 0.6.0 affinity_matrix='short': short matrix, negation weight 0.3612"),
)}
DEFAULT_VARIANT = "v0.5"
_ALIASES = {"0.5": "v0.5", "0.5.0": "v0.5", "v0.5.0": "v0.5", "0.6": "v0.6-long", "v0.6": "v0.6-long",
            "0.6.0": "v0.6-long", "0.6-long": "v0.6-long", "0.6-short": "v0.6-short"}


def variant(name: str | None) -> Variant:
    key = DEFAULT_VARIANT if name is None else str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in VARIANTS:
        raise ConfigError(f"ratescore: unknown variant {name!r}. Available: {', '.join(VARIANTS)} "
                          f"(default {DEFAULT_VARIANT}: the RaTEScore 0.5.0 behaviour)")
    return VARIANTS[key]
