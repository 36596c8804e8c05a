"""The two ReXrank tracks, declared as data: what the ground truth is and which studies count.

Every stage (datasets, scoring, leaderboard) reads tracks from here; nothing else hard-codes a track.
Source: reference/METRICS.md "Tracks and ground truth" and the ReXrank leaderboard (rajpurkarlab/ReXrank).
"""

from __future__ import annotations

from dataclasses import dataclass

from rexrank.errors import UnknownNameError


@dataclass(frozen=True)
class Track:
    name: str
    # Study record column that holds this track's ground truth; `load(..., track=)` copies it to `reference`.
    reference_column: str
    # Study record columns that must be present (not None) for a study to count; others are excluded and counted.
    requires: tuple[str, ...]
    # Published leaderboard tables of this track (leaderboard_published/<prefix>_<dataset>.csv).
    leaderboard_table_prefix: str
    description: str


TRACKS: dict[str, Track] = {
    track.name: track
    for track in (
        Track(
            name="findings",
            reference_column="gt_findings",
            requires=("findings",),
            leaderboard_table_prefix="gh-pages_findings_result",
            description="Findings section only; studies without a findings section are excluded (and counted). "
            "The leaderboard ranks this track by 1/RadCliQ-v1.",
        ),
        Track(
            name="findings_impression",
            reference_column="gt_findings_impression",
            requires=(),
            leaderboard_table_prefix="gh-pages_result",
            description='"Findings: {findings} Impression: {impression}" with the literal word None for a '
            "missing section; every study counts.",
        ),
    )
}

DEFAULT_TRACK = "findings"


def get_track(name: str) -> Track:
    try:
        return TRACKS[name]
    except KeyError:
        raise UnknownNameError(f"Unknown track {name!r}. Available: {', '.join(TRACKS)}") from None


def track_names() -> list[str]:
    return list(TRACKS)
