"""Bridges under faults (issue 5): a broker SIGKILLed mid-flow on either side of a bridge; a
connector that follows a master/slave group's master across a SIGKILL, and the host pair
(seed 000 chapter 4, seed 002); a connector that reaches its own broker; a bridge whose remote
broker starts late.

Brokers that are killed run as separate processes (``BrokerProcess``); the others run in this
process, where a test can look at the connector's bridges. Messages are counted by body. The
consumers use plain TCP connections that the test reconnects after a kill, so no client-side
audit hides a duplicate: every delivery is seen, and a second delivery of a body is accepted
only as a redelivery (``redelivered:true``) of a message whose acknowledgement the broker had
not receipted before it was killed.

Run with ``-s`` to see the timings.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ferrymq.client import Connection, ConnectionClosed, Message, StaticDiscoveryAgent, connect
from ferrymq.testing import BrokerProcess, WaitTimeoutError, free_port, wait_until
from ferrymq.testing.network import BrokerNetwork

pytestmark = pytest.mark.slow

QUEUE = "/queue/FAULTS"
COUNT = 5_000
IN_FLIGHT = 50
PREFETCH = 100
LEAD = 1_000
WAIT_S = 30.0
QUIET_S = 0.5
RETRY = "initialReconnectDelay=50&amp;maxReconnectDelay=200"
"""Static discovery agent options (XML-escaped): a failed bridge is rebuilt within 200 ms."""
CLIENT_RETRY = "initialReconnectDelay=50&maxReconnectDelay=200"
LOCK_INTERVAL_MS = 200


def broker_xml(broker_id: str | None, connectors: str = "", persistence: str = "") -> str:
    """A broker with a fixed ``brokerId`` (None: generated at each start) and these
    ``<networkConnector>`` elements."""
    identity = f'brokerId="{broker_id}"' if broker_id is not None else ""
    return f"""<broker xmlns="http://activemq.apache.org/schema/core" {identity}>
  {persistence}
  <networkConnectors>{connectors}</networkConnectors>
</broker>"""


def shared_file_group(shared: Path) -> str:
    """seed 000 Example 3.1: both members on one kahaDB directory, the slave polling its lock."""
    return f"""<persistenceAdapter>
    <kahaDB directory="{shared}" lockKeepAlivePeriod="{LOCK_INTERVAL_MS}">
      <locker><shared-file-locker lockAcquireSleepInterval="{LOCK_INTERVAL_MS}"/></locker>
    </kahaDB>
  </persistenceAdapter>"""


def bridge_starts(process: BrokerProcess, connector: str) -> list[str]:
    """The "network bridge ... started" lines ``process`` printed since it (re)started."""
    prefix = f"network bridge {connector}: "
    return [
        line
        for line in list(process.output)
        if prefix in line and line.rstrip().endswith("started")
    ]


async def wait_for_bridge_starts(process: BrokerProcess, connector: str, count: int) -> None:
    await wait_until(
        lambda: len(bridge_starts(process, connector)) >= count,
        WAIT_S,
        f"{count} start(s) of bridge {connector} on {process.name}",
    )


@pytest.fixture
def processes() -> Iterator[list[BrokerProcess]]:
    """Broker processes a test starts; all killed at the end, whatever happened."""
    started: list[BrokerProcess] = []
    yield started
    for process in started:
        process.kill()


async def start(process: BrokerProcess, *, as_slave: bool = False) -> BrokerProcess:
    return await asyncio.to_thread(process.start, as_slave=as_slave)


class RawConsumer:
    """Consumes ``QUEUE`` on one broker (client-individual acks, each with a receipt) and checks
    every delivery; when its broker is killed it waits for ``broker_up`` and connects again."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.broker_up = asyncio.Event()
        self.broker_up.set()
        self.session = 0
        self.first_seen: dict[str, int] = {}
        """Body -> the session (connection) that first received it."""
        self.deliveries: Counter[str] = Counter()
        self.acknowledged: set[str] = set()
        """Bodies whose acknowledgement the broker receipted."""
        self.redeliveries: list[str] = []
        self.violations: list[str] = []
        self._changed = asyncio.Event()

    async def run(self) -> None:
        while True:
            await self.broker_up.wait()
            connection = await connect(self.url)
            self.session += 1
            try:
                subscription = await connection.subscribe(
                    QUEUE, ack="client-individual", prefetch=PREFETCH
                )
                while True:
                    message = await subscription.get()
                    self._check(message)
                    await message.ack(receipt=True)
                    self.acknowledged.add(message.text)
                    self._changed.set()
            except ConnectionClosed:
                pass  # its broker was killed; the test says when it is back
            finally:
                await connection.close()

    def _check(self, message: Message) -> None:
        body = message.text
        self.deliveries[body] += 1
        self._changed.set()
        first = self.first_seen.setdefault(body, self.session)
        if self.deliveries[body] == 1:
            return
        self.redeliveries.append(body)
        if body in self.acknowledged:
            self.violations.append(f"{body}: delivered again after its ack was receipted")
        elif first == self.session:
            self.violations.append(f"{body}: delivered twice to one connection")
        elif not message.redelivered:
            self.violations.append(f"{body}: delivered again without redelivered:true")

    async def until(self, done: Callable[[], bool], within_s: float = WAIT_S) -> None:
        await wait_until(done, within_s, "the deliveries awaited", changed=self._changed)

    async def quiet(self) -> None:
        """Nothing more arrives for ``QUIET_S``."""
        before = sum(self.deliveries.values())
        with pytest.raises(WaitTimeoutError):
            await self.until(lambda: sum(self.deliveries.values()) > before, QUIET_S)


