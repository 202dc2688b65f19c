"""Every broker.xml example of the ActiveMQ Artemis manual's "Broker Connections" chapter loads
(issue 18, item 1), into the model the chapter describes.

Each example is copied as the manual prints it, under the name of the section it comes from. The
manual shows fragments of `<core>`; `load` pastes each where a user pastes it, inside
`<configuration><core>`, and fills in what the manual leaves to the reader: `HOST:PORT` (a
placeholder for the other endpoint) and the `...` lines (the rest of the connection).
"""

from __future__ import annotations

import pytest

from ferrymq.config import BrokerConfig, ConfigError, parse_config
from ferrymq.config.broker_connections import (
    AddressFilter,
    AmqpConnectionConfig,
    FederationConfig,
    FederationMatch,
    MirrorConfig,
    PeerConfig,
    ReceiverConfig,
    SenderConfig,
    connection_endpoints,
)
from ferrymq.config.model import StartupDestination

# "Broker Connections" (the chapter's introduction)
INTRODUCTION = """\
<broker-connections>
...
</broker-connections>
"""

# "AMQP Server Connections"
AMQP_SERVER_CONNECTIONS = """\
<broker-connections>
<amqp-connection uri="tcp://HOST:PORT" name="other-server" retry-interval="100" reconnect-attempts="-1" user="john" password="doe">
...
</amqp-connection>
</broker-connections>
"""  # noqa: E501

# "Reconnecting and Failover"
RECONNECTING_AND_FAILOVER = """\
<broker-connections>
<amqp-connection uri="tcp://ServerA:5672#BackupA:5672,BackupB:5672" name="ServerA" reconnect-attempts="-1" retry-interval="5000">
...
</amqp-connection>
</broker-connections>
"""  # noqa: E501

# "Mirror configuration"
MIRROR_CONFIGURATION = """\
<broker-connections>
<amqp-connection uri="tcp://HOST:PORT" name="mirror">
<mirror/>
</amqp-connection>
</broker-connections>
"""

# "Store and Forward Queue" (the manual spells the outer element without its s)
STORE_AND_FORWARD_QUEUE = """\
<broker-connection>
<amqp-connection uri="tcp://brokerB:5672" name="brokerB">
<mirror/>
</amqp-connection>
</broker-connection>
"""

# "Dual Mirror (Disaster Recovery)", DataCenter1's broker.xml
DUAL_MIRROR_DC1 = """\
<broker-connections>
<amqp-connection uri="tcp://DataCenter2:5672" name="DC2">
<mirror/>
</amqp-connection>
</broker-connections>
"""

# "Dual Mirror (Disaster Recovery)", DataCenter2's broker.xml
DUAL_MIRROR_DC2 = """\
<broker-connections>
<amqp-connection uri="tcp://DataCenter1:5672" name="DC1">
<mirror/>
</amqp-connection>
</broker-connections>
"""

# "Senders and Receivers", using address expressions
SENDERS_RECEIVERS_ADDRESS_EXPRESSIONS = """\
<broker-connections>
<amqp-connection uri="tcp://HOST:PORT" name="other-server">
<sender address-match="queues.#"/>
<!-- notice the local queues for remotequeues.# need to be created on this broker -->
<receiver address-match="remotequeues.#"/>
</amqp-connection>
</broker-connections>
<addresses>
<address name="remotequeues.A">
<anycast>
<queue name="remoteQueueA"/>
</anycast>
</address>
<address name="queues.B">
<anycast>
<queue name="localQueueB"/>
</anycast>
</address>
</addresses>
"""

# "Senders and Receivers", using queue names
SENDERS_RECEIVERS_QUEUE_NAMES = """\
<broker-connections>
<amqp-connection uri="tcp://HOST:PORT" name="other-server">
<receiver queue-name="remoteQueueA"/>
<sender queue-name="localQueueB"/>
</amqp-connection>
</broker-connections>
<addresses>
<address name="remotequeues.A">
<anycast>
<queue name="remoteQueueA"/>
</anycast>
</address>
<address name="queues.B">
<anycast>
<queue name="localQueueB"/>
</anycast>
</address>
</addresses>
"""

