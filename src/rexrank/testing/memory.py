"""This process's own memory figures, for memory tests and benchmarks (Linux /proc; fallbacks elsewhere)."""

from __future__ import annotations

import resource


def _status_mib(field: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mib() -> float:
    """This process's own peak RSS in MiB. VmHWM, not ru_maxrss: Linux carries the parent's high-water mark across
    fork+exec into ru_maxrss, so a child started by a 1.5 GB test process reports at least 1.5 GB whatever it used."""
    peak = _status_mib("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mib() -> float:
    """This process's current RSS in MiB (0.0 where /proc is missing)."""
    return _status_mib("VmRSS") or 0.0
