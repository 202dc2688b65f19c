"""``vm://NAME``: a connection to a broker running in this process (``ferrymq.util.vm``).

It is a ``TcpTransport`` over one end of a socket pair that the broker hands out, so framing,
heart-beats and flow control are exactly those of a TCP connection; only the connect differs.
"""

from __future__ import annotations

import asyncio

from ferrymq.client.commands import ConnectionInfo
from ferrymq.client.errors import BrokerURLError, ConnectFailedError
from ferrymq.client.tcp import TcpOptions, TcpTransport
from ferrymq.util import vm
from ferrymq.util.uri import URI


class VmTransport(TcpTransport):
    def __init__(self, uri: URI, info: ConnectionInfo) -> None:
        raw = uri.raw or str(uri)
        if not uri.host:
            raise BrokerURLError("a broker name is required (vm://NAME)", url=raw, part=raw)
        if uri.query:
            name = next(iter(uri.query))
            raise BrokerURLError(f"unknown option {name!r} for vm:", url=raw, part=name)
        super().__init__(uri, info, TcpOptions(connection_timeout_s=None))
        self._name = uri.host
        self._url = f"vm://{uri.host}"

    async def _connect_socket(self) -> None:
        opener = vm.lookup(self._name)
        if opener is None:
            raise ConnectFailedError(f"no broker named {self._name} in this process", url=self._url)
        sock = await opener()
        self._reader, self._writer = await asyncio.open_connection(sock=sock)

    def _configure_socket(self) -> None:
        """A socket pair has no TCP options."""