# "Peers"
PEERS = """\
<broker-connections>
<amqp-connection uri="tcp://HOST:PORT" name="router">
<peer address-match="queues.#"/>
</amqp-connection>
</broker-connections>
<addresses>
<address name="queues.A">
<anycast>
<queue name="queues.A"/>
</anycast>
</address>
<address name="queues.B">
<anycast>
<queue name="queues.B"/>
</anycast>
</address>
</addresses>
"""

# "Address Consideration"
ADDRESS_CONSIDERATION = """\
<broker-connections>
<amqp-connection uri="tcp://HOST:PORT" name="other-server">
<sender address-match="queues.#"/>
</amqp-connection>
</broker-connections>
<addresses>
<address name="queues.A">
<anycast>
<queue name="distinctNameQueue.A"/>
</anycast>
</address>
</addresses>
"""

# "Federation"
FEDERATION = """\
<broker-connections>
<amqp-connection uri="tcp://HOST:PORT" name="federation-example">
<federation>
<local-address-policy name="example-local-address-policy">
<include address-match="local-address.#" />
<exclude address-match="local-address.excluded" />
</local-address-policy>
<local-queue-policy name="example-local-queue-policy">
<include address-match="address" queue-match="local-queue" />
</local-queue-policy>
<remote-address-policy name="example-remote-address-policy">
<include address-match="remote-address" />
</remote-address-policy>
<remote-queue-policy name="example-remote-queue-policy">
<include address-match="#" queue-match="remote-queue" />
<exclude address-match="excluded.#" queue-match="remote-queue-excluded" />
</remote-queue-policy>
</federation>
</amqp-connection>
</broker-connections>
"""

# "Local and remote address federation"
ADDRESS_FEDERATION = """\
<broker-connections>
<amqp-connection uri="tcp://HOST:PORT" name="federation-example">
<federation>
<local-address-policy name="example-local-address-policy"
auto-delete="false"
auto-delete-delay="1"
auto-delete-message-count="12"
max-hops="1"
enable-divert-bindings="true">
<include address-match="local-address.#" />
<exclude address-match="local-address.excluded" />
</local-address-policy>
</federation>
</amqp-connection>
</broker-connections>
"""

# "Local and remote queue federation"
QUEUE_FEDERATION = """\
<broker-connections>
<amqp-connection uri="tcp://HOST:PORT" name="federation-example">
<federation>
<local-queue-policy name="example-local-queue-policy">
<include address-match="#" queue-match="remote-queue" />
<exclude address-match="excluded.#" queue-match="remote-queue-excluded" />
</local-queue-policy>
</federation>
</amqp-connection>
</broker-connections>
"""

EXAMPLES = {
    "introduction": INTRODUCTION,
    "amqp-server-connections": AMQP_SERVER_CONNECTIONS,
    "reconnecting-and-failover": RECONNECTING_AND_FAILOVER,
    "mirror-configuration": MIRROR_CONFIGURATION,
    "store-and-forward-queue": STORE_AND_FORWARD_QUEUE,
    "dual-mirror-dc1": DUAL_MIRROR_DC1,
    "dual-mirror-dc2": DUAL_MIRROR_DC2,
    "senders-receivers-address-expressions": SENDERS_RECEIVERS_ADDRESS_EXPRESSIONS,
    "senders-receivers-queue-names": SENDERS_RECEIVERS_QUEUE_NAMES,
    "peers": PEERS,
    "address-consideration": ADDRESS_CONSIDERATION,
    "federation": FEDERATION,
    "address-federation": ADDRESS_FEDERATION,
    "queue-federation": QUEUE_FEDERATION,
}
PEER = "127.0.0.1:5672"


def load(fragment: str) -> BrokerConfig:
    """The fragment pasted into `<configuration><core>`, its placeholders filled in."""
    lines = [line for line in fragment.splitlines() if line.strip() != "..."]
    body = "\n".join(lines).replace("HOST:PORT", PEER)
    document = (
        '<configuration xmlns="urn:activemq">\n'
        f'<core xmlns="urn:activemq:core">\n{body}\n</core>\n</configuration>\n'
    )
    return parse_config(document, "broker.xml")


