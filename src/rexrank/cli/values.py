"""How the command line reads number values: every float option takes a finite number.

click's FLOAT accepts ``inf``, ``nan`` and ``1e400`` (infinity), which no option of rexrank means and which broke
far from the command line (``int(inf)`` in a size limit: a 50-line OverflowError). Every float option is declared
with ``parser=finite_float``, so such a value is a usage error naming the option (``tests/test_cli_usage.py`` walks
every command and checks each float option this way)."""

from __future__ import annotations

import math

import typer


def finite_float(text: str | float) -> float:
    """A float option's value: a finite number, else a usage error (click names the option in front of it)."""
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise typer.BadParameter(f"{text!r} is not a finite number (inf and nan mean no value here)") from None
    return value
