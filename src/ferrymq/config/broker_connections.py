"""The broker-connections slice: Artemis's `<broker-connections><amqp-connection>` and its children.

The same model comes from an Artemis broker.xml (`<configuration><core><broker-connections>`)
and from FerryMQ's extension of activemq.xml (`<broker><broker-connections>`). Names and
defaults are the ActiveMQ Artemis manual's ("Broker Connections") and its schema
(`artemis-configuration.xsd`, type `amqp-connectionUriType`); durations are milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ferrymq.config.errors import Location

__all__ = [
    "MIRROR_QUEUE_PREFIX",
    "AddressFilter",
    "AmqpConnectionConfig",
    "BrokerConnectionElement",
    "FederationAddressPolicy",
    "FederationConfig",
    "FederationMatch",
    "FederationQueuePolicy",
    "MirrorConfig",
    "PeerConfig",
    "ReceiverConfig",
    "SenderConfig",
    "advisory_refusals",
    "connection_endpoints",
]

MIRROR_QUEUE_PREFIX = "$ACTIVEMQ_ARTEMIS_MIRROR_"
"""The store-and-forward queue of a mirror is this prefix plus the connection's name."""

CONNECTION_SCHEMES = ("tcp", "amqp", "amqps")
"""Schemes of an `amqp-connection` URI (`amqps` and the `sslEnabled=true` option mean TLS)."""
_ENDPOINT = re.compile(
    r"(?:(?P<scheme>[A-Za-z][\w+.-]*)://)?(?P<host>\[[^\]]+\]|[^:/?#\[\]\s]+)"
    r":(?P<port>\d+)/?(?:\?(?P<query>[^#]*))?"
)


def connection_endpoints(uri: str) -> tuple[str, ...]:
    """The hosts an `amqp-connection` tries, each as a whole URI: the primary, then the
    alternates listed after `#` (Artemis manual, "Reconnecting and Failover"). An alternate
    without a scheme takes the primary's (`tcp://A:5672#B:5672` gives `tcp://A:5672` and
    `tcp://B:5672`); URI options stay with the host they follow. Raises ValueError saying
    what is wrong."""
    primary, _, alternates = uri.partition("#")
    hosts = [primary, *(alternates.split(",") if alternates else ())]
    endpoints: list[str] = []
    primary_scheme = ""
    for index, text in enumerate(hosts):
        match = _ENDPOINT.fullmatch(text.strip())
        if match is None or (index == 0 and match.group("scheme") is None):
            what = "the URI" if index == 0 else f"alternate {text.strip()!r}"
            raise ValueError(f"{what} is not scheme://host:port[?options] (e.g. tcp://HOST:5672)")
        scheme = (match.group("scheme") or primary_scheme).lower()
        primary_scheme = primary_scheme or scheme
        if scheme not in CONNECTION_SCHEMES:
            served = ", ".join(f"{s}://" for s in CONNECTION_SCHEMES)
            raise ValueError(f"scheme {scheme}:// is not supported (expected {served})")
        if int(match.group("port")) > 65535:
            raise ValueError(f"port {match.group('port')} is out of range (1-65535)")
        query = match.group("query")
        rest = f"{match.group('host')}:{match.group('port')}"
        endpoints.append(f"{scheme}://{rest}" + (f"?{query}" if query else ""))
    return tuple(endpoints)


@dataclass(frozen=True)
class AddressFilter:
    """A mirror's `address-filter`: comma-separated prefixes, `!` marks an exclusion.

    An address matches when no exclusion is a prefix of it and, if there are inclusions, one
    of them is (prefix match only: no wildcards, no word boundaries; exclusion wins).
    """

    includes: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> AddressFilter:
        includes: list[str] = []
        excludes: list[str] = []
        for raw in (text or "").split(","):
            entry = raw.strip()
            if entry.startswith("!"):
                if entry[1:]:
                    excludes.append(entry[1:])
            elif entry:
                includes.append(entry)
        return cls(tuple(includes), tuple(excludes))

    def matches(self, address: str) -> bool:
        if any(address.startswith(prefix) for prefix in self.excludes):
            return False
        return not self.includes or any(address.startswith(prefix) for prefix in self.includes)

    def __str__(self) -> str:
        return ",".join([*self.includes, *(f"!{e}" for e in self.excludes)])


