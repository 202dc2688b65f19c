"""`<transportConnectors>`: the broker's listeners (reference sections 2 and 6.3).

FerryMQ speaks STOMP on every listener it serves, so the seeds' `tcp://0.0.0.0:61616` connectors
work unchanged (DESIGN "Wire protocol"). `nio://` and `stomp+nio://` are synonyms (asyncio is
non-blocking anyway), and so are `auto://` and `auto+nio://` (ActiveMQ's protocol detection:
FerryMQ has STOMP only). `vm://NAME` names the broker for the clients of its own process
(`ferrymq.client` `vm://NAME`); it opens no socket and takes no URI option. `ssl://`,
`stomp+ssl://`, `stomp+nio+ssl://`, `nio+ssl://`, `auto+ssl://` and `auto+nio+ssl://` are the
same over TLS, with the broker's `<sslContext>` and the TLS options (`util.tls.LISTENER_OPTIONS`).
`ws://` and `wss://` serve STOMP over WebSocket (`wss` with the TLS options too).
In a file, a listener of an ActiveMQ protocol FerryMQ does not serve (`schema.UNSERVED_LISTENERS`:
MQTT, AMQP)
is left closed with a warning, as is an ActiveMQ transport option with no meaning here; any other
scheme or option is an error.
"""

from __future__ import annotations

import re

from ferrymq.config import schema
from ferrymq.config.model import AmqpOptionsConfig, StompLimitsConfig, TransportConnectorConfig
from ferrymq.config.units import parse_float, parse_int
from ferrymq.config.xml_document import Element, ElementReader, LoadContext
from ferrymq.util.origins import ALLOWED_ORIGINS_OPTION, OriginPolicy
from ferrymq.util.tls import LISTENER_OPTIONS, LISTENER_SCHEMES, TlsError, listener_options
from ferrymq.util.uri import URI

__all__ = [
    "CONNECTOR_OPTIONS",
    "SERVED_SCHEMES",
    "read_transport_connectors",
    "transport_connector",
]

WEBSOCKET_SCHEMES = ("ws", "wss", "stomp+ws", "stomp+wss")
"""STOMP over WebSocket (ActiveMQ documentation, "WebSockets"); `wss` with `<sslContext>`."""
TLS_WEBSOCKET_SCHEMES = ("wss", "stomp+wss")
AMQP_SCHEMES = ("amqp", "amqp+nio")
SERVED_SCHEMES = frozenset(
    {
        "tcp", "stomp", "nio", "stomp+nio", "auto", "auto+nio", *AMQP_SCHEMES,
        *LISTENER_SCHEMES, *WEBSOCKET_SCHEMES,
    }
)  # fmt: skip
"""Listener schemes the broker serves: STOMP, and AMQP 1.0 on `amqp`/`amqp+nio` (the `+ssl`
ones over TLS, `ws`/`wss` STOMP over WebSocket)."""
IN_PROCESS_SCHEME = "vm"
"""The in-process connector: served, but with no address and no URI option."""

CONNECTOR_OPTIONS = (
    "maximumConnections",
    "wireFormat.maxDataLength",
    "wireFormat.maxFrameSize",
    "transport.hbGracePeriodMultiplier",
    "transport.defaultHeartBeat",
    "wireFormat.idleTimeout",
    "wireFormat.producerCredit",
    "wireFormat.maxAmqpFrameSize",
)
"""URI options a served listener accepts; any other is an error (ActiveMQ rejects unknown
transport options too: "Invalid connect parameters")."""


def read_transport_connectors(
    context: LoadContext, element: Element
) -> list[TransportConnectorConfig]:
    reader = context.reader(element)
    connectors: list[TransportConnectorConfig] = []
    first_line: dict[str, int] = {}
    for child in reader.children({"transportConnector"}):
        if _not_served(context, child):
            continue
        connector = transport_connector(context.reader(child))
        if connector.name is not None:
            if connector.name in first_line:
                line = first_line[connector.name]
                message = f"transport connector name {connector.name!r} is used twice (line {line})"
                raise context.error(child, message, "name")
            first_line[connector.name] = child.line
        connectors.append(connector)
    reader.finish()
    return connectors


