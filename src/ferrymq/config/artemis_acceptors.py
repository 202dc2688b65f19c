"""broker.xml's `<acceptors>`: Artemis listeners, as FerryMQ transport connectors.

An Artemis acceptor is `<acceptor name="amqp">tcp://0.0.0.0:5672?protocols=AMQP</acceptor>`
(ActiveMQ Artemis documentation, "Configuring the Transport"): one port, and the protocols it
accepts, detected from a connection's first bytes. FerryMQ serves one protocol per listener,
chosen by its scheme (`amqp://` AMQP 1.0, `stomp://` STOMP; there is no detection from the
first bytes yet), so an acceptor becomes the listener of the one protocol its `protocols=`
names. An acceptor for several protocols, for none (Artemis: all of them), or for one FerryMQ
does not serve (CORE, OPENWIRE, MQTT, HORNETQ) is an error saying what to write instead.
URI options are separated by `;` or `&`; `connectionsAllowed` is the listener's
`maximumConnections`, Artemis's tuning options are ignored with a warning, TLS is refused
(broker.xml carries its key store in the URI; FerryMQ's TLS listeners take `<sslContext>`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from ferrymq.config.artemis_reading import children, finish, unknown
from ferrymq.config.errors import ConfigError
from ferrymq.config.model import TransportConnectorConfig
from ferrymq.config.xml_document import Element, LoadContext
from ferrymq.config.xml_transport import transport_connector

__all__ = ["SERVED_PROTOCOLS", "read_acceptors"]

SERVED_PROTOCOLS: Mapping[str, str] = MappingProxyType({"AMQP": "amqp", "STOMP": "stomp"})
"""Artemis protocol names FerryMQ serves, with the scheme of FerryMQ's listener for each."""
_UNSERVED = ("CORE", "OPENWIRE", "MQTT", "HORNETQ")
_TLS = (
    "sslEnabled", "keyStorePath", "keyStorePassword", "keyStoreType", "keyStoreProvider",
    "trustStorePath", "trustStorePassword", "trustStoreType", "trustStoreProvider",
    "needClientAuth", "wantClientAuth", "enabledProtocols", "enabledCipherSuites",
    "sslProvider", "verifyHost", "crlPath", "sniHost", "keyStoreAlias", "trustAll",
)  # fmt: skip
_TUNING = (
    "tcpSendBufferSize", "tcpReceiveBufferSize", "tcpNoDelay", "writeBufferLowWaterMark",
    "writeBufferHighWaterMark", "batchDelay", "directDeliver", "nioRemotingThreads",
    "remotingThreads", "useEpoll", "useKQueue", "useNio", "backlog", "handshakeTimeout",
    "autoStart", "amqpMinLargeMessageSize", "amqpCredits", "amqpLowCredits",
    "amqpPullConsumerCredits", "amqpDuplicateDetection", "amqpIdleTimeout",
    "amqpTreatRejectAsUnmodifiedDeliveryFailed", "amqpUseModifiedForTransientDeliveryErrors",
    "amqpUseCoreSubscriptionNaming", "amqpMaxFrameSize", "anycastPrefix", "multicastPrefix",
    "supportAdvisory", "suppressInternalManagementObjects", "stompEnableMessageId",
    "stompMinLargeMessageSize", "stompConsumersCredit", "heartBeatToConnectionTtlModifier",
    "connectionTtl", "localAddress", "localPort", "httpEnabled", "httpUpgradeEnabled",
    "httpServerScanPeriod", "httpResponseTime", "securityDomain", "router",
    "quietPeriod", "shutdownTimeout", "defaultMqttSessionExpiryInterval",
)  # fmt: skip
_TUNING_REASON = "an Artemis acceptor option with no meaning for FerryMQ's listener: ignored"


def read_acceptors(context: LoadContext, element: Element) -> list[TransportConnectorConfig]:
    reader = context.reader(element)
    listeners: list[TransportConnectorConfig] = []
    first_line: dict[str, int] = {}
    for child in children(context, element, {"acceptor"}):
        try:
            listener = _acceptor(context, child)
        except ConfigError as error:
            context.report(error)
            continue
        if listener is None:
            continue
        name = listener.name or ""
        if name in first_line:
            message = f"acceptor name {name!r} is used twice (line {first_line[name]})"
            context.report(context.error(child, message, "name"))
            continue
        first_line[name] = child.line
        listeners.append(listener)
    finish(reader)
    return listeners


