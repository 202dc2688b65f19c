"""LockFile: one holder at a time, across instances and processes; released on close or death."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ferrymq.store import LockFile

TRY_FROM_ANOTHER_PROCESS = """
import sys
from pathlib import Path
from ferrymq.store.lockfile import LockFile
print(LockFile(Path(sys.argv[1])).try_acquire())
"""


def acquired_by_another_process(path: Path) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", TRY_FROM_ANOTHER_PROCESS, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout.strip() == "True"


def test_one_holder_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    first, second = LockFile(path), LockFile(path)
    assert first.try_acquire()
    assert first.try_acquire()  # already ours
    assert not second.try_acquire()
    first.release()
    assert not first.held
    assert second.try_acquire()
    assert second.held
    second.release()
    second.release()  # releasing twice is harmless
    assert path.exists()  # the file stays, as KahaDB's does


def test_another_process_is_kept_out(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    lock = LockFile(path)
    assert lock.try_acquire()
    assert not acquired_by_another_process(path)
    lock.release()
    assert acquired_by_another_process(path)  # and its exit released it again
    assert lock.try_acquire()
    lock.release()


def test_missing_directory_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        LockFile(tmp_path / "missing" / "lock").try_acquire()
