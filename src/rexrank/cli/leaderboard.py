"""`rexrank leaderboard` commands (filled in by the issue that owns this stage)."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True)