class Producer:
    """Sends persistent messages with a receipt each, ``IN_FLIGHT`` at a time and at most
    ``LEAD`` ahead of the consumer (so a kill finds messages at every stage); remembers which
    sends completed."""

    def __init__(self, connection: Connection, bodies: list[str], consumer: RawConsumer) -> None:
        self.connection = connection
        self.bodies = bodies
        self.consumer = consumer
        self.completed: list[str] = []

    async def run(self) -> None:
        slots = asyncio.Semaphore(IN_FLIGHT)
        consumer = self.consumer

        async def one(body: str) -> None:
            try:
                await self.connection.send(QUEUE, body, persistent=True)
            finally:
                slots.release()
            self.completed.append(body)

        async with asyncio.TaskGroup() as tasks:
            for n, body in enumerate(self.bodies):
                await slots.acquire()
                await consumer.until(lambda: len(consumer.deliveries) >= n - LEAD)  # noqa: B023
                tasks.create_task(one(body))


async def left_on(url: str) -> list[str]:
    """What ``QUEUE`` still holds on the broker at ``url`` (a browse: nothing is consumed)."""
    connection = await connect(url)
    try:
        browse = await connection.subscribe(QUEUE, browser=True)
        return [message.text async for message in browse]
    finally:
        await connection.disconnect()


async def assert_drained(*urls: str) -> None:
    """Every broker's ``QUEUE`` empties (a forward is acknowledged on its source just after the
    target's receipt, so the source may lag the consumer by a moment)."""
    for url in urls:
        deadline = time.monotonic() + WAIT_S
        while True:
            left = await left_on(url)
            if not left or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        assert left == [], f"{len(left)} message(s) left on {url}, e.g. {left[:3]}"


def assert_exactly_once(consumer: RawConsumer, producer: Producer, *, redeliveries: bool) -> None:
    assert sorted(producer.completed) == sorted(producer.bodies), "every send completed"
    assert consumer.violations == []
    assert set(consumer.deliveries) == set(producer.completed)
    raw = sum(consumer.deliveries.values())
    assert raw - len(consumer.deliveries) == len(consumer.redeliveries)
    if redeliveries:
        # At most what was delivered and not yet acknowledged when the broker died.
        assert len(consumer.redeliveries) <= PREFETCH
    else:
        assert consumer.redeliveries == []


