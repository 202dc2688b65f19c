"""The wire names of broker-connection federation, shared by the side that federates
(``ferrymq.connections.federation``) and the broker it federates from (the AMQP adapter).

The capability and property names are ActiveMQ Artemis's (its ``AMQPFederationConstants``), so a
FerryMQ federation link reads like an Artemis one. Three names are FerryMQ's own, because a
FerryMQ broker puts a federated message back into its address through a client connection, not
through the connection it came over: ``FEDERATION_PATH`` (the brokers a message was federated
out of), ``DEMAND_PATH`` (the brokers a receiver's demand came from) and
``FEDERATION_CONSUMER`` (the advisory property that marks a federation consumer).
"""

from __future__ import annotations

from typing import Final

CONTROL_LINK: Final = "AMQ_FEDERATION_CONTROL_LINK"
"""Desired (and offered) capability of the control link that carries remote policies."""
ADDRESS_RECEIVER: Final = "AMQ_FEDERATION_ADDRESS_RECEIVER"
QUEUE_RECEIVER: Final = "AMQ_FEDERATION_QUEUE_RECEIVER"

OPERATION_TYPE: Final = "x-opt-amq-federation-op-type"
"""Message annotation of a control message: ``ADD_ADDRESS_POLICY`` or ``ADD_QUEUE_POLICY``."""
ADD_ADDRESS_POLICY: Final = "ADD_ADDRESS_POLICY"
ADD_QUEUE_POLICY: Final = "ADD_QUEUE_POLICY"

FEDERATION_NAME: Final = "federationName"
"""Link property: the federation (the broker connection's name) a link belongs to."""
POLICY_NAME: Final = "federationPolicyName"
"""Link property of a receiver: its policy."""
FEDERATION_VERSION: Final = "federation_version"
RECEIVER_PRIORITY: Final = "priority"
"""Link property of a queue receiver: the priority of the consumer it becomes."""
ADDRESS_SOURCE_PROPERTIES: Final = "federated-address-source-properties"
"""Link property of an address receiver: a map of ``auto-delete``, ``auto-delete-delay`` and
``auto-delete-msg-count``, how the subscription it makes is cleaned up."""
AUTO_DELETE: Final = "auto-delete"
AUTO_DELETE_DELAY: Final = "auto-delete-delay"
AUTO_DELETE_MSG_COUNT: Final = "auto-delete-msg-count"

HOPS: Final = "_AMQ_Fed_Hops"
"""Message property: how many federation hops a message made (Artemis's core name, a valid
selector identifier)."""
FEDERATION_PATH: Final = "_FMQ_Fed_Path"
"""Message property: ``|A|B|``, the brokers (container ids) a message was federated out of."""
DEMAND_PATH: Final = "x-opt-ferrymq-fed-demand-path"
"""Link property of a receiver: ``|A|B|``, the brokers whose consumers it stands for (FerryMQ's:
demand must not go back along its own path)."""
FEDERATION_CONSUMER: Final = "activemq.federation"
"""Key of a consumer advisory's ``properties`` marking a federation consumer (value: its demand
path): the AMQP adapter sets it on another broker's federation receivers, and a STOMP
subscription marks itself with the header of that name (``activemq.*`` SUBSCRIBE headers go
into the advisory)."""
