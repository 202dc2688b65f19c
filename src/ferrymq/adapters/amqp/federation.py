"""The broker a federation receives from: what a federation receiver link becomes here.

Another broker's ``<federation>`` (``ferrymq.connections.federation``, or ActiveMQ Artemis)
attaches receivers that name their policy in the link properties (``federationPolicyName``).
Such a link is an ordinary consumer with three differences:

- it is marked as a federation consumer in its consumer advisory (the ``properties`` key
  ``activemq.federation``, with the demand path the link names), so this broker's own
  federation never sends that demand back where it came from (ActiveMQ Artemis's
  ARTEMIS-5656: two brokers federating from each other would keep each other's links up);
- a queue receiver consumes at the ``priority`` its link property asks for (below this
  broker's own consumers: they get the messages while they have room);
- an address receiver is a durable subscription named by the link, whatever its terminus
  says (Artemis makes the same durable queue), so a broker that reconnects finds what was
  published meanwhile. Closing the link removes it (the demand is gone); a detach or a lost
  connection keeps it, and ``auto-delete`` (link property
  ``federated-address-source-properties``) removes it after ``auto-delete-delay`` ms if no
  receiver came back and it holds at most ``auto-delete-msg-count`` messages.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

import proton

from ferrymq.adapters.amqp.errors import AmqpError
from ferrymq.amqp import codes
from ferrymq.amqp import federation_codes as fc
from ferrymq.core.consumer import Consumer

if TYPE_CHECKING:
    from ferrymq.service.broker import BrokerService

__all__ = ["FederationLink", "federation_link", "keep_or_expire"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FederationLink:
    """What a federation receiver's link properties ask for."""

    federation: str
    policy: str
    path: str = ""
    """The brokers whose consumers the receiver stands for (``|A|B|``; empty from Artemis)."""
    priority: int | None = None
    auto_delete: bool = False
    auto_delete_delay_ms: int = 0
    auto_delete_message_count: int = 0


def _int(value: object, default: int = 0) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else default


def federation_link(link: proton.Link) -> FederationLink | None:
    """The federation a sender link serves, or None for an ordinary consumer."""
    properties = link.remote_properties
    if not isinstance(properties, Mapping):
        return None
    policy = properties.get(fc.POLICY_NAME)
    if policy is None:
        return None
    source = properties.get(fc.ADDRESS_SOURCE_PROPERTIES)
    cleanup: Mapping[object, object] = source if isinstance(source, Mapping) else {}
    priority = properties.get(fc.RECEIVER_PRIORITY)
    return FederationLink(
        federation=str(properties.get(fc.FEDERATION_NAME, "")),
        policy=str(policy),
        path=str(properties.get(fc.DEMAND_PATH, "")),
        priority=_int(priority) if priority is not None else None,
        auto_delete=cleanup.get(fc.AUTO_DELETE) is True,
        auto_delete_delay_ms=max(_int(cleanup.get(fc.AUTO_DELETE_DELAY)), 0),
        auto_delete_message_count=max(_int(cleanup.get(fc.AUTO_DELETE_MSG_COUNT)), 0),
    )


def configure(
    consumer: Consumer, federation: FederationLink, link_name: str, client_id: str | None
) -> None:
    """Make ``consumer`` what a federation receiver asks for (before it subscribes)."""
    consumer.extra[fc.FEDERATION_CONSUMER] = federation.path
    if consumer.destination.is_topic:
        if client_id is None:
            raise AmqpError(
                codes.INVALID_FIELD, "a federation address receiver needs a container-id"
            )
        consumer.durable_name = link_name
    elif federation.priority is not None:
        consumer.priority = federation.priority


class AutoDeletes:
    """The federation subscriptions of one broker waiting for their ``auto-delete``."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        self.timers: dict[tuple[str, str], asyncio.TimerHandle] = {}

    def schedule(self, client_id: str, name: str, federation: FederationLink) -> None:
        key = (client_id, name)
        previous = self.timers.pop(key, None)
        if previous is not None:
            previous.cancel()
        delay_s = federation.auto_delete_delay_ms / 1000
        self.timers[key] = asyncio.get_running_loop().call_later(
            delay_s, self._expire, client_id, name, federation.auto_delete_message_count
        )

    def _expire(self, client_id: str, name: str, most: int) -> None:
        self.timers.pop((client_id, name), None)
        service = self.service
        if not service.started or service.halted.is_set():
            return
        region = service.region
        subscription = region.subscriptions.durable(client_id, name)
        if subscription is None or subscription.consumers or subscription.depth > most:
            return  # taken up again, or it holds more than auto-delete-msg-count: kept
        service.tick_clock()
        outcome = region.management.destroy_durable(client_id, name)
        service.process()
        if outcome.refused is None:
            log.info("federation subscription %s of %s auto-deleted", name, client_id)


_AUTO_DELETES: WeakKeyDictionary[BrokerService, AutoDeletes] = WeakKeyDictionary()


def keep_or_expire(
    service: BrokerService, consumer: Consumer, link: proton.Link, client_id: str | None
) -> None:
    """A federation address receiver went without closing (detached, or its connection was
    lost): its subscription stays, and ``auto-delete`` starts counting."""
    federation = federation_link(link)
    if (
        federation is None
        or not federation.auto_delete
        or consumer.durable_name is None
        or client_id is None
    ):
        return
    deletes = _AUTO_DELETES.get(service)
    if deletes is None:
        deletes = _AUTO_DELETES[service] = AutoDeletes(service)
    deletes.schedule(client_id, consumer.durable_name, federation)
