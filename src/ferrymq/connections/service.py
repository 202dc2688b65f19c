"""The broker connections of one broker, started after its listeners and stopped before them.

Built from ``BrokerConfig.broker_connections``: each ``<amqp-connection>`` becomes an
``AmqpBrokerConnection`` whose elements come from ``ELEMENT_FACTORIES``, the one table that says
which code serves which child element. A factory is named by module and function and looked up
when a connection is built, so a kind of element whose code is not there yet fails that one
connection's start with "not served yet" instead of the broker's. Each factory takes the whole
``AmqpConnectionConfig`` and the ``LocalSide`` and returns the elements for the children of its
kinds, in file order.

Management (ActiveMQ Artemis's ``startBrokerConnection``/``stopBrokerConnection``): ``start``
and ``stop`` one connection by name; ``statistics`` lists them all.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from ferrymq.config.broker_connections import (
    AmqpConnectionConfig,
    FederationConfig,
    MirrorConfig,
    PeerConfig,
    ReceiverConfig,
    SenderConfig,
    advisory_refusals,
)
from ferrymq.config.model import BrokerConfig
from ferrymq.connections.api import ConnectionElement, LocalQueueReader, LocalSide
from ferrymq.connections.broker_connection import AmqpBrokerConnection, ConnectionState
from ferrymq.connections.local import (
    BrokerLocalSide,
    NodeIdError,
    keep_node_id,
    mirror_peers_in,
    node_id_for,
)
from ferrymq.connections.remote_address import RemoteURIError
from ferrymq.core.destination import Destination, DestinationType

__all__ = [
    "ELEMENT_FACTORIES",
    "BrokerConnections",
    "BrokerConnectionsError",
    "UnknownBrokerConnectionError",
]

log = logging.getLogger(__name__)

ElementFactory = Callable[[AmqpConnectionConfig, LocalSide], Sequence[ConnectionElement]]

ELEMENT_FACTORIES: Mapping[type, str] = {
    SenderConfig: "ferrymq.connections.peer:link_elements",
    ReceiverConfig: "ferrymq.connections.peer:link_elements",
    PeerConfig: "ferrymq.connections.peer:link_elements",
    MirrorConfig: "ferrymq.connections.mirror:mirror_elements",
    FederationConfig: "ferrymq.connections.federation:federation_elements",
}
"""Element configuration type -> ``module:function`` that builds its elements."""

_TAGS = {
    SenderConfig: "sender",
    ReceiverConfig: "receiver",
    PeerConfig: "peer",
    MirrorConfig: "mirror",
    FederationConfig: "federation",
}


class BrokerConnectionsError(Exception):
    """A broker connection that cannot be built (its uri, the node id file): one line."""

    def __init__(self, what: str, fix: str | None = None) -> None:
        super().__init__(what)
        self.fix = fix


class UnknownBrokerConnectionError(KeyError):
    def __str__(self) -> str:
        return f"no broker connection named {self.args[0]!r}"


class NotServedYetError(Exception):
    """A kind of element whose code this build does not have."""


class _Queue(Protocol):
    @property
    def depth(self) -> int: ...


class _Tap(Protocol):
    def learn_peer(self, name: str, node_id: str) -> None: ...


class _Region(Protocol):
    node_id: str

    @property
    def queues(self) -> Mapping[Destination, _Queue]: ...

    @property
    def mirror(self) -> _Tap: ...


class _Security(Protocol):
    def in_process_login(self, user: str) -> tuple[str, str]: ...


class ServedBroker(Protocol):
    """The parts of ``service.broker.BrokerService`` the broker connections need."""

    broker_id: str

    @property
    def security(self) -> _Security: ...

    @property
    def region(self) -> _Region: ...


def _factory(reference: str) -> ElementFactory:
    module_name, _, function = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
        factory: ElementFactory = getattr(module, function)
    except (ImportError, AttributeError):
        raise NotServedYetError(reference) from None
    return factory


def build_elements(connection: AmqpConnectionConfig, local: LocalSide) -> list[ConnectionElement]:
    """Every element of ``connection``; ``NotServedYetError`` names a kind not served."""
    elements: list[ConnectionElement] = []
    done: set[str] = set()
    for child in connection.elements:
        reference = ELEMENT_FACTORIES.get(type(child))
        if reference is None or reference in done:
            continue
        done.add(reference)
        try:
            factory = _factory(reference)
        except NotServedYetError:
            raise NotServedYetError(f"<{_TAGS[type(child)]}>") from None
        kinds = tuple(kind for kind, ref in ELEMENT_FACTORIES.items() if ref == reference)
        own = tuple(element for element in connection.elements if isinstance(element, kinds))
        elements.extend(factory(replace(connection, elements=own), local))
    return elements


def _check_advisories(config: BrokerConfig) -> None:
    """The loader refuses these with file and line; a configuration built in code is refused
    here, before anything is written to the data directory."""
    if config.advisory_support:
        return
    for connection in config.broker_connections:
        for element, message in advisory_refusals(connection):
            where = element.location or connection.location
            shown = f"{where}: {message}" if where is not None else message
            raise BrokerConnectionsError(shown)


def vm_url(broker_id: str) -> str:
    return f"vm://{broker_id}?create=false"


OpenReader = Callable[[str, int, str | None], LocalQueueReader]
"""``(queue, window, user)`` -> a reader of that local queue in process, which only the
composition root can make (``service.local_consumer``): a mirror's forwarder reads so."""


