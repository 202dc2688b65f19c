"""Federation demand, decided without I/O: which receivers a broker's consumers ask for."""

from __future__ import annotations

import json

from ferrymq.amqp import codes
from ferrymq.amqp import federation_codes as fc
from ferrymq.config.broker_connections import (
    FederationAddressPolicy,
    FederationConfig,
    FederationMatch,
    FederationQueuePolicy,
)
from ferrymq.connections.federation_control import address_policy_message, queue_policy_message
from ferrymq.connections.federation_policy import (
    FederationDemand,
    LocalConsumer,
    address_selector,
    parse_consumer_advisory,
    selects,
)
from ferrymq.core.selector import parse_selector
from tests.connections.federation_support import decoded

ADDRESS = FederationAddressPolicy(
    "addresses",
    includes=(FederationMatch("local-address.#"),),
    excludes=(FederationMatch("local-address.excluded"),),
    max_hops=2,
)
QUEUE = FederationQueuePolicy(
    "queues", includes=(FederationMatch("#", "orders.*"),), priority_adjustment=-2
)
CONFIG = FederationConfig(local_address_policies=(ADDRESS,), local_queue_policies=(QUEUE,))


def table(config: FederationConfig = CONFIG) -> FederationDemand:
    return FederationDemand(config, federation="fed", node_id="node-L", own="L", remote="R")


def topic(cid: str, name: str, **kw: object) -> LocalConsumer:
    return LocalConsumer(cid, topic=True, name=name, **kw)  # type: ignore[arg-type]


def queue(cid: str, name: str, **kw: object) -> LocalConsumer:
    return LocalConsumer(cid, topic=False, name=name, **kw)  # type: ignore[arg-type]


def test_include_exclude_follow_artemis_wildcards() -> None:
    assert selects(ADDRESS.includes, ADDRESS.excludes, "local-address")
    assert selects(ADDRESS.includes, ADDRESS.excludes, "local-address.a.b")
    assert not selects(ADDRESS.includes, ADDRESS.excludes, "local-address.excluded")
    assert not selects(ADDRESS.includes, ADDRESS.excludes, "other")
    assert selects((), (), "anything")  # no include: every address
    assert selects(QUEUE.includes, (), "orders.eu", "orders.eu")
    assert not selects(QUEUE.includes, (), "orders.eu.x", "orders.eu.x")


def test_receiver_lives_while_one_consumer_does() -> None:
    demand = table()
    opened = demand.add(topic("c1", "local-address.a")).opened
    assert opened is not None
    assert demand.add(topic("c2", "local-address.a")).opened is None
    assert demand.remove("c1").closed is None
    assert demand.remove("c2").closed is opened
    assert demand.demands == {}
    assert demand.remove("c2").closed is None  # a second RemoveInfo changes nothing


def test_federation_browser_temporary_and_advisory_consumers_are_not_demand() -> None:
    """Scenario 34 (include-federated=false) and ARTEMIS-5656: a federation consumer whose
    demand came from the remote (or from here) never asks for a receiver."""
    demand = table()
    assert demand.add(topic("f", "local-address.a", federation=True, path=("R",))).opened is None
    assert (
        demand.add(topic("g", "local-address.a", federation=True, path=("X", "L"))).opened is None
    )
    assert demand.add(queue("fq", "orders.eu", federation=True, path=("X",))).opened is None
    assert demand.add(queue("b", "orders.eu", browser=True)).opened is None
    assert demand.add(queue("t", "orders.eu", temporary=True)).opened is None
    assert demand.add(topic("a", "ActiveMQ.Advisory.Consumer.Topic.x")).opened is None
    assert demand.add(topic("x", "local-address.excluded")).opened is None
    assert demand.demands == {}


def test_demand_from_a_third_broker_carries_on_along_a_chain() -> None:
    """A <- L <- R: A's federation consumer on L is demand for L's federation toward R, and
    the receiver names both brokers on its demand path."""
    demand = table()
    opened = demand.add(topic("a", "local-address.a", federation=True, path=("A",))).opened
    assert opened is not None
    assert demand.receiver_options(opened).properties[fc.DEMAND_PATH] == "|A|L|"


def test_include_federated_counts_federation_consumers_at_their_own_priority() -> None:
    """ARTEMIS-5368: a federation consumer's priority is passed on unchanged."""
    config = FederationConfig(
        local_queue_policies=(FederationQueuePolicy("q", include_federated=True),)
    )
    demand = table(config)
    opened = demand.add(queue("f", "orders", federation=True, priority=-1, path=("X",))).opened
    assert opened is not None
    assert opened.priority == -1
    demand.add(queue("c", "orders", priority=4))
    assert opened.priority == 3  # a local consumer: its priority plus the adjustment (-1)