def _acceptor(context: LoadContext, element: Element) -> TransportConnectorConfig | None:
    reader = context.reader(element)
    name = reader.required("name").strip()
    text = "".join(reader.text().split())
    children(context, element, ())
    finish(reader)
    if not text:
        raise context.error(
            element, "give the acceptor's URI, e.g. tcp://0.0.0.0:5672?protocols=AMQP"
        )
    address, _, query = text.partition("?")
    scheme = address.partition("://")[0].lower()
    if scheme == "vm":
        reason = "Artemis's in-VM acceptor: FerryMQ serves the clients of its process as vm://NAME"
        context.ignore(element, element.describe(), reason)
        return None
    if scheme != "tcp":
        message = f"expected tcp://host:port?protocols=AMQP or STOMP, got {scheme}://"
        raise context.error(element, message)
    options = _options(context, element, query)
    protocol = _protocol(context, element, options.pop("protocols", None))
    listener_options = {}
    if "connectionsAllowed" in options:
        listener_options["maximumConnections"] = options.pop("connectionsAllowed")
    for option in options:
        context.ignore(element, f"{element.describe()} option {option}", _TUNING_REASON)
    uri = SERVED_PROTOCOLS[protocol] + "://" + address.partition("://")[2]
    if listener_options:
        uri += "?" + "&".join(f"{k}={v}" for k, v in listener_options.items())
    return _listener(context, element, name, uri)


def _options(context: LoadContext, element: Element, query: str) -> dict[str, str]:
    """`a=1;b=2` (Artemis) or `a=1&b=2`; unknown options are errors, TLS is refused."""
    options: dict[str, str] = {}
    for pair in query.replace("&", ";").split(";"):
        if not pair.strip():
            continue
        key, _, value = pair.partition("=")
        key = key.strip()
        if key in _TLS:
            message = (
                f"not supported yet: TLS on a broker.xml acceptor ({key}); FerryMQ's TLS "
                "listeners take their key from activemq.xml's <sslContext> (docs/security.md)"
            )
            raise context.error(element, message)
        if key not in (*_TUNING, "protocols", "connectionsAllowed"):
            candidates = {*_TUNING, *_TLS, "protocols", "connectionsAllowed"}
            raise context.error(element, unknown("URI option", key, "acceptor", candidates))
        options[key] = value.strip()
    return options


def _protocol(context: LoadContext, element: Element, value: str | None) -> str:
    served = " or ".join(sorted(SERVED_PROTOCOLS))
    one_each = (
        "FerryMQ serves one protocol per listener (it does not detect the protocol from a "
        "connection's first bytes yet): give each protocol its own acceptor and port"
    )
    if value is None:
        message = (
            f"an acceptor without protocols= accepts every protocol; {one_each}, with "
            f"?protocols={served.replace(' or ', ' or ?protocols=')}"
        )
        raise context.error(element, message)
    names = [p.strip().upper() for p in value.split(",") if p.strip()]
    unserved = [p for p in names if p not in SERVED_PROTOCOLS]
    if unserved:
        what = "is" if len(unserved) == 1 else "are"
        kind = "" if all(p in _UNSERVED for p in unserved) else " (not an Artemis protocol)"
        message = (
            f"protocol {', '.join(unserved)} {what} not served by FerryMQ{kind}; it serves {served}"
        )
        raise context.error(element, message)
    if len(names) != 1:
        raise context.error(element, f"protocols={value}: {one_each}")
    return names[0]


def _listener(
    context: LoadContext, element: Element, name: str, uri: str
) -> TransportConnectorConfig:
    """Checked exactly like a `<transportConnector>`; an error names the acceptor."""
    synthetic = Element("transportConnector", {"uri": uri, "name": name}, element.line)
    strict = LoadContext(context.source, {})
    try:
        listener = transport_connector(strict.reader(synthetic))
    except ConfigError as error:
        raise context.error(element, error.message) from None
    return replace(listener, location=context.location(element))
