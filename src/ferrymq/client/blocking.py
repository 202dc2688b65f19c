"""The client for scripts: the same methods, synchronous.

``connect`` starts an event loop in a background thread that the returned connection owns; each
call runs the asyncio client's coroutine there and waits for it. Closing the connection stops
the loop and joins the thread. Not for use from inside a running event loop (it would block it).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import Future
from types import TracebackType
from typing import Any, Self, TypeVar

from ferrymq.client import factory
from ferrymq.client.connection import DISCONNECT_TIMEOUT_S, Connection, ConnectionStatistics
from ferrymq.client.errors import ConnectionClosed
from ferrymq.client.message import Message
from ferrymq.client.subscription import Subscription
from ferrymq.client.transaction import Transaction
from ferrymq.stomp.constants import ACK_AUTO, V1_2

T = TypeVar("T")


class _LoopThread:
    """An event loop running in a daemon thread, until ``stop``."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="ferrymq-client", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if not self._thread.is_alive():
            coroutine.close()
            raise ConnectionClosed("the connection is closed (its event loop has stopped)")
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("a blocking call from the client's own event loop would deadlock")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # KeyboardInterrupt while waiting: do not leave the call running
            raise

    def stop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()


class BlockingMessage:
    """A received message; ``ack``/``nack`` block until the frame is queued (or receipted)."""

    __slots__ = ("_loop", "message")

    def __init__(self, message: Message, loop: _LoopThread) -> None:
        self.message = message
        self._loop = loop

    @property
    def destination(self) -> str:
        return self.message.destination

    @property
    def message_id(self) -> str:
        return self.message.message_id

    @property
    def headers(self) -> dict[str, str]:
        return self.message.headers

    @property
    def body(self) -> bytes:
        return self.message.body

    @property
    def text(self) -> str:
        return self.message.text

    @property
    def redelivered(self) -> bool:
        return self.message.redelivered

    @property
    def subscription(self) -> str | None:
        return self.message.subscription

    @property
    def ack_id(self) -> str | None:
        return self.message.ack_id

    @property
    def generation(self) -> int:
        """The connection's ``generation`` when it arrived (``Message.generation``)."""
        return self.message.generation

    def ack(
        self, *, transaction: BlockingTransaction | str | None = None, receipt: bool = False
    ) -> None:
        tx = _unwrap(transaction)
        self._loop.run(self.message.ack(transaction=tx, receipt=receipt))

    def nack(
        self, *, transaction: BlockingTransaction | str | None = None, receipt: bool = False
    ) -> None:
        tx = _unwrap(transaction)
        self._loop.run(self.message.nack(transaction=tx, receipt=receipt))

    def __repr__(self) -> str:
        return repr(self.message)


class BlockingSubscription:
    def __init__(self, subscription: Subscription, loop: _LoopThread) -> None:
        self.subscription = subscription
        self._loop = loop

    @property
    def id(self) -> str:
        return self.subscription.id

    @property
    def destination(self) -> str:
        return self.subscription.destination

    @property
    def closed(self) -> bool:
        return self.subscription.closed

    def get(self, timeout: float | None = None) -> BlockingMessage:
        """The next message; ``TimeoutError`` if none came within ``timeout`` seconds."""
        return BlockingMessage(self._loop.run(self.subscription.get(timeout)), self._loop)

    def get_many(self, max_count: int, timeout: float | None = None) -> list[BlockingMessage]:
        """Up to ``max_count`` messages in one call (``Subscription.get_many``); an empty list
        if none came within ``timeout`` seconds."""
        taken = self._loop.run(self.subscription.get_many(max_count, timeout))
        return [BlockingMessage(message, self._loop) for message in taken]

    def __iter__(self) -> Iterator[BlockingMessage]:
        """Stops when the subscription is closed by the application or a browse is complete;
        raises when the broker or the network ended it."""
        while True:
            message = self._loop.run(_next(self.subscription))
            if message is None:
                return
            yield BlockingMessage(message, self._loop)

    def unsubscribe(self, *, durable: bool = False, receipt: bool = True) -> None:
        self._loop.run(self.subscription.unsubscribe(durable=durable, receipt=receipt))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self.subscription.connection.closed:
            self.unsubscribe()


class BlockingTransaction:
    def __init__(self, transaction: Transaction, loop: _LoopThread) -> None:
        self.transaction = transaction
        self._loop = loop

    @property
    def id(self) -> str:
        return self.transaction.id

    def begin(self) -> Self:
        self._loop.run(self.transaction.begin())
        return self

    def commit(self) -> None:
        self._loop.run(self.transaction.commit())

    def abort(self) -> None:
        self._loop.run(self.transaction.abort())

    def __enter__(self) -> Self:
        self._loop.run(self.transaction.__aenter__())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._loop.run(self.transaction.__aexit__(exc_type, exc, traceback))


