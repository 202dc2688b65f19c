"""A broker with a STOMP listener over TCP and one over WebSocket, for the WebSocket tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from ferrymq.broker import Broker
from ferrymq.config.cli import config_from_flags
from ferrymq.testing import running_broker

TIMEOUT_S = 10.0


@dataclass(frozen=True)
class WsBroker:
    broker: Broker
    tcp_port: int
    ws_port: int

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.ws_port}"


@asynccontextmanager
async def ws_broker(data: Path, options: str = "") -> AsyncIterator[WsBroker]:
    """A broker serving STOMP on ``stomp://`` and ``ws://`` (127.0.0.1, port 0), both with the
    URI ``options`` (``?wireFormat.maxDataLength=...``)."""
    listen = [f"stomp://127.0.0.1:0{options}", f"ws://127.0.0.1:0{options}"]
    config = config_from_flags("localhost", data, listen, "off", False)
    async with running_broker(config) as broker:
        tcp_port, ws_port = broker.stomp_ports
        yield WsBroker(broker, tcp_port, ws_port)


class TcpStomp:
    """Raw STOMP frames over a plain socket (the other side of the TCP/WebSocket tests)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, port: int) -> TcpStomp:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        client = cls(reader, writer)
        client.send("CONNECT\naccept-version:1.2\nhost:localhost\n\n")
        assert (await client.frame()).startswith(b"CONNECTED\n")
        return client

    def send(self, frame: str | bytes) -> None:
        data = frame.encode() if isinstance(frame, str) else frame
        self.writer.write(data + b"\x00")

    async def frame(self) -> bytes:
        """The next frame, heart-beat EOLs before it skipped, NUL included."""
        data = await asyncio.wait_for(self.reader.readuntil(b"\x00"), TIMEOUT_S)
        return data.lstrip(b"\r\n")

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()
