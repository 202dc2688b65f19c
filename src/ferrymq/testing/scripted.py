"""A STOMP server whose connections fail at moments a test chooses: a scripted front for a broker.

Each connection it accepts follows the next step of its script (then ``then``): relay both ways
to the real broker behind it (``Forward``), relay until the client sends a given command and
close both sockets instead of passing that frame on (``CloseOn``: a broker that answered
CONNECTED and died as the client re-subscribed), or close at once (``Refuse``). ``drop`` aborts
every open connection (a broker that dies while serving; with ``refuse``, one that stays down
until ``follow`` brings it back), and ``freeze`` loses what goes one way (ActiveMQ's
``testFailoverConnectionSendReplyLost`` does the same with a proxy: "up" loses the client's
frames, "down" the broker's answers, after the broker acted). The frames a connection does
carry come from the real broker, so a client is restored, redelivered to and receipted exactly
as in production; only the failures are scripted, so they happen at the same point every run.
Only ``CloseOn`` reads STOMP: the rest relays any TCP protocol (a test fronts PostgreSQL too).

It runs on its own event loop thread, so blocking clients (the Spark source's driver, a
``ferrymq`` child process) and asyncio tests use it alike; waiting methods block the caller
(an asyncio test calls them through ``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Self

from ferrymq.stomp.constants import V1_2
from ferrymq.stomp.errors import RemoteProtocolError
from ferrymq.stomp.frame import Frame, HeartBeat
from ferrymq.stomp.limits import Limits
from ferrymq.stomp.parser import FrameParser
from ferrymq.testing.waiting import wait_until_blocking

READ_BYTES = 64 * 1024
WAIT_S = 15.0
"""How long the waiting methods wait by default before they fail the test."""
_UNLIMITED = Limits(max_body_bytes=1 << 40, max_frame_bytes=1 << 40)
"""The scripted server only looks for commands; the broker behind it enforces the limits."""


@dataclass(frozen=True, slots=True)
class Forward:
    """Relay both ways until either side closes or ``drop`` is called."""


@dataclass(frozen=True, slots=True)
class CloseOn:
    """Relay until the client sends a ``command`` frame, then close both sockets without
    passing on what came with it (the broker never sees the frame)."""

    command: str


@dataclass(frozen=True, slots=True)
class Refuse:
    """Accept the connection and close it at once, before the client's CONNECT is answered."""


Step = Forward | CloseOn | Refuse
Direction = Literal["up", "down"]
""""up": client to broker; "down": broker to client."""


