"""Which federation receivers a broker needs, decided from its own consumers (sans-IO).

Demand is what the local broker's consumer advisories say (``ActiveMQ.Advisory.Consumer.>``):
a consumer on a topic that a local address policy matches asks for one address receiver on the
remote broker (a durable subscription there, named stably, so a reconnect takes up what was kept
meanwhile); a consumer on a queue that a local queue policy matches asks for one queue receiver
(a consumer of the remote queue, at a lower priority, so the remote's own consumers win).
A receiver lives while one consumer that asked for it does.

Loops are cut three ways (ActiveMQ Artemis's federation bugs, each a rule here):
- demand never goes back where it came from: a federation consumer (another broker's receiver
  here) carries its demand path, the brokers whose consumers it stands for; it is no demand for
  a federation toward a broker on that path, nor when this broker is on it (ARTEMIS-5656: two
  brokers federating from each other would keep each other's links up; in a ring the same
  would go round). Otherwise it is demand for an address, as in a chain A <- B <- C; for a queue
  only with ``include-federated`` (ARTEMIS-2531), and then at its own priority, unchanged
  (ARTEMIS-5368);
- an address receiver never takes back a message that came from this broker: its selector
  refuses a message whose federation path names this broker (FerryMQ's form of Artemis's no-local
  filter, ARTEMIS-4658, which also works across a ring, where the connection id cannot);
- ``max-hops`` bounds the hops a message may have made (``_AMQ_Fed_Hops``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from ferrymq.amqp import codes
from ferrymq.amqp import federation_codes as fc
from ferrymq.config.broker_connections import (
    FederationAddressPolicy,
    FederationConfig,
    FederationMatch,
    FederationQueuePolicy,
)
from ferrymq.connections.api import LinkOptions
from ferrymq.connections.matching import AddressMatch

__all__ = [
    "Demand",
    "DemandChange",
    "FederationDemand",
    "LocalConsumer",
    "address_selector",
    "is_wildcard",
    "parse_consumer_advisory",
]

ADVISORY_PREFIX = "ActiveMQ.Advisory."
Policy = FederationAddressPolicy | FederationQueuePolicy


@dataclass(frozen=True, slots=True)
class LocalConsumer:
    """One consumer of the local broker, as its ConsumerInfo advisory describes it."""

    consumer_id: str
    topic: bool
    name: str
    priority: int = 0
    federation: bool = False
    """A federation receiver of another broker (marked by the AMQP adapter)."""
    path: tuple[str, ...] = ()
    """A federation consumer's demand path: the brokers whose consumers it stands for."""
    browser: bool = False
    temporary: bool = False


def parse_consumer_advisory(body: bytes) -> LocalConsumer | str | None:
    """A ConsumerInfo as a ``LocalConsumer``, a RemoveInfo as the consumer's id, else None.

    ``ferrymq.network.advisories`` reads the same documents for network bridges; it drops the
    advisory's ``properties``, which is where a federation consumer is marked."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(document, dict):
        return None
    removed = document.get("RemoveInfo")
    if isinstance(removed, dict):
        object_id = removed.get("objectId")
        consumer = object_id.get("ConsumerId") if isinstance(object_id, dict) else None
        return consumer if isinstance(consumer, str) else None
    info = document.get("ConsumerInfo")
    if not isinstance(info, dict):
        return None
    consumer_id, destination = info.get("consumerId"), info.get("destination")
    if not isinstance(consumer_id, str) or not isinstance(destination, str):
        return None
    kind, _, name = destination.partition("://")
    properties = info.get("properties")
    mark = properties.get(fc.FEDERATION_CONSUMER) if isinstance(properties, dict) else None
    priority = info.get("priority", 0)
    return LocalConsumer(
        consumer_id,
        topic=kind in ("topic", "temp-topic"),
        name=name,
        priority=priority if isinstance(priority, int) else 0,
        federation=mark is not None,
        path=parse_path(mark) if isinstance(mark, str) else (),
        browser=info.get("browser") is True,
        temporary=kind.startswith("temp-"),
    )


def is_wildcard(name: str) -> bool:
    """A consumer's destination with ActiveMQ's wildcards (``*``, ``>``): messages come
    from several destinations and each goes back to its own."""
    return any(word in ("*", ">") for word in name.split("."))


def parse_path(text: str) -> tuple[str, ...]:
    """``|A|B|`` -> ("A", "B")."""
    return tuple(name for name in text.split("|") if name)


def format_path(names: tuple[str, ...]) -> str:
    return "|" + "".join(f"{name}|" for name in names)


def _matches(match: FederationMatch, address: str, queue: str | None) -> bool:
    if not AddressMatch(match.address_match or "#").matches(address):
        return False
    return (
        queue is None or match.queue_match is None or AddressMatch(match.queue_match).matches(queue)
    )


def selects(
    includes: tuple[FederationMatch, ...],
    excludes: tuple[FederationMatch, ...],
    address: str,
    queue: str | None = None,
) -> bool:
    """Artemis's rule: excluded first; then, if there are includes, one of them must match."""
    if any(_matches(m, address, queue) for m in excludes):
        return False
    return not includes or any(_matches(m, address, queue) for m in includes)


