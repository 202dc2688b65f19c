"""One ``<amqp-connection>``: the reconnect loop that keeps its elements connected.

As Artemis does it (ActiveMQ Artemis documentation, "Broker Connections", reconnecting and
failover; its ``AMQPBrokerConnection``): attempts go to the hosts of the ``uri`` in turn (the
primary, then each ``#`` alternate: host = attempt counter modulo the number of hosts), each
after a fixed ``retry-interval``, no backoff. ``reconnect-attempts`` is the number of retries
after the first attempt (-1: for ever); once they are used up the connection stops in state
``failed`` and says so in one log line. A failed attempt is a socket, TLS or login failure, or
an element's ``LinkSetupError`` (a link refused, a capability missing, a mirror to itself). A
connection that was fully set up and later drops resets the counter to 1, so the first
reconnect goes to the next alternate.

"Fully set up" is observed, since elements attach their links inside ``run``: the connection
is set up once it stayed open ``SETUP_GRACE_S`` with every attach answered and no element
failed. A peer that drops every connection at once therefore uses up the attempts instead of
being retried for ever.

States: ``stopped`` (never started, or stopped through management), ``connecting``,
``connected``, ``retrying`` (waiting ``retry-interval``), ``failed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from ferrymq.config.broker_connections import AmqpConnectionConfig
from ferrymq.connections.api import ConnectionElement, LinkSetupError, LocalSide
from ferrymq.connections.remote import AmqpRemoteConnection, RemoteConnectError
from ferrymq.connections.remote_address import RemoteAddress, parse_hosts

__all__ = ["AmqpBrokerConnection", "ConnectionState"]

log = logging.getLogger(__name__)

SETUP_GRACE_S = 0.5
CONNECTION_INFO = "broker-connection-info"
"""The open frame's property Artemis announces a broker connection with."""

Connector = Callable[..., Awaitable[AmqpRemoteConnection]]


class ConnectionState(enum.StrEnum):
    STOPPED = "stopped"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RETRYING = "retrying"
    FAILED = "failed"


class _SetupFailedError(Exception):
    """This attempt counts against ``reconnect-attempts``."""