@dataclass
class Flow:
    """What ``flowing`` ran: its two clients, and when the flow began and was delivered."""

    consumer: RawConsumer
    producer: Producer
    began_at: float = 0.0
    delivered_at: float = 0.0
    """When every body had been delivered (before the quiet period)."""


@contextlib.asynccontextmanager
async def flowing(producer_url: str, consumer_url: str, bodies: list[str]) -> AsyncIterator[Flow]:
    """``bodies`` sent through ``producer_url`` and consumed on ``consumer_url``, with the body of
    the ``async with`` (the fault) run once a third are acknowledged and the producer is still
    sending; on the way out every body has been delivered and then nothing more for ``QUIET_S``."""
    consumer = RawConsumer(consumer_url)
    flow = Flow(consumer, Producer(await connect(producer_url), bodies, consumer))
    flow.began_at = time.monotonic()
    try:
        async with asyncio.TaskGroup() as tasks:
            consuming = tasks.create_task(consumer.run())
            producing = tasks.create_task(flow.producer.run())
            await consumer.until(lambda: len(consumer.acknowledged) >= len(bodies) // 3)
            assert len(flow.producer.completed) < len(bodies), "the producer is still sending"
            yield flow
            await producing
            await consumer.until(lambda: set(consumer.deliveries) >= set(bodies))
            flow.delivered_at = time.monotonic()
            await consumer.quiet()
            consuming.cancel()
    finally:
        await flow.producer.connection.disconnect()


# -- 1. a bridge killed mid-flow ----------------------------------------------------------------


async def _flow_with_a_kill(tmp_path: Path, processes: list[BrokerProcess], victim: str) -> None:
    """A -> B over ``static:``; 5,000 persistent messages sent to A and consumed on B while
    ``victim`` (A or B) is SIGKILLed a third of the way and restarted on its data directory."""
    port_b = free_port()
    a = BrokerProcess(
        tmp_path / "A",
        name="A",
        config_xml=broker_xml(
            "A", f'<networkConnector name="toB" uri="static:(tcp://127.0.0.1:{port_b})?{RETRY}"/>'
        ),
    )
    b = BrokerProcess(tmp_path / "B", name="B", port=port_b, config_xml=broker_xml("B"))
    processes += [a, b]
    await start(b)
    await start(a)
    await wait_for_bridge_starts(a, "toB", 1)

    bodies = [f"m{n:04d}" for n in range(COUNT)]
    async with flowing(f"failover:({a.url})?{CLIENT_RETRY}", b.url, bodies) as flow:
        consumer = flow.consumer
        killed = a if victim == "A" else b
        sent = len(flow.producer.completed)
        in_flight = sent - len(consumer.acknowledged)
        consumer.broker_up.clear()
        killed.kill()
        killed_at = time.monotonic()
        await start(killed)
        restarted_s = time.monotonic() - killed_at
        consumer.broker_up.set()
        # The bridge is a new one: a restarted B gets a second bridge from A; a restarted A
        # prints its first again.
        await wait_for_bridge_starts(a, "toB", 2 if victim == "B" else 1)
        bridged_s = time.monotonic() - killed_at

    assert_exactly_once(consumer, flow.producer, redeliveries=victim == "B")
    await assert_drained(a.url, b.url)
    print(
        f"\n[kill {victim}] {COUNT} messages in {flow.delivered_at - flow.began_at:.1f} s; at the "
        f"kill {sent} sent, {in_flight} of them not yet consumed; restarted in "
        f"{restarted_s * 1000:.0f} ms, bridge back after {bridged_s * 1000:.0f} ms; "
        f"{len(consumer.redeliveries)} redeliveries to the consumer"
    )


async def test_the_consuming_broker_killed_mid_flow(
    tmp_path: Path, processes: list[BrokerProcess]
) -> None:
    """B, the bridge's remote broker, is SIGKILLed while messages cross: what B had stored is
    recovered, what A had forwarded without B's receipt is forwarded again and B's duplicate
    detection drops the copies it already had; the consumer sees again only what it had not
    acknowledged, marked redelivered."""
    await _flow_with_a_kill(tmp_path, processes, "B")


async def test_the_forwarding_broker_killed_mid_flow(
    tmp_path: Path, processes: list[BrokerProcess]
) -> None:
    """A, the forwarding broker, is SIGKILLed while messages cross: the messages B receipted
    but A never got to acknowledge are forwarded again after A's restart and dropped by B; the
    producer's failover re-sends what A had not receipted and A drops what it had stored."""
    await _flow_with_a_kill(tmp_path, processes, "A")


# -- 2. a connector to a master/slave group ---------------------------------------------------


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("masterslave:({m1},{m2})?" + RETRY, id="masterslave"),
        pytest.param(
            "static:(failover:({m1},{m2})?randomize=false&amp;maxReconnectAttempts=0)?" + RETRY,
            id="static-failover",
        ),
    ],
)
async def test_a_connector_follows_the_groups_master(
    tmp_path: Path, processes: list[BrokerProcess], uri: str
) -> None:
    """seed 000 Example 4.1 (``masterslave:``) and seed 002 Example 4.8 (``static:failover:``
    with ``maxReconnectAttempts=0``): X bridges (duplex) to the shared-file group M1/M2; a
    producer on the group, a consumer on X. The master is SIGKILLed, the slave takes over and
    the bridge follows it: every completed send is consumed exactly once on X."""
    count = COUNT // 2
    group = shared_file_group(tmp_path / "shared")
    m1, m2 = (
        BrokerProcess(tmp_path / n, name=n, config_xml=broker_xml(None, "", group))
        for n in ("M1", "M2")
    )
    connector = uri.format(m1=m1.url, m2=m2.url)
    x = BrokerProcess(
        tmp_path / "X",
        name="X",
        config_xml=broker_xml(
            "X", f'<networkConnector name="toGroup" uri="{connector}" duplex="true"/>'
        ),
    )
    processes += [m1, m2, x]
    await start(m1)
    await start(m2, as_slave=True)
    assert m2.state == "slave"
    await start(x)
    await wait_for_bridge_starts(x, "toGroup", 1)
    assert " M1 (" in bridge_starts(x, "toGroup")[0]

    producer_url = f"failover:({m1.url},{m2.url})?randomize=false&{CLIENT_RETRY}"
    bodies = [f"g{n:04d}" for n in range(count)]
    async with flowing(producer_url, x.url, bodies) as flow:
        m1.kill()
        killed_at = time.monotonic()
        assert await asyncio.to_thread(m2.wait_for_state, "master"), "".join(m2.output[-20:])
        takeover_s = time.monotonic() - killed_at
        await wait_for_bridge_starts(x, "toGroup", 2)
        followed_s = time.monotonic() - killed_at

    assert " M2 (" in bridge_starts(x, "toGroup")[1]
    assert_exactly_once(flow.consumer, flow.producer, redeliveries=False)
    await assert_drained(m2.url, x.url)
    print(
        f"\n[{uri.split(':')[0]}] slave took over after {takeover_s * 1000:.0f} ms, bridge "
        f"followed after {followed_s * 1000:.0f} ms"
    )


