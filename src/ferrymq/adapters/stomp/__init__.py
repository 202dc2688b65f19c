"""STOMP, as ActiveMQ serves it: the protocol adapter of the ``tcp://``, ``stomp://``, ``nio://``
and ``auto://`` listeners, of ``ws://`` and ``wss://`` (one frame per WebSocket message), and of
``vm://``.

``StompAdapter`` makes, for each accepted socket, a ``BrokerConnection`` with a
``StompConverter`` (``converter``); the converter picks a request handler at CONNECT
(``handshake``): an application client's (``requests``, ``subscribe``, ActiveMQ's header
``dialect``), a network bridge's (``network``) or a pure master/slave slave's (``replication``).
MESSAGE frames are rendered by ``render`` on the STOMP layer's fast path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ferrymq.adapters.stomp.converter import StompConverter
from ferrymq.config.model import TransportConnectorConfig
from ferrymq.service.connection import BrokerConnection
from ferrymq.stomp.limits import Limits

if TYPE_CHECKING:
    from ferrymq.service.broker import BrokerService

STOMP_SCHEMES = (
    "tcp", "stomp", "nio", "stomp+nio", "auto", "auto+nio", "vm", "ws", "wss", "stomp+ws",
    "stomp+wss",
)  # fmt: skip

WEBSOCKET_SUBPROTOCOLS = ("v12.stomp", "v11.stomp", "v10.stomp", "stomp")
"""The WebSocket subprotocols of STOMP (stomp.js offers the first three; ActiveMQ also knows
"stomp"). The subprotocol does not fix the version: CONNECT's accept-version does, as over TCP."""

VM_GRACE = 1.5
"""Heart-beat grace of ``vm://`` connections, which have no connector to configure it."""


class StompAdapter:
    """Serves STOMP for one broker."""

    name = "STOMP"
    schemes = STOMP_SCHEMES
    websocket_subprotocols = WEBSOCKET_SUBPROTOCOLS

    def __init__(self, service: BrokerService) -> None:
        self.service = service

    def accept(self, connector: TransportConnectorConfig | None) -> BrokerConnection:
        service = self.service
        if connector is None:
            name, limits, grace = "vm", Limits(), VM_GRACE
        else:
            stomp = connector.stomp
            name = connector.display_name
            limits = Limits(
                max_body_bytes=stomp.max_data_length, max_frame_bytes=stomp.max_frame_size
            )
            grace = max(stomp.hb_grace_period_multiplier, 1.5)
        connection = BrokerConnection(service, name, service.new_connection_id())
        connection.attach(
            StompConverter(service, connection, connector=name, limits=limits, grace=grace)
        )
        return connection