def transport_connector(reader: ElementReader) -> TransportConnectorConfig:
    """One `<transportConnector>`; also used for `--listen` URIs (through a synthetic element)."""
    parsed = reader.uri("uri", "scheme://host:port")
    if parsed is None:
        raise reader.error("required attribute is missing", "uri")
    text, uri = parsed
    if not isinstance(uri, URI):
        raise reader.error(
            "a listener needs a plain URI, not a composite (expected scheme://host:port)", "uri"
        )
    scheme = uri.scheme.lower()
    if scheme not in SERVED_SCHEMES | {IN_PROCESS_SCHEME}:
        served = ", ".join(f"{s}://" for s in sorted(SERVED_SCHEMES))
        message = f"scheme {uri.scheme}:// is not supported; FerryMQ listens on {served}"
        raise reader.error(message, "uri")
    if uri.host is None or not uri.host or (scheme != "vm" and uri.port is None):
        expected = "vm://name" if scheme == "vm" else "scheme://host:port"
        raise reader.error(f"not a URI (expected {expected})", "uri")
    if scheme == IN_PROCESS_SCHEME and (uri.query or uri.port is not None):
        message = "a vm:// connector takes no port and no URI option (expected vm://name)"
        raise reader.error(message, "uri")
    options = dict(uri.query) if scheme in SERVED_SCHEMES else {}
    maximum = _int_option(reader, options, "maximumConnections")
    stomp = _stomp_limits(reader, options)
    amqp = _amqp_options(reader, options)
    if scheme in LISTENER_SCHEMES or scheme in TLS_WEBSOCKET_SCHEMES:
        _tls_options(reader, options)
    _origins_option(reader, scheme, options)
    _other_options(reader, options)
    discovery = reader.uri("discoveryUri", "a discovery agent URI such as multicast://default")
    config = TransportConnectorConfig(
        uri=text,
        parsed_uri=uri,
        name=reader.optional("name"),
        discovery_uri=None if discovery is None else discovery[1],
        update_cluster_clients=reader.boolean("updateClusterClients", False),
        rebalance_cluster_clients=reader.boolean("rebalanceClusterClients", False),
        update_cluster_clients_on_remove=reader.boolean("updateClusterClientsOnRemove", False),
        update_cluster_filter=reader.custom("updateClusterFilter", _regex_list) or (),
        maximum_connections=2147483647 if maximum is None else maximum,
        allow_link_stealing=reader.boolean("allowLinkStealing", False),
        audit_network_producers=reader.boolean("auditNetworkProducers", False),
        enable_status_monitor=reader.boolean("enableStatusMonitor", False),
        maximum_producers_allowed_per_connection=reader.integer(
            "maximumProducersAllowedPerConnection", 2147483647, minimum=1
        ),
        maximum_consumers_allowed_per_connection=reader.integer(
            "maximumConsumersAllowedPerConnection", 2147483647, minimum=1
        ),
        stomp=stomp,
        amqp=amqp,
        location=reader.location(),
    )
    reader.children(())
    reader.finish()
    return config


def _tls_options(reader: ElementReader, options: dict[str, str]) -> None:
    """Check a TLS listener's options now, so a typo fails `check-config`, not the start."""
    try:
        listener_options(options)
    except TlsError as error:
        raise reader.error(str(error), "uri") from None
    for name in LISTENER_OPTIONS:
        options.pop(name, None)


def _origins_option(reader: ElementReader, scheme: str, options: dict[str, str]) -> None:
    """`allowedOrigins`: the browser pages a WebSocket listener serves (`util.origins`)."""
    if ALLOWED_ORIGINS_OPTION not in options:
        return
    text = options.pop(ALLOWED_ORIGINS_OPTION)
    if scheme not in WEBSOCKET_SCHEMES:
        message = f"URI option {ALLOWED_ORIGINS_OPTION} applies to ws:// and wss:// listeners only"
        raise reader.error(message, "uri")
    try:
        OriginPolicy.parse(text)
    except ValueError as error:
        raise reader.error(f"URI option {ALLOWED_ORIGINS_OPTION}: {error}", "uri") from None


