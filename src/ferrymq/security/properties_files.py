"""The users and groups files of JAAS login modules, reloaded when they change.

ActiveMQ's PropertiesLoader, with `reload=true`, looks at a file's modification time at every
login and reads it again when it changed. FerryMQ does the same check at most once a second
(one `stat`, on the thread that authenticates; the decision itself reads no file), so a burst
of connections costs one system call, and an edited users.properties is used by the next login
a second later at most. A file that cannot be read or parsed on reload keeps the last good
contents and is logged (without its values); at start it is an error.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from ferrymq.config import jasypt
from ferrymq.config.java_properties import PropertiesFileError, read_properties
from ferrymq.security.passwords import PasswordFormatError, check_stored

__all__ = ["CHECK_INTERVAL_S", "PropertiesFile", "PropertiesFileError"]

log = logging.getLogger(__name__)

CHECK_INTERVAL_S = 1.0


@dataclass(frozen=True)
class _Snapshot:
    values: Mapping[str, str]
    mtime_ns: int
    patterns: Mapping[str, re.Pattern[str]]
    """A `/regular expression/` value compiled (``dn_patterns``), by key."""


class PropertiesFile:
    """One properties file; `values()` is its current contents."""

    def __init__(
        self,
        path: Path,
        *,
        reload: bool,
        passwords: bool = False,
        decrypt_password: str | None = None,
        dn_patterns: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self._reload = reload
        self._passwords = passwords
        self._decrypt = decrypt_password
        self._dn_patterns = dn_patterns
        self._clock = clock
        self._lock = threading.Lock()
        self._snapshot = self._load()  # raises PropertiesFileError at start
        self._checked = clock()

    def values(self) -> Mapping[str, str]:
        if self._reload:
            now = self._clock()
            if now - self._checked >= CHECK_INTERVAL_S:
                self._maybe_reload(now)
        return self._snapshot.values

    def patterns(self) -> Mapping[str, re.Pattern[str]]:
        """The `/regular expression/` values, compiled when the file was read (a file with a
        bad one is refused at start, or its last good contents kept on reload)."""
        self.values()
        return self._snapshot.patterns

    def _maybe_reload(self, now: float) -> None:
        with self._lock:
            if now - self._checked < CHECK_INTERVAL_S:
                return
            self._checked = now
            try:
                mtime = os.stat(self.path).st_mtime_ns
            except OSError as error:
                log.warning("cannot check %s (%s): keeping its last contents", self.path, error)
                return
            if mtime == self._snapshot.mtime_ns:
                return
            try:
                self._snapshot = self._load()
            except PropertiesFileError as error:
                log.warning("%s; keeping its last contents", error)
                return
            log.info("reloaded %s", self.path)

    def _load(self) -> _Snapshot:
        try:
            mtime = os.stat(self.path).st_mtime_ns
        except OSError as error:
            raise PropertiesFileError(f"{self.path}: cannot read: {error.strerror}") from None
        values: dict[str, str] = {}
        patterns: dict[str, re.Pattern[str]] = {}
        for entry in read_properties(self.path):
            value = values[entry.key] = self._stored(entry.key, entry.value, entry.line)
            if self._dn_patterns and len(value) > 2 and value[0] == value[-1] == "/":
                try:
                    patterns[entry.key] = re.compile(value[1:-1])
                except re.error as error:
                    where = f"{self.path}:{entry.line}: {entry.key}"
                    raise PropertiesFileError(
                        f"{where}: not a valid regular expression ({error})"
                    ) from None
        return _Snapshot(MappingProxyType(values), mtime, MappingProxyType(patterns))

    def _stored(self, key: str, value: str, line: int) -> str:
        where = f"{self.path}:{line}: {key}"
        if self._decrypt is not None and jasypt.is_encrypted(value):
            try:
                value = jasypt.decrypt(value, self._decrypt)
            except jasypt.JasyptError as error:
                raise PropertiesFileError(f"{where}: {error}") from None
        if self._passwords:
            try:
                check_stored(value)
            except PasswordFormatError as error:
                raise PropertiesFileError(f"{where}: {error}") from None
        return value
