"""Broker connections of a broker with authentication (a ``simpleAuthenticationPlugin``).

The connection's ``user``/``password`` are the remote's login; this broker does not know that
user. The elements still reach their own broker over ``vm://``, as the broker itself (Artemis
runs them inside the broker): a mirror and a sender work, and nobody else can log in with that
identity, over the network or with a wrong passcode."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import ClientError, connect
from ferrymq.config.cli import config_from_flags
from ferrymq.testing import broker_config, running_broker, wait_until
from tests.connections.mirror_support import WAIT_S, amqp_uri, target, wait_depth

PLUGINS = """<plugins><simpleAuthenticationPlugin><users>
<authenticationUser username="app" password="app-pw" groups="users"/>
<authenticationUser username="system" password="system-pw" groups="users,admins"/>
</users></simpleAuthenticationPlugin></plugins>"""


def secured_source(tmp: Path, remote_uri: str) -> AbstractAsyncContextManager[Broker]:
    xml = f"""<beans><broker xmlns="http://activemq.apache.org/schema/core" brokerName="a">
{PLUGINS}
<broker-connections>
  <amqp-connection uri="{remote_uri}" name="dr" user="remote-user" password="remote-pw"
      retry-interval="100"><mirror address-filter="!out"/></amqp-connection>
  <amqp-connection uri="{remote_uri}" name="bridge" user="remote-user" password="remote-pw"
      retry-interval="100"><sender address-match="out.#"/></amqp-connection>
</broker-connections>
</broker></beans>"""
    base = broker_config(tmp / "a", name="a", xml=xml)
    flags = config_from_flags("a", tmp / "a", ["stomp://127.0.0.1:0"], "off", True)
    return running_broker(replace(base, transport_connectors=flags.transport_connectors))


async def send_as_app(broker: Broker, destination: str, count: int) -> None:
    async with await connect(broker.stomp_urls[0], login="app", passcode="app-pw") as client:
        for i in range(count):
            await client.send(destination, f"m{i}", persistent=True)


async def test_mirror_and_sender_of_a_secured_broker(tmp_path: Path) -> None:
    async with target(tmp_path, "b") as b, secured_source(tmp_path, amqp_uri(b)) as a:
        await send_as_app(a, "/queue/orders", 3)
        await send_as_app(a, "/queue/out.eu", 2)
        await wait_depth(b, "orders", 3, "mirrored to b")
        await wait_depth(b, "out.eu", 2, "sent to b")
        await wait_depth(a, "out.eu", 0, "acknowledged on a once b took them")
        for name in ("dr", "bridge"):
            conn = a.broker_connections.get(name)
            await wait_until(lambda c=conn: c.state == "connected", WAIT_S, f"{name} up")  # type: ignore[misc]
            assert conn.connects == 1
        # the identity is only for this process's own clients: not over the network
        local = a.broker_connections.get("dr").local
        assert local.user == "broker-connection:dr"
        with pytest.raises(ClientError, match="is invalid"):
            await connect(a.stomp_urls[0], login=local.user, passcode=local.password)
        with pytest.raises(ClientError, match="is invalid"):  # in the process, but a guess
            await connect(local.vm_url, login=local.user, passcode="guess")
        async with await connect(local.vm_url, login=local.user, passcode=local.password):
            pass
        with pytest.raises(ClientError, match="is invalid"):
            await connect(a.stomp_urls[0], login="remote-user", passcode="remote-pw")