def _like_literal(text: str) -> str:
    """``text`` inside a LIKE pattern with ``!`` as the escape character."""
    escaped = text.replace("!", "!!").replace("%", "!%").replace("_", "!_")
    return escaped.replace("'", "''")


def address_selector(max_hops: int, own_id: str) -> str:
    """The selector of an address receiver: not back to where it came from, within max-hops."""
    path = (
        f"({fc.FEDERATION_PATH} IS NULL OR {fc.FEDERATION_PATH} NOT LIKE "
        f"'%|{_like_literal(own_id)}|%' ESCAPE '!')"
    )
    if max_hops <= 0:
        return path
    return f"({fc.HOPS} IS NULL OR {fc.HOPS} < {max_hops}) AND {path}"


@dataclass(eq=False)
class Demand:
    """One receiver this broker needs on the remote: for a topic (address) or a queue."""

    topic: bool
    name: str
    policy: Policy
    consumers: dict[str, LocalConsumer] = field(default_factory=dict)

    @property
    def key(self) -> tuple[bool, str]:
        return (self.topic, self.name)

    @property
    def priority(self) -> int:
        """A queue receiver's priority: the best local consumer's plus ``priority-adjustment``;
        with only federation consumers (``include-federated``), theirs unchanged."""
        policy = self.policy
        assert isinstance(policy, FederationQueuePolicy)
        local = [c.priority for c in self.consumers.values() if not c.federation]
        if local:
            return max(local) + policy.priority_adjustment
        return max(c.priority for c in self.consumers.values())


@dataclass(frozen=True, slots=True)
class DemandChange:
    opened: Demand | None = None
    closed: Demand | None = None


