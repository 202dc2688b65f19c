"""Per-destination statistics, as ActiveMQ's ``DestinationStatistics`` counts them.

A topic holds no messages itself: its depth, dequeues, expiries and in-flight count are the sums
over its subscriptions, while enqueues and dispatches are counted once per published message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ferrymq.core.destination import Destination
from ferrymq.core.queue import Queue
from ferrymq.core.topic import Topic


@dataclass(frozen=True, slots=True)
class DestinationStatistics:
    destination: Destination
    depth: int
    enqueued: int
    dequeued: int
    dispatched: int
    expired: int
    in_flight: int
    consumers: int
    paged_out: int


def destination_statistics(
    queues: Mapping[Destination, Queue], topics: Mapping[Destination, Topic]
) -> list[DestinationStatistics]:
    result = [_of_queue(destination, queue) for destination, queue in queues.items()]
    result.extend(_of_topic(destination, topic) for destination, topic in topics.items())
    return result


def _of_queue(destination: Destination, queue: Queue) -> DestinationStatistics:
    s = queue.stats
    return DestinationStatistics(
        destination,
        queue.depth,
        s.enqueued,
        s.dequeued,
        s.dispatched,
        s.expired,
        queue.in_flight,
        len(queue.consumers),
        queue.paged_out,
    )


def _of_topic(destination: Destination, topic: Topic) -> DestinationStatistics:
    subscriptions = topic.subscriptions
    return DestinationStatistics(
        destination,
        topic.depth,
        topic.stats.enqueued,
        sum(sub.stats.dequeued for sub in subscriptions),
        topic.stats.dispatched,
        sum(sub.stats.expired for sub in subscriptions),
        sum(sub.in_flight for sub in subscriptions),
        topic.consumer_count,
        sum(sub.paged_out for sub in subscriptions),
    )
