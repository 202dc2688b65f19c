"""`<networkConnectors>` (seed 001 chapters 1-3, seed 002 chapter 2, reference section 4.1)."""

from __future__ import annotations

from typing import Literal

from ferrymq.config.network import DestinationRef, NetworkConnectorConfig
from ferrymq.config.xml_document import Element, ElementReader, LoadContext
from ferrymq.util.uri import AnyURI, CompositeURI

__all__ = ["DISCOVERY_AGENT_SCHEMES", "read_destinations", "read_network_connectors"]

DISCOVERY_AGENT_SCHEMES = frozenset(
    {"static", "simple", "masterslave", "multicast", "zeroconf", "rendezvous", "fabric"}
)
"""What a network connector's uri may start with: a discovery agent (reference section 3.1)."""

_FILTERS = {
    "dynamicallyIncludedDestinations": "dynamically_included_destinations",
    "excludedDestinations": "excluded_destinations",
    "staticallyIncludedDestinations": "statically_included_destinations",
    "durableDestinations": "durable_destinations",
}


def read_network_connectors(context: LoadContext, element: Element) -> list[NetworkConnectorConfig]:
    """The connectors in file order; names must be unique (seed 002: "you must set the name")."""
    reader = context.reader(element)
    connectors: list[NetworkConnectorConfig] = []
    first_line: dict[str, int] = {}
    for child in reader.children({"networkConnector"}):
        connector = _connector(context, child)
        if connector.name in first_line:
            message = (
                f"network connector name {connector.name!r} is used twice (first on line "
                f"{first_line[connector.name]}); give each connector a unique name"
            )
            raise context.error(child, message, "name")
        first_line[connector.name] = child.line
        connectors.append(connector)
    reader.finish()
    return connectors


def _connector(context: LoadContext, element: Element) -> NetworkConnectorConfig:
    reader = context.reader(element)
    uri = reader.uri("uri", "a discovery URI such as static:(tcp://host:61616)")
    if uri is None:
        raise reader.error("required attribute is missing", "uri")
    _check_agent(reader, uri[1])
    network_ttl = reader.optional_integer("networkTTL", minimum=-1)
    default_ttl = 1 if network_ttl is None else network_ttl
    filters: dict[str, tuple[DestinationRef, ...]] = {}
    for name, child in reader.single_children(_FILTERS).items():
        filters[_FILTERS[name]] = tuple(read_destinations(context, child))
    seed = reader.optional_boolean("useBrokerNamesAsIdSeed")
    misspelt_seed = reader.optional_boolean("useBrokerNameAsIdSees")  # ActiveMQ's setter name
    config = NetworkConnectorConfig(
        uri=uri[0],
        parsed_uri=uri[1],
        name=reader.string("name", "NC"),
        network_ttl=default_ttl,
        message_ttl=reader.integer("messageTTL", default_ttl, minimum=-1),
        consumer_ttl=reader.integer("consumerTTL", default_ttl, minimum=-1),
        conduit_subscriptions=reader.boolean("conduitSubscriptions", True),
        conduit_network_queue_subscriptions=reader.boolean(
            "conduitNetworkQueueSubscriptions", False
        ),
        dynamic_only=reader.boolean("dynamicOnly", False),
        decrease_network_consumer_priority=reader.boolean("decreaseNetworkConsumerPriority", False),
        consumer_priority_base=reader.integer("consumerPriorityBase", -5),
        suppress_duplicate_queue_subscriptions=reader.boolean(
            "suppressDuplicateQueueSubscriptions", False
        ),
        suppress_duplicate_topic_subscriptions=reader.boolean(
            "suppressDuplicateTopicSubscriptions", True
        ),
        bridge_temp_destinations=reader.boolean("bridgeTempDestinations", True),
        duplex=reader.boolean("duplex", False),
        prefetch_size=reader.integer("prefetchSize", 1000, minimum=1),
        advisory_prefetch_size=reader.integer("advisoryPrefetchSize", 0, minimum=0),
        advisory_ack_percentage=reader.integer("advisoryAckPercentage", 75, minimum=1),
        always_sync_send=reader.boolean("alwaysSyncSend", True),
        static_bridge=reader.boolean("staticBridge", False),
        destination_filter=reader.optional("destinationFilter"),
        use_virtual_dest_subs=reader.boolean("useVirtualDestSubs", False),
        sync_durable_subs=reader.boolean("syncDurableSubs", False),
        dispatch_async=reader.boolean("dispatchAsync", True),
        advisory_for_failed_forward=reader.boolean("advisoryForFailedForward", False),
        check_duplicate_messages_on_duplex=reader.boolean("checkDuplicateMessagesOnDuplex", False),
        use_compression=reader.boolean("useCompression", False),
        use_broker_names_as_id_seed=next((v for v in (seed, misspelt_seed) if v is not None), True),
        gc_destination_views=reader.boolean("gcDestinationViews", True),
        gc_sweep_time_ms=reader.integer("gcSweepTime", 60000, minimum=1),
        user_name=reader.optional("userName"),
        password=reader.optional("password"),
        remote_user_name=reader.optional("remoteUserName"),
        remote_password=reader.optional("remotePassword"),
        client_id_token=reader.string("clientIdToken", "_"),
        broker_name=reader.optional("brokerName"),
        broker_url=reader.optional("brokerURL"),
        location=reader.location(),
        **filters,
    )
    reader.finish()
    if not config.name.strip():
        raise reader.error("a network connector name must not be empty", "name")
    return config


def _check_agent(reader: ElementReader, uri: AnyURI) -> None:
    scheme = uri.scheme.lower()
    if scheme not in DISCOVERY_AGENT_SCHEMES:
        accepted = ", ".join(sorted(DISCOVERY_AGENT_SCHEMES))
        message = f"a network connector needs a discovery agent URI ({accepted}), not {scheme}:"
        raise reader.error(message, "uri")
    if scheme in ("static", "simple", "masterslave"):
        if not isinstance(uri, CompositeURI) or not uri.components:
            raise reader.error(
                f"{scheme}: needs a list of broker URIs, e.g. {scheme}:(tcp://h:61616)", "uri"
            )
        if scheme == "masterslave" and len(uri.components) < 2:
            raise reader.error("masterslave: needs at least two broker URIs", "uri")


def read_destinations(context: LoadContext, element: Element) -> list[DestinationRef]:
    """`<queue physicalName>` / `<topic physicalName>` children of a filter element."""
    reader = context.reader(element)
    result: list[DestinationRef] = []
    for child in reader.children({"queue", "topic"}):
        child_reader = context.reader(child)
        name = child_reader.optional("physicalName")
        if name is not None and not name.strip():
            # seed 001 Example 9.2 prints "" where seed 002 Example 2.5 has ">".
            raise child_reader.error(
                f'an empty name matches nothing: write physicalName=">" for every {child.name}',
                "physicalName",
            )
        name = child_reader.required("physicalName")
        child_reader.children(())
        child_reader.finish()
        kind: Literal["queue", "topic"] = "queue" if child.name == "queue" else "topic"
        result.append(DestinationRef(kind, name.strip()))
    reader.finish()
    return result
