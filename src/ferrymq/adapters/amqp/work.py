"""What an AMQP connection asks of the broker, one item per proton event that needs the core.

The converter turns proton's events into these as it reads, in the order they came, and the
``BrokerConnection`` hands them back one by one (holding them while a login is checked or while
flow control stops a producer). Each keeps the proton endpoint it concerns; a transfer keeps its
whole payload, read out of proton as it arrived.
"""

from __future__ import annotations

from dataclasses import dataclass

import proton

from ferrymq.amqp.engine import IncomingDelivery
from ferrymq.amqp.sasl import Header, SaslInit


@dataclass(slots=True)
class SaslStart:
    header: Header


@dataclass(slots=True)
class SaslLogin:
    init: SaslInit


@dataclass(slots=True)
class RemoteOpen:
    pass


@dataclass(slots=True)
class RemoteClose:
    pass


@dataclass(slots=True)
class SessionOpen:
    session: proton.Session


@dataclass(slots=True)
class SessionClose:
    session: proton.Session


@dataclass(slots=True)
class LinkOpen:
    link: proton.Link


@dataclass(slots=True)
class LinkClose:
    link: proton.Link
    closed: bool
    """Closed (``detach`` with closed=true: a durable subscription ends), or only detached."""


@dataclass(slots=True)
class Credit:
    """The client changed a sender link's credit (or asked it to drain)."""

    link: proton.Link


@dataclass(slots=True)
class Transfer:
    """A complete message from the client."""

    link: proton.Link
    delivery: IncomingDelivery
    payload: bytes


@dataclass(slots=True)
class Settled:
    """The client's outcome for a message the broker sent."""

    delivery: proton.Delivery
