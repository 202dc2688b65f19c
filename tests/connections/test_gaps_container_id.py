"""The container id of a broker connection, which a FerryMQ remote takes as the client id.

Each ``<amqp-connection>`` opens with ``<node id>:<connection name>``: two connections of one
broker to one FerryMQ remote are two clients there, and the same connection keeps its id
across reconnects (federation subscriptions live under it). A connection that opens again
while the remote still holds its previous one (the source crashed and the remote saw no FIN:
a host gone, a network cut) replaces it at once instead of being refused until the remote's
idle timeout."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from ferrymq.broker import Broker
from ferrymq.config.broker_connections import MirrorConfig, SenderConfig
from ferrymq.connections.broker_connection import CONNECTION_INFO, ConnectionState
from ferrymq.connections.remote import AmqpRemoteConnection, RemoteConnectError
from ferrymq.connections.remote_address import parse_hosts
from ferrymq.testing import BrokerProcess, wait_until
from tests.connections.runtime_support import amqp_url, broker_with_connections, connection

WAIT_S = 20.0


def broker_connection_clients(remote: Broker) -> dict[str, str]:
    """Client id -> connection id of the remote's clients that are broker connections."""
    return {
        state.client_id: connection_id
        for connection_id, state in remote.service.region.connections.items()
        if ":" in state.client_id and state.explicit_client_id
    }


async def test_two_connections_of_one_broker_to_one_ferrymq_remote(tmp_path: Path) -> None:
    async with broker_with_connections(tmp_path / "remote", name="remote") as remote:
        url = amqp_url(remote)
        dr = connection("dr", url, MirrorConfig())
        out = connection("out", url, SenderConfig(queue_name="orders"))
        async with broker_with_connections(tmp_path / "source", dr, out) as source:
            for name in ("dr", "out"):
                conn = source.broker_connections.get(name)
                await wait_until(
                    lambda c=conn: c.state is ConnectionState.CONNECTED,  # type: ignore[misc]
                    WAIT_S,
                    f"{name} connected",
                    detail=lambda c=conn: f"{c.state}: {c.last_error}",  # type: ignore[misc]
                )
            node = source.service.region.node_id
            assert set(broker_connection_clients(remote)) == {f"{node}:dr", f"{node}:out"}
            await asyncio.sleep(0.3)  # neither is refused later
            assert source.broker_connections.get("dr").connects == 1
            assert source.broker_connections.get("out").connects == 1


class HoldingProxy:
    """A TCP relay that, when its client goes away, keeps the connection to the server open
    and silent: the server sees what it would see of a crashed host (nothing)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.held: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self.listen_port = 0

    async def __aenter__(self) -> HoldingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.listen_port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self.held:
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.held.append(up_writer)
            pump = asyncio.ensure_future(_pump(up_reader, writer))
            try:
                await _pump(reader, up_writer)  # until the client is gone
            finally:
                pump.cancel()
                await asyncio.wait([pump])
                writer.transport.abort()  # the server's side stays open and hears nothing
        finally:
            self._tasks.discard(task)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            writer.write(data)


@contextlib.asynccontextmanager
async def source_process(tmp_path: Path, uri: str) -> AsyncIterator[BrokerProcess]:
    xml = f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="source">
  <broker-connections>
    <amqp-connection uri="{uri}" name="dr" retry-interval="100"><mirror/></amqp-connection>
  </broker-connections>
</broker></beans>"""
    process = BrokerProcess(tmp_path / "source", name="source", config_xml=xml)
    try:
        yield process
    finally:
        await asyncio.to_thread(process.kill)


async def test_source_killed_and_restarted_replaces_its_stale_connection(
    tmp_path: Path,
) -> None:
    async with (
        broker_with_connections(tmp_path / "remote", name="remote") as remote,
        HoldingProxy(int(amqp_url(remote).rsplit(":", 1)[1])) as proxy,
        source_process(tmp_path, f"tcp://127.0.0.1:{proxy.listen_port}") as source,
    ):
        await asyncio.to_thread(source.start)
        await wait_until(
            lambda: bool(broker_connection_clients(remote)), WAIT_S, "source connected"
        )
        ((client_id, first),) = broker_connection_clients(remote).items()
        await asyncio.to_thread(source.kill)  # no FIN reaches the remote: it keeps `first`
        await asyncio.sleep(0.5)
        assert broker_connection_clients(remote) == {client_id: first}
        await asyncio.to_thread(source.start)
        # the remote's idle timeout (30 s) would drop `first`; the new connection comes first
        await wait_until(
            lambda: broker_connection_clients(remote).get(client_id) not in (None, first),
            10.0,
            "the restarted source connected again",
            detail=lambda: "".join(source.output[-5:]),
        )
        assert first not in remote.service.region.connections


async def open_as(remote: Broker, container_id: str, *, broker: bool) -> AmqpRemoteConnection:
    (address,) = parse_hosts(amqp_url(remote) + "?connectTimeoutMillis=3000")
    info = {CONNECTION_INFO: {"connectionName": "c", "nodeId": "n"}} if broker else {}
    return await AmqpRemoteConnection.connect(address, container_id=container_id, properties=info)


async def refusal(remote: Broker, container_id: str, *, broker: bool) -> str:
    """How the remote refused the open (it opens, then closes with the reason)."""
    try:
        opened = await open_as(remote, container_id, broker=broker)
    except RemoteConnectError as exc:
        return str(exc)
    async with asyncio.timeout(WAIT_S):
        await opened.closed()
    return opened.error or ""


async def test_only_a_broker_connection_replaces_a_broker_connection(tmp_path: Path) -> None:
    """A broker connection's open replaces an older broker connection with its container id,
    nothing else: an ordinary client's id in use is refused as before (ActiveMQ's
    InvalidClientIDException), and an ordinary client cannot take a broker connection's."""
    async with broker_with_connections(tmp_path / "remote", name="remote") as remote:
        app = await open_as(remote, "app", broker=False)
        try:
            assert "already connected" in await refusal(remote, "app", broker=True)
            assert not app.is_closed
        finally:
            await app.close()
        older = await open_as(remote, "n:c", broker=True)
        try:
            assert "already connected" in await refusal(remote, "n:c", broker=False)
            newer = await open_as(remote, "n:c", broker=True)
            await wait_until(lambda: older.is_closed, WAIT_S, "the older one closed")
            assert not newer.is_closed
            await newer.close()
        finally:
            await older.close()
