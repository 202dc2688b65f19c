"""The sans-IO half of a bridge: consumer advisories, demand rules and route suppression.

The advisories are written by ``ferrymq.core.advisory`` from real core ``Consumer`` objects and
read back by ``ferrymq.network.advisories``, so writer and reader cannot drift apart unnoticed.
Connector configurations come from ``<networkConnector>`` elements through the config loader.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ferrymq.config.activemq_xml import parse_config
from ferrymq.config.network import DestinationRef, NetworkConnectorConfig
from ferrymq.core import advisory
from ferrymq.core.consumer import Consumer
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.core.selector import parse_selector
from ferrymq.network.advisories import (
    AdvisoryError,
    RemoteConsumer,
    RemovedConsumer,
    parse_consumer_advisory,
    stomp_name,
)
from ferrymq.network.demand import Demand, DemandChange, DemandTable, DestinationFilter
from ferrymq.network.routes import RouteRegistry

FOO = Destination.queue("TEST.FOO")
PRICES = Destination.topic("PRICES")
TEMP_QUEUE = Destination(DestinationType.TEMP_QUEUE, "ID:E-1:1")


def connector(attrs: str = "", filters: str = "") -> NetworkConnectorConfig:
    """One ``<networkConnector>`` on broker A, as the config loader reads it."""
    document = (
        '<broker brokerName="A" brokerId="A"><networkConnectors>'
        f'<networkConnector name="linkToB" uri="static:(tcp://127.0.0.1:61616)" {attrs}>'
        f"{filters}</networkConnector></networkConnectors></broker>"
    )
    (config,) = parse_config(document).network_connectors
    return config


def table(attrs: str = "", filters: str = "") -> DemandTable:
    """Broker A's demand for the consumers broker B advertises."""
    return DemandTable(connector(attrs, filters), local_broker_id="A", remote_broker_id="B")


def consumer(
    destination: Destination = FOO,
    sub: str = "1",
    *,
    selector: str | None = None,
    priority: int = 0,
    browser: bool = False,
    path: tuple[str, ...] = (),
    ids: tuple[str, ...] = (),
) -> Consumer:
    """A core consumer; with a ``path`` it is a bridge's demand subscription (network)."""
    made = Consumer(
        "conn",
        sub,
        destination,
        selector=parse_selector(selector) if selector else None,
        priority=priority,
        browser=browser,
        network=bool(path),
        broker_path=path,
    )
    made.network_consumer_ids = ids
    return made


def advertised(made: Consumer) -> RemoteConsumer:
    event = parse_consumer_advisory(advisory.consumer_info(made, "client-1"))
    assert isinstance(event, RemoteConsumer)
    return event


def removal(made: Consumer) -> str:
    event = parse_consumer_advisory(advisory.consumer_removed(made))
    assert isinstance(event, RemovedConsumer)
    return event.consumer_id


# -- advisories ------------------------------------------------------------------------------


def test_consumer_info_is_read_back_field_for_field() -> None:
    made = consumer(selector="color = 'red'", priority=3)
    made.durable_name = "sub-1"
    remote = advertised(made)
    assert remote == RemoteConsumer(
        advisory.consumer_id(made),
        FOO,
        "color = 'red'",
        3,
        durable_name="sub-1",
        client_id="client-1",
    )
    assert remote.original_ids == (advisory.consumer_id(made),)


def test_a_demand_subscription_advertises_its_path_and_real_consumers() -> None:
    remote = advertised(consumer(path=("E", "F"), ids=("E-conn:7",), browser=False))
    assert remote.network
    assert remote.broker_path == ("E", "F")
    assert remote.original_ids == ("E-conn:7",)


def test_browser_and_temporary_destination_survive_the_round_trip() -> None:
    assert advertised(consumer(browser=True)).browser
    remote = advertised(consumer(TEMP_QUEUE))
    assert remote.destination == TEMP_QUEUE
    assert stomp_name(remote.destination) == "/remote-temp-queue/ID:E-1:1"
    assert stomp_name(FOO) == "/queue/TEST.FOO"
    assert stomp_name(PRICES) == "/topic/PRICES"


def test_remove_info_names_the_consumer() -> None:
    made = consumer(sub="9")
    assert removal(made) == advisory.consumer_id(made) == "conn:9"


