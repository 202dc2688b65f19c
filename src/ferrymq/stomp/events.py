"""Typed, validated events: what a client asked the broker, and what the broker told a client.

Each event keeps the frame's ``receipt`` header (None if absent) and, where a service maps
more of them, the whole header dict (first occurrence of a repeated header, unescaped).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ferrymq.stomp.frame import HeartBeat

# ---- what the broker receives (ServerSession.receive_data) ----


@dataclass(frozen=True, slots=True)
class Connect:
    """CONNECT or STOMP, with the version already negotiated."""

    version: str
    login: str | None
    passcode: str | None = field(repr=False)
    client_id: str | None
    host: str | None
    heart_beat: tuple[int, int]
    request_id: str | None
    headers: dict[str, str] = field(repr=False)
    receipt: str | None = None


@dataclass(frozen=True, slots=True)
class Send:
    destination: str
    headers: dict[str, str]
    body: bytes
    transaction: str | None
    receipt: str | None


@dataclass(frozen=True, slots=True)
class Subscribe:
    id: str | None
    """None only from a 1.0 client, which may omit it."""
    destination: str
    ack: str
    selector: str | None
    headers: dict[str, str]
    receipt: str | None


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    id: str | None
    """None only from a 1.0 client that unsubscribes by destination."""
    destination: str | None
    subscription_name: str | None
    """``activemq.subscriptionName``: present means destroy that durable subscription."""
    receipt: str | None


@dataclass(frozen=True, slots=True)
class Ack:
    id: str | None
    """The MESSAGE's ``ack`` header; required in 1.2."""
    message_id: str | None
    subscription: str | None
    transaction: str | None
    receipt: str | None


@dataclass(frozen=True, slots=True)
class Nack:
    id: str | None
    message_id: str | None
    subscription: str | None
    transaction: str | None
    receipt: str | None


@dataclass(frozen=True, slots=True)
class Begin:
    transaction: str
    receipt: str | None


@dataclass(frozen=True, slots=True)
class Commit:
    transaction: str
    receipt: str | None


@dataclass(frozen=True, slots=True)
class Abort:
    transaction: str
    receipt: str | None


@dataclass(frozen=True, slots=True)
class Disconnect:
    receipt: str | None


ServerEvent = (
    Connect
    | Send
    | Subscribe
    | Unsubscribe
    | Ack
    | Nack
    | Begin
    | Commit
    | Abort
    | Disconnect
    | HeartBeat
)

# ---- what a client receives (ClientSession.receive_data) ----


@dataclass(frozen=True, slots=True)
class Connected:
    version: str
    session: str | None
    server: str | None
    heart_beat: tuple[int, int]
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class MessageEvent:
    destination: str
    message_id: str
    subscription: str | None
    ack: str | None
    """The id to ACK or NACK with in 1.2 (client and client-individual subscriptions)."""
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class ReceiptEvent:
    receipt_id: str


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    message: str
    receipt_id: str | None
    headers: dict[str, str]
    body: bytes


ClientEvent = Connected | MessageEvent | ReceiptEvent | ErrorEvent | HeartBeat
