"""Text of the Space's About tab, for readers of the board: what each metric is, its direction, how the numbers are
computed, the known quirks of the published tables (``published.KNOWN_QUIRKS``) and how to cite ReXrank. Nothing for
hosts here (seeding, command-line flags): that is docs/leaderboard.md.

Citations: the 2024 ReXrank preprint and the PSB 2026 study, as the evaluate modules' cards cite them
(``catalog.REXRANK_BIBTEX``, their owner). The metrics listed are the board edition's columns
(``rexrank.metrics.boards``).
"""

from __future__ import annotations

from collections.abc import Collection

from rexrank.data.catalog import REXRANK_BIBTEX
from rexrank.evaluation.defaults import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES
from rexrank.leaderboard.published import KNOWN_QUIRKS
from rexrank.metrics import REGISTRY, boards
from rexrank.metrics.aggregation import leaderboard_higher_is_better

PAPER_URL = "https://arxiv.org/abs/2411.15122"
SITE_URL = "https://rexrank.ai"
CODE_URL = "https://github.com/rajpurkarlab/ReXrank"
CITATION_BIBTEX = REXRANK_BIBTEX  # the About tab's "Cite ReXrank"

DEFINITIONS = {
    "bleu2": "Sentence BLEU-2 per report (NLTK method1 smoothing, CXR-Report-Metric tokenisation), averaged.",
    "bertscore": "BERTScore F1 with distilroberta-base layer 5, rescaled with its baseline, idf off.",
    "semb": "SembScore: cosine similarity of CheXbert [CLS] embeddings of the reference and the generated report.",
    "radgraph": "RadGraph-F1: mean of entity F1 and relation F1 between RadGraph annotations of both reports.",
    "radcliq_v1": "RadCliQ-v1: a linear combination of the four metrics above, per report; lower is better, so the "
                  "board shows 1 / mean(RadCliQ-v1) (a reciprocal of the mean, never a mean of reciprocals).",
    "ratescore": "RaTEScore: entity-level similarity with radiology-specific affinity and negation weights "
                 "(the 0.5.0 behaviour: LONG matrix, negation weight 0.3612).",
    "green": "GREEN: the GREEN-RadLlama2-7b judge counts clinically significant errors and matched findings; "
             "score = matched / (matched + significant errors).",
    "crimson": "CRIMSON: an LLM judge (MedGemma 4B fine-tuned by CRIMSON's authors) lists the findings of both "
               "reports and the generated report's errors, weighted by clinical significance; the score is signed, "
               "in (-1, 1].",
    "fineradscore": "FineRadScore: an LLM judge rates each generated sentence's error severity. Upstream never "
                    "published how severities become one number, so published 1/FineRadScore values cannot be "
                    "reproduced; rexrank's own aggregation is documented in its metric card.",
}


def meta_anchor(metric: str) -> str:
    """The id of a metric's row in the About tab's "Metrics vs radiologists" section (``views.meta_eval_markdown``);
    the metric's entry here links to ``#meta-<metric>``."""
    return f"meta-{metric}"


def markdown(meta_metrics: Collection[str] = (), edition: str | None = None) -> str:
    """The About text. ``meta_metrics``: the metrics with a row in the published meta-evaluation; each one's entry
    links to its row. ``edition``: the board's (default the default edition): its columns are listed."""
    board = boards.edition(edition)
    # A list, not a table: a three-column table wraps letter by letter on a phone.
    lines = [f"ReXrank: [paper]({PAPER_URL}) and the PSB 2026 study (Automated Chest X-ray Report Generation "
             f"Remains Unsolved) · [rexrank.ai]({SITE_URL}) · [published tables]({CODE_URL}). Cite both with the "
             "BibTeX below.", "", f"This board: {board.title}.", "", "## Metrics", ""]
    for name in board.all_metrics():
        spec = REGISTRY.spec(name)
        shown_higher = leaderboard_higher_is_better(spec)
        direction = "higher is better ↑" if shown_higher else "lower is better ↓"
        link = f" [How it agrees with radiologists](#{meta_anchor(name)})." if name in meta_metrics else ""
        lines.append(f"- **{spec.leaderboard_column}** ({direction}): {DEFINITIONS[name]}{link}")
    lines += [
        "", "## How the numbers are computed", "",
        "- Every metric is computed once per study; the board shows the mean over the test set.",
        f"- Results scored by rexrank carry {DEFAULT_CONFIDENCE:.0%} bootstrap confidence intervals "
        f"({DEFAULT_RESAMPLES:,} resamples of studies); "
        "1/RadCliQ-v1's interval comes from the reciprocal of each resample's mean.",
        "- The overview ranks models by 1/RadCliQ-v1 on the findings track of each dataset.",
        "- Rows marked **published** come from the ReXrank site's tables: point estimates only, no CI.",
        "- ReXGradient's references are private: only aggregates are ever shown or downloadable.",
        "- Rank follows the chosen sort: a table sorted by another metric ranks by that metric (best first), "
        "whether or not its column is shown; rows without that metric are not ranked in that view.",
        "- Institutions are shown as published or registered.",
        "- A result scored with unofficial metric weights is shown and labelled, but never ranked.",
        "- A model the newest published tables no longer list leaves the tables; its model page keeps its rows.",
        "", "## Known quirks of the published tables", "", *[f"- {quirk}" for quirk in KNOWN_QUIRKS],
    ]
    return "\n".join(lines)