async def test_the_host_pair_survives_the_loss_of_a_host(
    tmp_path: Path, processes: list[BrokerProcess]
) -> None:
    """seed 000 Figure 4.1, the host pair: groups A (A1/A2) and B (B1/B2), each connected to
    the other group with ``masterslave:`` and never to its own. Host 1 runs A1 and B2, host 2
    runs B1 and A2. Host 1 dies (A1 and B2 SIGKILLed together): A2 takes over and bridges to
    B1, B1's connector follows group A to A2, and every completed send on group A is consumed
    exactly once on group B."""
    count = 2_000
    a1, a2, b1, b2 = (BrokerProcess(tmp_path / n, name=n) for n in ("A1", "A2", "B1", "B2"))
    for group, other, shared in (((a1, a2), (b1, b2), "a"), ((b1, b2), (a1, a2), "b")):
        members = ",".join(p.url for p in other)
        connector = (
            f'<networkConnector name="to{other[0].name[0]}" uri="masterslave:({members})?{RETRY}"/>'
        )
        for process in group:
            process.config_xml = broker_xml(None, connector, shared_file_group(tmp_path / shared))
    processes += [a1, a2, b1, b2]
    await start(a1)
    await start(b1)
    await start(a2, as_slave=True)
    await start(b2, as_slave=True)
    assert [p.state for p in (a1, b1, a2, b2)] == ["master", "master", "slave", "slave"]
    await wait_for_bridge_starts(a1, "toB", 1)
    await wait_for_bridge_starts(b1, "toA", 1)

    producer_url = f"failover:({a1.url},{a2.url})?randomize=false&{CLIENT_RETRY}"
    bodies = [f"h{n:04d}" for n in range(count)]
    async with flowing(producer_url, b1.url, bodies) as flow:
        assert bridge_starts(a2, "toB") == [], "a slave runs no network connector"
        a1.kill()
        b2.kill()
        killed_at = time.monotonic()
        assert await asyncio.to_thread(a2.wait_for_state, "master"), "".join(a2.output[-20:])
        takeover_s = time.monotonic() - killed_at
        await wait_for_bridge_starts(a2, "toB", 1)
        await wait_for_bridge_starts(b1, "toA", 2)
        bridged_s = time.monotonic() - killed_at

    assert " B1 (" in bridge_starts(a2, "toB")[0]
    assert " A2 (" in bridge_starts(b1, "toA")[1]
    assert_exactly_once(flow.consumer, flow.producer, redeliveries=False)
    await assert_drained(a2.url, b1.url)
    print(
        f"\n[host pair] A2 took over after {takeover_s * 1000:.0f} ms, both bridges back after "
        f"{bridged_s * 1000:.0f} ms"
    )


