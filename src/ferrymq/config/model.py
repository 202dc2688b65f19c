"""The typed configuration of one broker: `BrokerConfig` and the slices it hands to components.

Every class is a frozen dataclass. Each component receives only its slice (a transport
connector its `TransportConnectorConfig`, the store its `PersistenceConfig`), never the whole
`BrokerConfig`. Field docstrings give the activemq.xml name and the default, which is ActiveMQ
5.17.2's unless marked "FerryMQ". Sizes are bytes, durations milliseconds (`_ms`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ferrymq.config.bridge import JmsConnectorConfig
from ferrymq.config.broker_connections import AmqpConnectionConfig
from ferrymq.config.errors import Location
from ferrymq.config.network import NetworkConnectorConfig
from ferrymq.config.persistence import KahaDBConfig, PersistenceConfig
from ferrymq.config.policy import PolicyEntry, PolicyMap, RedeliveryPluginConfig
from ferrymq.config.security import SecurityConfig
from ferrymq.config.tls import SslContextConfig
from ferrymq.util.uri import URI, AnyURI, redact_url

__all__ = [
    "AdminConfig",
    "BrokerConfig",
    "IgnoredElement",
    "ManagementContextConfig",
    "MasterConnectorConfig",
    "MessageTraceConfig",
    "ServicesConfig",
    "StartupDestination",
    "StompLimitsConfig",
    "SystemUsageConfig",
    "TransportConnectorConfig",
]


@dataclass(frozen=True)
class StompLimitsConfig:
    """STOMP limits of one listener, from `wireFormat.*` / `transport.*` options on its URI."""

    max_data_length: int = 104857600
    """`wireFormat.maxDataLength`: largest body in bytes. Default 104857600 (100 MiB)."""
    max_frame_size: int | None = None
    """`wireFormat.maxFrameSize`: largest whole frame in bytes. Default None (Long.MAX: none)."""
    hb_grace_period_multiplier: float = 1.0
    """`transport.hbGracePeriodMultiplier`: read timeout = client heart-beat x this. Default 1.0."""
    default_heart_beat: tuple[int, int] = (0, 0)
    """`transport.defaultHeartBeat` ("cx,cy") for clients that send no heart-beat header."""


@dataclass(frozen=True)
class AmqpOptionsConfig:
    """AMQP 1.0 options of one listener (ActiveMQ's `wireFormat.*` names for its AMQP transport)."""

    idle_timeout_ms: int = 30000
    """`wireFormat.idleTimeout`: a client that sends nothing for this long is closed; it is
    asked to send at least every half of it. Default 30000; 0 turns it off."""
    producer_credit: int = 1000
    """`wireFormat.producerCredit`: the credit each producer link is granted. Default 1000."""
    max_amqp_frame_size: int = 1048576
    """`wireFormat.maxAmqpFrameSize`: the largest AMQP frame; a larger message travels in
    several. Default 1048576 (1 MiB)."""


@dataclass(frozen=True)
class TransportConnectorConfig:
    """One `<transportConnector>`: a listener. `tcp://` and `stomp://` both speak STOMP."""

    uri: str = field(repr=False)  # may hold a password; repr shows `parsed_uri`, redacted
    """`uri` as written, e.g. `tcp://0.0.0.0:61616?maximumConnections=1000`. Required."""
    parsed_uri: URI
    """`uri` parsed: scheme, host, port and query options."""
    name: str | None = None
    """`name`. Default None: the URI names the connector."""
    discovery_uri: AnyURI | None = None
    """`discoveryUri`: advertise this listener through a discovery agent (`multicast://default`)."""
    update_cluster_clients: bool = False
    """`updateClusterClients`: tell failover clients about peer brokers. Default false."""
    rebalance_cluster_clients: bool = False
    """`rebalanceClusterClients`: ask clients to spread over the cluster. Default false."""
    update_cluster_clients_on_remove: bool = False
    """`updateClusterClientsOnRemove`: also update clients when a peer leaves. Default false."""
    update_cluster_filter: tuple[str, ...] = ()
    """`updateClusterFilter`: comma-separated regular expressions matched against whole peer
    broker names; only matching peers are announced. Default: all peers."""
    maximum_connections: int = 2147483647
    """`?maximumConnections=` URI option. Default Integer.MAX_VALUE (ActiveMQ's sample file sets
    1000)."""
    allow_link_stealing: bool = False
    """`allowLinkStealing`: a new connection with a client id in use closes the old one."""
    audit_network_producers: bool = False
    """`auditNetworkProducers`: drop duplicate persistent messages arriving over bridges."""
    enable_status_monitor: bool = False
    """`enableStatusMonitor`. Default false."""
    maximum_producers_allowed_per_connection: int = 2147483647
    """`maximumProducersAllowedPerConnection`. Default Integer.MAX_VALUE."""
    maximum_consumers_allowed_per_connection: int = 2147483647
    """`maximumConsumersAllowedPerConnection`. Default Integer.MAX_VALUE."""
    stomp: StompLimitsConfig = field(default_factory=StompLimitsConfig)
    """STOMP limits from the URI's `wireFormat.*` and `transport.*` options (on an AMQP
    listener, `wireFormat.maxFrameSize`/`maxDataLength` bound a whole message)."""
    amqp: AmqpOptionsConfig = field(default_factory=AmqpOptionsConfig)
    """AMQP options from the URI's `wireFormat.*` options."""
    location: Location | None = field(default=None, compare=False)

    @property
    def scheme(self) -> str:
        return self.parsed_uri.scheme

    @property
    def host(self) -> str:
        return self.parsed_uri.host or ""

    @property
    def port(self) -> int:
        return self.parsed_uri.port if self.parsed_uri.port is not None else 0

    @property
    def options(self) -> Mapping[str, str]:
        return self.parsed_uri.query

    @property
    def display_name(self) -> str:
        return self.name or redact_url(self.uri)


@dataclass(frozen=True)
class MasterConnectorConfig:
    """`<services><masterConnector>` or the broker's `masterConnectorURI`: this broker is the
    slave of a pure master/slave pair and replicates from the master (seed 002 chapter 4)."""

    remote_uri: str = field(repr=False)  # ssl:// options may hold keyStorePassword
    """`remoteURI` (or `masterConnectorURI`): the master's transport connector."""
    user_name: str | None = None
    """`userName`, when the master requires authentication."""
    password: str | None = field(default=None, repr=False)
    """`password`."""
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ServicesConfig:
    """Pure master/slave settings: `<services>` and the broker attributes of seed 002."""

    master_connector: MasterConnectorConfig | None = None
    """Set on the slave of a pure master/slave pair."""
    wait_for_slave: bool = False
    """`waitForSlave` (master): finish start-up only once a slave is attached. Default false."""
    shutdown_on_slave_failure: bool = False
    """`shutdownOnSlaveFailure` (master): stop when the slave is lost. Default false."""
    shutdown_on_master_failure: bool = False
    """`shutdownOnMasterFailure` (slave): stop instead of taking over. Default false."""


@dataclass(frozen=True)
class SystemUsageConfig:
    """`<systemUsage>`: memory, store and temporary-store limits, and what a full broker does."""

    memory_limit: int = 512 << 20
    """`<memoryUsage limit>` in bytes. Default FerryMQ 512 MiB: a Python broker has no JVM heap
    to take a share of; ActiveMQ's packaged file gives 70% of its 1 GiB heap, about 700 MiB,
    and FerryMQ's figure counts its own message objects (see core/message.py)."""
    memory_percent_of_ram: int | None = None
    """`<memoryUsage percentOfJvmHeap>`: FerryMQ has no JVM heap, so this is read as a percent of
    physical RAM and replaces memory_limit (see `effective_memory_limit`)."""
    store_limit: int = 100 << 30
    """`<storeUsage limit>` in bytes. Default 100 GiB."""
    temp_limit: int = 50 << 30
    """`<tempUsage limit>` in bytes. Default 50 GiB."""
    send_fail_if_no_space: bool = False
    """`sendFailIfNoSpace`: refuse a send when full instead of blocking the producer."""
    send_fail_if_no_space_after_timeout_ms: int | None = None
    """`sendFailIfNoSpaceAfterTimeout`: block this long, then refuse. Default None (block)."""
    location: Location | None = field(default=None, compare=False)

    def effective_memory_limit(self, physical_ram_bytes: int) -> int:
        """The memory limit in bytes, given the machine's RAM (for percentOfJvmHeap)."""
        if self.memory_percent_of_ram is None:
            return self.memory_limit
        return physical_ram_bytes * self.memory_percent_of_ram // 100


@dataclass(frozen=True)
class AdminConfig:
    """FerryMQ's HTTP admin API (JSON, Prometheus `/metrics`). ActiveMQ's Jetty console is not
    read from activemq.xml; a `WebConsolePort` bean (host, port) is honoured if present."""

    enabled: bool = True
    """Serve the admin API. Default true."""
    host: str = "127.0.0.1"
    """Address to bind. Default 127.0.0.1 (local only)."""
    port: int = 8161
    """Port to bind (0 picks a free one). Default 8161."""
    tls: bool = False
    """FerryMQ: serve HTTPS with the broker's `<sslContext>` key (`--admin https://HOST:PORT`).
    Default false."""
    admin_group: str = "admins"
    """FerryMQ: with authentication configured, the group whose members may use the write
    operations (`ferrymq broker --admin-group`); any user may read. Default `admins`."""
    metrics_open: bool = False
    """FerryMQ: serve `/metrics` without a login even with authentication configured
    (`ferrymq broker --admin-open-metrics`). Default false."""


@dataclass(frozen=True)
class ManagementContextConfig:
    """`<managementContext>`: JMX settings. FerryMQ has no JMX (the admin API replaces it); this is
    kept only so the broker can say so."""

    create_connector: bool = True
    """`createConnector`. Default true."""
    connector_port: int = 1099
    """`connectorPort`. Default 1099."""
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class MessageTraceConfig:
    """FerryMQ: the message trace that `ferrymq audit` reads, one JSON line per message event
    (`<plugins><messageTracePlugin>` or `ferrymq broker --trace DIR`). Off unless configured."""

    directory: Path
    """`directory`: where this broker's trace files go (created if missing; several brokers may
    share one). Required."""
    max_file_size: int = 64 << 20
    """`maxFileSize`: a file is closed and the next begun once it passes this many bytes.
    Default 64 MiB."""
    max_files: int = 0
    """`maxFiles`: keep at most this many files of one broker run, deleting the oldest first;
    0 keeps them all. Default 0."""
    max_queued_records: int = 262144
    """`maxQueuedRecords`: records waiting for the writer thread; past this the broker drops
    records rather than wait, and the trace says how many (a `gap` record). Default 262144."""
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class StartupDestination:
    """A destination the broker creates when it starts (Artemis's `<addresses>` in broker.xml),
    so that it exists before any client uses it: a queue, or a topic with the durable
    subscriptions it keeps while nobody is subscribed (docs/artemis-config.md)."""

    kind: Literal["queue", "topic"]
    name: str
    """The queue's or topic's name (an anycast `<queue name>`, a multicast `<address name>`)."""
    address: str | None = None
    """The Artemis `<address name>` a queue was declared under (equal to `name` as the manual
    recommends, or not): what a broker connection's `address-match` matches. None: `name`."""
    subscriptions: tuple[tuple[str, str], ...] = ()
    """A topic's durable subscriptions as (client id, subscription name)."""
    location: Location | None = field(default=None, compare=False)

    @property
    def matched_address(self) -> str:
        return self.address if self.address is not None else self.name


@dataclass(frozen=True)
class IgnoredElement:
    """Something the file holds that FerryMQ accepts but does not act on, and why."""

    location: Location
    element: str
    """The opening tag, e.g. `<bean class="...PropertyPlaceholderConfigurer">`."""
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: {self.element}: {self.reason}"


@dataclass(frozen=True)
class BrokerConfig:
    """The `<broker>` element and everything under it."""

    broker_name: str = "localhost"
    """`brokerName`: unique per network; names the store directory. Default "localhost"."""
    broker_id: str | None = None
    """`brokerId`: unique across the network. Default None: generated at start."""
    persistent: bool = True
    """`persistent`: false keeps every message in memory (and ignores `<persistenceAdapter>`)."""
    data_directory: Path = Path("data")
    """`dataDirectory`. Default FerryMQ "data" (ActiveMQ: "activemq-data"). The SQLite store lives
    in `<data_directory>/<broker_name>/` unless a kahaDB directory is given."""
    use_jmx: bool = True
    """`useJmx`. Ignored: FerryMQ has no JMX; the admin API serves the same information."""
    advisory_support: bool = True
    """`advisorySupport`: publish ActiveMQ.Advisory.* topics (networks need it). Default true."""
    scheduler_support: bool = False
    """`schedulerSupport`: enable scheduled (delayed) delivery. Default false."""
    scheduler_directory: Path | None = None
    """`schedulerDirectory`. Default None: `<data_directory>/<broker_name>/scheduler`."""
    start: bool = True
    """`start`: ActiveMQ starts the broker when its Spring context loads; `ferrymq broker` starts
    the broker it is given either way, and embedding code may honour this flag."""
    use_shutdown_hook: bool = True
    """`useShutdownHook`: stop cleanly on SIGTERM/SIGINT. Default true."""
    delete_all_messages_on_startup: bool = False
    """`deleteAllMessagesOnStartup`: empty the store at start. Default false."""
    network_connector_start_async: bool = False
    """`networkConnectorStartAsync`: start network connectors without waiting. Default false."""
    use_virtual_dest_subs: bool = False
    """`useVirtualDestSubs`. Default false."""
    bean_id: str | None = None
    """The `<broker id>` Spring bean id (no effect)."""
    transport_connectors: tuple[TransportConnectorConfig, ...] = ()
    """`<transportConnectors>`, in file order."""
    network_connectors: tuple[NetworkConnectorConfig, ...] = ()
    """`<networkConnectors>`, in file order."""
    persistence: PersistenceConfig | None = field(default_factory=KahaDBConfig)
    """`<persistenceAdapter>`. None: messages live in memory (persistent=false or
    `<memoryPersistenceAdapter>`). Default: kahaDB (SQLite) in the default directory."""
    system_usage: SystemUsageConfig = field(default_factory=SystemUsageConfig)
    """`<systemUsage>`."""
    destination_policy: PolicyMap = field(default_factory=PolicyMap)
    """`<destinationPolicy>`: use `policy_for` to look an entry up."""
    redelivery_policies: RedeliveryPluginConfig | None = None
    """`<plugins><redeliveryPlugin>`. Default None: no broker-side redelivery delay."""
    message_trace: MessageTraceConfig | None = None
    """FerryMQ `<plugins><messageTracePlugin>`. Default None: no message trace."""
    security: SecurityConfig | None = None
    """`<plugins>`' authentication and authorization plugins (docs/security.md). Default None:
    any login is accepted and everything is allowed."""
    services: ServicesConfig = field(default_factory=ServicesConfig)
    """Pure master/slave: `<services><masterConnector>` and the broker attributes."""
    jms_bridge_connectors: tuple[JmsConnectorConfig, ...] = ()
    """`<jmsBridgeConnectors>`, in file order."""
    broker_connections: tuple[AmqpConnectionConfig, ...] = ()
    """Artemis's `<broker-connections>` (broker.xml, or FerryMQ's extension of activemq.xml):
    AMQP connections this broker opens (mirror, sender, receiver, peer, federation)."""
    startup_destinations: tuple[StartupDestination, ...] = ()
    """Destinations created at start (Artemis's `<addresses>`), in file order. Default none:
    FerryMQ creates a destination on first use."""
    management_context: ManagementContextConfig | None = None
    """`<managementContext>`, if given (JMX; not supported)."""
    admin: AdminConfig = field(default_factory=AdminConfig)
    """FerryMQ's admin API listener."""
    ssl_context: SslContextConfig | None = None
    """`<sslContext>`: key material of the TLS listeners and the HTTPS admin API. Default
    None: no TLS listener can start."""
    duplicate_window: int = 65536
    """FerryMQ: how many recent producer message ids per producer the broker remembers to drop
    duplicate sends (after failover). Default 65536."""
    ignored: tuple[IgnoredElement, ...] = ()
    """What the loader accepted without acting on it (reported by `pending_features`)."""
    source: str | None = None
    """The file this came from, for messages. None for a configuration built in code."""
    location: Location | None = field(default=None, compare=False)
    """Where the `<broker>` element is."""

    def policy_for(self, destination_is_topic: bool, name: str) -> PolicyEntry:
        """The destination policy entry for a queue or topic."""
        return self.destination_policy.policy_for(destination_is_topic, name)

    @property
    def broker_directory(self) -> Path:
        """`<data_directory>/<broker_name>`: default home of the store and the scheduler."""
        return self.data_directory / self.broker_name

    @property
    def store_directory(self) -> Path | None:
        """Where the embedded store lives, or None for memory and database stores."""
        if self.persistent and isinstance(self.persistence, KahaDBConfig):
            return self.persistence.directory or self.broker_directory
        return None
