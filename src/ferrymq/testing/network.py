"""Networks of in-process brokers for tests, built from activemq.xml fragments.

``{B}`` in a fragment stands for broker B's URL, so a test writes the seeds' own configuration::

    net = BrokerNetwork(tmp_path)
    net.add("A", '<networkConnector uri="static:({B})" networkTTL="3"/>')
    net.add("B")
    async with net:
        await net.wait_for_bridges()

Every broker's port is chosen before any starts (each is free when chosen), so connectors may
point either way; brokers get ``brokerId`` = ``brokerName`` = the name unless the fragment's
broker attributes say otherwise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Self

from ferrymq.broker import Broker
from ferrymq.client import Message, Subscription, connect
from ferrymq.config.model import AdminConfig, MessageTraceConfig
from ferrymq.core.destination import Destination
from ferrymq.testing.brokers import broker_config
from ferrymq.testing.ports import free_port
from ferrymq.testing.waiting import WaitTimeoutError, wait_until

_XML = """<beans><broker xmlns="http://activemq.apache.org/schema/core"
  brokerName="{name}" {attributes}><networkConnectors>{connectors}</networkConnectors>
  <transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0" {listener}/>
  </transportConnectors>
</broker></beans>"""


class BrokerNetwork:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.brokers: dict[str, Broker] = {}
        self._specs: dict[str, tuple[str, str, str]] = {}
        self.ports: dict[str, int] = {}
        self._admin: set[str] = set()
        self.trace_dir: Path | None = None
        """When set, every broker started writes its message trace here (``ferrymq audit``)."""

    def add(
        self,
        name: str,
        connectors: str = "",
        *,
        attributes: str | None = None,
        listener: str = "",
    ) -> None:
        """A broker called ``name`` with these ``<networkConnector>`` elements; ``attributes``
        of the ``<broker>`` element default to ``brokerId="<name>"``; ``listener`` holds more
        attributes of its ``<transportConnector>`` (``updateClusterClients="true"``)."""
        self._specs[name] = (
            connectors,
            attributes if attributes is not None else f'brokerId="{name}"',
            listener,
        )
        self.ports[name] = free_port()

    def enable_admin(self, name: str) -> None:
        """Serve broker ``name``'s admin API on 127.0.0.1 port 0 once started (``admin_url``)."""
        self._admin.add(name)

    def admin_url(self, name: str) -> str:
        admin = self.brokers[name].admin
        assert admin is not None, f"broker {name} has no admin listener (enable_admin)"
        return admin.url

    def url(self, name: str) -> str:
        return f"tcp://127.0.0.1:{self.ports[name]}"

    def __getitem__(self, name: str) -> Broker:
        return self.brokers[name]

    async def start(self, *names: str) -> None:
        """Start the named brokers (all that are not running, by default), in order."""
        urls = {name: self.url(name) for name in self._specs}
        for name in names or tuple(self._specs):
            if name in self.brokers:
                continue
            connectors, attributes, listener = self._specs[name]
            xml = _XML.format(
                name=name,
                attributes=attributes,
                connectors=connectors.format(**urls),
                listener=listener.format(**urls),
            )
            config = broker_config(self.data_dir / name, name=name, xml=xml, port=self.ports[name])
            if name in self._admin:
                config = replace(config, admin=AdminConfig(enabled=True, host="127.0.0.1", port=0))
            if self.trace_dir is not None:
                config = replace(config, message_trace=MessageTraceConfig(self.trace_dir))
            broker = Broker(config)
            await broker.start()
            self.brokers[name] = broker

    async def stop(self, *names: str) -> None:
        for name in names or tuple(reversed(self.brokers)):
            broker = self.brokers.pop(name, None)
            if broker is not None:
                await broker.stop()

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- looking inside -----------------------------------------------------------------------

    def bridges(self, name: str) -> list[dict[str, object]]:
        return self.brokers[name].network.statistics()

    def demand(self, name: str, destination: str) -> list[dict[str, object]]:
        """The demand subscriptions on broker ``name`` for ``queue://X`` / ``topic://X``,
        including those of duplex bridges that another broker's connector opened."""
        found: list[dict[str, object]] = []
        broker_id = self.brokers[name].service.broker_id
        for bridge in (b for other in self.brokers for b in self.bridges(other)):
            for direction in bridge["directions"]:  # type: ignore[attr-defined]
                if direction["from"] != broker_id:
                    continue
                found.extend(
                    d for d in direction["demandSubscriptions"] if d["destination"] == destination
                )
        return found

    def durable_depth(self, name: str, client_id: str, subscription: str) -> int | None:
        """Messages a durable subscription holds on broker ``name``; None if it does not exist."""
        found = self.brokers[name].service.region.subscriptions.durable(client_id, subscription)
        return found.depth if found is not None else None

    def queue_depth(self, name: str, queue: str) -> int:
        """Messages on a broker's queue: waiting, paged out or in flight."""
        container = self.brokers[name].service.region.queues.get(Destination.queue(queue))
        return container.depth if container is not None else 0

    async def wait_for_bridges(self, timeout_s: float = 15.0) -> None:
        """Until every bridge of every running broker has started."""

        def started() -> bool:
            for broker in self.brokers.values():
                for connector in broker.network.connectors:
                    if not connector.bridges:
                        return False
                    if any(b.state != "started" for b in connector.bridges.values()):
                        return False
            return True

        await wait_until(started, timeout_s, "every network bridge started")

    async def wait_for_demand(
        self, name: str, destination: str, count: int = 1, timeout_s: float = 15.0
    ) -> None:
        """Until broker ``name`` has ``count`` demand subscriptions for ``destination``."""
        await wait_until(
            lambda: len(self.demand(name, destination)) >= count,
            timeout_s,
            f"{count} demand subscription(s) for {destination} on {name}",
        )

    # -- sending ------------------------------------------------------------------------------

    async def produce(
        self, name: str, destination: str, count: int, *, prefix: str = "m"
    ) -> list[str]:
        """Send ``count`` persistent messages (``<prefix>-000``, ``<prefix>-001``, ...) to
        ``destination`` on broker ``name`` from a connection of their own, each receipted by the
        broker before the next; returns their bodies."""
        bodies = [f"{prefix}-{i:03d}" for i in range(count)]
        connection = await connect(self.url(name))
        try:
            for body in bodies:
                await connection.send(destination, body, persistent=True)
        finally:
            await connection.disconnect()
        return bodies