async def test_masterslave_options_are_the_agents_back_off(tmp_path: Path) -> None:
    """reference §3.3: ``masterslave:`` is a static agent announcing one failover service
    (master first); its query sets the agent's back-off (as ``static:``'s does) rather than
    reaching the failover URL, which takes no options and would fail every bridge."""
    net = BrokerNetwork(tmp_path)
    net.add("A", f'<networkConnector name="group" uri="masterslave:({{B}},{{C}})?{RETRY}"/>')
    net.add("B")
    net.add("C")
    async with net:
        await net.wait_for_bridges()
        (connector,) = net["A"].network.connectors
        assert isinstance(connector.agent, StaticDiscoveryAgent)
        assert connector.agent.options.initial_reconnect_delay_ms == 50
        assert connector.agent.options.max_reconnect_delay_ms == 200
        assert [b["remoteBrokerId"] for b in net.bridges("A")] == ["B"]
        assert list(connector.bridges) == [f"masterslave:({net.url('B')},{net.url('C')})"]


# -- 3. a broker never bridges to itself ------------------------------------------------------


async def _serves(url: str) -> bool:
    """A message sent to ``url`` comes back from it."""
    connection = await connect(url)
    try:
        subscription = await connection.subscribe("/queue/ALIVE", ack="client-individual")
        await connection.send("/queue/ALIVE", "ping", persistent=True)
        message = await subscription.get(timeout=5)
        await message.ack(receipt=True)
        return message.text == "ping"
    finally:
        await connection.disconnect()


