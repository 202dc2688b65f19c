"""Heart-beat enforcement on an accepted connection (ActiveMQ's ``InactivityMonitor``).

The broker's side of ``ferrymq.util.heartbeat``: its checks run once per interval and read the
connection's activity counters, which ``TransportConnection`` bumps on every read and write, so
the hot path pays nothing for heart-beats. The read check closes the connection when nothing
arrived for a whole read timeout (the caller folds the grace into it); the write check sends a
keep-alive when nothing was written for a whole write interval. Both timers are cancelled on
``stop``.
"""

from __future__ import annotations

from collections.abc import Callable

from ferrymq.transport.connection import TransportConnection
from ferrymq.util.heartbeat import CheckSchedule, HeartBeatWatchdog


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
        self._on_read_timeout = on_read_timeout
        self._watchdog = HeartBeatWatchdog(
            keep_alive_after_s=write_interval_ms / 1000,
            read_timeout_s=read_timeout_ms / 1000,
            send_keep_alive=send_keepalive,
            on_peer_gone=self._peer_gone,
            schedule=CheckSchedule.EVERY_INTERVAL,
            activity=connection,
        )

    def start(self) -> None:
        self._watchdog.start()

    def stop(self) -> None:
        self._watchdog.stop()

    def _peer_gone(self, silent_s: float) -> None:
        self._on_read_timeout()