def _not_served(context: LoadContext, element: Element) -> bool:
    """A listener of an ActiveMQ protocol FerryMQ does not serve (MQTT, AMQP, the HTTP tunnel):
    accepted, left closed, and reported (docs/configuration.md)."""
    scheme = element.attributes.get("uri", "").partition(":")[0].strip().lower()
    reason = schema.UNSERVED_LISTENERS.get(scheme)
    if reason is None:
        return False
    context.ignore(element, element.describe("uri"), reason)
    reader = context.reader(element)
    reader.used.update(element.attributes)
    reader.children(())
    return True


def _other_options(reader: ElementReader, options: dict[str, str]) -> None:
    """Options left after the served ones: ActiveMQ's own are ignored with a warning, any other
    is a typo (ActiveMQ rejects unknown transport options too: "Invalid connect parameters")."""
    for option in options:
        if schema.is_transport_option(option):
            reason = "an ActiveMQ transport option with no meaning for FerryMQ's listener"
            shown = f"<transportConnector uri> option {option}"
            reader.context.ignore(reader.element, shown, reason)
            continue
        message = f"unknown URI option {option!r}"
        close = schema.closest(option, [*CONNECTOR_OPTIONS, *schema.transport_option_names()])
        accepted = ", ".join(CONNECTOR_OPTIONS)
        hint = f"; did you mean {close}?" if close else f" (accepted: {accepted})"
        reader.context.report(reader.error(message + hint, "uri"))


def _int_option(reader: ElementReader, options: dict[str, str], name: str) -> int | None:
    """Take a positive integer option out of `options` (so leftovers are the unknown ones)."""
    if name not in options:
        return None
    try:
        return parse_int(options.pop(name), minimum=1)
    except ValueError as error:
        raise reader.error(f"URI option {name}: {error}", "uri") from None


def _stomp_limits(reader: ElementReader, options: dict[str, str]) -> StompLimitsConfig:
    defaults = StompLimitsConfig()
    data = _int_option(reader, options, "wireFormat.maxDataLength")
    frame = _int_option(reader, options, "wireFormat.maxFrameSize")
    grace = defaults.hb_grace_period_multiplier
    heart_beat = defaults.default_heart_beat
    try:
        if "transport.hbGracePeriodMultiplier" in options:
            text = options.pop("transport.hbGracePeriodMultiplier")
            grace = parse_float(text, minimum=1.0)
        if "transport.defaultHeartBeat" in options:
            heart_beat = _heart_beat(options.pop("transport.defaultHeartBeat"))
    except ValueError as error:
        raise reader.error(f"URI option: {error}", "uri") from None
    return StompLimitsConfig(
        max_data_length=defaults.max_data_length if data is None else data,
        max_frame_size=frame,
        hb_grace_period_multiplier=grace,
        default_heart_beat=heart_beat,
    )


def _amqp_options(reader: ElementReader, options: dict[str, str]) -> AmqpOptionsConfig:
    defaults = AmqpOptionsConfig()
    idle = options.pop("wireFormat.idleTimeout", None)
    try:
        idle_ms = defaults.idle_timeout_ms if idle is None else parse_int(idle, minimum=0)
    except ValueError as error:
        raise reader.error(f"URI option wireFormat.idleTimeout: {error}", "uri") from None
    credit = _int_option(reader, options, "wireFormat.producerCredit")
    frame = _int_option(reader, options, "wireFormat.maxAmqpFrameSize")
    if frame is not None and frame < 512:
        message = "URI option wireFormat.maxAmqpFrameSize must be at least 512 (AMQP's minimum)"
        raise reader.error(message, "uri")
    return AmqpOptionsConfig(
        idle_timeout_ms=idle_ms,
        producer_credit=defaults.producer_credit if credit is None else credit,
        max_amqp_frame_size=defaults.max_amqp_frame_size if frame is None else frame,
    )


def _heart_beat(text: str) -> tuple[int, int]:
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError(f'transport.defaultHeartBeat must be "cx,cy", got {text!r}')
    return parse_int(parts[0], minimum=0), parse_int(parts[1], minimum=0)


def _regex_list(text: str) -> tuple[str, ...]:
    """updateClusterFilter: comma-separated regular expressions (Java `Pattern.matches`)."""
    patterns = tuple(p.strip() for p in text.split(",") if p.strip())
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"{pattern!r} is not a regular expression: {error}") from None
    return patterns
