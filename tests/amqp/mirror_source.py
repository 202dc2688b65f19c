"""A scripted mirror source: plays an Artemis broker whose ``<mirror>`` points at the broker
under test, exactly as the mirror's wire contract says (issue 18; Artemis's
``AMQPMirrorControllerSource``).

It is python-qpid-proton's engine (``Connection``, ``Transport``, ``Collector``) over a
blocking socket, driven step by step by the test: one connection, one sender link named
``$ACTIVEMQ_ARTEMIS_MIRROR_<name>:<uuid>`` to the address ``$ACTIVEMQ_ARTEMIS_MIRROR_<name>``,
unsettled, rcv-settle-mode first, with the link property ``x-opt-amq-bkr-id``. proton writes no
link capabilities, so the attach frame gets its desired ``amq.mirror`` written in on the bytes
(``ferrymq.amqp.attach_frames``), which also reads what the broker offered back.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from typing import Any

import proton
from proton import Delivery, Endpoint, symbol, ubyte

from ferrymq.amqp.attach_frames import AttachCapabilities

TIMEOUT_S = 10.0
MIRROR = "$ACTIVEMQ_ARTEMIS_MIRROR"
BROKER_ID = symbol("x-opt-amq-bkr-id")


class MirrorSource:
    def __init__(
        self,
        port: int,
        *,
        node_id: str = "source-node",
        name: str = "dc1",
        desired: tuple[str, ...] = ("amq.mirror",),
        login: tuple[str, str] | None = None,
    ) -> None:
        self.port = port
        self.node_id = node_id
        self.address = f"{MIRROR}_{name}"
        self.link_name = f"{self.address}:{uuid.uuid4()}"
        self.desired = desired
        self.login = login
        self.caps = AttachCapabilities()
        self.connection = proton.Connection()
        self.connection.container = f"{node_id}-container"
        self.transport = proton.Transport()
        self.collector = proton.Collector()
        self.connection.collect(self.collector)
        sasl = self.transport.sasl()
        if login is None:
            sasl.allowed_mechs("ANONYMOUS")
        else:
            sasl.allowed_mechs("PLAIN")
            sasl.allow_insecure_mechs = True
            self.connection.user, self.connection.password = login
        self.transport.bind(self.connection)
        self.socket: socket.socket | None = None
        self.sender: proton.Sender | None = None
        self._tags = 0

    # -- connecting -------------------------------------------------------------------------

    def open(self) -> MirrorSource:
        """Connect and attach the mirror link; wait for the broker's answer (attach or refusal)."""
        self.socket = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT_S)
        self.socket.settimeout(0.02)
        self.connection.open()
        session = self.connection.session()
        session.open()
        sender = session.sender(self.link_name)
        sender.target.address = self.address
        sender.source.address = self.address
        sender.snd_settle_mode = proton.Link.SND_UNSETTLED
        sender.rcv_settle_mode = proton.Link.RCV_FIRST
        sender.properties = {BROKER_ID: self.node_id}
        self.caps.announce(self.link_name, (), self.desired)
        sender.open()
        self.sender = sender
        self.pump_until(
            lambda: bool(sender.state & (Endpoint.REMOTE_ACTIVE | Endpoint.REMOTE_CLOSED))
        )
        return self

    def __enter__(self) -> MirrorSource:
        return self.open()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self.socket is None:
            return
        try:
            self.connection.close()
            self._write()
        except OSError:
            pass
        self.socket.close()
        self.socket = None

    def drop(self) -> None:
        """Lose the connection without a close (a crash of the source, a network cut)."""
        if self.socket is not None:
            self.socket.close()
            self.socket = None

    # -- what the broker answered -----------------------------------------------------------

    @property
    def link(self) -> proton.Sender:
        assert self.sender is not None, "open() first"
        return self.sender

    @property
    def attached(self) -> bool:
        state = self.link.state
        return bool(state & Endpoint.REMOTE_ACTIVE) and not state & Endpoint.REMOTE_CLOSED

    @property
    def refusal(self) -> proton.Condition | None:
        """The error the broker closed the link with (None: it was not refused)."""
        self.pump_until(lambda: bool(self.link.state & Endpoint.REMOTE_CLOSED), TIMEOUT_S)
        return self.link.remote_condition

    @property
    def offered(self) -> tuple[str, ...]:
        remote = self.caps.incoming.get(self.link_name)
        return remote.offered if remote is not None else ()

    @property
    def remote_node(self) -> object:
        return (self.link.remote_properties or {}).get(BROKER_ID)

    # -- sending ----------------------------------------------------------------------------

    def send(self, message: proton.Message) -> Delivery:
        """Send one event unsettled (waits for credit)."""
        sender = self.link
        self.pump_until(lambda: sender.credit > 0)
        self._tags += 1
        delivery = sender.delivery(str(self._tags))
        sender.send(message.encode())
        sender.advance()
        self._write()
        return delivery

    def settled(self, deliveries: list[Delivery], timeout_s: float = TIMEOUT_S) -> list[int]:
        """Wait until the broker settled every delivery; their outcomes (``ACCEPTED``...)."""
        self.pump_until(lambda: all(d.remote_state for d in deliveries), timeout_s)
        missing = [d.tag for d in deliveries if not d.remote_state]
        assert not missing, f"the broker did not settle {missing} within {timeout_s} s"
        outcomes = [d.remote_state for d in deliveries]
        for delivery in deliveries:
            delivery.settle()
        return outcomes

    def unsettled_after(self, delivery: Delivery, seconds: float) -> bool:
        """Whether the broker still has not settled ``delivery`` after ``seconds``."""
        self.pump_until(lambda: bool(delivery.remote_state), seconds, fail=False)
        return not delivery.remote_state

    # -- the loop ---------------------------------------------------------------------------

    def pump_until(self, done: Any, timeout_s: float = TIMEOUT_S, *, fail: bool = True) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            self._write()
            while self.collector.peek() is not None:
                self.collector.pop()
            if done():
                return
            if time.monotonic() > deadline:
                if fail:
                    raise AssertionError(f"the mirror source waited {timeout_s} s in vain")
                return
            self._read()

    def _write(self) -> None:
        assert self.socket is not None
        pending = self.transport.pending()
        while pending > 0:
            data = bytes(self.transport.peek(pending) or b"")
            self.transport.pop(len(data))
            self.socket.sendall(self.caps.rewrite(data))
            pending = self.transport.pending()

    def _read(self) -> None:
        assert self.socket is not None
        try:
            data = self.socket.recv(65536)
        except TimeoutError:
            return
        if not data:
            self.transport.close_tail()
            return
        self.caps.scan(data)
        self.transport.push(data)


