"""Brokers with an AMQP listener, and python-qpid-proton's clients pointed at them.

proton's ``BlockingConnection`` is used as a user writes it; its ``Container`` runs in a thread
with a deadline (``run_container``), without reconnecting, so a broker that refuses something
ends the test instead of hanging it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

from proton import Link, Message, ProtonException
from proton.handlers import MessagingHandler
from proton.reactor import Container, LinkOption
from proton.utils import BlockingConnection

from ferrymq.config.activemq_xml import parse_config
from ferrymq.config.model import AdminConfig
from ferrymq.core.region import RegionBroker
from ferrymq.testing import BrokerThread

TIMEOUT_S = 10.0
CONTAINER_DEADLINE_S = 30.0

USERS = """<simpleAuthenticationPlugin{anonymous}><users>
    <authenticationUser username="system" password="manager" groups="admins"/>
    <authenticationUser username="user" password="password" groups="users"/>
  </users></simpleAuthenticationPlugin>"""

AUTHORIZATION = """<authorizationPlugin><map><authorizationMap><authorizationEntries>
    <authorizationEntry queue="&gt;" read="admins" write="admins" admin="admins"/>
    <authorizationEntry queue="USERS.&gt;" read="users" write="users" admin="users"/>
    <authorizationEntry topic="ActiveMQ.Advisory.&gt;" read="users,admins"
        write="users,admins" admin="users,admins"/>
  </authorizationEntries></authorizationMap></map></authorizationPlugin>"""


def broker_xml(
    *,
    listeners: tuple[str, ...] = ("amqp://127.0.0.1:0",),
    plugins: str = "",
    extra: str = "",
    name: str = "amqp-test",
    persistent: bool = True,
) -> str:
    """An activemq.xml with these transport connectors (AMQP options in their URIs)."""
    connectors = "".join(
        f'<transportConnector name="c{n}" uri="{uri.replace("&", "&amp;")}"/>'
        for n, uri in enumerate(listeners)
    )
    plugins_element = f"<plugins>{plugins}</plugins>" if plugins else ""
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="{name}"
    persistent="{str(persistent).lower()}" dataDirectory="${{activemq.data}}">
  {plugins_element}
  {extra}
  <transportConnectors>{connectors}</transportConnectors>
</broker></beans>"""


def xml_broker(tmp_path: Path, xml: str) -> BrokerThread:
    """A broker on its own thread (not started: ``with`` it) configured by ``xml``, data under
    ``tmp_path``, without the admin listener (its default port is fixed)."""
    config = parse_config(xml, "amqp-test.xml", {"activemq.data": str(tmp_path / "data")})
    return BrokerThread(replace(config, admin=AdminConfig(enabled=False)))


def amqp_broker(tmp_path: Path, query: str = "", **xml: object) -> BrokerThread:
    """A broker with one AMQP listener (``query``: its ``wireFormat.*`` options)."""
    uri = "amqp://127.0.0.1:0" + (f"?{query}" if query else "")
    return xml_broker(tmp_path, broker_xml(listeners=(uri,), **xml))  # type: ignore[arg-type]


def url(broker: BrokerThread, user: str | None = None, password: str | None = None) -> str:
    credentials = f"{user}:{password}@" if user is not None else ""
    return f"amqp://{credentials}127.0.0.1:{broker.amqp_port}"


@contextmanager
def blocking(address: str, **options: Any) -> Iterator[BlockingConnection]:
    connection = BlockingConnection(address, timeout=TIMEOUT_S, reconnect=False, **options)
    try:
        yield connection
    finally:
        with suppress(ProtonException):  # the broker may already have closed it
            connection.close()


def attach(
    connection: BlockingConnection,
    side: str,
    address: str,
    options: LinkOption | None = None,
) -> None:
    """Open a sender or a receiver on ``address``. A refused sender's detach may come after
    proton saw it open: a receiver attached next waits long enough to see it."""
    if side == "receiver":
        connection.create_receiver(address, options=options)
        return
    connection.create_sender(address, options=options)
    connection.create_receiver("queue://attach.probe")


def message_from(connection: BlockingConnection, address: str) -> Message:
    """One accepted message from ``address``."""
    receiver = connection.create_receiver(address, credit=1)
    message = receiver.receive(timeout=TIMEOUT_S)
    receiver.accept()
    close_link(receiver)
    return message


def close_link(link: Any) -> None:
    """Close a blocking sender or receiver (detach with closed=true); proton's ``close`` is
    untyped."""
    link.close()


def region_of(thread: BrokerThread) -> RegionBroker:
    broker = thread.broker
    assert broker is not None, "the broker thread is started"
    return broker.service.region


class ExactlyOnce(LinkOption):
    """rcv-settle-mode second: the receiver settles only after the sender did (exactly-once)."""

    def apply(self, link: Link) -> None:
        link.rcv_settle_mode = Link.RCV_SECOND


def run_container(handler: MessagingHandler, deadline_s: float = CONTAINER_DEADLINE_S) -> None:
    """Run a proton ``Container`` for ``handler`` in a thread; fail if it outlives the deadline
    (the handler stops it by closing its connection when done)."""
    container = Container(handler)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            container.run()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, name="proton-container", daemon=True)
    thread.start()
    thread.join(deadline_s)
    if thread.is_alive():
        container.stop()
        thread.join(5)
        raise AssertionError(f"the proton Container did not finish within {deadline_s} s")
    if errors:
        raise errors[0]


def bodies(messages: list[Message]) -> list[object]:
    return [message.body for message in messages]