def _depth(region: _Region, name: str) -> int | None:
    queue = region.queues.get(Destination(DestinationType.QUEUE, name))
    return queue.depth if queue is not None else None


class BrokerConnections:
    """Every ``<amqp-connection>`` of a broker (a service attachment: ``start``/``stop``)."""

    def __init__(
        self,
        configs: Sequence[AmqpConnectionConfig],
        local: LocalSide,
        in_process_login: Callable[[str], tuple[str, str]] | None = None,
    ) -> None:
        """``in_process_login(user)``: the broker's trusted ``vm://`` login for its own
        clients (``BrokerSecurity.in_process_login``); without it the elements log in to their
        broker with the connection's user and password."""
        self.local = local
        self._in_process_login = in_process_login
        self.node_id_error: str | None = None
        """Why the node id file could not be used (the start then fails with it)."""
        self.connections: dict[str, AmqpBrokerConnection] = {}
        for config in configs:
            self.connections[config.name] = self._build(config)

    @classmethod
    def for_service(
        cls, config: BrokerConfig, service: ServedBroker, readers: OpenReader | None = None
    ) -> BrokerConnections:
        """The broker's connections, and its node id set on the region (kept in the broker
        directory when persistent). A node id file that cannot be used fails the start, not
        this: the store reports an unusable data directory first, and better."""
        configs = config.broker_connections
        _check_advisories(config)
        failure = None
        try:
            node_id = node_id_for(
                config.broker_directory if config.persistent else None, keep=False
            )
        except NodeIdError as exc:
            node_id, failure = service.region.node_id, str(exc)
        region = service.region
        region.node_id = node_id
        directory = config.broker_directory if config.persistent and failure is None else None
        peers = mirror_peers_in(directory)
        for mirror, peer in peers.items():  # the tap skips a known peer's own events at once
            region.mirror.learn_peer(mirror, peer)
        local = BrokerLocalSide(
            broker_id=service.broker_id,
            broker_name=config.broker_name,
            node_id=node_id,
            vm_url=vm_url(service.broker_id),
            list_queues=lambda: [d.name for d in region.queues if not d.is_temporary],
            depth_of=lambda name: _depth(region, name),
            learn_peer=region.mirror.learn_peer,
            directory=directory,
            mirror_peers=peers,
            open_reader=readers,
            addresses={
                d.name: d.matched_address
                for d in config.startup_destinations
                if d.kind == "queue" and d.address
            },
        )
        connections = cls(configs, local, service.security.in_process_login)
        if directory is not None:  # written only now: a uri above may have failed the start
            try:
                keep_node_id(directory, node_id)
            except NodeIdError as exc:
                failure = str(exc)
        connections.node_id_error = failure
        return connections

    def _build(self, config: AmqpConnectionConfig) -> AmqpBrokerConnection:
        where = f" ({config.location})" if config.location is not None else ""
        local = self.local
        if isinstance(local, BrokerLocalSide) and local.user is None:
            # The elements act for the broker itself, as Artemis runs them inside it: the
            # connection's user is the remote's and may not exist here.
            user, password = config.user, config.password
            if self._in_process_login is not None:
                user, password = self._in_process_login(f"broker-connection:{config.name}")
            local = replace(local, user=user, password=password)
        try:
            elements = build_elements(config, local)
            unavailable = None
        except NotServedYetError as exc:
            elements = []
            unavailable = f"{exc} is not served yet by this FerryMQ version"
        try:
            connection = AmqpBrokerConnection(config, elements, local)
        except RemoteURIError as exc:
            raise BrokerConnectionsError(
                f"broker connection {config.name}{where}: {exc}", "correct the uri"
            ) from None
        connection.unavailable = unavailable
        return connection

    # ---- lifecycle ----

    async def start(self) -> None:
        if self.node_id_error is not None:
            raise BrokerConnectionsError(self.node_id_error, "check the data directory")
        for connection in self.connections.values():
            if connection.config.auto_start:
                await connection.start()

    async def stop(self) -> None:
        for connection in reversed(list(self.connections.values())):
            await connection.stop()

    # ---- management ----

    def get(self, name: str) -> AmqpBrokerConnection:
        connection = self.connections.get(name)
        if connection is None:
            raise UnknownBrokerConnectionError(name)
        return connection

    async def start_connection(self, name: str) -> dict[str, object]:
        connection = self.get(name)
        await connection.start()
        return connection.statistics()

    async def stop_connection(self, name: str) -> dict[str, object]:
        connection = self.get(name)
        await connection.stop()
        return connection.statistics()

    def statistics(self) -> list[dict[str, object]]:
        return [connection.statistics() for connection in self.connections.values()]

    def states(self) -> dict[str, ConnectionState]:
        return {name: c.state for name, c in self.connections.items()}
