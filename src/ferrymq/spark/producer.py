"""One task's sends: a client connection, pipelined persistent SENDs, every receipt awaited.

A receipt for a persistent SEND comes once the message is on disk (DESIGN.md "Durability
contract"), so a task that returns has its whole partition stored. Waiting for each receipt
before the next send would cost a round trip and a store commit per row; instead up to
``max_in_flight`` sends are outstanding, and the broker's group commit covers all that arrived
together (docs/spark.md "Sink" has the rates). Each send is its own task, because the client's
``send`` awaits its own receipt; frames still leave in row order, since a send queues its frame
before its first await.

Everything runs on an event loop the task owns (``asyncio.run`` in ``write``): the connection
is disconnected and the loop closed before ``write`` returns or raises.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from ferrymq.client import ClientError, Connection, connect
from ferrymq.client.connection import DISCONNECT_TIMEOUT_S
from ferrymq.spark.sink_options import SinkOptions
from ferrymq.spark.sink_schema import OutgoingMessage


@dataclass(frozen=True, slots=True)
class ProducerReport:
    messages: int
    body_bytes: int
    elapsed_s: float
    """From connecting to the last receipt."""


@dataclass(eq=False)
class SinkSendError(Exception):
    """The broker refused a row's message, or never confirmed it."""

    row: int
    """Position of the row in the task's partition."""
    destination: str
    problem: str

    def __post_init__(self) -> None:
        super().__init__(self.row, self.destination, self.problem)

    def __str__(self) -> str:
        where = f"row {self.row} of the partition, to {self.destination}"
        return f"ferrymq sink: {where}: {self.problem}"


@dataclass(slots=True)
class _InFlight:
    row: int
    destination: str
    send: asyncio.Task[str]


def produce(options: SinkOptions, messages: Iterable[OutgoingMessage]) -> ProducerReport:
    """Send ``messages`` (in order, pipelined) and wait for every receipt; blocks."""
    return asyncio.run(_produce(options, messages))


async def _produce(options: SinkOptions, messages: Iterable[OutgoingMessage]) -> ProducerReport:
    started = time.monotonic()
    rows = iter(messages)
    first = next(rows, None)
    if first is None:
        return ProducerReport(0, 0, 0.0)  # an empty partition opens no connection
    where = options.connection
    connection = await connect(
        where.url,
        login=where.login,
        passcode=where.passcode,
        connect_timeout=where.connect_timeout_ms / 1000,
    )
    sender = _Sender(connection, options)
    # Leaving by an error still DISCONNECTs: the broker handles whatever frames were queued
    # before it closes, so what a failed attempt sent is settled before a retry re-sends it.
    # A broker that stopped receipting gets no longer to answer the DISCONNECT.
    disconnect_timeout_s = min(DISCONNECT_TIMEOUT_S, options.receipt_timeout_s)
    try:
        await sender.send_all(itertools.chain((first,), rows))
    except asyncio.CancelledError:
        await connection.close()
        raise
    finally:
        await connection.disconnect(disconnect_timeout_s)  # after close(): does nothing
    return ProducerReport(sender.sent, sender.body_bytes, time.monotonic() - started)


class _Sender:
    def __init__(self, connection: Connection, options: SinkOptions) -> None:
        self._connection = connection
        self._window = options.max_in_flight
        self._timeout_s = options.receipt_timeout_s
        self._in_flight: deque[_InFlight] = deque()
        self.sent = 0
        self.body_bytes = 0

    async def send_all(self, messages: Iterable[OutgoingMessage]) -> None:
        in_flight = self._in_flight
        try:
            for row, message in enumerate(messages):
                while len(in_flight) >= self._window or (in_flight and in_flight[0].send.done()):
                    await self._receipted(in_flight.popleft())
                send = self._connection.send(
                    message.destination, message.body, headers=message.headers, receipt=True
                )
                in_flight.append(_InFlight(row, message.destination, asyncio.ensure_future(send)))
                self.body_bytes += len(message.body)
            while in_flight:
                await self._receipted(in_flight.popleft())
        finally:
            await self._cancel()

    async def _receipted(self, entry: _InFlight) -> None:
        if not entry.send.done():
            await asyncio.wait([entry.send], timeout=self._timeout_s)
        if not entry.send.done():
            self._in_flight.appendleft(entry)  # cancelled and awaited with the rest
            raise SinkSendError(
                entry.row,
                entry.destination,
                f"no receipt from {self._connection.remote_url} within {self._timeout_s:g} s",
            )
        try:
            entry.send.result()
        except ClientError as exc:
            raise SinkSendError(entry.row, entry.destination, str(exc)) from exc
        self.sent += 1

    async def _cancel(self) -> None:
        """Stop waiting for what is still in flight (after an error): cancelled and awaited, so
        no send task outlives the call."""
        pending = [entry.send for entry in self._in_flight]
        self._in_flight.clear()
        for send in pending:
            send.cancel()
        if pending:
            await asyncio.wait(pending, timeout=DISCONNECT_TIMEOUT_S)
            for send in pending:
                if send.done() and not send.cancelled():
                    send.exception()  # retrieved: the first failure is already being raised
