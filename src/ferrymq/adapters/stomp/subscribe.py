"""A SUBSCRIBE frame as a core ``Consumer``: ActiveMQ's consumer headers and defaults.

``activemq.prefetchSize`` (default by kind, as ActiveMQ's ``ActiveMQPrefetchPolicy``: a queue
1000, a queue browser 500, a durable topic subscription 100, a topic subscription 32767),
``activemq.priority``, ``activemq.exclusive``, ``activemq.noLocal``, ``activemq.subscriptionName``
(a durable subscription), ``browser:true`` (a queue browser, STOMP 1.1 and later), ``selector``.
Pure: no broker state is read or changed.
"""

from __future__ import annotations

from ferrymq.core.consumer import (
    DURABLE_TOPIC_PREFETCH,
    QUEUE_BROWSER_PREFETCH,
    QUEUE_PREFETCH,
    TOPIC_PREFETCH,
    AckMode,
    Consumer,
)
from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError
from ferrymq.core.selector import SelectorError, parse_selector
from ferrymq.stomp import constants as h
from ferrymq.stomp.events import Subscribe


def consumer_from_subscribe(
    event: Subscribe, destination: Destination, connection_id: str, version: str
) -> Consumer:
    headers = event.headers
    subscription_id = event.id if event.id is not None else f"/subscription-to/{event.destination}"
    durable_name = headers.get(h.ACTIVEMQ_SUBSCRIPTION_NAME)
    browser = headers.get(h.BROWSER, "").lower() == "true" and version != h.V1_0
    selector = None
    if event.selector:
        try:
            selector = parse_selector(event.selector)
        except SelectorError as exc:
            raise BrokerError(str(exc)) from None
    if browser:
        default_prefetch = QUEUE_BROWSER_PREFETCH
    elif not destination.is_topic:
        default_prefetch = QUEUE_PREFETCH
    elif durable_name is not None:
        default_prefetch = DURABLE_TOPIC_PREFETCH
    else:
        default_prefetch = TOPIC_PREFETCH
    consumer = Consumer(
        connection_id,
        subscription_id,
        destination,
        ack_mode=AckMode(event.ack),
        prefetch=int_option(headers, h.ACTIVEMQ_PREFETCH_SIZE, default_prefetch),
        selector=selector,
        priority=int_option(headers, h.ACTIVEMQ_PRIORITY, 0),
        exclusive=headers.get(h.ACTIVEMQ_EXCLUSIVE, "").lower() == "true",
        no_local=headers.get(h.ACTIVEMQ_NO_LOCAL, "").lower() == "true",
        browser=browser,
        durable_name=durable_name,
        acks_by_message_id=version != h.V1_2,
    )
    consumer.extra = {k: v for k, v in headers.items() if k.startswith("activemq.")}
    return consumer


def int_option(headers: dict[str, str], name: str, default: int) -> int:
    value = headers.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value.strip())
    except ValueError:
        raise BrokerError(f"header {name} must be an integer, got {value!r}") from None
