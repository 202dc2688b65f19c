"""What a connection asks of its transport, as data (ActiveMQ's commands).

A ``Connection`` never writes bytes: it hands its transport one of these records, and the
transport encodes it with the STOMP session of whichever socket it is on (``encode_command``).
Because every request passes through as a typed value, a failover transport can watch them go by
and keep what it must replay on a new broker (the client-id, subscriptions, unreceipted sends),
as ActiveMQ's ``ConnectionStateTracker`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ferrymq.stomp.client import ClientSession
from ferrymq.stomp.constants import ACTIVEMQ_SUBSCRIPTION_NAME, SUPPORTED_VERSIONS
from ferrymq.stomp.events import MessageEvent


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    """What the CONNECT frame says, and how long the client waits for CONNECTED."""

    login: str | None = None
    passcode: str | None = field(default=None, repr=False)
    client_id: str | None = None
    heart_beat: tuple[int, int] = (0, 0)
    """STOMP ``heart-beat: cx,cy`` in ms: how often we can send, how often we want data."""
    versions: tuple[str, ...] = SUPPORTED_VERSIONS
    """The versions offered; the broker picks the highest it shares."""
    connect_timeout_s: float = 30.0
    """For the whole opening: TCP connect plus the CONNECT/CONNECTED exchange."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra CONNECT headers (``activemq.*`` connection options, for instance)."""


@dataclass(frozen=True, slots=True)
class Send:
    destination: str
    body: bytes
    headers: Mapping[str, str]
    transaction: str | None = None
    receipt: str | None = None


@dataclass(frozen=True, slots=True)
class Subscribe:
    id: str
    destination: str
    ack: str
    selector: str | None
    headers: Mapping[str, str]
    receipt: str | None = None


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    id: str
    durable_name: str | None = None
    """Set: destroy the durable subscription (``activemq.subscriptionName`` on UNSUBSCRIBE)."""
    receipt: str | None = None


@dataclass(frozen=True, slots=True)
class Acknowledge:
    """ACK or NACK of one delivered message (cumulative in ``client`` mode, by the broker)."""

    message: MessageEvent
    nack: bool = False
    transaction: str | None = None
    receipt: str | None = None
    generation: int | None = None
    """The transport generation the message arrived on (``Transport.generation``): a failover
    transport does not send an ack from an earlier one, whose message the broker released."""


@dataclass(frozen=True, slots=True)
class Begin:
    transaction: str
    receipt: str | None = None


@dataclass(frozen=True, slots=True)
class Commit:
    transaction: str
    receipt: str | None = None


@dataclass(frozen=True, slots=True)
class Abort:
    transaction: str
    receipt: str | None = None


@dataclass(frozen=True, slots=True)
class Disconnect:
    receipt: str | None = None


Command = Send | Subscribe | Unsubscribe | Acknowledge | Begin | Commit | Abort | Disconnect


def encode_command(session: ClientSession, command: Command) -> bytes:
    """The frame for ``command`` in the version ``session`` negotiated.

    Raises ``LocalProtocolError`` for what that version cannot express (NACK in 1.0).
    """
    match command:
        case Send():
            return session.send(
                command.destination,
                command.body,
                headers=command.headers,
                transaction=command.transaction,
                receipt=command.receipt,
            )
        case Acknowledge(nack=False):
            return session.ack(
                command.message, transaction=command.transaction, receipt=command.receipt
            )
        case Acknowledge():
            return session.nack(
                command.message, transaction=command.transaction, receipt=command.receipt
            )
        case Subscribe():
            return session.subscribe(
                command.destination,
                command.id,
                ack=command.ack,
                selector=command.selector,
                headers=command.headers,
                receipt=command.receipt,
            )
        case Unsubscribe():
            extra = (
                {ACTIVEMQ_SUBSCRIPTION_NAME: command.durable_name}
                if command.durable_name is not None
                else None
            )
            return session.unsubscribe(command.id, headers=extra, receipt=command.receipt)
        case Begin():
            return session.begin(command.transaction, receipt=command.receipt)
        case Commit():
            return session.commit(command.transaction, receipt=command.receipt)
        case Abort():
            return session.abort(command.transaction, receipt=command.receipt)
        case Disconnect():
            return session.disconnect(receipt=command.receipt)
