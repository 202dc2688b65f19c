"""AMQP 1.0, as ActiveMQ 5 serves it: the protocol adapter of the ``amqp://`` and ``amqp+nio://``
listeners (and ``amqp+ssl://``, ``amqp+nio+ssl://`` over TLS).

``AmqpAdapter`` makes, for each accepted socket, a ``BrokerConnection`` with an ``AmqpConverter``
(``converter``): SASL and the connection's endpoints there, consumers in ``senders``, producers
and transactions in ``receivers``, the address forms in ``addressing``, the message mapping in
``mapping``. The same core, store and security serve it as serve STOMP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ferrymq.adapters.amqp.converter import AmqpConverter
from ferrymq.config.model import AmqpOptionsConfig, StompLimitsConfig, TransportConnectorConfig
from ferrymq.service.connection import BrokerConnection

if TYPE_CHECKING:
    from ferrymq.service.broker import BrokerService

AMQP_SCHEMES = ("amqp", "amqp+nio")


class AmqpAdapter:
    """Serves AMQP 1.0 for one broker."""

    name = "AMQP"
    schemes = AMQP_SCHEMES
    websocket_subprotocols = ("amqp",)

    def __init__(self, service: BrokerService) -> None:
        self.service = service

    def accept(self, connector: TransportConnectorConfig | None) -> BrokerConnection:
        service = self.service
        name = connector.display_name if connector is not None else "vm"
        options = connector.amqp if connector is not None else AmqpOptionsConfig()
        limits = connector.stomp if connector is not None else StompLimitsConfig()
        largest = min(limits.max_data_length, limits.max_frame_size or limits.max_data_length)
        connection = BrokerConnection(service, name, service.new_connection_id())
        converter = AmqpConverter(
            service, connection, connector=name, options=options, max_message_size=largest
        )
        connection.attach(converter)
        return connection
