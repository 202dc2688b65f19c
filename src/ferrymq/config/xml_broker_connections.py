"""`<broker-connections>`: Artemis's AMQP broker connections, read into `broker_connections`.

One reader for both dialects: Artemis's broker.xml (`<core><broker-connections>`) and FerryMQ's
extension of activemq.xml (`<broker><broker-connections>`). Names, defaults and rules are the
ActiveMQ Artemis documentation's ("Broker Connections") and its schema's
(`artemis-configuration.xsd`, `amqp-connectionUriType`). Checked here, so that `check-config`
finds it: every connection has a unique name and a `tcp://`/`amqp://`/`amqps://` host:port URI
(alternates after `#`); `retry-interval` > 0 and `reconnect-attempts` >= -1; a sender,
receiver or peer names exactly one of `address-match` / `queue-name`; at most one mirror per
connection; federation policy names are unique within a connection; and no connection has a
sender and a receiver on the same destination (`check_sender_receiver_loops`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from ferrymq.config.artemis_reading import children, finish
from ferrymq.config.broker_connections import (
    AddressFilter,
    AmqpConnectionConfig,
    BrokerConnectionElement,
    FederationAddressPolicy,
    FederationConfig,
    FederationMatch,
    FederationQueuePolicy,
    MirrorConfig,
    PeerConfig,
    ReceiverConfig,
    SenderConfig,
    advisory_refusals,
)
from ferrymq.config.connection_hosts import ConnectionURIError, check_connection_uri
from ferrymq.config.errors import ConfigError
from ferrymq.config.xml_document import Element, ElementReader, LoadContext

__all__ = ["check_advisories", "check_sender_receiver_loops", "read_broker_connections"]

_NOT_YET: Mapping[str, str] = MappingProxyType(
    {
        "bridge": (
            "Artemis's <bridge> broker-connection element is not supported yet; use <sender> "
            "and <receiver>"
        ),
    }
)
_TRANSFORMER = "Java transformer classes cannot run in FerryMQ"
_LINKS = ("sender", "receiver", "peer")


def read_broker_connections(context: LoadContext, element: Element) -> list[AmqpConnectionConfig]:
    """`<broker-connections>` and its `<amqp-connection>`s, in file order."""
    reader = context.reader(element)
    connections: list[AmqpConnectionConfig] = []
    first_line: dict[str, int] = {}
    for child in children(context, element, {"amqp-connection"}):
        try:
            connection = _connection(context, child)
        except ConfigError as error:
            context.report(error)
            continue
        if connection.name in first_line:
            line = first_line[connection.name]
            message = f"broker connection name {connection.name!r} is used twice (line {line})"
            context.report(context.error(child, message, "name"))
            continue
        first_line[connection.name] = child.line
        connections.append(connection)
    finish(reader)
    return connections


def _connection(context: LoadContext, element: Element) -> AmqpConnectionConfig:
    reader = context.reader(element)
    name = reader.required("name").strip()
    uri = "".join(reader.required("uri").split())
    try:
        check_connection_uri(uri)
    except ConnectionURIError as error:
        several = "#" in uri  # name the host of the list that is wrong
        detail = f"{error.shown}: {error.detail}" if several else error.detail
        raise reader.error(detail, "uri") from None
    retry = reader.integer("retry-interval", 5000, minimum=1)
    attempts = reader.integer("reconnect-attempts", -1, minimum=-1)
    config = AmqpConnectionConfig(
        name=name,
        uri=uri,
        user=reader.optional("user"),
        password=reader.optional("password"),
        retry_interval_ms=retry,
        reconnect_attempts=attempts,
        auto_start=reader.boolean("auto-start", True),
        elements=_elements(context, element),
        location=reader.location(),
    )
    finish(reader)
    return config


def _elements(context: LoadContext, element: Element) -> tuple[BrokerConnectionElement, ...]:
    elements: list[BrokerConnectionElement] = []
    mirror_line: int | None = None
    handled = {"mirror", "federation", *_LINKS}
    for child in children(context, element, handled, refused=_NOT_YET):
        if child.name == "mirror":
            if mirror_line is not None:
                message = f"a connection has one <mirror> (the first is on line {mirror_line})"
                context.report(context.error(child, message))
                continue
            mirror_line = child.line
            elements.append(_mirror(context, child))
        elif child.name == "federation":
            elements.append(_federation(context, child))
        else:
            elements.append(_link(context, child))
    return tuple(elements)


_NOT_DURABLE = (
    "ignored: the mirror queue is always durable, because its events are written in the same "
    "store commit as the send or acknowledgement they reproduce, so that a restart or a crash "
    "loses none of them"
)


def _mirror(context: LoadContext, element: Element) -> MirrorConfig:
    reader = context.reader(element)
    if not reader.boolean("durable", True):
        context.ignore(element, '<mirror durable="false">', _NOT_DURABLE)
    config = MirrorConfig(
        message_acknowledgements=reader.boolean("message-acknowledgements", True),
        queue_creation=reader.boolean("queue-creation", True),
        queue_removal=reader.boolean("queue-removal", True),
        durable=reader.boolean("durable", True),
        sync=reader.boolean("sync", False),
        address_filter=AddressFilter.parse(reader.optional("address-filter")),
        location=reader.location(),
    )
    children(context, element, ())
    finish(reader)
    return config


def _link(context: LoadContext, element: Element) -> SenderConfig | ReceiverConfig | PeerConfig:
    """`<sender>`, `<receiver>` or `<peer>`: exactly one of address-match and queue-name."""
    reader = context.reader(element)
    address_match = _non_empty(reader, "address-match")
    queue_name = _non_empty(reader, "queue-name")
    if (address_match is None) == (queue_name is None):
        raise reader.error('give exactly one of address-match="..." or queue-name="..."')
    name, location = reader.optional("name"), reader.location()
    config: SenderConfig | ReceiverConfig | PeerConfig
    if element.name == "sender":
        config = SenderConfig(address_match, queue_name, name, location)
    elif element.name == "receiver":
        config = ReceiverConfig(address_match, queue_name, name, location)
    else:
        config = PeerConfig(address_match, queue_name, name, location)
    children(context, element, ())
    finish(reader)
    return config


def _non_empty(reader: ElementReader, name: str) -> str | None:
    value = reader.optional(name)
    if value is not None and not value.strip():
        raise reader.error("must not be empty", name)
    return None if value is None else value.strip()


def _federation(context: LoadContext, element: Element) -> FederationConfig:
    reader = context.reader(element)
    local_address: list[FederationAddressPolicy] = []
    remote_address: list[FederationAddressPolicy] = []
    local_queue: list[FederationQueuePolicy] = []
    remote_queue: list[FederationQueuePolicy] = []
    properties: list[tuple[str, str]] = []
    first_line: dict[str, int] = {}
    handled = {
        "local-address-policy",
        "remote-address-policy",
        "local-queue-policy",
        "remote-queue-policy",
        "property",
    }
    for child in children(context, element, handled):
        if child.name == "property":
            properties.append(_property(context, child))
            continue
        policy = (
            _address_policy(context, child)
            if child.name.endswith("address-policy")
            else _queue_policy(context, child)
        )
        if policy.name in first_line:
            line = first_line[policy.name]
            message = f"federation policy name {policy.name!r} is used twice (line {line})"
            context.report(context.error(child, message, "name"))
            continue
        first_line[policy.name] = child.line
        if isinstance(policy, FederationAddressPolicy):
            local = child.name.startswith("local")
            (local_address if local else remote_address).append(policy)
        else:
            (local_queue if child.name.startswith("local") else remote_queue).append(policy)
    finish(reader)
    return FederationConfig(
        local_address_policies=tuple(local_address),
        remote_address_policies=tuple(remote_address),
        local_queue_policies=tuple(local_queue),
        remote_queue_policies=tuple(remote_queue),
        properties=tuple(properties),
        location=reader.location(),
    )


def _policy_parts(
    context: LoadContext, element: Element, queue: bool
) -> tuple[list[FederationMatch], list[FederationMatch], list[tuple[str, str]]]:
    includes: list[FederationMatch] = []
    excludes: list[FederationMatch] = []
    properties: list[tuple[str, str]] = []
    refused = {"transformer": _TRANSFORMER}
    for child in children(context, element, {"include", "exclude", "property"}, refused=refused):
        if child.name == "property":
            properties.append(_property(context, child))
            continue
        match = _match(context, child, queue)
        (includes if child.name == "include" else excludes).append(match)
    return includes, excludes, properties


def _match(context: LoadContext, element: Element, queue: bool) -> FederationMatch:
    reader = context.reader(element)
    if queue:
        address = _non_empty(reader, "address-match") or "#"
        queue_match = _non_empty(reader, "queue-match")
        if queue_match is None:
            raise reader.error("required attribute is missing", "queue-match")
        match = FederationMatch(address, queue_match)
    else:
        match = FederationMatch(reader.required("address-match").strip())
    finish(reader)
    return match


def _address_policy(context: LoadContext, element: Element) -> FederationAddressPolicy:
    reader = context.reader(element)
    includes, excludes, properties = _policy_parts(context, element, queue=False)
    policy = FederationAddressPolicy(
        name=reader.required("name").strip(),
        includes=tuple(includes),
        excludes=tuple(excludes),
        max_hops=reader.integer("max-hops", 0, minimum=0),
        auto_delete=reader.boolean("auto-delete", False),
        auto_delete_delay_ms=reader.integer("auto-delete-delay", 0, minimum=0),
        auto_delete_message_count=reader.integer("auto-delete-message-count", 0, minimum=0),
        enable_divert_bindings=reader.boolean("enable-divert-bindings", False),
        properties=tuple(properties),
        location=reader.location(),
    )
    finish(reader, {"transformer-class-name": _TRANSFORMER})
    return policy


def _queue_policy(context: LoadContext, element: Element) -> FederationQueuePolicy:
    reader = context.reader(element)
    includes, excludes, properties = _policy_parts(context, element, queue=True)
    policy = FederationQueuePolicy(
        name=reader.required("name").strip(),
        includes=tuple(includes),
        excludes=tuple(excludes),
        priority_adjustment=reader.integer("priority-adjustment", -1),
        include_federated=reader.boolean("include-federated", False),
        properties=tuple(properties),
        location=reader.location(),
    )
    finish(reader, {"transformer-class-name": _TRANSFORMER})
    return policy


def _property(context: LoadContext, element: Element) -> tuple[str, str]:
    reader = context.reader(element)
    pair = (reader.required("key"), reader.string("value", ""))
    children(context, element, ())
    finish(reader)
    return pair


def check_advisories(
    context: LoadContext, connections: tuple[AmqpConnectionConfig, ...], advisory_support: bool
) -> None:
    """A `<sender>`, `<receiver>`, `<peer>` or `<federation>` on a broker whose advisories are
    off would never learn a queue or a consumer: an error on each (`advisory_refusals`)."""
    if advisory_support:
        return
    for connection in connections:
        for element, message in advisory_refusals(connection):
            location = element.location or connection.location
            line = None if location is None else location.line
            context.report(ConfigError(context.source, line, "", None, message))


def check_sender_receiver_loops(
    context: LoadContext,
    connections: tuple[AmqpConnectionConfig, ...],
    address_of: Callable[[str], str],
) -> None:
    """A `<sender>` and a `<receiver>` of one connection on the same destination would send
    every message back and forth for ever (the Artemis manual's warning in "Senders and
    Receivers"): an error. Each names a set of addresses: `address-match` the addresses its
    Artemis wildcards match, `queue-name` the address of that queue (`address_of`). Two sets
    that can share an address (the patterns overlap) are the same destination."""
    for connection in connections:
        senders = [e for e in connection.elements if isinstance(e, SenderConfig)]
        receivers = [e for e in connection.elements if isinstance(e, ReceiverConfig)]
        for receiver in receivers:
            for sender in senders:
                if _overlap(_pattern(sender, address_of), _pattern(receiver, address_of)):
                    context.report(_loop_error(context, connection, sender, receiver))


def _pattern(element: SenderConfig | ReceiverConfig, address_of: Callable[[str], str]) -> str:
    if element.address_match is not None:
        return element.address_match
    assert element.queue_name is not None
    return address_of(element.queue_name)


def _loop_error(
    context: LoadContext,
    connection: AmqpConnectionConfig,
    sender: SenderConfig,
    receiver: ReceiverConfig,
) -> ConfigError:
    location = receiver.location or connection.location
    line = None if location is None else location.line
    shown = (
        f'address-match="{receiver.address_match}"'
        if receiver.address_match is not None
        else f'queue-name="{receiver.queue_name}"'
    )
    sender_line = "?" if sender.location is None else sender.location.line
    message = (
        f"a sender (line {sender_line}) and a receiver of broker connection "
        f"{connection.name!r} reach the same destination: messages would loop between the two "
        "brokers for ever (the Artemis manual: do not create a sender and a receiver to the "
        "same destination); remove one, or make their matches disjoint"
    )
    return ConfigError(context.source, line, f"<receiver {shown}>", None, message)


def _overlap(first: str, second: str) -> bool:
    """Whether some address matches both Artemis wildcard patterns (`#` any words, `*` one)."""
    a, b = first.split("."), second.split(".")
    seen: dict[tuple[int, int], bool] = {}

    def meet(i: int, j: int) -> bool:
        key = (i, j)
        if key not in seen:
            seen[key] = False  # a cycle cannot happen: every step consumes a word
            seen[key] = _step(a, b, i, j, meet)
        return seen[key]

    return meet(0, 0)


def _step(a: list[str], b: list[str], i: int, j: int, meet: Callable[[int, int], bool]) -> bool:
    if i == len(a) and j == len(b):
        return True
    if i < len(a) and a[i] == "#":
        return meet(i + 1, j) or (j < len(b) and meet(i, j + 1))
    if j < len(b) and b[j] == "#":
        return meet(i, j + 1) or (i < len(a) and meet(i + 1, j))
    if i == len(a) or j == len(b):
        return False
    return (a[i] == "*" or b[j] == "*" or a[i] == b[j]) and meet(i + 1, j + 1)