@pytest.mark.parametrize(
    "body",
    [
        advisory.connection_info("conn", "client-1", None, None),
        advisory.connection_removed("conn"),
        advisory.destination_info(FOO, advisory.ADD_OPERATION),
    ],
)
def test_other_advisories_are_not_for_the_bridge(body: bytes) -> None:
    assert parse_consumer_advisory(body) is None


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"ConsumerInfo", "consumer advisory is not JSON"),
        (b"\xff\xfe{}", "consumer advisory is not JSON"),
        (b"[1, 2]", "consumer advisory is not a JSON object"),
        (_json({"ConsumerInfo": "conn:1"}), "ConsumerInfo is not a JSON object"),
        (_json({"ConsumerInfo": {"destination": "queue://Q"}}), "without consumerId"),
        (_json({"ConsumerInfo": {"consumerId": "conn:1"}}), "or destination"),
        (_json({"ConsumerInfo": {"consumerId": "c", "destination": "Q"}}), "not a qualified"),
        (_json({"ConsumerInfo": {"consumerId": "c", "destination": "x://Q"}}), "kind 'x'"),
        (_json({"RemoveInfo": {"objectId": "conn:1"}}), "RemoveInfo without an objectId"),
        (_json({"RemoveInfo": {"objectId": {"ConsumerId": 1}}}), "ConsumerId is not a string"),
    ],
)
def test_a_malformed_advisory_says_what_is_wrong(body: bytes, message: str) -> None:
    with pytest.raises(AdvisoryError, match=message):
        parse_consumer_advisory(body)


_names = st.text(st.sampled_from("ABCDEFG"), min_size=1, max_size=3)


@given(
    name=st.text(st.sampled_from("abcXYZ.-_"), min_size=1, max_size=12),
    kind=st.sampled_from(list(DestinationType)),
    priority=st.integers(-128, 127),
    selector=st.sampled_from([None, "a = 1", "color IN ('red', 'blue')"]),
    path=st.lists(_names, max_size=4).map(tuple),
    ids=st.lists(_names.map("ID:{}:1".format), max_size=3).map(tuple),
)
def test_every_consumer_info_reads_back(
    name: str,
    kind: DestinationType,
    priority: int,
    selector: str | None,
    path: tuple[str, ...],
    ids: tuple[str, ...],
) -> None:
    made = consumer(Destination(kind, name), selector=selector, priority=priority, path=path)
    made.network_consumer_ids = ids
    remote = advertised(made)
    assert (remote.destination, remote.selector, remote.priority) == (
        made.destination,
        selector,
        priority,
    )
    assert (remote.broker_path, remote.network) == (path, bool(path))
    assert remote.original_ids == (ids or (advisory.consumer_id(made),))


# -- destination filters (seed 001 chapter 4) --------------------------------------------------


def _filter(filters: str = "", attrs: str = "") -> DestinationFilter:
    return DestinationFilter(connector(attrs, filters))


def test_without_filters_everything_but_advisories_is_permitted() -> None:
    permits = _filter().permits
    assert permits(FOO)
    assert permits(PRICES)
    assert not permits(advisory.consumer_topic(FOO))


def test_exclusion_wins_over_inclusion_and_kinds_must_match() -> None:
    permits = _filter(
        "<dynamicallyIncludedDestinations>"
        '<queue physicalName="TRADE.>"/><topic physicalName="PRICE.*"/>'
        "</dynamicallyIncludedDestinations>"
        '<excludedDestinations><queue physicalName="TRADE.SECRET.>"/></excludedDestinations>'
    ).permits
    assert permits(Destination.queue("TRADE"))  # "X.>" matches X itself
    assert permits(Destination.queue("TRADE.STOCK.NYSE"))
    assert not permits(Destination.queue("TRADE.SECRET.PLANS"))
    assert not permits(Destination.topic("TRADE.STOCK"))  # only queues of that name
    assert permits(Destination.topic("PRICE.IBM"))
    assert not permits(Destination.topic("PRICE.IBM.NYSE"))  # "*" is one element
    assert not permits(Destination.queue("PRICE.IBM"))
    assert not permits(FOO)  # not included


def test_an_excluded_topic_does_not_exclude_the_queue_of_that_name() -> None:
    permits = _filter('<excludedDestinations><topic physicalName=">"/></excludedDestinations>')
    assert permits.permits(FOO)
    assert not permits.permits(PRICES)


