"""STOMP-shaped commands down to AMQP 1.0 operations, AMQP back up as STOMP events.

The client library above the transport speaks STOMP's vocabulary (``Command`` records in,
``MessageEvent``/``ReceiptEvent``/``ErrorEvent`` out). Over ``amqp://`` this translation makes
the AMQP connection look like a STOMP one, so ``Connection``, subscriptions, transactions and
failover's replay work unchanged (docs/amqp.md, "The FerryMQ client over AMQP"):

- SEND: a transfer on the destination's sender link, always unsettled; its RECEIPT is the
  broker's ``accepted`` (which FerryMQ gives a durable message only once it is stored), a
  ``rejected`` is the ERROR.
- SUBSCRIBE: a receiver link; its RECEIPT is the broker's attach. ``auto`` asks for settled
  deliveries; the ``client`` modes leave them unsettled until ACK (``accepted``) or NACK
  (``rejected``: dead-lettered at once, as STOMP's NACK is in ActiveMQ). The ack id of a MESSAGE
  is the delivery's number on this connection.
- UNSUBSCRIBE: detach (close, with ``activemq.subscriptionName``: the durable subscription goes).
- BEGIN/COMMIT/ABORT: declare and discharge on the coordinator link; sends and acks in between
  carry the transaction's id, and the discharge waits until the broker settled the sends.
- DISCONNECT: close, once every send was settled; its RECEIPT is the broker's close.

An ACK's receipt is answered at once: AMQP confirms no disposition of a settled delivery.
No I/O here: the transport feeds bytes and writes what ``engine`` has to send.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass

from ferrymq.amqp.client import (
    Arrived,
    BrowseEnded,
    ClientEngine,
    Closed,
    EngineEvent,
    LinkClosed,
    LinkOpened,
    Outcome,
    SubscriptionSpec,
)
from ferrymq.amqp.client_links import DEFAULT_PREFETCH
from ferrymq.amqp.client_mapping import address_for, encoded_for_send, message_headers
from ferrymq.client.commands import (
    Abort,
    Acknowledge,
    Begin,
    Command,
    Commit,
    Disconnect,
    Send,
    Subscribe,
    Unsubscribe,
)
from ferrymq.client.errors import UsageError
from ferrymq.client.transport import BrokerEvent
from ferrymq.stomp import constants as h
from ferrymq.stomp.events import ErrorEvent, MessageEvent, ReceiptEvent
from ferrymq.util.text import is_decimal

__all__ = ["AmqpSession"]


@dataclass(slots=True)
class _Subscription:
    destination: str
    ack: str
    receipt: str | None
    opened: bool = False
    unsubscribe_receipt: str | None = None
    closing: bool = False


class AmqpSession:
    """The translation state of one AMQP connection (see the module docstring)."""

    def __init__(self, engine: ClientEngine) -> None:
        self.engine = engine
        self._subscriptions: dict[str, _Subscription] = {}
        self._sends: dict[str, tuple[str | None, str | None]] = {}
        """Send key -> its receipt id and transaction."""
        self._keys = itertools.count(1)
        self._transactions: dict[str, bytes] = {}
        self._controls: dict[str, tuple[str | None, asyncio.Future[bytes | None] | None]] = {}
        """Declare/discharge key -> the receipt to answer and the future a BEGIN waits on."""
        self.disconnect_receipt: str | None = None
        self.disconnecting = False

    @property
    def in_flight(self) -> int:
        """Sends the broker has not settled yet."""
        return len(self._sends)

    def in_flight_in(self, transaction: str) -> int:
        """Sends of ``transaction`` the broker has not settled yet. A discharge waits for them:
        a transfer waits for its link's credit, the coordinator's may come first, and the
        broker must see the transaction's work before its end."""
        return sum(1 for _, tx in self._sends.values() if tx == transaction)

    # ---- commands ----

    def command(self, command: Command) -> list[BrokerEvent]:
        """Apply ``command`` (not BEGIN: ``begin``); returns events answered at once."""
        match command:
            case Send():
                self._send(command)
            case Subscribe():
                self._subscribe(command)
            case Unsubscribe():
                return self._unsubscribe(command)
            case Acknowledge():
                return self._acknowledge(command)
            case Commit() | Abort():
                self._discharge(command)
            case Disconnect():
                self.disconnecting = True
                self.disconnect_receipt = command.receipt
                self.engine.close()
            case Begin():
                raise UsageError("BEGIN goes through AmqpSession.begin")
        return []

    def begin(self, command: Begin, declared: asyncio.Future[bytes | None]) -> None:
        key = f"declare-{next(self._keys)}"
        self._controls[key] = (command.receipt, declared)
        self.engine.declare(key)

    def declared(self, transaction: str, txn_id: bytes) -> None:
        self._transactions[transaction] = txn_id

    def _txn(self, transaction: str | None) -> bytes | None:
        if transaction is None:
            return None
        txn_id = self._transactions.get(transaction)
        if txn_id is None:
            raise UsageError(f"transaction {transaction!r} was not begun on this connection")
        return txn_id

    def _send(self, command: Send) -> None:
        txn_id = self._txn(command.transaction)
        encoded = encoded_for_send(command.destination, command.body, command.headers)
        key = f"send-{next(self._keys)}"
        self._sends[key] = (command.receipt, command.transaction)
        self.engine.send(key, address_for(command.destination), encoded, txn_id)

    def _subscribe(self, command: Subscribe) -> None:
        headers = command.headers
        prefetch = headers.get(h.ACTIVEMQ_PREFETCH_SIZE, "")
        destination = command.destination
        capability = None
        if destination.startswith("/topic/"):
            capability = "topic"
        elif destination.startswith("/queue/"):
            capability = "queue"
        spec = SubscriptionSpec(
            key=command.id,
            address=address_for(destination),
            prefetch=int(prefetch) if is_decimal(prefetch) and int(prefetch) else DEFAULT_PREFETCH,
            selector=command.selector,
            no_local=headers.get(h.ACTIVEMQ_NO_LOCAL) == "true",
            settle_first=command.ack == h.ACK_AUTO,
            browser=headers.get(h.BROWSER) == "true",
            durable_name=headers.get(h.ACTIVEMQ_SUBSCRIPTION_NAME),
            capability=capability,
        )
        self._subscriptions[command.id] = _Subscription(destination, command.ack, command.receipt)
        self.engine.subscribe(spec)

    def _unsubscribe(self, command: Unsubscribe) -> list[BrokerEvent]:
        remove = command.durable_name is not None
        attached = self.engine.unsubscribe(
            command.id, remove=remove, durable_name=command.durable_name
        )
        if not attached:
            self._subscriptions.pop(command.id, None)
            return [ReceiptEvent(command.receipt)] if command.receipt else []
        subscription = self._subscriptions.get(command.id)
        if subscription is None:
            subscription = _Subscription("", h.ACK_AUTO, None, opened=True)
            self._subscriptions[command.id] = subscription
        subscription.closing = True
        subscription.unsubscribe_receipt = command.receipt
        return []

    def _acknowledge(self, command: Acknowledge) -> list[BrokerEvent]:
        message = command.message
        txn_id = self._txn(command.transaction)
        ack = message.ack
        subscription = self._subscriptions.get(message.subscription or "")
        if ack and is_decimal(ack) and subscription is not None:
            if command.nack:
                self.engine.settle(int(ack), "rejected", txn_id)
            elif subscription.ack == h.ACK_CLIENT:
                self.engine.settle_up_to(message.subscription or "", int(ack), txn_id)
            else:
                self.engine.settle(int(ack), "accepted", txn_id)
        return [ReceiptEvent(command.receipt)] if command.receipt else []

    def _discharge(self, command: Commit | Abort) -> None:
        txn_id = self._txn(command.transaction)
        assert txn_id is not None
        del self._transactions[command.transaction]
        key = f"discharge-{next(self._keys)}"
        self._controls[key] = (command.receipt, None)
        self.engine.discharge(key, txn_id, fail=isinstance(command, Abort))

    # ---- events ----

    def events(self, events: list[EngineEvent]) -> list[BrokerEvent]:
        """The STOMP events for what the engine reported (``Closed`` is the transport's)."""
        out: list[BrokerEvent] = []
        for event in events:
            match event:
                case Arrived():
                    out.append(self._message(event))
                case Outcome():
                    out.extend(self._outcome(event))
                case LinkOpened():
                    out.extend(self._opened(event.key))
                case LinkClosed():
                    out.extend(self._link_closed(event))
                case BrowseEnded():
                    out.append(self._browse_end(event.key))
                case Closed() if self.disconnecting and self.disconnect_receipt:
                    out.append(ReceiptEvent(self.disconnect_receipt))
        return out

    def _message(self, event: Arrived) -> MessageEvent:
        subscription = self._subscriptions.get(event.key)
        destination, message_id, headers, body = message_headers(event.message)
        if not destination and subscription is not None:
            destination = subscription.destination
            headers[h.DESTINATION] = destination
        headers[h.SUBSCRIPTION] = event.key
        ack = str(event.delivery) if event.delivery else None
        if ack is not None:
            headers[h.ACK_HEADER] = ack
        return MessageEvent(destination, message_id, event.key, ack, headers, body)

    def _browse_end(self, key: str) -> MessageEvent:
        subscription = self._subscriptions.get(key)
        destination = subscription.destination if subscription is not None else ""
        headers = {h.SUBSCRIPTION: key, h.DESTINATION: destination, h.BROWSER: "end"}
        return MessageEvent(destination, "", key, None, headers, b"")

    def _outcome(self, event: Outcome) -> list[BrokerEvent]:
        if event.key in self._sends:
            receipt, _ = self._sends.pop(event.key)
        else:
            receipt, declared = self._controls.pop(event.key, (None, None))
            if declared is not None and not declared.done():
                declared.set_result(event.txn_id if event.accepted else None)
        if event.accepted:
            return [ReceiptEvent(receipt)] if receipt else []
        return [_error(event.description or "refused by the broker", receipt)]

    def _opened(self, key: str) -> list[BrokerEvent]:
        subscription = self._subscriptions.get(key)
        if subscription is None or subscription.opened:
            return []
        subscription.opened = True
        return [ReceiptEvent(subscription.receipt)] if subscription.receipt else []

    def _link_closed(self, event: LinkClosed) -> list[BrokerEvent]:
        if event.key.startswith("sender:"):
            return []  # its sends were answered with the error already
        subscription = self._subscriptions.pop(event.key, None)
        if subscription is None:
            return []
        if subscription.closing:
            receipt = subscription.unsubscribe_receipt
            if event.error is not None:
                return [_error(event.error, receipt)]
            return [ReceiptEvent(receipt)] if receipt else []
        receipt = None if subscription.opened else subscription.receipt
        return [_error(event.error or "the broker ended the subscription", receipt)]


def _error(text: str, receipt: str | None) -> ErrorEvent:
    return ErrorEvent(text, receipt, {"message": text}, b"")
