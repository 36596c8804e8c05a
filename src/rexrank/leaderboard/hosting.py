"""What a host needs at a board's start: where it listens, and one line saying what it serves.

Where it listens (``listen_address``): gradio's own variables (``GRADIO_SERVER_NAME``, ``GRADIO_SERVER_PORT``) when
set, else 0.0.0.0 only inside a Hugging Face Space (``SPACE_ID`` is set there: the Space's proxy must reach the
app) and 127.0.0.1 everywhere else, so a board started on a laptop or a cluster node is never open to its network by
default. ``PORT`` is read after gradio's port, as the demo does.

The start line (``start_line``): the store and its size, the edition shown, how the store got its published rows
(seeded, host-imported, opted out), what each track lacks (a track with no rows on any set; an edition's column no
row has a value for: both are silent holes a visitor would meet as empty tabs or a column of dashes), what the
worker scores, and where the board persists (a Space's disk is wiped at a restart unless it has persistent storage
or Hub repos).
"""

from __future__ import annotations

import os
from typing import Any

from rexrank.data import tracks
from rexrank.leaderboard.board import column_label
from rexrank.leaderboard.editions import edition_of
from rexrank.leaderboard.published import SEED_KEY
from rexrank.leaderboard.store import Store
from rexrank.metrics import boards

LOOPBACK = "127.0.0.1"
EVERYWHERE = "0.0.0.0"  # noqa: S104 - only inside a Space, whose proxy is the only way in
DEFAULT_PORT = 7860


def in_space() -> bool:
    """Whether this process runs in a Hugging Face Space (the platform sets SPACE_ID)."""
    return bool(os.environ.get("SPACE_ID"))


def listen_address() -> tuple[str, int]:
    """(host, port): GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (then PORT) when set; else 0.0.0.0 in a Space and
    127.0.0.1 elsewhere, port 7860. A port that is not a number is one error naming the variable."""
    host = (os.environ.get("GRADIO_SERVER_NAME") or "").strip() or (EVERYWHERE if in_space() else LOOPBACK)
    for name in ("GRADIO_SERVER_PORT", "PORT"):
        value = (os.environ.get(name) or "").strip()
        if value:
            if not value.isdigit() or not 0 < int(value) < 65536:
                raise SystemExit(f"{name}={value[:20]!r} is not a port: set it to a number from 1 to 65535")
            return host, int(value)
    return host, DEFAULT_PORT


def gaps(store: Store, edition: str) -> list[str]:
    """What the board of ``edition`` lacks: tracks with no row on any set, and columns no row of a track fills."""
    shown = boards.edition(edition)
    rows = store.results()
    found = []
    for track, metrics in shown.columns:
        of_track = [row for row in rows if row["track"] == track]
        label = tracks.get_track(track).label
        if not of_track:
            found.append(f"the {label} track has no rows on any set (import its published tables: "
                         "`rexrank leaderboard import-published`)")
            continue
        empty = [m for m in metrics if not any((row["metrics"].get(m) or {}).get("mean") is not None
                                               for row in of_track)]
        if empty:
            found.append(f"the {label} track's column(s) {', '.join(column_label(m) for m in empty)} of edition "
                         f"{edition} have no value in any row (shown as dashes)")
    return found


def start_line(store: Store, service: Any, sync: Any, host: str, port: int, *, arena: bool = False) -> str:
    """One line for the host's log: what this board serves and what it lacks (module docstring)."""
    edition = edition_of(store)
    seeded = (store.meta(SEED_KEY) or {}).get("state") or "not seeded"
    rows = store.results()
    models = len({row["model_name"] for row in rows})
    if service is None:
        worker = "no worker (the scoring harness is not installed)"
    else:
        worker = f"worker scores {', '.join(service.metrics) or 'nothing'}"
        if getattr(service, "excluded", None):
            worker += f" (not {', '.join(service.excluded)}: no official weights here)"
    if sync is not None:
        persistence = f"persisted to the Hub repo(s) {', '.join(r for r in (sync.repo_id, sync.requests_repo) if r)}"
    else:
        persistence = "persisted on this disk only" + (" (a Space's disk is wiped at a restart unless it has "
                                                        "persistent storage: set REXRANK_RESULTS_REPO)"
                                                        if in_space() else "")
    holes = gaps(store, edition)
    return (f"rexrank board on http://{host}:{port}: store {store.path} ({len(rows)} results, {models} models; "
            f"{seeded}), edition {edition}; {worker}; {persistence}; Arena {'on' if arena else 'off'}"
            + (f"; missing: {'; '.join(holes)}" if holes else ""))
