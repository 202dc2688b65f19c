"""A connection's consumers: its subscriptions, what they deliver, and how that is settled.

STOMP has one session per connection, so what ActiveMQ's ``ActiveMQSession`` does for its
consumers lives here, behind the ``Connection``: SUBSCRIBE and UNSUBSCRIBE, MESSAGE frames
routed to their subscription, ACK and NACK, and the transactions, because an acknowledgement
made in one enters the subscription's audit (``subscription``) only once it commits. The
subscriptions and transactions reach it through their owner protocols, never the
``Connection``; it sends through the connection's ``Requests``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging

from ferrymq.client.commands import Abort, Acknowledge, Begin, Commit, Subscribe, Unsubscribe
from ferrymq.client.errors import UsageError
from ferrymq.client.message import Message
from ferrymq.client.requests import ConnectionView, Requests
from ferrymq.client.subscription import Subscription
from ferrymq.client.transaction import Transaction
from ferrymq.stomp.constants import CLUSTER_UPDATES_SUBSCRIPTION
from ferrymq.stomp.events import MessageEvent

log = logging.getLogger(__name__)


class Consumers:
    def __init__(self, connection: ConnectionView, requests: Requests) -> None:
        self.connection = connection
        """What each subscription and transaction shows as its ``connection``."""
        self._requests = requests
        self._subscription_seq = itertools.count(1)
        self._subscriptions: dict[str, Subscription] = {}
        self._transaction_acks: dict[str, list[tuple[Subscription, Message]]] = {}
        """Messages acknowledged in each open transaction: audited once it commits."""
        self._background: set[asyncio.Task[None]] = set()
        self.received = self.duplicates = 0

    def __len__(self) -> int:
        return len(self._subscriptions)

    # ---- subscribing ----

    async def subscribe(
        self,
        destination: str,
        id: str | None,
        *,
        ack: str,
        selector: str | None,
        headers: dict[str, str],
        durable_name: str | None,
        browser: bool,
        receipt: bool,
    ) -> Subscription:
        """``Connection.subscribe``, once its options are SUBSCRIBE headers."""
        sub_id = id if id is not None else f"sub-{next(self._subscription_seq)}"
        if sub_id == CLUSTER_UPDATES_SUBSCRIPTION:
            raise UsageError(f"subscription id {sub_id!r} is reserved for cluster updates")
        if sub_id in self._subscriptions:
            raise UsageError(f"subscription id {sub_id!r} is already in use")
        subscription = Subscription(
            self.connection,
            self,
            sub_id,
            destination,
            ack=ack,
            selector=selector,
            durable_name=durable_name,
            browser=browser,
        )
        self._requests.check_open()
        self._subscriptions[sub_id] = subscription  # messages may follow the receipt at once
        receipt_id = self._requests.next_receipt() if receipt else None
        command = Subscribe(sub_id, destination, ack, selector, headers, receipt_id)
        written = False

        def on_its_way() -> None:
            nonlocal written
            written = True

        try:
            await self._requests.call(command, receipt_id, on_its_way)
        except BaseException as error:
            self._forget(subscription)
            subscription._finish(None)
            if written and isinstance(error, asyncio.CancelledError):
                self._withdraw(sub_id)
            raise
        return subscription

    def _withdraw(self, sub_id: str) -> None:
        """A SUBSCRIBE went out but its caller gave up waiting for the receipt: take it back
        (a plain UNSUBSCRIBE, settled at once by a failover transport with no broker), or the
        broker, or the next one a failover restores it on, would hand its messages to nobody."""
        if not self._requests.open:
            return
        task = asyncio.get_running_loop().create_task(
            self._requests.transport.write(Unsubscribe(sub_id, None, None))
        )
        self._background.add(task)
        task.add_done_callback(self._background_done)

    async def unsubscribe(
        self, subscription: Subscription, *, durable: bool, receipt: bool
    ) -> None:
        """``Subscription.unsubscribe``, and the end of a browse."""
        self._forget(subscription)
        if not self._requests.open and not durable:
            return
        receipt_id = self._requests.next_receipt() if receipt else None
        name = subscription.durable_name if durable else None
        await self._requests.call(Unsubscribe(subscription.id, name, receipt_id), receipt_id)

    def _forget(self, subscription: Subscription) -> None:
        if self._subscriptions.get(subscription.id) is subscription:
            del self._subscriptions[subscription.id]

    # ---- what the connection hands over ----

    def deliver(self, event: MessageEvent) -> None:
        """A MESSAGE: to its subscription, if it still has one."""
        subscription = self._subscriptions.get(event.subscription or "")
        if subscription is not None:
            self.received += 1
            subscription._deliver(event, self._requests.transport.generation)

    def interrupted(self) -> None:
        """The transport lost its broker: a browse cannot resume and is forgotten."""
        for subscription in list(self._subscriptions.values()):
            subscription._interrupted()
            if subscription.browser:
                self._forget(subscription)

    def close(self, raised: BaseException | None) -> None:
        """The connection closed: every subscription ends (raising ``raised``, or stopping)."""
        subscriptions, self._subscriptions = self._subscriptions, {}
        for subscription in subscriptions.values():
            subscription._finish(raised)
        for task in list(self._background):
            task.cancel()

    # ---- settling ----

    async def settle(
        self,
        subscription: Subscription,
        message: Message,
        *,
        nack: bool,
        transaction: Transaction | str | None,
        receipt: bool,
    ) -> None:
        """``Message.ack``/``nack``, through its subscription (which checked the ack mode)."""
        receipt_id = self._requests.next_receipt() if receipt else None
        tx = transaction_id(transaction)
        command = Acknowledge(message.event, nack, tx, receipt_id, message.generation)
        self._requests.check_open()
        if tx is None:
            subscription._acknowledged(message)
        else:
            self._transaction_acks.setdefault(tx, []).append((subscription, message))
        await self._requests.call(command, receipt_id)

    def drop_duplicate(self, event: MessageEvent, generation: int, *, acknowledge: bool) -> None:
        """A redelivery of a message the application already acknowledged (``Subscription``):
        count it and, with ``acknowledge``, acknowledge it without a receipt and without
        making anyone wait."""
        self.duplicates += 1
        if not acknowledge or not self._requests.open:
            return
        task = asyncio.get_running_loop().create_task(
            self._requests.transport.write(Acknowledge(event, generation=generation))
        )
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("a background command failed: %s", task.exception())

    # ---- transactions ----

    async def begin_transaction(self, transaction_id: str) -> None:
        # No receipt: the id is ours and fresh, and the COMMIT's receipt covers it.
        await self._requests.call(Begin(transaction_id), None)

    async def end_transaction(self, transaction_id: str, *, commit: bool) -> None:
        receipt_id = self._requests.next_receipt()
        end = Commit if commit else Abort
        acked = self._transaction_acks.pop(transaction_id, [])
        await self._requests.call(end(transaction_id, receipt_id), receipt_id)
        if commit:
            for subscription, message in acked:
                subscription._acknowledged(message)


def transaction_id(transaction: Transaction | str | None) -> str | None:
    if transaction is None or isinstance(transaction, str):
        return transaction
    return transaction.id