def only(config: BrokerConfig) -> AmqpConnectionConfig:
    (connection,) = config.broker_connections
    return connection


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_example_loads(name: str) -> None:
    config = load(EXAMPLES[name])
    assert config.broker_name == "localhost"
    for connection in config.broker_connections:
        assert connection_endpoints(connection.uri)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_bare_fragment_says_where_it_belongs(name: str) -> None:
    fragment = EXAMPLES[name].replace("HOST:PORT", PEER).replace("...", "")
    if "<addresses>" in fragment:  # two roots: not a document at all
        fragment = fragment.split("<addresses>")[0]
    with pytest.raises(ConfigError) as caught:
        parse_config(fragment, "fragment.xml")
    assert caught.value.line == 1
    assert "put it inside <configuration><core>" in str(caught.value)


def test_introduction_is_an_empty_list_of_connections() -> None:
    assert load(INTRODUCTION).broker_connections == ()


def test_amqp_server_connection_attributes_and_defaults() -> None:
    connection = only(load(AMQP_SERVER_CONNECTIONS))
    assert (connection.name, connection.uri) == ("other-server", f"tcp://{PEER}")
    assert (connection.user, connection.password) == ("john", "doe")
    assert (connection.retry_interval_ms, connection.reconnect_attempts) == (100, -1)
    assert connection.auto_start is True
    assert connection.elements == ()
    assert "doe" not in repr(connection)


def test_reconnecting_and_failover_alternates() -> None:
    connection = only(load(RECONNECTING_AND_FAILOVER))
    assert connection.name == "ServerA"
    assert (connection.retry_interval_ms, connection.reconnect_attempts) == (5000, -1)
    assert connection_endpoints(connection.uri) == (
        "tcp://ServerA:5672",
        "tcp://BackupA:5672",
        "tcp://BackupB:5672",
    )


@pytest.mark.parametrize(
    ("example", "name", "host"),
    [
        (MIRROR_CONFIGURATION, "mirror", f"tcp://{PEER}"),
        (STORE_AND_FORWARD_QUEUE, "brokerB", "tcp://brokerB:5672"),
        (DUAL_MIRROR_DC1, "DC2", "tcp://DataCenter2:5672"),
        (DUAL_MIRROR_DC2, "DC1", "tcp://DataCenter1:5672"),
    ],
)
def test_mirrors_take_the_defaults(example: str, name: str, host: str) -> None:
    connection = only(load(example))
    assert (connection.name, connection.uri) == (name, host)
    # The defaults of "AMQP Server Connections" and "Mirror configuration".
    assert (connection.retry_interval_ms, connection.reconnect_attempts) == (5000, -1)
    assert connection.auto_start is True
    assert connection.elements == (MirrorConfig(),)
    mirror = connection.mirror
    assert mirror is not None
    assert mirror.queue_removal
    assert mirror.message_acknowledgements
    assert mirror.queue_creation
    assert mirror.durable
    assert not mirror.sync
    assert mirror.address_filter == AddressFilter()
    assert connection.mirror_queue == f"$ACTIVEMQ_ARTEMIS_MIRROR_{name}"


def test_store_and_forward_spelling_is_read_with_a_warning() -> None:
    config = load(STORE_AND_FORWARD_QUEUE)
    (warning,) = config.ignored
    assert warning.element == "<broker-connection>"
    assert "read as <broker-connections>" in warning.reason


def _queues(config: BrokerConfig) -> dict[str, str]:
    return {d.name: d.matched_address for d in config.startup_destinations if d.kind == "queue"}


def test_senders_and_receivers_by_address_expression() -> None:
    config = load(SENDERS_RECEIVERS_ADDRESS_EXPRESSIONS)
    connection = only(config)
    sender, receiver = connection.elements
    assert isinstance(sender, SenderConfig)
    assert sender.address_match == "queues.#"
    assert isinstance(receiver, ReceiverConfig)
    assert receiver.address_match == "remotequeues.#"
    assert sender.queue_name is None
    assert receiver.queue_name is None
    assert _queues(config) == {"remoteQueueA": "remotequeues.A", "localQueueB": "queues.B"}