@dataclass(frozen=True)
class MirrorConfig:
    """`<mirror>`: reproduce sends, acks and queue/address events on the target."""

    message_acknowledgements: bool = True
    """`message-acknowledgements`: mirror acks. Default true."""
    queue_creation: bool = True
    """`queue-creation`: mirror address and queue creation. Default true."""
    queue_removal: bool = True
    """`queue-removal`: mirror address and queue deletion. Default true."""
    durable: bool = True
    """`durable`: the mirror queue is durable. Default true."""
    sync: bool = False
    """`sync`: a client's blocking operation (send receipt, ack, commit) waits until the
    target durably applied its event. Default false."""
    address_filter: AddressFilter = field(default_factory=AddressFilter)
    """`address-filter`. Default: every address."""
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class SenderConfig:
    """`<sender>`: each matching local queue is consumed and sent to the remote endpoint (to
    the queue's address), acknowledged locally only after the remote settled."""

    address_match: str | None = None
    """`address-match`: Artemis wildcards (`.` delimiter, `#` any words, `*` one word)."""
    queue_name: str | None = None
    """`queue-name`: one local queue by name."""
    name: str | None = None
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ReceiverConfig:
    """`<receiver>`: for each matching local queue that exists, messages are pulled from the
    remote endpoint's address of the same name and routed to it locally."""

    address_match: str | None = None
    queue_name: str | None = None
    name: str | None = None
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class PeerConfig:
    """`<peer>`: a sender and a receiver per matching queue, as a router's waypoint
    (capability `qd.waypoint`, Apache Qpid Dispatch Router)."""

    address_match: str | None = None
    queue_name: str | None = None
    name: str | None = None
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class FederationMatch:
    """An `<include>` or `<exclude>` of a federation policy (Artemis wildcards)."""

    address_match: str = "#"
    queue_match: str | None = None
    """Queue policies only."""


@dataclass(frozen=True)
class FederationAddressPolicy:
    """`<local-address-policy>` / `<remote-address-policy>`."""

    name: str
    includes: tuple[FederationMatch, ...] = ()
    """Empty: every address."""
    excludes: tuple[FederationMatch, ...] = ()
    max_hops: int = 0
    """`max-hops`: 0 is no limit."""
    auto_delete: bool = False
    auto_delete_delay_ms: int = 0
    auto_delete_message_count: int = 0
    enable_divert_bindings: bool = False
    properties: tuple[tuple[str, str], ...] = ()
    """`<property key value/>` children, in file order."""
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class FederationQueuePolicy:
    """`<local-queue-policy>` / `<remote-queue-policy>`."""

    name: str
    includes: tuple[FederationMatch, ...] = ()
    excludes: tuple[FederationMatch, ...] = ()
    priority_adjustment: int = -1
    """`priority-adjustment`: added to a federation consumer's priority. Default -1."""
    include_federated: bool = False
    """`include-federated`: federation consumers count as demand. Default false."""
    properties: tuple[tuple[str, str], ...] = ()
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class FederationConfig:
    """`<federation>`: demand-driven receivers, local policies here, remote ones sent over."""

    local_address_policies: tuple[FederationAddressPolicy, ...] = ()
    remote_address_policies: tuple[FederationAddressPolicy, ...] = ()
    local_queue_policies: tuple[FederationQueuePolicy, ...] = ()
    remote_queue_policies: tuple[FederationQueuePolicy, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    location: Location | None = field(default=None, compare=False)


BrokerConnectionElement = (
    MirrorConfig | SenderConfig | ReceiverConfig | PeerConfig | FederationConfig
)


@dataclass(frozen=True)
class AmqpConnectionConfig:
    """`<amqp-connection>`: a connection this broker opens to another AMQP 1.0 endpoint."""

    name: str
    """`name`: for management; names the mirror queue. Required."""
    uri: str = field(repr=False)  # may hold a password
    """`uri` as written: `tcp://A:5672?opts#tcp://B:5672,C:5672` (alternates after `#`)."""
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    retry_interval_ms: int = 5000
    """`retry-interval`: fixed wait between attempts. Default 5000."""
    reconnect_attempts: int = -1
    """`reconnect-attempts`: retries after the first attempt; -1 is forever. Default -1."""
    auto_start: bool = True
    """`auto-start`: false waits for the admin API's start. Default true."""
    elements: tuple[BrokerConnectionElement, ...] = ()
    """Children in file order."""
    location: Location | None = field(default=None, compare=False)

    @property
    def mirror(self) -> MirrorConfig | None:
        return next((e for e in self.elements if isinstance(e, MirrorConfig)), None)

    @property
    def mirror_queue(self) -> str:
        return MIRROR_QUEUE_PREFIX + self.name


_ADVISORY_USERS = {
    SenderConfig: "sender",
    ReceiverConfig: "receiver",
    PeerConfig: "peer",
    FederationConfig: "federation",
}
"""The children that learn the local queues (`ActiveMQ.Advisory.Queue`) or consumers
(`ActiveMQ.Advisory.Consumer.>`) from their own broker's advisories; the mirror does not."""


def advisory_refusals(
    connection: AmqpConnectionConfig,
) -> list[tuple[BrokerConnectionElement, str]]:
    """Each child of `connection` that cannot work on a broker with `advisorySupport="false"`,
    with the line that says so: without advisories it would never see a queue or a consumer
    and would silently do nothing. The loader and the runtime refuse the same ones."""
    refusals: list[tuple[BrokerConnectionElement, str]] = []
    for element in connection.elements:
        tag = _ADVISORY_USERS.get(type(element))
        if tag is not None:
            message = (
                f"<{tag}> of broker connection {connection.name!r} needs the broker's advisory "
                f'topics, which advisorySupport="false" turns off (it learns the local queues '
                'and consumers from them): set advisorySupport="true" on <broker>, or keep '
                "only a <mirror> on this broker"
            )
            refusals.append((element, message))
    return refusals
