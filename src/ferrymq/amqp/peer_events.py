"""What ``PeerEngine`` reports, named by the caller's link ids, never by proton objects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "Drained",
    "LinkDown",
    "LinkRefused",
    "LinkUp",
    "PeerClosed",
    "PeerEvent",
    "PeerOpened",
    "Settled",
    "Transfer",
]


@dataclass(frozen=True, slots=True)
class PeerOpened:
    container_id: str
    properties: Mapping[str, object]
    offered_capabilities: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LinkUp:
    """The peer attached link ``link`` as asked; ``address`` is its terminus's (the node a
    dynamic attach created)."""

    link: int
    offered_capabilities: tuple[str, ...]
    properties: Mapping[str, object] = field(default_factory=dict)
    address: str | None = None


@dataclass(frozen=True, slots=True)
class LinkRefused:
    """The peer answered the attach with a null terminus, or detached it at once."""

    link: int
    error: str


@dataclass(frozen=True, slots=True)
class LinkDown:
    """An attached link ended (the peer detached or closed it)."""

    link: int
    error: str | None


@dataclass(frozen=True, slots=True)
class Transfer:
    """A whole message on receiver ``link``; ``delivery`` is 0 when the peer sent it settled."""

    link: int
    delivery: int
    encoded: bytes


@dataclass(frozen=True, slots=True)
class Settled:
    """The peer settled send ``key``: ``outcome`` is ``accepted``, ``rejected``,
    ``released`` or ``modified``."""

    link: int
    key: int
    outcome: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class Drained:
    link: int


@dataclass(frozen=True, slots=True)
class PeerClosed:
    error: str | None


PeerEvent = PeerOpened | LinkUp | LinkRefused | LinkDown | Transfer | Settled | Drained | PeerClosed
