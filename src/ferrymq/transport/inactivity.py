"""Heart-beat enforcement, as a filter on a connection (ActiveMQ's InactivityMonitor).

Two timers, both owned here and cancelled on ``stop``: the read check closes the connection when
nothing arrived for the read timeout; the write check sends a keep-alive when nothing was written
for the write interval.  Activity is detected by comparing the connection's counters, so the hot
path pays nothing for heart-beats.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ferrymq.transport.connection import TransportConnection


class InactivityMonitor:
    def __init__(
        self,
        connection: TransportConnection,
        *,
        read_timeout_ms: int,
        write_interval_ms: int,
        on_read_timeout: Callable[[], None],
        send_keepalive: Callable[[], None],
    ) -> None:
        self._connection = connection
        self._read_timeout_s = read_timeout_ms / 1000
        self._write_interval_s = write_interval_ms / 1000
        self._on_read_timeout = on_read_timeout
        self._send_keepalive = send_keepalive
        self._read_handle: asyncio.TimerHandle | None = None
        self._write_handle: asyncio.TimerHandle | None = None
        self._last_read = -1
        self._last_write = -1

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self._read_timeout_s > 0:
            self._last_read = self._connection.read_activity
            self._read_handle = loop.call_later(self._read_timeout_s, self._check_read)
        if self._write_interval_s > 0:
            self._last_write = self._connection.write_activity
            self._write_handle = loop.call_later(self._write_interval_s, self._check_write)

    def stop(self) -> None:
        for handle in (self._read_handle, self._write_handle):
            if handle is not None:
                handle.cancel()
        self._read_handle = self._write_handle = None

    def _check_read(self) -> None:
        activity = self._connection.read_activity
        if activity == self._last_read:
            self._read_handle = None
            self.stop()
            self._on_read_timeout()
            return
        self._last_read = activity
        self._read_handle = asyncio.get_running_loop().call_later(
            self._read_timeout_s, self._check_read
        )

    def _check_write(self) -> None:
        if self._connection.write_activity == self._last_write:
            self._send_keepalive()
        self._last_write = self._connection.write_activity
        self._write_handle = asyncio.get_running_loop().call_later(
            self._write_interval_s, self._check_write
        )
