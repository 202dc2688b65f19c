"""Drive a ``RegionBroker`` by method calls and collect what it decides (no sockets, no store)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from ferrymq.config.model import BrokerConfig
from ferrymq.core.consumer import AckMode, Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.effects import Delivery, Effects
from ferrymq.core.ledger import AckRef
from ferrymq.core.message import Message
from ferrymq.core.outcome import Outcome
from ferrymq.core.policy import DestinationPolicy, PolicyLookup
from ferrymq.core.region import RegionBroker
from ferrymq.core.selector import parse_selector
from ferrymq.core.usage import UsageLimits
from ferrymq.service.policies import PolicyResolver
from ferrymq.store.base import StoreOp

OpT = TypeVar("OpT")

START_MS = 1_000_000
"""The harness's clock at the start of every test."""


def default_policies() -> PolicyLookup:
    """ActiveMQ's defaults, built as a broker without ``<destinationPolicy>`` builds them."""
    return PolicyResolver(BrokerConfig())


def default_policy(**changes: Any) -> DestinationPolicy:
    """The default policy with some fields replaced."""
    return dataclasses.replace(default_policies()(Destination.queue("any")), **changes)


def accepted(outcome: Outcome) -> Outcome:
    """The outcome of a command that must have been accepted (raises its refusal if not)."""
    if outcome.refused is not None:
        raise outcome.refused
    return outcome


def q(name: str) -> Destination:
    return Destination.queue(name)


def t(name: str) -> Destination:
    return Destination.topic(name)


class Harness:
    def __init__(
        self,
        *,
        policy: DestinationPolicy | None = None,
        usage: UsageLimits | None = None,
        advisories: bool = True,
        scheduler: bool = False,
    ) -> None:
        lookup: PolicyLookup = (lambda d: policy) if policy is not None else default_policies()
        self.region = RegionBroker(
            "broker-1",
            "localhost",
            policies=lookup,
            usage_limits=usage,
            advisory_support=advisories,
            scheduler_support=scheduler,
        )
        self.region.begin_batch(START_MS)
        self.deliveries: list[Delivery] = []
        self.store_ops: list[StoreOp] = []
        self.effects: list[Effects] = []

    def connect(self, connection_id: str, client_id: str | None = None) -> str:
        accepted(self.region.add_connection(connection_id, client_id))
        self.collect()
        return connection_id

    def collect(self) -> list[Delivery]:
        effects = self.region.drain()
        self.effects.append(effects)
        self.deliveries.extend(effects.deliveries)
        self.store_ops.extend(effects.store_ops)
        return effects.deliveries

    def message(
        self,
        destination: Destination,
        body: bytes = b"x",
        *,
        persistent: bool = False,
        priority: int = 4,
        properties: dict[str, str] | None = None,
        expires: int = 0,
        producer_message_id: str | None = None,
    ) -> Message:
        """A message as a producer's SEND makes it, stamped with the harness's time."""
        return Message(
            self.region.new_message_id(),
            destination,
            body,
            dict(properties or {}),
            persistent=persistent,
            priority=priority,
            expires=expires,
            timestamp=self.region.now_ms,
            producer_message_id=producer_message_id,
        )

    def send(
        self,
        connection_id: str,
        destination: Destination,
        body: bytes = b"x",
        *,
        persistent: bool = False,
        priority: int = 4,
        properties: dict[str, str] | None = None,
        expires: int = 0,
        transaction: str | None = None,
        producer_message_id: str | None = None,
    ) -> Message:
        message = self.message(
            destination,
            body,
            persistent=persistent,
            priority=priority,
            properties=properties,
            expires=expires,
            producer_message_id=producer_message_id,
        )
        accepted(self.region.send(connection_id, message, transaction=transaction))
        self.collect()
        return message

    def subscribe(
        self,
        connection_id: str,
        subscription_id: str,
        destination: Destination,
        *,
        ack: AckMode = AckMode.CLIENT_INDIVIDUAL,
        prefetch: int = 1000,
        selector: str | None = None,
        priority: int = 0,
        exclusive: bool = False,
        no_local: bool = False,
        durable_name: str | None = None,
    ) -> Consumer:
        consumer = Consumer(
            connection_id,
            subscription_id,
            destination,
            ack_mode=ack,
            prefetch=prefetch,
            selector=parse_selector(selector) if selector else None,
            priority=priority,
            exclusive=exclusive,
            no_local=no_local,
            durable_name=durable_name,
        )
        accepted(self.region.subscribe(consumer))
        self.collect()
        return consumer

    def taken(self, consumer: Consumer) -> list[Delivery]:
        """Deliveries made so far to ``consumer``, consumed from the record."""
        mine = [d for d in self.deliveries if d.consumer is consumer]
        self.deliveries = [d for d in self.deliveries if d.consumer is not consumer]
        return mine

    def bodies(self, consumer: Consumer) -> list[bytes]:
        return [d.entry.message.body for d in self.taken(consumer)]

    def ack(self, delivery: Delivery, transaction: str | None = None) -> None:
        accepted(
            self.region.acknowledge(
                delivery.consumer.connection_id, AckRef(ack_id=delivery.ack_id), transaction
            )
        )
        self.collect()

    def nack(self, delivery: Delivery) -> None:
        accepted(self.region.nack(delivery.consumer.connection_id, AckRef(ack_id=delivery.ack_id)))
        self.collect()

    def advance(self, ms: int) -> None:
        """Let ``ms`` pass: the periodic tick runs at the new time, then its effects are taken."""
        self.region.tick(self.region.now_ms + ms)
        self.collect()

    def ops(self, kind: type[OpT]) -> list[OpT]:
        return [op for op in self.store_ops if isinstance(op, kind)]