# -- the events, as the contract writes them ----------------------------------------------------


def mirrored_send(
    body: str,
    message_id: str,
    *,
    destination: str = "queue://Q",
    origin: str | None = None,
    durable: bool = True,
    **fields: Any,
) -> proton.Message:
    """A mirrored send: the message, with the delivery annotations naming its origin."""
    instructions: dict[Any, Any] = {
        symbol("x-opt-amq-mr-id"): message_id,
        symbol("x-opt-amq-mr-dst"): destination,
    }
    if origin is not None:
        instructions[BROKER_ID] = origin
    message = proton.Message(
        body=body, id=message_id, durable=durable, address=destination, **fields
    )
    message.instructions = instructions
    return message


def _event(kind: str, address: str, body: str, **annotations: object) -> proton.Message:
    values: dict[Any, Any] = {
        symbol("x-opt-amq-mr-ev-type"): symbol(kind),
        symbol("x-opt-amq-mr-adr"): address,
    }
    values.update({symbol(k.replace("_", "-")): v for k, v in annotations.items()})
    message = proton.Message(body=body, durable=True)
    message.annotations = values
    return message


def post_ack(
    queue: str,
    message_id: str,
    *,
    address: str | None = None,
    reason: int = 0,
    origin: str | None = None,
) -> proton.Message:
    annotations: dict[str, object] = {"x-opt-amq-mr-qu": queue}
    if reason:
        annotations["x-opt-amq-mr-ack-reason"] = ubyte(reason)
    if origin is not None:
        annotations["x-opt-amq-bkr-id"] = origin
    return _event("postAck", address or f"queue://{queue}", message_id, **annotations)


def create_queue(name: str) -> proton.Message:
    document = {"address": name, "name": name, "routing-type": "ANYCAST", "durable": True}
    return _event("createQueue", f"queue://{name}", json.dumps(document), x_opt_amq_mr_qu=name)


def create_subscription(topic: str, client_id: str, subscription: str) -> proton.Message:
    name = f"{client_id}.{subscription}"
    document = {
        "address": topic,
        "name": name,
        "routing-type": "MULTICAST",
        "durable": True,
        "client-id": client_id,
        "subscription-name": subscription,
    }
    return _event("createQueue", f"topic://{topic}", json.dumps(document), x_opt_amq_mr_qu=name)


def add_address(topic: str) -> proton.Message:
    document = {"address": topic, "name": topic, "routing-type": "MULTICAST", "durable": True}
    return _event("addAddress", f"topic://{topic}", json.dumps(document))


def delete_queue(name: str, address: str | None = None) -> proton.Message:
    return _event("deleteQueue", address or f"queue://{name}", name, x_opt_amq_mr_qu=name)


def delete_address(topic: str) -> proton.Message:
    return _event("deleteAddress", f"topic://{topic}", topic)
