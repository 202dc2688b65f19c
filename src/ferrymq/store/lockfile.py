"""An exclusive advisory lock on a file, the way KahaDB guards its directory with ``<dir>/lock``.

``flock`` locks belong to an open file description, so a second ``LockFile`` on the same path is
refused even inside the same process, and the kernel drops the lock when the process dies (kill -9
included): a crashed broker never leaves a stale lock behind on a local disk.  The master/slave
``SharedFileLocker`` builds on this class.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class LockFile:
    """Holds (or not) an exclusive, non-blocking ``flock`` on ``path``; not thread-safe."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        return self._path

    @property
    def held(self) -> bool:
        return self._fd is not None

    def fileno(self) -> int:
        """The locked file's descriptor (to compare the file at the path with the locked one)."""
        if self._fd is None:
            raise ValueError(f"lock {self._path} is not held")
        return self._fd

    def try_acquire(self) -> bool:
        """Take the lock if nobody holds it; ``False`` if another holder has it.

        Raises ``OSError`` when the file cannot be opened at all (missing or unwritable directory).
        """
        if self._fd is not None:
            return True
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        """Drop the lock; the file stays, as KahaDB's does, so the next holder reuses it."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
