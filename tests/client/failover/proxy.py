"""A TCP proxy between a client and a real broker, to lose frames on purpose.

ActiveMQ tests the same situations with a proxy (``testFailoverConnectionSendReplyLost``): a
test can drop what the client sends (``freeze("up")``: frames lost on the way), drop what the
broker answers (``freeze("down")``: the broker acted, its receipts are lost), and ``cut`` every
connection, which both sides see as the network failing.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Literal, Self

Direction = Literal["up", "down"]


class Proxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._frozen: set[Direction] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.bytes_dropped = {"up": 0, "down": 0}

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    async def start(self) -> Self:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def freeze(self, direction: Direction) -> None:
        """From now on, drop the bytes going ``direction`` ("up": client to broker)."""
        self._frozen.add(direction)

    async def cut(self, *, refuse: bool = True) -> None:
        """Abort every connection (and with ``refuse``, accept no new one)."""
        if refuse and self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self._frozen.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        pairs: tuple[tuple[asyncio.StreamReader, asyncio.StreamWriter, Direction], ...] = (
            (reader, up_writer, "up"),
            (up_reader, writer, "down"),
        )
        for source, target, direction in pairs:
            task = asyncio.get_running_loop().create_task(self._pump(source, target, direction))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(
        self, source: asyncio.StreamReader, target: asyncio.StreamWriter, direction: Direction
    ) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                if direction in self._frozen:
                    self.bytes_dropped[direction] += len(data)
                    continue
                target.write(data)
                await target.drain()
        target.transport.abort()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.cut()