def test_an_empty_physical_name_stands_for_every_destination_of_its_kind() -> None:
    """seed 001 Example 9.2 as printed (``<queue physicalName=""/>``, the queuesOnly
    connector); the loader repairs that spelling to ">", so the model is built directly."""
    config = dataclasses.replace(
        connector(), dynamically_included_destinations=(DestinationRef("queue", ""),)
    )
    permits = DestinationFilter(config).permits
    assert permits(FOO)
    assert permits(Destination.queue("A.B.C"))
    assert not permits(PRICES)


def test_temporary_destinations_follow_bridge_temp_destinations_only() -> None:
    only_foo = '<dynamicallyIncludedDestinations><queue physicalName="TEST.FOO"/>'
    only_foo += "</dynamicallyIncludedDestinations>"
    temp_topic = Destination(DestinationType.TEMP_TOPIC, "ID:E-1:2")
    assert _filter(only_foo).permits(TEMP_QUEUE)
    assert _filter(only_foo).permits(temp_topic)
    off = _filter(only_foo, 'bridgeTempDestinations="false"')
    assert not off.permits(TEMP_QUEUE)
    assert not off.permits(temp_topic)
    assert off.permits(FOO)


# -- the demand table (seed 001 chapters 2, 3, 5, 7 and 9) ------------------------------------


@pytest.mark.parametrize(
    ("attrs", "path", "accepted"),
    [
        ("", (), True),
        ("", ("C",), False),  # networkTTL 1: only the remote broker's own consumers
        ('networkTTL="2"', ("C",), True),
        ('networkTTL="2"', ("C", "D"), False),
        ('networkTTL="3" consumerTTL="1"', ("C",), False),
        ('networkTTL="-1"', tuple("CDEFGHIJ"), True),
        ('networkTTL="-1"', ("C", "A"), False),  # the path already crossed this broker
    ],
)
def test_consumer_ttl_and_self_avoiding_paths(
    attrs: str, path: tuple[str, ...], accepted: bool
) -> None:
    demand = table(attrs)
    change = demand.add(advertised(consumer(path=path)))
    assert (change.opened is not None) is accepted
    assert demand.ignored == (0 if accepted else 1)


def test_browsers_create_no_demand() -> None:
    demand = table()
    assert demand.add(advertised(consumer(browser=True))).opened is None
    assert demand.demands == {}


def test_conduit_merges_consumers_and_drops_their_selectors() -> None:
    """seed 001 chapter 5: two selective consumers become one unselective subscription."""
    demand = table()
    red = advertised(consumer(sub="red", selector="color = 'red'"))
    blue = advertised(consumer(sub="blue", selector="color = 'blue'"))
    opened = demand.add(red).opened
    assert opened is not None
    assert (opened.selector, opened.broker_path) == (None, ("B",))
    assert demand.add(blue) == DemandChange()
    assert demand.add(blue) == DemandChange()  # a repeated advisory changes nothing
    assert opened.consumers == {red.consumer_id, blue.consumer_id}
    assert opened.original_ids == (red.consumer_id, blue.consumer_id)
    assert demand.remove(red.consumer_id).closed is None
    assert demand.remove(red.consumer_id).closed is None  # already gone
    assert demand.remove(blue.consumer_id).closed is opened
    assert demand.demands == {}


def test_network_queue_subscriptions_are_not_conduited_unless_asked() -> None:
    local = advertised(consumer(sub="local"))
    network = advertised(consumer(sub="net", path=("C",), ids=("C-conn:1",)))
    plain = table('networkTTL="2"')
    assert plain.add(local).opened is not None
    assert plain.add(network).opened is not None
    assert len(plain.demands) == 2
    merged = table('networkTTL="2" conduitNetworkQueueSubscriptions="true"')
    assert merged.add(local).opened is not None
    assert merged.add(network).opened is None
    (only,) = merged.demands.values()
    assert only.original_ids == (local.consumer_id, "C-conn:1")


def test_network_topic_subscriptions_are_always_conduited() -> None:
    demand = table('networkTTL="2"')
    assert demand.add(advertised(consumer(PRICES, "1"))).opened is not None
    assert demand.add(advertised(consumer(PRICES, "2", path=("C",)))).opened is None
    assert len(demand.demands) == 1


def test_without_conduit_each_consumer_keeps_its_selector() -> None:
    """seed 001 Figures 9.1/9.2 and chapter 5's fix: one subscription per remote consumer."""
    demand = table('conduitSubscriptions="false"')
    red = demand.add(advertised(consumer(sub="red", selector="color = 'red'"))).opened
    blue = demand.add(advertised(consumer(sub="blue", selector="color = 'blue'"))).opened
    assert red is not None
    assert blue is not None
    assert (red.selector, blue.selector) == ("color = 'red'", "color = 'blue'")
    assert demand.remove("conn:red").closed is red
    assert list(demand.demands.values()) == [blue]