class FederationDemand:
    """The local policies of one federation: local consumers in, receivers to open or close.

    ``own``: this broker's name (its container id as an AMQP server, the name the brokers that
    federate from it put on paths); ``remote``: the remote broker's, as it opened the connection.
    """

    def __init__(
        self,
        config: FederationConfig,
        *,
        federation: str,
        node_id: str,
        own: str,
        remote: str,
        address_of: Callable[[str], str] = str,
    ) -> None:
        self.config = config
        self.address_of = address_of
        """A queue's address (broker.xml's ``<address name>``), for a queue policy's
        ``address-match``; on FerryMQ a queue is otherwise its own address."""
        self.federation = federation
        self.node_id = node_id
        self.own = own
        self.remote = remote
        self.demands: dict[tuple[bool, str], Demand] = {}
        self._by_consumer: dict[str, tuple[bool, str]] = {}
        self.ignored = 0

    def _policy(
        self, consumer: LocalConsumer
    ) -> FederationAddressPolicy | FederationQueuePolicy | None:
        name = consumer.name
        if consumer.federation and (self.remote in consumer.path or self.own in consumer.path):
            return None  # demand that came from the remote (or from here) goes no way back
        if consumer.topic:
            return next(
                (
                    p
                    for p in self.config.local_address_policies
                    if selects(p.includes, p.excludes, name)
                ),
                None,
            )
        return next(
            (
                p
                for p in self.config.local_queue_policies
                if selects(p.includes, p.excludes, self.address_of(name), name)
                and (p.include_federated or not consumer.federation)
            ),
            None,
        )

    def add(self, consumer: LocalConsumer) -> DemandChange:
        if consumer.consumer_id in self._by_consumer:
            return DemandChange()
        if consumer.browser or consumer.temporary or consumer.name.startswith(ADVISORY_PREFIX):
            return DemandChange()
        key = (consumer.topic, consumer.name)
        existing = self.demands.get(key)
        policy = existing.policy if existing is not None else self._policy(consumer)
        if policy is None or (existing is not None and self._policy(consumer) is None):
            self.ignored += 1
            return DemandChange()
        self._by_consumer[consumer.consumer_id] = key
        if existing is not None:
            existing.consumers[consumer.consumer_id] = consumer
            return DemandChange()
        demand = Demand(consumer.topic, consumer.name, policy, {consumer.consumer_id: consumer})
        self.demands[key] = demand
        return DemandChange(opened=demand)

    def remove(self, consumer_id: str) -> DemandChange:
        key = self._by_consumer.pop(consumer_id, None)
        demand = self.demands.get(key) if key is not None else None
        if demand is None:
            return DemandChange()
        demand.consumers.pop(consumer_id, None)
        if demand.consumers:
            return DemandChange()
        del self.demands[demand.key]
        return DemandChange(closed=demand)

    def clear(self) -> None:
        """The local connection was lost: demand is learnt again from the advisories."""
        self.demands.clear()
        self._by_consumer.clear()

    # -- the links ----------------------------------------------------------------------------

    def link_name(self, demand: Demand) -> str:
        """Stable across reconnects (Artemis's FEDERATION_V2 naming), so an address receiver
        takes its durable subscription up again instead of leaving one behind."""
        kind = "address" if demand.topic else "queue"
        return (
            f"federation.{self.federation}.policy.{demand.policy.name}.{kind}.{demand.name}"
            f".node.{self.node_id}"
        )

    def demand_path(self, demand: Demand) -> tuple[str, ...]:
        """The brokers a receiver stands for: those of the federation consumer that asked
        first (none for a consumer of this broker's own), then this broker."""
        first = next(iter(demand.consumers.values()), None)
        return (*(first.path if first is not None else ()), self.own)

    def receiver_options(self, demand: Demand) -> LinkOptions:
        """The attach of the receiver for ``demand``."""
        policy = demand.policy
        properties: dict[str, object] = {
            fc.FEDERATION_NAME: self.federation,
            fc.POLICY_NAME: policy.name,
            fc.DEMAND_PATH: format_path(self.demand_path(demand)),
        }
        if isinstance(policy, FederationAddressPolicy):
            properties[fc.ADDRESS_SOURCE_PROPERTIES] = {
                fc.AUTO_DELETE: policy.auto_delete,
                fc.AUTO_DELETE_DELAY: policy.auto_delete_delay_ms,
                fc.AUTO_DELETE_MSG_COUNT: policy.auto_delete_message_count,
            }
            return LinkOptions(
                name=self.link_name(demand),
                source=f"topic://{demand.name}",
                target=f"topic://{demand.name}",
                desired_capabilities=(fc.ADDRESS_RECEIVER,),
                source_capabilities=(codes.TOPIC,),
                properties=properties,
                filters={
                    codes.SELECTOR_FILTER: (
                        codes.SELECTOR_FILTER_CODE,
                        address_selector(policy.max_hops, self.own),
                    ),
                    codes.NO_LOCAL_FILTER: (codes.NO_LOCAL_FILTER_CODE, []),
                },
            )
        properties[fc.RECEIVER_PRIORITY] = demand.priority
        return LinkOptions(
            name=self.link_name(demand),
            source=f"queue://{demand.name}",
            target=f"queue://{demand.name}",
            desired_capabilities=(fc.QUEUE_RECEIVER,),
            source_capabilities=(codes.QUEUE,),
            properties=properties,
        )
