"""How each broker family wants the same benchmark spelled.

All of them take ``/queue/NAME`` and ``/topic/NAME``: ActiveMQ and FerryMQ natively; RabbitMQ's
STOMP plugin maps ``/queue/NAME`` to a durable classic queue of that name and ``/topic/NAME`` to
the ``amq.topic`` exchange with routing key NAME (one exclusive queue per subscription); coilmq
treats a destination starting with ``/queue/`` as a queue and anything else as a topic.

The differences that matter here:

* Prefetch. ActiveMQ and FerryMQ read ``activemq.prefetchSize`` (default 1000 for queues, 32767
  for topics). RabbitMQ reads ``prefetch-count``, and without it a client-ack subscription has no
  limit at all, so we send 1000 there, ActiveMQ's queue default. coilmq has no prefetch: an
  ``ack:client`` subscription gets one message at a time.
* Individual acks. coilmq knows only ``auto`` and ``client``, and its ``client`` mode already
  acknowledges one message at a time (one in flight), so the client-individual scenario uses
  ``ack:client`` there and still sends one ACK per message.
* Versions. coilmq speaks 1.2 only to a client whose ``host`` header is the broker machine's FQDN
  and wants ``message-id`` on a 1.2 ACK, which a 1.2 client does not send; we offer it 1.1.
  RabbitMQ takes the virtual host from ``host`` (``/``) and needs a login (guest/guest on
  loopback).
* Pipelining. coilmq reads 4096 bytes at a time and drops the connection when a read ends
  inside a frame's headers, or between a body and its NUL (its ``parse_headers`` takes a partial
  line for a whole one; ``parse_body`` raises ``BodyNotTerminated``). So its producer sends
  receipted chunks of at most 2 KiB and never has more than 4 KiB unconfirmed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ferrymq.stomp import V1_0, V1_1, V1_2
from ferrymq.stomp.constants import ACK_AUTO, ACK_CLIENT, ACK_CLIENT_INDIVIDUAL


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    versions: tuple[str, ...]
    """Versions offered in CONNECT."""
    individual_ack: str
    """The ack mode of the client-individual scenario."""
    prefetch_header: str | None
    client_ack_prefetch: int | None
    """Prefetch sent on client-ack subscriptions when the user gave none."""
    vhost: str | None
    """The CONNECT ``host`` header; None sends the URL's host, "" sends none."""
    max_unread_bytes: int | None = None
    """Never leave the broker more unread bytes than this (see coilmq above)."""
    default_login: tuple[str, str] | None = None
    """Login and passcode to use when the user gave none."""
    note: str = ""

    def queue(self, name: str) -> str:
        return f"/queue/{name}"

    def topic(self, name: str) -> str:
        return f"/topic/{name}"

    def subscribe_headers(self, ack: str, prefetch: int | None) -> dict[str, str]:
        """Extra SUBSCRIBE headers for ``ack`` and the user's ``prefetch`` (None: default)."""
        if prefetch is None and ack != ACK_AUTO:
            prefetch = self.client_ack_prefetch
        if prefetch is None or self.prefetch_header is None:
            return {}
        return {self.prefetch_header: str(prefetch)}


ACTIVEMQ = Dialect(
    name="activemq",
    versions=(V1_0, V1_1, V1_2),
    individual_ack=ACK_CLIENT_INDIVIDUAL,
    prefetch_header="activemq.prefetchSize",
    client_ack_prefetch=None,
    vhost=None,
)
RABBITMQ = Dialect(
    name="rabbitmq",
    versions=(V1_0, V1_1, V1_2),
    individual_ack=ACK_CLIENT_INDIVIDUAL,
    prefetch_header="prefetch-count",
    client_ack_prefetch=1000,
    vhost="/",
    default_login=("guest", "guest"),
)
COILMQ = Dialect(
    name="coilmq",
    versions=(V1_0, V1_1),
    individual_ack=ACK_CLIENT,
    prefetch_header=None,
    client_ack_prefetch=None,
    vhost=None,
    max_unread_bytes=4096,
    note=(
        "client-individual runs as ack:client, which coilmq acks one message at a time; "
        "producers send receipted chunks of at most 2 KiB (coilmq cannot parse a frame split "
        "across its 4 KiB reads)"
    ),
)

DIALECTS = {dialect.name: dialect for dialect in (ACTIVEMQ, RABBITMQ, COILMQ)}

PROBE_VERSIONS = (V1_0, V1_1)
"""What the detecting connection offers: every broker here answers 1.1 with a ``server``."""


def detect(server: str | None) -> Dialect:
    """The dialect for a CONNECTED ``server`` header; ActiveMQ's for anything unknown."""
    product = (server or "").split("/", 1)[0].strip().lower()
    if product == "rabbitmq":
        return RABBITMQ
    if product == "coilmq":
        return COILMQ
    return ACTIVEMQ
