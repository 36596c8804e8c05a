"""One `rexrank generate` run per output folder: an exclusive lock on OUT/.lock, held for the whole run.

The folder is made owner-only here, before anything is written into it: a run's files may hold licensed text
(context, reports on licensed images, open sets' reference sections), like every other place rexrank keeps it.

The lock is `fcntl.flock` on an open file: the kernel drops it when the holder exits, crashes or is killed, so a
stale lock never blocks a later run (the file itself stays; it is never deleted, which would race with a waiting
run). The holder's pid is written into the file for the message a second run prints. Only the main process of a
multi-process run takes it (the runner shares the outcome with the other ranks), so one run's ranks never lock
each other out. Where flock is unavailable (not POSIX), runs are not locked.
"""

from __future__ import annotations

import os
from pathlib import Path

from rexrank.data.private_files import FILE_MODE, private_folder
from rexrank.errors import ConfigError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

LOCK_FILE = ".lock"


class RunLock:
    """Held from acquire() to release() (or the end of the process)."""

    def __init__(self, out: Path, fd: int | None):
        self.out, self._fd = out, fd

    @classmethod
    def acquire(cls, out: Path) -> RunLock:
        """Lock `out` (created if needed), or raise ConfigError naming the run that holds it."""
        out = Path(out)
        try:
            out.mkdir(parents=True, exist_ok=True)  # its parents as the user's umask makes them; a file fails here
            private_folder(out)  # owner-only before anything is written into it (data/private_files.py)
        except OSError as exc:
            raise ConfigError(f"cannot create the output folder {out}: {exc.strerror or exc}") from None
        if fcntl is None:
            return cls(out, None)
        path = out / LOCK_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)  # not inherited by subprocesses (PEP 446)
        except OSError as exc:
            raise ConfigError(f"cannot open the lock file {path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"pid {holder}" if holder else "pid unknown"
            raise ConfigError(f"another rexrank generate is running on {out} ({who}); wait for it or use another "
                              "--out") from None
        except OSError as exc:
            os.close(fd)
            raise ConfigError(f"cannot lock {path}: {exc.strerror or exc} (a file system without locks? "
                              "use a local --out)") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(out, fd)

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the only descriptor releases the flock

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _read_pid(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    except OSError:
        return ""
    return text if text.isdigit() else ""
