"""What ``ClientEngine`` reports, named by the caller's keys, never by proton objects."""

from __future__ import annotations

from dataclasses import dataclass

from proton import Message

__all__ = [
    "Arrived",
    "BrowseEnded",
    "Closed",
    "EngineEvent",
    "LinkClosed",
    "LinkOpened",
    "Opened",
    "Outcome",
]


@dataclass(frozen=True, slots=True)
class Opened:
    """The broker answered open: ``container_id`` is its container id."""

    container_id: str
    properties: dict[str, str]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The broker settled a send (``key`` from ``send``) or a control (declare/discharge):
    ``accepted`` or not, with the error's description, and a declare's transaction id."""

    key: str
    accepted: bool
    description: str = ""
    txn_id: bytes | None = None


@dataclass(frozen=True, slots=True)
class Arrived:
    """A message for subscription ``key``; ``delivery`` names it in ``settle`` (0 when the
    broker sent it settled: nothing to acknowledge)."""

    key: str
    message: Message
    delivery: int


@dataclass(frozen=True, slots=True)
class LinkOpened:
    key: str


@dataclass(frozen=True, slots=True)
class LinkClosed:
    """A subscription's or sender's link ended; ``error`` is the broker's reason, if any."""

    key: str
    error: str | None


@dataclass(frozen=True, slots=True)
class BrowseEnded:
    key: str


@dataclass(frozen=True, slots=True)
class Closed:
    """The connection is over; ``error`` says why unless it was a clean close."""

    error: str | None


EngineEvent = Opened | Outcome | Arrived | LinkOpened | LinkClosed | BrowseEnded | Closed