async def receive_all(
    subscriptions: Mapping[str, Subscription],
    expected: int,
    *,
    timeout_s: float = 15.0,
    quiet_s: float = 0.5,
) -> dict[str, list[Message]]:
    """Take (and acknowledge) what the subscriptions receive until ``expected`` messages came
    in all, then for ``quiet_s`` more, so exact counts can be asserted: a duplicate or a stray
    message arriving late is counted too. Raises WaitTimeoutError, with the counts so far, when
    fewer than ``expected`` arrive within ``timeout_s``."""
    received: dict[str, list[Message]] = {name: [] for name in subscriptions}

    async def take(name: str, subscription: Subscription) -> None:
        while True:
            message = await subscription.get()
            received[name].append(message)
            await message.ack()

    def counts() -> str:
        return ", ".join(f"{name}={len(messages)}" for name, messages in received.items())

    timed_out: WaitTimeoutError | None = None
    async with asyncio.TaskGroup() as group:
        readers = [group.create_task(take(n, s)) for n, s in subscriptions.items()]
        try:
            await wait_until(
                lambda: sum(len(m) for m in received.values()) >= expected,
                timeout_s,
                f"{expected} message(s)",
                detail=lambda: f"received: {counts()}",
            )
            await asyncio.sleep(quiet_s)  # the bounded quiet period: nothing more may come
        except WaitTimeoutError as exc:
            timed_out = exc  # raised outside the group, which would wrap it
        finally:
            for reader in readers:
                reader.cancel()
    if timed_out is not None:
        raise timed_out
    return received
