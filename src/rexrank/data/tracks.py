"""The two ReXrank tracks, declared as data: names, aliases, display labels, ground truth and which studies count.

Every stage (datasets, scoring, leaderboard, Space) reads tracks from here; nothing else hard-codes a track.
Source: reference/METRICS.md "Tracks and ground truth" and the ReXrank leaderboard (rajpurkarlab/ReXrank).
"""

from __future__ import annotations

from dataclasses import dataclass

from rexrank.errors import UnknownNameError


@dataclass(frozen=True)
class Track:
    name: str  # canonical name: stored rows and results.json use it
    label: str  # display label (board tabs, radio buttons)
    # Study record column that holds this track's ground truth; `load(..., track=)` copies it to `reference`.
    reference_column: str
    # Study record columns that must be present (not None) for a study to count; others are excluded and counted.
    requires: tuple[str, ...]
    # Published leaderboard tables of this track: <prefix>_<DatasetSpec.published_table>.csv, upstream's names
    # (rajpurkarlab/ReXrank results/; copies of its gh-pages branch add "gh-pages_" before them).
    leaderboard_table_prefix: str
    description: str
    aliases: tuple[str, ...] = ()  # other names users type; matched case-insensitively (see canonical_track)


# The tracks' canonical names, for code that branches on one (the ground truth and the report a track takes).
FINDINGS = "findings"
FINDINGS_IMPRESSION = "findings_impression"

TRACKS: dict[str, Track] = {
    track.name: track
    for track in (
        Track(
            name=FINDINGS,
            label="Findings",
            reference_column="gt_findings",
            requires=("findings",),
            leaderboard_table_prefix="findings_result",
            description="Findings section only; studies without a findings section are excluded (and counted). "
            "The leaderboard ranks this track by 1/RadCliQ-v1.",
        ),
        Track(
            name=FINDINGS_IMPRESSION,
            label="Findings + Impression",
            reference_column="gt_findings_impression",
            requires=(),
            leaderboard_table_prefix="result",
            description='"Findings: {findings} Impression: {impression}" with the literal word None for a '
            "missing section; every study counts.",
            aliases=("findings+impression", "findings-impression", "findings_and_impression"),
        ),
    )
}

# The track every command, function and page uses unless told otherwise.
DEFAULT_TRACK = FINDINGS


def _alias_index() -> dict[str, str]:
    """Every name a user may type -> canonical track name (its name, label and aliases, lower-cased)."""
    index: dict[str, str] = {}
    for track in TRACKS.values():
        for alias in (track.name, track.label, *track.aliases):
            index[alias.strip().lower()] = track.name
    return index


TRACK_ALIASES: dict[str, str] = _alias_index()


def canonical_track(name: str) -> str:
    """The canonical name of a track given any alias ("Findings + Impression" -> "findings_impression")."""
    canonical = TRACK_ALIASES.get(str(name).strip().lower()) if name is not None else None
    if canonical is None:
        raise UnknownNameError(f"Unknown track {name!r}. Available: {', '.join(TRACKS)}")
    return canonical


def get_track(name: str) -> Track:
    return TRACKS[canonical_track(name)]


def track_names() -> list[str]:
    return list(TRACKS)


def track_label(name: str) -> str:
    return get_track(name).label
