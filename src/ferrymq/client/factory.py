"""Where connections come from: ``connect(url, ...)`` (JMS calls this a connection factory).

``connect`` checks its arguments and the URL at once, picks the transport from the URL's scheme
(``registry``), and returns a ``Connecting``: await it, or enter it with ``async with``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from types import TracebackType
from typing import Any

from ferrymq.client.commands import ConnectionInfo
from ferrymq.client.connection import Connection
from ferrymq.client.errors import UsageError
from ferrymq.client.registry import transport_for
from ferrymq.client.transport import Transport
from ferrymq.stomp import constants as h


class Connecting:
    """What ``connect`` returns: await it for a ``Connection``, or use it with ``async with``
    (connected on entry, disconnected on exit)."""

    def __init__(self, url: str, info: ConnectionInfo) -> None:
        self._url = url
        self._info = info
        self._transport: Transport | None = transport_for(url, info)  # checks the URL now
        self._connection: Connection | None = None

    async def _connect(self) -> Connection:
        transport, self._transport = self._transport, None
        if transport is None:
            raise UsageError("this connect() call was already used; call connect() again")
        return await Connection(self._url, transport, self._info)._open()

    def __await__(self) -> Generator[Any, None, Connection]:
        return self._connect().__await__()

    async def __aenter__(self) -> Connection:
        self._connection = await self._connect()
        return self._connection

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._connection is not None
        await self._connection.__aexit__(exc_type, exc, traceback)


def connect(
    url: str,
    *,
    login: str | None = None,
    passcode: str | None = None,
    client_id: str | None = None,
    heart_beat: tuple[int, int] = (0, 0),
    version: str = h.V1_2,
    connect_timeout: float = 30.0,
    headers: Mapping[str, str] | None = None,
) -> Connecting:
    """Connect to the broker at ``url`` (``tcp://host:port`` or ``stomp://host:port``).

    ``heart_beat`` is STOMP's ``cx,cy`` in ms (how often we can send, how often we want the
    broker to); ``version`` is the highest STOMP version offered; ``connect_timeout`` (s) bounds
    the TCP connect and the CONNECT/CONNECTED exchange together. The URL is checked now: a
    malformed one, an unknown option or an unsupported scheme raises ``BrokerURLError``.
    """
    if version not in h.SUPPORTED_VERSIONS:
        raise UsageError(f"unknown STOMP version {version!r} (1.0, 1.1, 1.2)")
    if len(heart_beat) != 2 or any(not isinstance(v, int) or v < 0 for v in heart_beat):
        raise UsageError(f"heart_beat must be two non-negative ms counts, got {heart_beat!r}")
    if connect_timeout <= 0:
        raise UsageError(f"connect_timeout must be positive, got {connect_timeout!r}")
    offered = h.SUPPORTED_VERSIONS[: h.SUPPORTED_VERSIONS.index(version) + 1]
    info = ConnectionInfo(
        login=login,
        passcode=passcode,
        client_id=client_id,
        heart_beat=(heart_beat[0], heart_beat[1]),
        versions=offered,
        connect_timeout_s=connect_timeout,
        headers=dict(headers) if headers else {},
    )
    return Connecting(url, info)