@pytest.mark.parametrize(
    ("attrs", "path", "priority"),
    [
        ('decreaseNetworkConsumerPriority="true"', (), -5),
        ('decreaseNetworkConsumerPriority="true"', ("E",), -6),
        ('decreaseNetworkConsumerPriority="true"', ("E", "F"), -7),
        ('decreaseNetworkConsumerPriority="true" consumerPriorityBase="-10"', ("E",), -11),
        ("", ("E",), 2),  # off: the consumer's own priority travels
    ],
)
def test_decrease_network_consumer_priority_by_hops(
    attrs: str, path: tuple[str, ...], priority: int
) -> None:
    """seed 001 §7.2: network subscriptions start at -5 and lose 1 per hop."""
    demand = table(f'networkTTL="3" {attrs}')
    opened = demand.add(advertised(consumer(path=path, priority=2))).opened
    assert opened is not None
    assert opened.priority == priority
    assert opened.broker_path == (*path, "B")


def test_static_demands_ignore_exclusions_and_consumers() -> None:
    """seed 001 §3 "Static propagation": subscriptions that exist without any consumer."""
    static = (
        "<staticallyIncludedDestinations>"
        '<queue physicalName="TEST.FOO"/><topic physicalName="PRICES"/>'
        "</staticallyIncludedDestinations>"
        '<excludedDestinations><queue physicalName=">"/></excludedDestinations>'
    )
    demand = table('decreaseNetworkConsumerPriority="true"', static)
    found = demand.static_demands()
    assert [(d.destination, d.static, d.priority, d.broker_path) for d in found] == [
        (FOO, True, -5, ("B",)),
        (PRICES, True, -5, ("B",)),
    ]
    assert demand.add(advertised(consumer())).opened is None  # excluded dynamically
    assert demand.remove("conn:1").closed is None
    assert sorted(demand.demands) == ["static:queue://TEST.FOO", "static:topic://PRICES"]
    assert [d.priority for d in table("", static).static_demands()] == [0, 0]


_consumers = st.builds(
    lambda i, dest, selector, path: advertised(
        consumer(dest, str(i), selector=selector, path=path, ids=(f"X:{i}",) if path else ())
    ),
    st.integers(0, 5),
    st.sampled_from([FOO, Destination.queue("BAR"), PRICES]),
    st.sampled_from([None, "a = 1"]),
    st.sampled_from([(), ("C",), ("C", "D"), ("A",)]),
)


@settings(max_examples=150, deadline=None)
@given(
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    steps=st.lists(st.tuples(st.booleans(), _consumers), max_size=25),
)
def test_add_remove_sequences_leave_no_demand_behind(
    flags: tuple[bool, bool, bool], steps: list[tuple[bool, RemoteConsumer]]
) -> None:
    conduit, conduit_network, decrease = flags
    config = dataclasses.replace(
        connector('networkTTL="2"'),
        conduit_subscriptions=conduit,
        conduit_network_queue_subscriptions=conduit_network,
        decrease_network_consumer_priority=decrease,
    )
    demand = DemandTable(config, local_broker_id="A", remote_broker_id="B")
    open_: set[int] = set()
    present: dict[str, RemoteConsumer] = {}
    for add, remote in steps:
        if add:
            change = demand.add(remote)
            present.setdefault(remote.consumer_id, remote)
        else:
            change = demand.remove(remote.consumer_id)
            present.pop(remote.consumer_id, None)
        if change.opened is not None:
            assert id(change.opened) not in open_
            open_.add(id(change.opened))
        if change.closed is not None:
            open_.remove(id(change.closed))
        assert open_ == {id(d) for d in demand.demands.values()}
        assert all(d.consumers for d in demand.demands.values())
    for consumer_id in list(present):
        change = demand.remove(consumer_id)
        if change.closed is not None:
            open_.remove(id(change.closed))
    assert demand.demands == {}
    assert open_ == set()


# -- route suppression (seed 001 §7.3) ---------------------------------------------------------


class RecordingOwner:
    """A bridge direction as the registry sees it: it records what it is told to do."""

    def __init__(self) -> None:
        self.opened: list[Demand] = []
        self.closed: list[Demand] = []

    def open_route(self, demand: Demand) -> None:
        self.opened.append(demand)

    def close_route(self, demand: Demand) -> None:
        self.closed.append(demand)


