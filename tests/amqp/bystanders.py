"""Well-behaved clients that watch a broker while one connection feeds it bad AMQP.

A STOMP client (stomp.py, the fuzz tests' ``Canary``) and an AMQP client (proton's
``BlockingConnection``) stay connected from before the fault to after it and round-trip a
message each on demand; persistent messages stored before the fault must all still be there at
the end. ``check`` proves all three, and that the bad connection left nothing open behind.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from proton import Message
from proton.utils import BlockingConnection, BlockingReceiver, BlockingSender

from ferrymq.config.activemq_xml import parse_config
from ferrymq.config.model import AdminConfig
from ferrymq.testing import BrokerThread, wait_until_blocking
from tests.fuzz.canary import Canary

from .proton_support import TIMEOUT_S, blocking, broker_xml, url

STORED = 20
STORED_ADDRESS = "queue://bystander.stored"
AMQP_ADDRESS = "queue://bystander.amqp"


def start_broker(tmp_path: Path, amqp_listener: str, plugins: str = "") -> BrokerThread:
    """A STOMP listener and ``amqp_listener``, no admin API (its default port is fixed)."""
    xml = broker_xml(listeners=("stomp://127.0.0.1:0", amqp_listener), plugins=plugins)
    config = parse_config(xml, "bad-input.xml", {"activemq.data": str(tmp_path / "data")})
    return BrokerThread(replace(config, admin=AdminConfig(enabled=False))).start()


def _options(user: str | None) -> dict[str, Any]:
    """PLAIN over plain TCP when there is a user (proton refuses it by default)."""
    if user is None:
        return {}
    return {"allowed_mechs": "PLAIN", "allow_insecure_mechs": True}


class Bystanders:
    def __init__(
        self, broker: BrokerThread, user: str | None = None, password: str | None = None
    ) -> None:
        self.broker = broker
        self.user = user
        self.password = password
        self.canary = Canary(broker.port, "/queue/bystander.stomp", login=user, passcode=password)
        self.amqp: BlockingConnection | None = None
        self.sender: BlockingSender | None = None
        self.receiver: BlockingReceiver | None = None
        self.trips = 0

    def start(self) -> Bystanders:
        address = url(self.broker, self.user, self.password)
        with blocking(address, **_options(self.user)) as store:
            sender = store.create_sender(STORED_ADDRESS)
            for seq in range(STORED):
                sender.send(Message(body=f"stored {seq}", durable=True))  # waits for accepted
        self.canary.start()
        self.amqp = BlockingConnection(
            address, timeout=TIMEOUT_S, reconnect=False, **_options(self.user)
        )
        self.receiver = self.amqp.create_receiver(AMQP_ADDRESS)
        self.sender = self.amqp.create_sender(AMQP_ADDRESS)
        self.round_trip()
        return self

    def round_trip(self) -> None:
        """Both clients still send and receive (fails on a closed connection or a timeout)."""
        self.canary.round_trip()
        assert self.sender is not None
        assert self.receiver is not None
        self.trips += 1
        body = f"amqp {self.trips}"
        self.sender.send(Message(body=body))
        got = self.receiver.receive(timeout=TIMEOUT_S)
        self.receiver.accept()
        assert got.body == body

    def open_connections(self) -> int:
        def count() -> int:
            assert self.broker.broker is not None
            return len(self.broker.broker.service.connections)

        return self.broker.call(count)

    def check(self) -> None:
        """The clients still work, the bad connections are gone, nothing stored was lost."""
        self.round_trip()
        wait_until_blocking(
            lambda: self.open_connections() == 2,
            TIMEOUT_S,
            "only the two bystanders connected",
            detail=lambda: f"{self.open_connections()} open",
            interval_s=0.02,
        )
        address = url(self.broker, self.user, self.password)
        with blocking(address, **_options(self.user)) as reader:
            receiver = reader.create_receiver(STORED_ADDRESS, credit=STORED)
            bodies = []
            for _ in range(STORED):
                bodies.append(receiver.receive(timeout=TIMEOUT_S).body)
                receiver.accept()
        assert bodies == [f"stored {seq}" for seq in range(STORED)]

    def stop(self) -> None:
        self.canary.stop()
        if self.amqp is not None:
            self.amqp.close()
