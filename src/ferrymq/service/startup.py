"""Destinations a configuration asks to exist from the start (Artemis's `<addresses>`).

FerryMQ creates a destination on first use; a broker.xml declares its queues up front, and a
broker connection's receiver only serves a local queue that exists (ActiveMQ Artemis
documentation, "Broker Connections"). So the service creates them once the store is recovered,
before any listener opens: each queue (recorded in the store, as a client's first use would),
each topic, and each topic's durable subscriptions, offline until a client with that client id
subscribes with that subscription name. A durable subscription is made the way a client makes
one, through a short-lived internal connection holding its client id, so the core needs no
second way to create one. What exists already (after a restart) is left as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ferrymq.config.model import StartupDestination
from ferrymq.core.consumer import Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.region import RegionBroker

__all__ = ["create_startup_destinations"]

log = logging.getLogger(__name__)

_CONNECTION = "ferrymq-startup-destinations"


def create_startup_destinations(
    region: RegionBroker, destinations: Sequence[StartupDestination]
) -> None:
    """Decide the creations; the caller's ``process`` makes them durable."""
    for startup in destinations:
        if startup.kind == "queue":
            region.queue(Destination.queue(startup.name))
            continue
        topic = Destination.topic(startup.name)
        region.topic(topic)
        for client_id, name in startup.subscriptions:
            _durable_subscription(region, topic, client_id, name)


def _durable_subscription(
    region: RegionBroker, topic: Destination, client_id: str, name: str
) -> None:
    if region.subscriptions.durable(client_id, name) is not None:
        return  # recovered: kept as its clients left it (their selector, their messages)
    connection = f"{_CONNECTION}:{client_id}"
    added = region.add_connection(connection, client_id)
    if added.refused is not None:
        log.warning("durable subscription %s.%s not created: %s", client_id, name, added.refused)
        return
    try:
        consumer = Consumer(connection, name, topic, durable_name=name)
        subscribed = region.subscribe(consumer, start=False)
        if subscribed.refused is not None:
            log.warning(
                "durable subscription %s.%s not created: %s", client_id, name, subscribed.refused
            )
            return
        region.unsubscribe(connection, name)  # offline: it keeps collecting messages
    finally:
        region.remove_connection(connection)