def route(priority: int, *ids: str) -> Demand:
    return Demand(f"consumer:{priority}:{ids}", FOO, None, priority, ("B",), original_ids=ids)


def test_the_first_route_opens_and_worse_or_equal_ones_are_suppressed() -> None:
    registry, owner = RouteRegistry(), RecordingOwner()
    assert registry.claim(owner, route(-5, "c1"))
    assert not registry.claim(owner, route(-6, "c1"))
    assert not registry.claim(owner, route(-5, "c1"))  # the first among equals
    assert registry.claim(owner, route(-6, "c2"))  # another consumer: no rivalry
    assert registry.suppressed == 2
    assert owner.closed == []


def test_a_better_route_replaces_the_open_one() -> None:
    registry, long_owner, short_owner = RouteRegistry(), RecordingOwner(), RecordingOwner()
    long_route, short = route(-6, "c1"), route(-5, "c1")
    assert registry.claim(long_owner, long_route)
    assert registry.claim(short_owner, short)
    assert long_owner.closed == [long_route]
    assert registry.suppressed == 1


def test_release_reopens_the_best_suppressed_route() -> None:
    registry, owner = RouteRegistry(), RecordingOwner()
    best, middle, worst = route(-5, "c1"), route(-6, "c1"), route(-7, "c1")
    for demand in (best, worst, middle):
        registry.claim(owner, demand)
    registry.release(owner, worst)  # a suppressed route leaves: nothing else changes
    assert owner.opened == []
    assert registry.suppressed == 1
    registry.release(owner, best)
    assert owner.opened == [middle]
    assert registry.suppressed == 0
    registry.release(owner, route(-5, "c1"))  # never claimed: ignored
    assert owner.opened == [middle]


def test_forget_owner_hands_its_routes_to_the_others() -> None:
    registry, gone, other = RouteRegistry(), RecordingOwner(), RecordingOwner()
    direct, direct2 = route(-5, "c1"), route(-5, "c2")
    via_c, via_c2 = route(-6, "c1"), route(-6, "c2")
    for owner, demand in ((gone, direct), (gone, direct2), (other, via_c), (other, via_c2)):
        registry.claim(owner, demand)
    assert registry.suppressed == 2
    registry.forget_owner(gone)
    assert other.opened == [via_c, via_c2]
    assert registry.suppressed == 0
    registry.forget_owner(gone)  # nothing left of it
    assert other.opened == [via_c, via_c2]


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 3), st.integers(-8, -5), st.sampled_from(["c1", "c2"])),
        max_size=30,
    )
)
def test_each_consumer_keeps_exactly_one_best_route(steps: list[tuple[int, int, str]]) -> None:
    """Claims, releases and a vanishing bridge in any order: while routes to a consumer exist,
    exactly one is open and none has a higher priority (a consumer never loses its route)."""
    registry = RouteRegistry()
    owners = (RecordingOwner(), RecordingOwner())
    routes: dict[Demand, RecordingOwner] = {}
    is_open: dict[Demand, bool] = {}
    for action, priority, consumer_id in steps:
        if action < 2:
            demand = route(priority, consumer_id)
            routes[demand] = owners[action]
            is_open[demand] = registry.claim(owners[action], demand)
        elif action == 2 and routes:
            demand, owner = next(iter(routes.items()))
            del routes[demand], is_open[demand]
            registry.release(owner, demand)
        elif action == 3:
            registry.forget_owner(owners[0])
            for demand in [d for d, o in routes.items() if o is owners[0]]:
                del routes[demand], is_open[demand]
        for owner in owners:
            for demand in owner.closed:
                assert is_open[demand], "the registry closed a route that was not open"
                is_open[demand] = False
            for demand in owner.opened:
                # A vanishing owner's own routes may open and close again on the way out.
                if demand in is_open:
                    assert not is_open[demand]
                    is_open[demand] = True
            owner.opened.clear()
            owner.closed.clear()
        for wanted in ("c1", "c2"):
            mine = [d for d in routes if d.original_ids == (wanted,)]
            if mine:
                open_routes = [d for d in mine if is_open[d]]
                assert len(open_routes) == 1
                assert open_routes[0].priority == max(d.priority for d in mine)
        assert registry.suppressed == sum(1 for d in routes if not is_open[d])