def test_queue_receiver_attach() -> None:
    demand = table()
    opened = demand.add(queue("c1", "orders.eu", priority=0)).opened
    assert opened is not None
    options = demand.receiver_options(opened)
    assert options.name == "federation.fed.policy.queues.queue.orders.eu.node.node-L"
    assert options.source == "queue://orders.eu"
    assert options.properties[fc.RECEIVER_PRIORITY] == -2
    assert options.properties[fc.POLICY_NAME] == "queues"
    assert options.properties[fc.DEMAND_PATH] == "|L|"
    assert options.desired_capabilities == (fc.QUEUE_RECEIVER,)


def test_address_receiver_attach_carries_hops_and_path_filters() -> None:
    """Scenario 34: the address receiver's source carries the max-hops selector; and the
    no-local filter of ARTEMIS-4658."""
    demand = table()
    opened = demand.add(topic("c1", "local-address.a")).opened
    assert opened is not None
    options = demand.receiver_options(opened)
    assert options.name == "federation.fed.policy.addresses.address.local-address.a.node.node-L"
    assert options.source == "topic://local-address.a"
    entry = options.filters[codes.SELECTOR_FILTER]
    assert isinstance(entry, tuple)
    descriptor, selector = entry
    assert descriptor == codes.SELECTOR_FILTER_CODE
    assert f"{fc.HOPS} < 2" in selector
    assert codes.NO_LOCAL_FILTER in options.filters
    cleanup = options.properties[fc.ADDRESS_SOURCE_PROPERTIES]
    assert cleanup == {fc.AUTO_DELETE: False, fc.AUTO_DELETE_DELAY: 0, fc.AUTO_DELETE_MSG_COUNT: 0}


def test_address_selector_refuses_what_came_from_here_and_too_many_hops() -> None:
    selector = parse_selector(address_selector(2, "broker_L"))

    def admits(properties: dict[str, object]) -> bool:
        return selector.matches(properties.get) is True

    assert admits({})
    assert admits({fc.HOPS: "1", fc.FEDERATION_PATH: "|broker_M|"})
    assert not admits({fc.HOPS: "2"})
    assert not admits({fc.FEDERATION_PATH: "|broker_M|broker_L|"})
    assert admits({fc.FEDERATION_PATH: "|brokerXL|"})  # "_" is no LIKE wildcard here
    unlimited = parse_selector(address_selector(0, "L"))
    assert unlimited.matches({fc.HOPS: "99"}.get) is True


def test_consumer_advisories_are_read_with_the_federation_mark() -> None:
    info = {
        "ConsumerInfo": {
            "consumerId": "c:1",
            "destination": "queue://orders",
            "priority": 3,
            "properties": {fc.FEDERATION_CONSUMER: "|A|B|"},
        }
    }
    parsed = parse_consumer_advisory(json.dumps(info).encode())
    assert parsed == LocalConsumer(
        "c:1", topic=False, name="orders", priority=3, federation=True, path=("A", "B")
    )
    removed = {"RemoveInfo": {"objectId": {"ConsumerId": "c:1"}}}
    assert parse_consumer_advisory(json.dumps(removed).encode()) == "c:1"
    assert parse_consumer_advisory(b"not json") is None
    temp = {"ConsumerInfo": {"consumerId": "t", "destination": "temp-queue://ID:x"}}
    parsed_temp = parse_consumer_advisory(json.dumps(temp).encode())
    assert isinstance(parsed_temp, LocalConsumer)
    assert parsed_temp.temporary


def test_policy_messages_as_artemis_encodes_them() -> None:
    annotations, body = decoded(address_policy_message(ADDRESS))
    assert annotations == {fc.OPERATION_TYPE: fc.ADD_ADDRESS_POLICY}
    assert body["address-includes"] == ["local-address.#"]
    assert body["max-hops"] == 2
    annotations, body = decoded(queue_policy_message(QUEUE))
    assert annotations == {fc.OPERATION_TYPE: fc.ADD_QUEUE_POLICY}
    assert body["queue-includes"] == ["#", "orders.*"]
    assert body["priority-adjustment"] == -2


def test_queue_policy_matches_the_queue_address_broker_xml_gave() -> None:
    """The manual's example: include address-match="address" queue-match="local-queue" (an
    anycast queue local-queue under the address "address")."""
    config = FederationConfig(
        local_queue_policies=(
            FederationQueuePolicy("p", includes=(FederationMatch("address", "local-queue"),)),
        )
    )
    addresses = {"local-queue": "address"}
    demand = FederationDemand(
        config,
        federation="fed",
        node_id="n",
        own="L",
        remote="R",
        address_of=lambda queue: addresses.get(queue, queue),
    )
    assert demand.add(queue("c1", "local-queue")).opened is not None
    assert demand.add(queue("c2", "address")).opened is None