class ScriptedStompServer:
    """Listens on 127.0.0.1 (port 0) in front of the broker at ``target_port``."""

    def __init__(self, target_port: int, script: Sequence[Step], *, then: Step = Forward()) -> None:
        self.target_port = target_port
        self.script = tuple(script)
        self.then = then
        self.port = 0
        self.accepted = 0
        """Connections accepted so far (the script's position)."""
        self.closed_on: list[int] = []
        """The connections (1-based) that a ``CloseOn`` closed."""
        self._changed = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._script_from = 0
        """``accepted`` when the current script began."""
        self._server: asyncio.Server | None = None
        self._relays: set[asyncio.Task[None]] = set()
        self._frozen: set[Direction] = set()

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        self._call(self._listen())
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._call(self._close())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=WAIT_S)
        self._loop.close()

    def follow(self, script: Sequence[Step], *, then: Step = Forward()) -> None:
        """From the next connection on, follow ``script`` (then ``then``) from its start: a
        broker that was down comes back, or one that served starts failing."""
        with self._changed:
            self.script = tuple(script)
            self.then = then
            self._script_from = self.accepted

    def drop(self, *, refuse: bool = False) -> None:
        """Abort every open connection, both sides, and thaw ``freeze``; new connections are
        accepted as scripted, or with ``refuse`` refused until ``follow`` says otherwise."""
        if refuse:
            self.follow([], then=Refuse())
        self._call(self._abort_relays())
        self._frozen.clear()

    def freeze(self, direction: Direction) -> None:
        """From now on, until ``drop``, lose the bytes going ``direction``."""
        self._frozen.add(direction)

    def wait_accepted(self, count: int, timeout_s: float = WAIT_S) -> None:
        """Until ``count`` connections were accepted; AssertionError at the deadline."""
        self._wait(lambda: self.accepted >= count, timeout_s, f"{count} connection(s)")

    def wait_closed_on(self, count: int = 1, timeout_s: float = WAIT_S) -> None:
        """Until ``CloseOn`` steps closed ``count`` connections."""
        self._wait(lambda: len(self.closed_on) >= count, timeout_s, f"{count} scripted close(s)")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---- on the server's loop ----

    def _call(self, coro: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coro, self._loop).result(WAIT_S)

    def _wait(self, done: Callable[[], bool], timeout_s: float, what: str) -> None:
        wait_until_blocking(
            done,
            timeout_s,
            f"scripted server: {what}",
            changed=self._changed,
            detail=lambda: f"accepted {self.accepted}, scripted closes on {self.closed_on}",
        )

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        await self._abort_relays()

    async def _abort_relays(self) -> None:
        relays = list(self._relays)
        for relay in relays:
            relay.cancel()
        if relays:
            await asyncio.wait(relays)

    def _closed_on(self, number: int) -> None:
        with self._changed:
            self.closed_on.append(number)
            self._changed.notify_all()

    def _next(self) -> tuple[int, Step]:
        """Count a new connection; its number and its step."""
        with self._changed:
            self.accepted += 1
            self._changed.notify_all()
            position = self.accepted - self._script_from
            step = self.script[position - 1] if position <= len(self.script) else self.then
            return self.accepted, step

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number, step = self._next()
        if isinstance(step, Refuse):
            writer.transport.abort()
            return
        relay = asyncio.current_task()
        assert relay is not None
        self._relays.add(relay)
        try:
            await self._relay(number, step, reader, writer)
        finally:  # ended by either side, or cancelled by drop() or stop()
            self._relays.discard(relay)

    async def _relay(
        self,
        number: int,
        step: Forward | CloseOn,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        close_on = step.command if isinstance(step, CloseOn) else None
        try:
            async with asyncio.TaskGroup() as pumps:
                pumps.create_task(self._pump_up(number, close_on, reader, up_writer, writer))
                pumps.create_task(self._pump_down(up_reader, writer, up_writer))
        finally:
            writer.transport.abort()
            up_writer.transport.abort()

    async def _pump_up(
        self,
        number: int,
        close_on: str | None,
        source: asyncio.StreamReader,
        target: asyncio.StreamWriter,
        client: asyncio.StreamWriter,
    ) -> None:
        parser = FrameParser(_UNLIMITED)
        with contextlib.suppress(OSError, RemoteProtocolError):
            while data := await source.read(READ_BYTES):
                if close_on is not None and close_on in _commands(parser, data):
                    self._closed_on(number)
                    break
                if "up" not in self._frozen:
                    target.write(data)
                    await target.drain()
        target.transport.abort()
        client.transport.abort()

    async def _pump_down(
        self,
        source: asyncio.StreamReader,
        target: asyncio.StreamWriter,
        broker: asyncio.StreamWriter,
    ) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(READ_BYTES):
                if "down" not in self._frozen:
                    target.write(data)
                    await target.drain()
        target.transport.abort()
        broker.transport.abort()


def _commands(parser: FrameParser, data: bytes) -> list[str]:
    """The commands of the frames ``data`` completes (the parser keeps partial frames)."""
    commands: list[str] = []
    events: list[Frame | HeartBeat] = parser.feed(data)
    while True:
        frames = [event for event in events if isinstance(event, Frame)]
        commands.extend(frame.command for frame in frames)
        if not frames or frames[-1].command not in ("CONNECT", "STOMP"):
            return commands
        parser.version = V1_2  # the parser waits after a CONNECT until told the version
        events = parser.feed(b"")
