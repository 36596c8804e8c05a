"""How long work shows it is alive: the one owner of progress display in rexrank.

Scoring (per metric), generation, the bootstrap and compare's paired tests all report through ``task``:

- stderr is a terminal: a tqdm bar, redrawn as the work advances (per model batch inside a metric).
- anything else (a log file, SLURM, nohup, CI): one plain line every ``REXRANK_PROGRESS_INTERVAL_S`` seconds
  (default 10) while the task runs, e.g. ``green: 120/590 pairs (20%), 2m30s elapsed, 0.80 pairs/s, ETA 9m47s``,
  written by a timer, so a line comes even while one long batch runs; then one final line with the total time.
  A task that finishes within the first interval writes nothing at all: short steps (BLEU-2, a small bootstrap)
  keep logs quiet.

Before a long load (a metric's model: weights read, moved to the device) the loader writes one line naming the
metric and the weights, ``bertscore: loading distilroberta-base (/path/to/it) ...`` (``loading``), so the time
a first chunk spends at 0% is explained; the rate and ETA count from the first movement, not from the start, so a
load does not make the first estimates too slow.

On or off: an explicit flag wins (``--progress/--no-progress``); else the innermost ``switched(flag)`` (a CLI command
sets it for everything it runs, the bootstrap included); else ``REXRANK_PROGRESS`` (1 on, 0 off); else on.
Only what the caller shows is decided here; which process shows it is the caller's (rank 0 only, rexrank.parallel).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

from rexrank.errors import ConfigError

PROGRESS_ENV = "REXRANK_PROGRESS"
INTERVAL_ENV = "REXRANK_PROGRESS_INTERVAL_S"
# Often enough to show a run is alive, rarely enough that a day-long job's log stays readable.
DEFAULT_INTERVAL_S = 10.0

_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")
_switch: contextvars.ContextVar[bool | None] = contextvars.ContextVar("rexrank_progress", default=None)


def enabled(flag: bool | None = None) -> bool:
    """Whether progress shows: ``flag`` if given, else the innermost ``switched``, else REXRANK_PROGRESS, else on."""
    if flag is not None:
        return bool(flag)
    if _switch.get() is not None:
        return bool(_switch.get())
    raw = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if not raw or raw in _ON:
        return True
    if raw in _OFF:
        return False
    raise ConfigError(f"{PROGRESS_ENV}={os.environ[PROGRESS_ENV]!r} is not a switch: set it to 1 (on) or 0 (off)")


_is_enabled = enabled  # task() takes a parameter of the same name


@contextlib.contextmanager
def switched(flag: bool | None) -> Iterator[None]:
    """Within the block, tasks created without an explicit ``enabled`` follow ``flag`` (None: no change)."""
    token = _switch.set(_switch.get() if flag is None else bool(flag))
    try:
        yield
    finally:
        _switch.reset(token)


def interval_s() -> float:
    """Seconds between two log lines outside a terminal (REXRANK_PROGRESS_INTERVAL_S, default 10)."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise ConfigError(f"{INTERVAL_ENV}={raw!r} must be a positive number of seconds (e.g. 10)")
    return value


def _on_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _plural(unit: str) -> str:
    if unit.endswith("y") and unit[-2:-1] not in ("a", "e", "o", "u"):
        return unit[:-1] + "ies"
    return unit if unit.endswith("s") else unit + "s"


