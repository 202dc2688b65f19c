"""A message as a subscription hands it to the application."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ferrymq.stomp.constants import PERSISTENT, REDELIVERED
from ferrymq.stomp.events import MessageEvent

if TYPE_CHECKING:
    from ferrymq.client.transaction import Transaction


class Settler(Protocol):
    """How a message is acknowledged or refused: by the subscription that delivered it, which
    knows its ack mode (a message holds this, not the subscription)."""

    async def __call__(
        self,
        message: Message,
        *,
        nack: bool,
        transaction: Transaction | str | None,
        receipt: bool,
    ) -> None: ...


class Message:
    """One delivery: the broker's headers and body, and the means to settle it.

    ``headers`` is the MESSAGE frame's header dict (read-only by convention); ``body`` stays the
    bytes received. ``ack_id`` is what ACK/NACK name in STOMP 1.2 (None on an auto-acknowledged
    subscription, where there is nothing to settle).
    """

    __slots__ = (
        "_settle",
        "ack_id",
        "body",
        "destination",
        "event",
        "generation",
        "headers",
        "message_id",
        "subscription",
    )

    def __init__(self, event: MessageEvent, settle: Settler, generation: int = 0) -> None:
        self.event = event
        """The decoded frame, as the STOMP session gave it (what ACK and NACK are built from)."""
        self.generation = generation
        """The transport generation it arrived on: after a failover its ack is not sent (the
        broker released the message and redelivers it)."""
        self._settle = settle
        self.destination = event.destination
        self.message_id = event.message_id
        self.headers = event.headers
        self.body = event.body
        self.subscription = event.subscription
        self.ack_id = event.ack

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (strictly: a binary body raises ``UnicodeDecodeError``)."""
        return self.body.decode("utf-8")

    @property
    def redelivered(self) -> bool:
        return self.headers.get(REDELIVERED) == "true"

    @property
    def persistent(self) -> bool:
        return self.headers.get(PERSISTENT) == "true"

    async def ack(
        self, *, transaction: Transaction | str | None = None, receipt: bool = False
    ) -> None:
        """Acknowledge (in ``client`` mode, everything delivered before it as well, as the broker
        does). A no-op on an auto-acknowledged subscription, as in JMS. With ``receipt`` it
        returns once the broker has settled the message."""
        await self._settle(self, nack=False, transaction=transaction, receipt=receipt)

    async def nack(
        self, *, transaction: Transaction | str | None = None, receipt: bool = False
    ) -> None:
        """Refuse the message: ActiveMQ moves it to the dead-letter queue at once (a persistent
        one; a non-persistent one is dropped). STOMP 1.1 and later."""
        await self._settle(self, nack=True, transaction=transaction, receipt=receipt)

    def __repr__(self) -> str:
        return (
            f"Message(destination={self.destination!r}, message_id={self.message_id!r}, "
            f"body={self.body[:40]!r}{'...' if len(self.body) > 40 else ''})"
        )