def test_senders_and_receivers_by_queue_name() -> None:
    config = load(SENDERS_RECEIVERS_QUEUE_NAMES)
    receiver, sender = only(config).elements
    assert receiver == ReceiverConfig(queue_name="remoteQueueA")
    assert sender == SenderConfig(queue_name="localQueueB")
    assert _queues(config) == {"remoteQueueA": "remotequeues.A", "localQueueB": "queues.B"}
    # The queue and address names differ: said once per queue ("Address Consideration").
    assert [w.element for w in config.ignored] == [
        '<address name="remotequeues.A"> <queue name="remoteQueueA">',
        '<address name="queues.B"> <queue name="localQueueB">',
    ]


def test_peers() -> None:
    config = load(PEERS)
    connection = only(config)
    assert connection.name == "router"
    assert connection.elements == (PeerConfig(address_match="queues.#"),)
    assert config.startup_destinations == (
        StartupDestination("queue", "queues.A", "queues.A"),
        StartupDestination("queue", "queues.B", "queues.B"),
    )
    assert config.ignored == ()


def test_address_consideration_keeps_the_address_of_a_distinct_queue() -> None:
    config = load(ADDRESS_CONSIDERATION)
    assert only(config).elements == (SenderConfig(address_match="queues.#"),)
    assert _queues(config) == {"distinctNameQueue.A": "queues.A"}
    (warning,) = config.ignored
    assert "recommends equal names" in warning.reason


def _federation(config: BrokerConfig) -> FederationConfig:
    (federation,) = only(config).elements
    assert isinstance(federation, FederationConfig)
    return federation


def test_federation_policies() -> None:
    federation = _federation(load(FEDERATION))
    (local_address,) = federation.local_address_policies
    assert local_address.name == "example-local-address-policy"
    assert local_address.includes == (FederationMatch("local-address.#"),)
    assert local_address.excludes == (FederationMatch("local-address.excluded"),)
    assert (local_address.max_hops, local_address.auto_delete) == (0, False)
    (local_queue,) = federation.local_queue_policies
    assert local_queue.includes == (FederationMatch("address", "local-queue"),)
    assert (local_queue.priority_adjustment, local_queue.include_federated) == (-1, False)
    (remote_address,) = federation.remote_address_policies
    assert remote_address.includes == (FederationMatch("remote-address"),)
    (remote_queue,) = federation.remote_queue_policies
    assert remote_queue.includes == (FederationMatch("#", "remote-queue"),)
    assert remote_queue.excludes == (FederationMatch("excluded.#", "remote-queue-excluded"),)


def test_address_federation_attributes() -> None:
    (policy,) = _federation(load(ADDRESS_FEDERATION)).local_address_policies
    assert policy.auto_delete is False
    assert (policy.auto_delete_delay_ms, policy.auto_delete_message_count) == (1, 12)
    assert (policy.max_hops, policy.enable_divert_bindings) == (1, True)
    assert len(policy.includes) == len(policy.excludes) == 1


def test_queue_federation() -> None:
    federation = _federation(load(QUEUE_FEDERATION))
    (policy,) = federation.local_queue_policies
    assert policy.name == "example-local-queue-policy"
    assert policy.includes == (FederationMatch("#", "remote-queue"),)
    assert policy.excludes == (FederationMatch("excluded.#", "remote-queue-excluded"),)
    assert federation.local_address_policies == ()
    assert federation.remote_queue_policies == ()


@pytest.mark.parametrize(
    ("text", "matched", "not_matched"),
    [
        # "Mirror configuration", the address-filter examples
        ("eu", ["eu", "eu.uk", "europe"], ["us", "e"]),
        ("!eu", ["us", "uk.eu", "e"], ["eu", "eu.uk", "europe"]),
        ("eu.uk,eu.de", ["eu.uk", "eu.uk.london", "eu.de"], ["eu", "eu.fr", "us"]),
        ("eu,!eu.uk", ["eu", "eu.de", "europe"], ["eu.uk", "eu.uk.london", "us"]),
    ],
)
def test_mirror_address_filter_examples(
    text: str, matched: list[str], not_matched: list[str]
) -> None:
    fragment = MIRROR_CONFIGURATION.replace("<mirror/>", f'<mirror address-filter="{text}"/>')
    mirror = only(load(fragment)).mirror
    assert mirror is not None
    assert str(mirror.address_filter) == text
    assert [a for a in matched + not_matched if mirror.address_filter.matches(a)] == matched
