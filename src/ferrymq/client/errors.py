"""What can go wrong for a client, as exceptions that carry their data.

Whose fault it is shows in the type: ``BrokerErrorFrame`` is the broker refusing something (its
ERROR frame, word for word); ``ConnectionClosed`` is the connection gone, with the reason and
the ERROR frame that preceded it, if any; ``BrokerURLError`` and ``UsageError`` are the
application asking for something that cannot work.

``BrokerErrorFrame`` and ``ConnectionClosed`` keep the names the client API was specified with
(issue 3 builds on them), hence the ``noqa`` for the house rule that errors end in ``Error``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ferrymq.stomp.events import ErrorEvent
from ferrymq.util.uri import redact_url


@dataclass(eq=False)
class ClientError(Exception):
    """Base of every error the client library raises."""

    message: str

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


MAX_DETAIL_CHARS = 200
"""How much of an ERROR body a message quotes (the whole body stays in ``body``)."""


@dataclass(eq=False)
class BrokerErrorFrame(ClientError):  # noqa: N818 - the API's name (see the module docstring)
    """The broker answered with an ERROR frame (STOMP 1.2 "ERROR").

    Raised in the call whose receipt it names; an ERROR that names no waiting call closes the
    connection and is raised in every pending call and consumer.
    """

    headers: dict[str, str] = field(default_factory=dict, repr=False)
    body: bytes = field(default=b"", repr=False)
    receipt_id: str | None = None

    @classmethod
    def from_event(cls, event: ErrorEvent) -> BrokerErrorFrame:
        return cls(event.message, dict(event.headers), event.body, event.receipt_id)

    @property
    def text(self) -> str:
        """The body (ActiveMQ puts its stack trace or details there), decoded leniently."""
        return self.body.decode("utf-8", "replace")

    @property
    def detail(self) -> str:
        """The body's first line: RabbitMQ says there what its ``message`` header only names
        ("Bad CONNECT" / "Virtual host '/' access denied"); ActiveMQ's stack trace starts with
        the exception's text."""
        for line in self.text.splitlines():
            if line.strip():
                return line.strip()[:MAX_DETAIL_CHARS]
        return ""

    def __str__(self) -> str:
        detail = self.detail
        text = self.message
        if not text:
            text = detail
        elif detail and detail not in text and text not in detail:
            text = f"{text}: {detail}"
        return f"broker error: {text}" if text else "broker error (no message)"


@dataclass(eq=False)
class ConnectionClosed(ClientError):  # noqa: N818 - the API's name (see the module docstring)
    """The connection is closed: by the application, by the broker, or because it died.

    ``error`` is the broker's ERROR frame when one came before the close.
    """

    error: BrokerErrorFrame | None = None

    def __str__(self) -> str:
        if self.error is not None and self.error.message not in self.message:
            return f"{self.message} ({self.error})"
        return self.message


@dataclass(frozen=True, slots=True)
class ConnectAttempt:
    """One try at one broker by a failover transport: the record ``ConnectFailedError``
    carries (and ``TransportStatistics.connect_attempts``), hence defined here, below both."""

    url: str
    pass_number: int
    """The pass of the connect episode it belongs to (1-based)."""
    started_at: float
    """Monotonic (the event loop's clock), in seconds."""
    error: str | None = None
    """Why it failed; None for the attempt that connected."""


@dataclass(eq=False)
class ConnectFailedError(ClientError):
    """No connection could be made to ``url``: refused, unreachable, timed out, or cut off
    before the broker answered CONNECT. From a failover transport, ``attempts`` lists every
    try of every pass."""

    url: str = ""
    attempts: tuple[ConnectAttempt, ...] = ()

    def __str__(self) -> str:
        return redact_url(f"cannot connect to {self.url}: {self.message}")


@dataclass(eq=False)
class BrokerURLError(ClientError, ValueError):
    """A URL the client cannot use; ``part`` is the offending piece (an option name, a scheme)."""

    url: str = ""
    part: str = ""

    def __str__(self) -> str:
        return redact_url(f"{self.message} in {self.url!r}")


@dataclass(eq=False)
class SubscriptionClosedError(ClientError):
    """``get`` on a subscription that has ended (unsubscribed, or its browse is complete)."""


@dataclass(eq=False)
class UsageError(ClientError):
    """The application asked for something this connection cannot do (NACK in STOMP 1.0,
    NACK of an auto-acknowledged message, a header STOMP 1.0 cannot carry, ...)."""


@dataclass(eq=False)
class TransactionRolledBack(ClientError):  # noqa: N818 - JMS's name (TransactionRolledBackException)
    """A commit that did not happen: the broker rolled the transaction back, or a failover
    made its outcome unknown or its acknowledgements stale (ActiveMQ's wording). Nothing of the
    transaction took effect as far as the application can rely on; it may run it again."""

    transaction: str = ""


@dataclass(eq=False)
class FailoverTimeoutError(ClientError):
    """A send waited ``timeout`` ms (a failover option) for a connection to a broker and got
    none. The connection stays open and keeps reconnecting."""

    timeout_ms: int = 0
