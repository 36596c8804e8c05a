"""Errors a user can act on. Each message names the problem and, where possible, the fix."""

from __future__ import annotations


class RexrankError(Exception):
    """Base class: the CLI prints these without a traceback."""


class InputError(RexrankError, ValueError):
    """Bad hypotheses/references/predictions: wrong length, wrong type, missing ids, ..."""


class UnknownNameError(RexrankError, KeyError):
    """An unknown metric, dataset, track or backend name."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""


class ModelNotAvailableError(RexrankError, OSError):
    """Weights or files of a metric model cannot be found or downloaded."""


class DatasetNotAvailableError(RexrankError, OSError):
    """A licensed dataset copy is missing or incomplete, or a gated repo refused access."""


class ConfigError(RexrankError, ValueError):
    """An option has an invalid value."""


class OutputError(RexrankError, OSError):
    """A result file cannot be written where asked (a full disk, a quota, the file-size limit)."""
