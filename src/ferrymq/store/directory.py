"""A data directory the broker cannot use, said plainly: which path is in the way, why, and how
to choose another (``ferrymq broker`` prints it as its one "cannot start" line)."""

from __future__ import annotations

import errno
import getpass
import os
from pathlib import Path

from ferrymq.store.base import StoreError

CHOOSE_ANOTHER = "or give the broker another data directory: --data DIR, or kahaDB's directory"


def directory_error(directory: Path, exc: OSError) -> StoreError:
    """``exc`` happened while creating or locking ``directory``: a ``StoreError`` naming the
    path at fault (a file where a directory is needed, one that is not writable)."""
    code = exc.errno or 0
    if code in (errno.ENOTDIR, errno.EEXIST):
        blocker = _file_in_the_way(directory)
        what = f"{blocker} is a file, not a directory"
        fix = f"remove or rename {blocker}, {CHOOSE_ANOTHER}"
    elif code in (errno.EACCES, errno.EPERM):
        what = f"permission denied: {exc.filename or directory}"
        fix = f"make it writable by user {_user()}, {CHOOSE_ANOTHER}"
    elif code == errno.EROFS:
        what = f"{directory} is on a read-only file system"
        fix = CHOOSE_ANOTHER.removeprefix("or ")
    else:
        reason = os.strerror(code).lower() if code else str(exc)
        what = f"{reason}: {exc.filename or directory}"
        fix = CHOOSE_ANOTHER.removeprefix("or ")
    return StoreError(f"cannot use data directory {directory}: {what}", fix=fix)


def _file_in_the_way(directory: Path) -> Path:
    """The first path from the root down to ``directory`` that exists and is no directory."""
    for path in (*reversed(directory.parents), directory):
        if path.exists() and not path.is_dir():
            return path
    return directory


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())
