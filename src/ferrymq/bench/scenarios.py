"""The five scenarios of ``ferrymq bench`` (issue 2, "Performance")."""

from __future__ import annotations

from dataclasses import dataclass

from ferrymq.stomp.constants import ACK_AUTO, ACK_CLIENT_INDIVIDUAL


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    topic: bool = False
    persistent: bool = False
    ack: str = ACK_AUTO
    """``client-individual`` stands for the dialect's individual-ack mode."""
    latency: bool = False


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("queue", "queue, 1 producer -> 1 consumer, non-persistent, auto ack"),
    Scenario(
        "queue-persistent",
        "queue, 1 producer -> 1 consumer, persistent:true, a receipt for every message",
        persistent=True,
    ),
    Scenario("topic", "topic, 1 producer -> N subscribers, non-persistent", topic=True),
    Scenario(
        "client-individual",
        "queue, 1 producer -> 1 consumer, one ACK per message",
        ack=ACK_CLIENT_INDIVIDUAL,
    ),
    Scenario(
        "latency",
        "queue, one message at a time at a fixed rate, send -> receive time",
        latency=True,
    ),
)
BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}
NAMES = tuple(BY_NAME)
