"""The ReXrank board's editions, as data: which metrics each track's table shows (in column order), which metric
ranks it, and which of the bundled published tables seed it.

One owner: the leaderboard (tables, About tab, submissions), ``rexrank score``'s default metrics and the benches
read an edition from here. Column headers and aggregation are each metric's own (``MetricSpec.leaderboard_column``,
``leaderboard_aggregation``), never restated; the ranking metric's shown direction follows from its spec
(``metrics.aggregation.leaderboard_higher_is_better``).

Source: the tables rexrank.ai renders (rajpurkarlab/ReXrank ``results/*.csv``; reference copies and their commits in
``shared/data/leaderboard_published/README.md``). In 2026 upstream's Findings tables end with CRIMSON, which
replaced 1/FineRadScore; its Findings + Impression tables were not updated since 2025 and still end with
1/FineRadScore.
"""

from __future__ import annotations

from dataclasses import dataclass

from rexrank.errors import UnknownNameError

# The tracks' canonical names (data/tracks.py owns them; the metrics layer may not import it, so they are spelled
# here once and tests/test_boards.py checks they are exactly tracks.TRACKS, in its order).
_FINDINGS = "findings"
_FINDINGS_IMPRESSION = "findings_impression"
# The seven columns every ReXrank board since 2024-25 shows, in upstream's column order.
_CLASSIC = ("bleu2", "bertscore", "semb", "radgraph", "radcliq_v1", "ratescore", "green")


@dataclass(frozen=True)
class BoardEdition:
    name: str  # what a host passes (`leaderboard serve --edition 2025`)
    title: str
    columns: tuple[tuple[str, tuple[str, ...]], ...]  # (track, registry metric names in column order) per track
    ranking: str  # the registry metric that ranks every table and the overview
    # File patterns (under the bundled published_tables folder) of the tables a fresh store is seeded with.
    seed_tables: tuple[str, ...]

    def metrics(self, track: str) -> tuple[str, ...]:
        """The columns of ``track``'s tables, in order."""
        return dict(self.columns)[track]

    def all_metrics(self) -> tuple[str, ...]:
        """Every metric any track's table shows, once, in column order (the first track's first)."""
        return tuple(dict.fromkeys(m for _, metrics in self.columns for m in metrics))

    def shared_metrics(self) -> tuple[str, ...]:
        """The metrics every track's table shows, in column order."""
        every = [set(metrics) for _, metrics in self.columns]
        return tuple(m for m in self.all_metrics() if all(m in s for s in every))


EDITIONS: dict[str, BoardEdition] = {
    edition.name: edition
    for edition in (
        BoardEdition(
            name="2026",
            title="ReXrank 2026 (Findings with CRIMSON; Findings + Impression as last published, with 1/FineRadScore)",
            columns=((_FINDINGS, (*_CLASSIC, "crimson")), (_FINDINGS_IMPRESSION, (*_CLASSIC, "fineradscore"))),
            ranking="radcliq_v1",
            seed_tables=("findings_result_*.csv", "gh-pages_result_*.csv"),
        ),
        BoardEdition(
            name="2025",
            title="ReXrank 2024-25 (both tracks with 1/FineRadScore)",
            columns=((_FINDINGS, (*_CLASSIC, "fineradscore")), (_FINDINGS_IMPRESSION, (*_CLASSIC, "fineradscore"))),
            ranking="radcliq_v1",
            seed_tables=("2025/gh-pages_findings_result_*.csv", "gh-pages_result_*.csv"),
        ),
    )
}
# The edition a board shows unless its host picks another: the current one.
DEFAULT_EDITION = "2026"


def edition(name: str | BoardEdition | None = None) -> BoardEdition:
    """The edition called ``name`` (None: ``DEFAULT_EDITION``); an unknown name is one error naming the choices."""
    if isinstance(name, BoardEdition):
        return name
    key = DEFAULT_EDITION if name is None else str(name).strip()
    if key not in EDITIONS:
        raise UnknownNameError(f"Unknown board edition {name!r}. Available: {', '.join(EDITIONS)}")
    return EDITIONS[key]
