"""Queue browsing past memory: the part of a browser's snapshot that is only in the store.

A browser (STOMP ``browser:true``, JMS's QueueBrowser) sees what the queue holds in memory at
once (``RegionBroker.browse``); messages paged out to the store are read here, page by page, and
sent as they are read, then the end of the browse.  A message that expired meanwhile, or that the
browser's selector refuses, is skipped.
"""

from __future__ import annotations

from typing import Protocol

from ferrymq.core.consumer import Consumer
from ferrymq.core.message import Message
from ferrymq.core.region import RegionBroker, decode_all
from ferrymq.service.timers import now_ms
from ferrymq.store.base import MessageStore

BROWSE_PAGE = 500


class Browser(Protocol):
    """The connection a browse is sent to (``service.connection.BrokerConnection``)."""

    @property
    def closed(self) -> bool: ...

    def deliver_browsed(self, consumer: Consumer, message: Message) -> None: ...

    def browse_ended(self, consumer: Consumer) -> None: ...


async def browse_store(
    store: MessageStore,
    region: RegionBroker,
    connection: Browser,
    consumer: Consumer,
    key: str,
    cursor: int,
) -> None:
    while not connection.closed:
        records = await store.load(key, cursor, BROWSE_PAGE)
        now = now_ms()
        for message in decode_all(records):
            if not message.is_expired(now) and region.selects(consumer, message):
                connection.deliver_browsed(consumer, message)
        if len(records) < BROWSE_PAGE:
            break
        cursor = records[-1].seq + 1
    connection.browse_ended(consumer)
