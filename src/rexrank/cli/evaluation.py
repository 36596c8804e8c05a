"""`rexrank evaluation` commands (filled in by the issue that owns this stage)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's top-level commands to the main app."""
