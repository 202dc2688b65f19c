"""A store's whole state as batches of operations: what a slave gets when it attaches.

Read from the master's own store (every stored message, with its "may have been delivered" flag)
and from the region (destinations, durable subscriptions, the duplicate-detection window and
the highest sequence used).  The window and the sequence travel as add-then-remove pairs in one
batch: the store writes no row for them but remembers the producer message id and the sequence,
which is exactly what a new master needs.
"""

from __future__ import annotations

from ferrymq.core import codec
from ferrymq.core.region import RegionBroker
from ferrymq.core.scheduler import SCHEDULED_CONTAINER
from ferrymq.store.base import (
    AddDestination,
    AddDurableSubscription,
    AddMessage,
    MessageStore,
    RemoveMessage,
    StoreOp,
)

BATCH = 500
WINDOW_CONTAINER = "replication://window"


async def snapshot_batches(region: RegionBroker, store: MessageStore) -> list[list[StoreOp]]:
    batches: list[list[StoreOp]] = [[]]  # the first batch is the reset
    head: list[StoreOp] = [
        AddDestination(destination.qualified)
        for destination, queue in region.queues.items()
        if queue.storable
    ]
    containers = [queue.key for queue in region.queues.values() if queue.storable]
    for subscription in region.subscriptions.durables():
        assert subscription.record is not None
        head.append(AddDurableSubscription(subscription.record))
        containers.append(subscription.key)
    if region.scheduler is not None:
        containers.append(SCHEDULED_CONTAINER)
    batches.append(head)
    for container in containers:
        cursor = 0
        while True:
            records = await store.load(container, cursor, BATCH)
            ops: list[StoreOp] = []
            for record in records:
                priority, expiration = 4, 0
                if container != SCHEDULED_CONTAINER:
                    message = codec.decode(record.blob)
                    priority, expiration = message.priority, message.expires
                ops.append(
                    AddMessage(
                        container,
                        record.seq,
                        record.blob,
                        priority,
                        expiration,
                        True,
                        None,
                        record.delivered,
                    )
                )
            if ops:
                batches.append(ops)
            if len(records) < BATCH:
                break
            cursor = records[-1].seq + 1
    window: list[StoreOp] = []
    for index, producer_message_id in enumerate(region.dedup.ids(), start=1):
        window.append(
            AddMessage(WINDOW_CONTAINER, index, b"", producer_message_id=producer_message_id)
        )
        window.append(RemoveMessage(WINDOW_CONTAINER, index))
    window.append(AddMessage(WINDOW_CONTAINER, region.seq, b""))
    window.append(RemoveMessage(WINDOW_CONTAINER, region.seq))
    batches.append(window)
    return batches