class BlockingConnection:
    """``ferrymq.client.Connection`` with every coroutine method made synchronous."""

    def __init__(self, connection: Connection, loop: _LoopThread) -> None:
        self.connection = connection
        self._loop = loop

    @property
    def version(self) -> str:
        return self.connection.version

    @property
    def session(self) -> str | None:
        return self.connection.session

    @property
    def server(self) -> str | None:
        return self.connection.server

    @property
    def closed(self) -> bool:
        return self.connection.closed

    @property
    def remote_url(self) -> str:
        """The broker the connection is on now (with failover, it changes)."""
        return self.connection.remote_url

    def statistics(self) -> ConnectionStatistics:
        return self.connection.statistics()

    @property
    def generation(self) -> int:
        """As ``Connection.generation``."""
        return self.connection.generation

    def on_interrupted(self, callback: Callable[[], None]) -> Callable[[], None]:
        """As ``Connection.on_interrupted``; ``callback`` runs on the client's own thread."""
        return self.connection.on_interrupted(callback)

    def on_resumed(self, callback: Callable[[], None]) -> Callable[[], None]:
        """As ``Connection.on_resumed``; ``callback`` runs on the client's own thread."""
        return self.connection.on_resumed(callback)

    def send(
        self,
        destination: str,
        body: bytes | str = b"",
        *,
        headers: Mapping[str, str] | None = None,
        persistent: bool = False,
        receipt: bool | str | None = None,
        priority: int | None = None,
        expires: int | None = None,
        transaction: BlockingTransaction | str | None = None,
    ) -> str:
        return self._loop.run(
            self.connection.send(
                destination,
                body,
                headers=headers,
                persistent=persistent,
                receipt=receipt,
                priority=priority,
                expires=expires,
                transaction=_unwrap(transaction),
            )
        )

    def subscribe(
        self,
        destination: str,
        *,
        selector: str | None = None,
        ack: str = ACK_AUTO,
        prefetch: int | None = None,
        id: str | None = None,
        durable_name: str | None = None,
        no_local: bool = False,
        exclusive: bool = False,
        priority: int | None = None,
        browser: bool = False,
        headers: Mapping[str, str] | None = None,
        receipt: bool = True,
    ) -> BlockingSubscription:
        subscription = self._loop.run(
            self.connection.subscribe(
                destination,
                selector=selector,
                ack=ack,
                prefetch=prefetch,
                id=id,
                durable_name=durable_name,
                no_local=no_local,
                exclusive=exclusive,
                priority=priority,
                browser=browser,
                headers=headers,
                receipt=receipt,
            )
        )
        return BlockingSubscription(subscription, self._loop)

    def ack_all(self, messages: Sequence[BlockingMessage], *, receipt: bool = False) -> None:
        """Acknowledge ``messages`` in order, in one call; with ``receipt``, only the last ACK
        asks for one: the broker handles a connection's frames in order, so its receipt means
        every ACK before it was handled too."""
        if messages:
            self._loop.run(_ack_all([m.message for m in messages], receipt=receipt))

    def transaction(self) -> BlockingTransaction:
        return BlockingTransaction(self.connection.transaction(), self._loop)

    def begin(self) -> BlockingTransaction:
        return self.transaction().begin()

    def disconnect(self, timeout: float = DISCONNECT_TIMEOUT_S) -> None:
        """DISCONNECT (waiting for the receipt), close, and stop the background loop."""
        try:
            self._loop.run(self.connection.disconnect(timeout))
        finally:
            self._loop.stop()

    def close(self) -> None:
        """Close without DISCONNECT and stop the background loop."""
        try:
            self._loop.run(self.connection.close())
        finally:
            self._loop.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.disconnect()


async def _ack_all(messages: Sequence[Message], *, receipt: bool) -> None:
    *others, last = messages
    for message in others:
        await message.ack()
    await last.ack(receipt=receipt)


async def _next(subscription: Subscription) -> Message | None:
    try:
        return await subscription.__anext__()
    except StopAsyncIteration:
        return None


async def _open(connecting: factory.Connecting) -> Connection:
    return await connecting


def _unwrap(transaction: BlockingTransaction | str | None) -> Transaction | str | None:
    if isinstance(transaction, BlockingTransaction):
        return transaction.transaction
    return transaction


def connect(
    url: str,
    *,
    login: str | None = None,
    passcode: str | None = None,
    client_id: str | None = None,
    heart_beat: tuple[int, int] = (0, 0),
    version: str = V1_2,
    connect_timeout: float = 30.0,
    headers: Mapping[str, str] | None = None,
) -> BlockingConnection:
    """Like ``ferrymq.client.connect``, blocking; the connection owns a background loop."""
    connecting = factory.connect(
        url,
        login=login,
        passcode=passcode,
        client_id=client_id,
        heart_beat=heart_beat,
        version=version,
        connect_timeout=connect_timeout,
        headers=headers,
    )
    loop = _LoopThread()
    try:
        connection = loop.run(_open(connecting))
    except BaseException:
        loop.stop()
        raise
    return BlockingConnection(connection, loop)
