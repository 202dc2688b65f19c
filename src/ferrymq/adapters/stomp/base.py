"""What the STOMP request handlers share: the converter as they see it, and their interface."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ferrymq.adapters.stomp.dialect import TemporaryNames
from ferrymq.adapters.stomp.render import MessageRenderer
from ferrymq.service.connection import BrokerConnection
from ferrymq.stomp.events import Connect, Disconnect
from ferrymq.stomp.session import ServerSession

if TYPE_CHECKING:
    from ferrymq.service.broker import BrokerService


class StompLink(Protocol):
    """One STOMP connection as its request handler uses it (``converter.StompConverter``)."""

    @property
    def service(self) -> BrokerService: ...

    @property
    def connection(self) -> BrokerConnection: ...

    @property
    def session(self) -> ServerSession: ...

    @property
    def names(self) -> TemporaryNames: ...

    @property
    def renderer(self) -> MessageRenderer: ...

    @property
    def version(self) -> str: ...

    def receipt(self, receipt: str | None, *, needs_commit: bool = False) -> None: ...

    def on_connect(self, event: Connect) -> bool: ...

    def on_disconnect(self, event: Disconnect) -> None: ...


class RequestHandler(Protocol):
    """What a CONNECTed STOMP connection does with its frames (chosen at CONNECT)."""

    def handle(self, event: object) -> bool:
        """Carry out one frame (a ``ServerEvent``); True when flow control holds it back."""

    def ended(self) -> None:
        """The connection handles no more frames."""