class AmqpBrokerConnection:
    def __init__(
        self,
        config: AmqpConnectionConfig,
        elements: Sequence[ConnectionElement],
        local: LocalSide,
        *,
        connect: Connector = AmqpRemoteConnection.connect,
    ) -> None:
        """``RemoteURIError`` (one line) if the ``uri`` cannot be used."""
        self.config = config
        self.name = config.name
        self.elements = list(elements)
        self.local = local
        self.hosts: list[RemoteAddress] = parse_hosts(config.uri)
        self._connect = connect
        self.state = ConnectionState.STOPPED
        self.counter = 0
        """Artemis's retry counter: attempts since the last fully set-up connection."""
        self.connects = 0
        """Connection attempts since this broker started, all told."""
        self.current_host: str | None = None
        self.last_error: str | None = None
        self.remote: AmqpRemoteConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self.unavailable: str | None = None
        """Why this connection cannot run in this build (an element not served yet)."""

    # ---- management ----

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Start connecting (from attempt 0); nothing if it runs already."""
        if self.running:
            return
        await self._join()
        if self.unavailable is not None:
            self.state = ConnectionState.FAILED
            self.last_error = self.unavailable
            log.error("broker connection %s cannot start: %s", self.name, self.unavailable)
            return
        self.counter = 0
        self.last_error = None
        self.state = ConnectionState.CONNECTING
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"ferrymq-broker-connection-{self.name}"
        )

    async def stop(self) -> None:
        """Disconnect and stay stopped until ``start``."""
        if self._task is not None:
            self._task.cancel()
        await self._join()
        self.state = ConnectionState.STOPPED

    async def _join(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([task])
            if not task.cancelled() and task.exception() is not None:
                log.error("broker connection %s ended: %s", self.name, task.exception())

    def statistics(self) -> dict[str, object]:
        return {
            "name": self.name,
            "state": str(self.state),
            "url": self.current_host,
            "hosts": [host.url for host in self.hosts],
            "attempts": self.counter,
            "connects": self.connects,
            "last_error": self.last_error,
            "reconnect_attempts": self.config.reconnect_attempts,
            "retry_interval_ms": self.config.retry_interval_ms,
            "auto_start": self.config.auto_start,
            "elements": [_element_statistics(element) for element in self.elements],
        }

    # ---- the loop ----

    async def _run(self) -> None:
        while True:
            host = self.hosts[self.counter % len(self.hosts)]
            self.state = ConnectionState.CONNECTING
            self.current_host = host.url
            self.connects += 1
            try:
                await self._attempt(host)
                self.counter = 1  # a set-up connection dropped: next alternate first
            except (_SetupFailedError, RemoteConnectError) as exc:
                self.last_error = str(exc)
                self.counter += 1
            except Exception as exc:  # a bug: say so, and treat it as a failed attempt
                debug = log.isEnabledFor(logging.DEBUG)
                log.error("broker connection %s: %r", self.name, exc, exc_info=debug)
                self.last_error = f"unexpected error: {exc!r}"
                self.counter += 1
            budget = self.config.reconnect_attempts
            if 0 <= budget < self.counter:
                self.state = ConnectionState.FAILED
                log.error(
                    "broker connection %s stopped after %d attempts: %s",
                    self.name,
                    self.counter,
                    self.last_error,
                )
                return
            log.warning(
                "broker connection %s: %s; retrying in %d ms",
                self.name,
                self.last_error,
                self.config.retry_interval_ms,
            )
            self.state = ConnectionState.RETRYING
            await asyncio.sleep(self.config.retry_interval_ms / 1000)

    async def _attempt(self, host: RemoteAddress) -> None:
        """One connection, until it ends; raises ``_SetupFailedError`` when it counts as a failed
        attempt, returns after a set-up connection dropped."""
        remote = await self._connect(
            host,
            container_id=self.container_id,
            user=self.config.user,
            password=self.config.password,
            properties=self._open_properties(),
        )
        self.remote = remote
        try:
            await self._serve(remote)
        finally:
            self.remote = None
            await remote.close()

    @property
    def container_id(self) -> str:
        """``<node id>:<connection name>``: a FerryMQ remote takes the container id as a client
        id, one connection each, so every connection of this broker needs its own; stable
        across reconnects, since the remote keeps durable subscriptions (a federation's) under
        it. The node id alone travels in ``broker-connection-info`` and on the links."""
        return f"{self.local.node_id}:{self.name}"

    def _open_properties(self) -> Mapping[str, object]:
        return {CONNECTION_INFO: {"connectionName": self.name, "nodeId": self.local.node_id}}

    async def _serve(self, remote: AmqpRemoteConnection) -> None:
        tasks = [
            asyncio.ensure_future(element.run(remote), loop=asyncio.get_running_loop())
            for element in self.elements
        ]
        for task in tasks:
            # An element cut short may end with its cleanup's error after this connection
            # stopped looking (the broker stopping): its end is read whatever happens.
            task.add_done_callback(_read_end)
        closed = asyncio.ensure_future(remote.closed())
        set_up = False
        try:
            set_up = await self._until_set_up(remote, [*tasks, closed])
            if set_up:
                self.state = ConnectionState.CONNECTED
                self.counter = 0
                log.info("broker connection %s connected to %s", self.name, remote.url)
                await asyncio.wait([*tasks, closed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in [*tasks, closed]:
                task.cancel()
            await asyncio.wait([*tasks, closed])
        self.last_error = _why_it_ended(self.elements, tasks, remote)
        if not set_up or any(_setup_error(task) for task in tasks):
            raise _SetupFailedError(self.last_error)

    async def _until_set_up(
        self, remote: AmqpRemoteConnection, waits: list[asyncio.Future[None]]
    ) -> bool:
        """True once the connection stayed open ``SETUP_GRACE_S`` with no attach pending;
        False if something ended first."""
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        while True:
            done, _ = await asyncio.wait(waits, timeout=SETUP_GRACE_S / 5)
            if done:
                return False
            if remote.attaching:
                quiet_since = loop.time()
            elif loop.time() - quiet_since >= SETUP_GRACE_S:
                return True


def _read_end(task: asyncio.Future[None]) -> None:
    if not task.cancelled():
        task.exception()


def _setup_error(task: asyncio.Future[None]) -> bool:
    return not task.cancelled() and isinstance(task.exception(), LinkSetupError)


def _why_it_ended(
    elements: Sequence[ConnectionElement],
    tasks: Sequence[asyncio.Future[None]],
    remote: AmqpRemoteConnection,
) -> str:
    for element, task in zip(elements, tasks, strict=True):
        if task.cancelled():
            continue
        error = task.exception()
        if (error is None or isinstance(error, ConnectionError)) and remote.is_closed:
            break  # the connection's end ended the element: say why the connection ended
        if error is None:
            return f"{element.name}: ended"
        if not isinstance(error, LinkSetupError | ConnectionError):
            log.debug("element %s failed", element.name, exc_info=error)
        return f"{element.name}: {error}"
    return remote.error or "the connection was closed"


def _element_statistics(element: ConnectionElement) -> dict[str, object]:
    try:
        numbers = element.statistics()
    except Exception as exc:  # an element's bug must not break the admin API
        numbers = {"error": str(exc)}
    return {"name": element.name, "type": type(element).__name__, **numbers}