async def test_the_brokers_own_url_is_not_bridged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A static list that names the broker's own listener (as a host-pair configuration
    copied to every broker would, seed 000 chapter 4): only the other broker is bridged."""
    caplog.set_level(logging.INFO, logger="ferrymq.network.connector")
    net = BrokerNetwork(tmp_path)
    net.add("A", f'<networkConnector name="all" uri="static:({{A}},{{B}})?{RETRY}"/>')
    net.add("B")
    async with net:
        await net.wait_for_bridges()
        (connector,) = net["A"].network.connectors
        assert list(connector.bridges) == [net.url("B")]
        assert [b["remoteBrokerId"] for b in net.bridges("A")] == ["B"]
        assert f"{net.url('A')} is this broker, not bridged" in caplog.text
        assert await _serves(net.url("A"))


async def test_a_remote_broker_with_the_same_broker_id_is_a_loop(
    tmp_path: Path, processes: list[BrokerProcess], caplog: pytest.LogCaptureFixture
) -> None:
    """A connector that reaches a broker with this broker's own brokerId (reference §4.2, the
    loop check): the bridge is not started and not retried; both brokers keep serving and no
    message crosses."""
    twin = BrokerProcess(tmp_path / "twin", name="twin", config_xml=broker_xml("A"))
    processes.append(twin)
    await start(twin)
    net = BrokerNetwork(tmp_path / "net")
    net.add("A", f'<networkConnector name="toTwin" uri="static:({twin.url})?{RETRY}"/>')
    async with net:
        (connector,) = net["A"].network.connectors
        await wait_until(
            lambda: "is this broker (A): the bridge is not started" in caplog.text,
            WAIT_S,
            "the loop to be detected",
        )
        # With a 50 ms retry a retried loop would be logged several times in the quiet period.
        quiet_until = time.monotonic() + QUIET_S
        while time.monotonic() < quiet_until:
            assert connector.bridges == {}
            await asyncio.sleep(0.02)
        assert caplog.text.count("the bridge is not started") == 1
        assert await _serves(net.url("A"))
        assert await _serves(twin.url)

        on_twin = await connect(twin.url)
        try:
            waiting = await on_twin.subscribe(QUEUE, ack="client-individual")
            sender = await connect(net.url("A"))
            await sender.send(QUEUE, "stays on A", persistent=True)
            await sender.disconnect()
            with pytest.raises(TimeoutError):
                await waiting.get(timeout=QUIET_S)
        finally:
            await on_twin.disconnect()
        assert await left_on(net.url("A")) == ["stays on A"]


# -- 4. a remote broker that starts late ------------------------------------------------------


async def test_a_bridge_to_a_broker_that_is_down_retries_until_it_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """reference §4.6: a bridge that cannot connect is announced again after the static
    agent's back-off (initialReconnectDelay 50 ms, doubling, at most maxReconnectDelay 200 ms)
    and comes up once the remote broker starts."""
    net = BrokerNetwork(tmp_path)
    net.add("A", f'<networkConnector name="toB" uri="static:({{B}})?{RETRY}"/>')
    net.add("B")
    try:
        await net.start("A")

        def failures() -> list[logging.LogRecord]:
            return [r for r in caplog.records if "bridge to" in r.getMessage()]

        await wait_until(lambda: len(failures()) >= 5, WAIT_S, "5 failed attempts")
        (connector,) = net["A"].network.connectors
        assert [b.state for b in connector.bridges.values()] != ["started"]
        times = [r.created for r in failures()[:5]]
        gaps_ms = [(b - a) * 1000 for a, b in itertools.pairwise(times)]
        # Each retry waits its back-off step: 50, 100, 200, 200 ms (sleeps never end early).
        for gap, step in zip(gaps_ms, (50, 100, 200, 200), strict=True):
            assert gap >= step - 5, gaps_ms

        began = time.monotonic()
        await net.start("B")
        await net.wait_for_bridges()
        up_s = time.monotonic() - began
        consumer = await connect(net.url("B"))
        try:
            subscription = await consumer.subscribe(QUEUE, ack="client-individual")
            await net.wait_for_demand("A", "queue://FAULTS")
            sender = await connect(net.url("A"))
            await sender.send(QUEUE, "late", persistent=True)
            await sender.disconnect()
            message = await subscription.get(timeout=WAIT_S)
            await message.ack(receipt=True)
        finally:
            await consumer.disconnect()
        assert message.text == "late"
        assert message.headers.get("JMSActiveMQBrokerPath") == "A"
    finally:
        await net.stop()
    print(f"\n[late remote] retries every {gaps_ms} ms; bridge up {up_s * 1000:.0f} ms after B")