def format_duration(seconds: float) -> str:
    """1h02m, 9m47s, 42s: short and exact enough for a log line."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class Task:
    """Progress of one piece of work of ``total`` units. ``update(n)``: n more units finished.

    ``span(n)`` announces that the next ``n`` units run as one call (a cache chunk) and returns a
    ``report(done, total)`` callable for the work inside it (a metric's batches, in the metric's own units): the
    display moves to that fraction of the span; the caller's ``update(n)`` after the call makes it exact.
    A disabled task (``task(..., enabled=False)``) accepts the same calls and shows nothing.
    """

    def __init__(self, total: int, desc: str, unit: str = "item", *, show: bool = True,
                 stream: TextIO | None = None, interval: float | None = None):
        self.total = max(0, int(total))
        self.desc = desc
        self.unit = unit
        self.done = 0  # finished units
        self._partial = 0.0  # units of the current span reported by the work inside it
        self._span = 0
        self._started = time.monotonic()
        self._first: tuple[float, float] | None = None  # (time, position) of the first movement
        self._bar = None
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()
        self._lines = 0  # log lines written so far (the final line only follows earlier ones)
        self._closed = False
        show = show and self.total > 0
        self._stream = stream if stream is not None else sys.stderr
        if not show:
            self._closed = True
        elif _on_terminal(self._stream):
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=desc, unit=unit, file=self._stream, dynamic_ncols=True,
                             leave=False)
        else:
            self._interval = interval_s() if interval is None else float(interval)
            self._ticker = threading.Thread(target=self._tick, name=f"rexrank-progress-{desc}", daemon=True)
            self._ticker.start()

    # ---- what callers report ---------------------------------------------------------------------------------
    @property
    def position(self) -> float:
        return min(self.total, self.done + self._partial)

    def update(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + int(n))
        self._partial, self._span = 0.0, 0
        self._redraw()

    def span(self, n: int):
        self._span, self._partial = max(0, int(n)), 0.0

        def report(done: float, total: float) -> None:
            if total > 0 and self._span:
                # Never backwards: a metric with two loops reports the second only once it passes the first.
                self._partial = max(self._partial, self._span * min(max(done / total, 0.0), 1.0))
                self._redraw()

        return report

    # ---- display ---------------------------------------------------------------------------------------------
    def _redraw(self) -> None:
        if self._first is None and self.position > 0:
            self._first = (time.monotonic(), self.position)
        if self._bar is not None:
            target = int(self.position)
            if target != self._bar.n:
                self._bar.update(target - self._bar.n)

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            self._write(self.line())

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text + "\n")
            self._stream.flush()
        except (ValueError, OSError):  # the stream was closed under us: progress is never worth a crash
            return
        self._lines += 1

    def line(self, final: bool = False) -> str:
        """The log line for the current state (what the timer writes)."""
        now = time.monotonic()
        elapsed = now - self._started
        done = int(self.position)
        units = _plural(self.unit)
        rate = self.position / elapsed if elapsed > 0 else 0.0
        if self._first is not None and self.position > self._first[1] and now > self._first[0]:
            # From the first movement on: what came before it (a model load, the first batch) is not the pace.
            rate = (self.position - self._first[1]) / (now - self._first[0])
        if final:
            speed = f" ({rate:.2f} {units}/s)" if rate > 0 else ""
            if self.done >= self.total:
                return f"{self.desc}: {self.total}/{self.total} {units} in {format_duration(elapsed)}{speed}"
            return f"{self.desc}: stopped at {done}/{self.total} {units} after {format_duration(elapsed)}"
        percent = 100.0 * self.position / self.total
        text = f"{self.desc}: {done}/{self.total} {units} ({percent:.0f}%), {format_duration(elapsed)} elapsed"
        if rate > 0:
            return text + f", {rate:.2f} {units}/s, ETA {format_duration((self.total - self.position) / rate)}"
        return text + ", ETA unknown"

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            if self._lines:
                self._write(self.line(final=True))

    def __enter__(self) -> "Task":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def loading(what: str, source: Any, *, enabled: bool | None = None, stream: TextIO | None = None) -> None:
    """One line before a long load starts: ``{what}: loading {source} ...`` (``what``: the metric, ``source``: its
    weights, a path or a Hub id). Shown when progress is (``enabled()``); above a terminal's bar, not through it."""
    if not _is_enabled(enabled):
        return
    stream = stream if stream is not None else sys.stderr
    text = f"{what}: loading {source} ..."
    try:
        if _on_terminal(stream):
            from tqdm import tqdm

            tqdm.write(text, file=stream)
        else:
            stream.write(text + "\n")
            stream.flush()
    except (ValueError, OSError):  # a closed stream: progress is never worth a crash
        pass


def task(total: int, desc: str, unit: str = "item", *, enabled: bool | None = None,
         stream: TextIO | None = None, interval: float | None = None) -> Task:
    """A progress task (use as a context manager). ``enabled``: see ``enabled()``; ``stream``: default stderr;
    ``interval``: seconds between log lines (default REXRANK_PROGRESS_INTERVAL_S)."""
    return Task(total, desc, unit, show=_is_enabled(enabled), stream=stream, interval=interval)
