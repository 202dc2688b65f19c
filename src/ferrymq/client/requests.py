"""A connection's line to its broker: whether it is open, and the commands that wait for the
broker's receipt (ActiveMQ's ``ResponseCorrelator``).

The ``Connection``, its subscriptions' acknowledgements and its transactions all send through
one ``Requests``, so none of them needs another for it. An ERROR naming a receipt answers the
call that asked for it; once closed, every waiting call fails with why, and every later one
raises ``ConnectionClosed`` at once.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from enum import Enum
from typing import Protocol

from ferrymq.client.commands import Command
from ferrymq.client.errors import ConnectionClosed
from ferrymq.client.transport import Transport


class ConnectionState(Enum):
    CONNECTING = "connecting"
    OPEN = "open"
    DISCONNECTING = "disconnecting"
    CLOSED = "closed"


class ConnectionView(Protocol):
    """What a subscription or a transaction shows of the connection it belongs to (the
    ``Connection``; typed by this protocol so that neither imports it)."""

    @property
    def closed(self) -> bool: ...

    @property
    def close_reason(self) -> ConnectionClosed | None: ...


class Requests:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.state = ConnectionState.CONNECTING
        self.close_reason: ConnectionClosed | None = None
        self._receipt_seq = itertools.count(1)
        self._receipts: dict[str, asyncio.Future[None]] = {}

    @property
    def open(self) -> bool:
        return self.state is ConnectionState.OPEN

    def next_receipt(self) -> str:
        return f"r-{next(self._receipt_seq)}"

    def check_open(self) -> None:
        if self.state is ConnectionState.OPEN:
            return
        reason = self.close_reason
        if reason is None:
            raise ConnectionClosed(f"the connection is {self.state.value}")
        # A new instance each time, so tracebacks do not pile up on one object.
        raise ConnectionClosed(reason.message, error=reason.error) from reason.__cause__

    async def call(
        self,
        command: Command,
        receipt_id: str | None,
        written: Callable[[], None] | None = None,
    ) -> None:
        """Send ``command`` on an open connection; with ``receipt_id``, return once the broker
        receipted it (raising its ERROR if it refused). ``written`` is called once the command
        is on its way (the transport took it), before its receipt comes."""
        self.check_open()
        await self.request(command, receipt_id, written)

    async def request(
        self,
        command: Command,
        receipt_id: str | None,
        written: Callable[[], None] | None = None,
    ) -> None:
        """``call`` without the check (the DISCONNECT of a connection already closing)."""
        if receipt_id is None:
            await self.transport.write(command)
            return
        waiter = asyncio.get_running_loop().create_future()
        self._receipts[receipt_id] = waiter
        try:
            await self.transport.write(command)
            if written is not None:
                written()
            await waiter
        finally:
            if self._receipts.get(receipt_id) is waiter:
                del self._receipts[receipt_id]
            if waiter.done() and not waiter.cancelled():
                waiter.exception()  # retrieved here even when write() raised first
            else:
                waiter.cancel()

    def answer(self, receipt_id: str, error: BaseException | None = None) -> bool:
        """The broker's RECEIPT (``error`` None) or a failure for ``receipt_id``: True if a call
        was still waiting for it."""
        waiter = self._receipts.pop(receipt_id, None)
        if waiter is None or waiter.done():
            return False
        if error is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(error)
        return True

    def close(self, reason: ConnectionClosed, raised: BaseException | None) -> bool:
        """Closed for ``reason``: every waiting call raises ``raised`` (None: ``reason``).
        False if it already was."""
        if self.state is ConnectionState.CLOSED:
            return False
        self.state = ConnectionState.CLOSED
        self.close_reason = reason
        receipts, self._receipts = self._receipts, {}
        for waiter in receipts.values():
            if not waiter.done():
                waiter.set_exception(raised or reason)
        return True
