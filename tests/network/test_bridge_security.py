"""Network bridges on an authenticating, authorizing broker (issue 16, item 2): a connector
with a wrong password is refused, says so in its log and tries again; so is one whose user is
not in the broker's privileged group (a bridge is trusted with message ids and failover URLs);
a bridge whose user may not write a destination on the remote broker never forwards it (it
does not even hear of the demand), while what it may write crosses as usual."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ferrymq.client import connect
from ferrymq.config.activemq_xml import parse_config
from ferrymq.security.build import security_for
from ferrymq.testing import wait_until
from ferrymq.testing.network import BrokerNetwork, receive_all
from tests.security.test_enforcement_authentication import security_xml

WAIT_S = 15.0


async def start_secured_b(net: BrokerNetwork, xml: str, privileged: str = "admins") -> None:
    """B first, secured by ``xml``'s plugins before A's connector can reach it (the network
    fixture gives its brokers no plugins of their own); ``privileged``: the group a bridge's
    user must be in (``ferrymq broker --admin-group``)."""
    await net.start("B")
    authenticator, authorizer = security_for(parse_config(xml, "b-security.xml"))
    net["B"].service.security.use(authenticator, authorizer)
    net["B"].service.security.privileged_group = privileged


def bridged_as_user(tmp_path: Path, password: str) -> BrokerNetwork:
    """A's connector logs in to B as ``user`` (not in ``admins``) with ``password``."""
    net = BrokerNetwork(tmp_path)
    net.add(
        "A",
        '<networkConnector name="to-B" uri="static:({B})" userName="user" '
        f'password="{password}"/>',
    )
    net.add("B")
    return net


def logged(caplog: pytest.LogCaptureFixture, needle: str, logger: str = "") -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith(logger) and needle in r.getMessage()
    ]


async def test_a_wrong_password_is_refused_logged_and_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    net = bridged_as_user(tmp_path, "XYZZY-wrong")
    try:
        await start_secured_b(net, security_xml())
        await net.start("A")

        def failures() -> list[str]:
            return logged(caplog, "failed", "ferrymq.network")

        await wait_until(lambda: len(failures()) >= 2, WAIT_S, "two refused bridge attempts")
        assert "User name [user] or password is invalid." in failures()[0]
        refused = [r for r in caplog.records if r.getMessage().startswith("login refused")]
        assert refused
        assert "'user'" in refused[0].getMessage()
        assert not [r for r in caplog.records if "XYZZY" in r.getMessage()]
        assert all(b.state != "started" for b in net["A"].network.connectors[0].bridges.values())
    finally:
        await net.stop()


async def test_a_bridge_forwards_only_what_its_user_may_write(tmp_path: Path) -> None:
    entries = """
    <authorizationEntry topic="ActiveMQ.Advisory.>" read="users" write="users" admin="users"/>
    <authorizationEntry queue="SHARED" read="users,admins" write="users,admins" admin="admins"/>
    <authorizationEntry queue="PRIVATE" read="admins" write="admins" admin="admins"/>
    """
    net = BrokerNetwork(tmp_path)
    net.add(
        "A",
        '<networkConnector name="to-B" uri="static:({B})" userName="user" password="password"/>',
    )
    net.add("B")
    try:
        # The bridge's user is in the privileged group yet only in "users" for the map.
        await start_secured_b(net, security_xml(entries), privileged="users")
        await net.start("A")
        await net.wait_for_bridges()
        consumer = await connect(net.url("B"), login="system", passcode="manager")
        try:
            shared = await consumer.subscribe("/queue/SHARED", ack="client")
            private = await consumer.subscribe("/queue/PRIVATE", ack="client")
            await net.wait_for_demand("A", "queue://SHARED")
            await net.produce("A", "/queue/PRIVATE", 3, prefix="p")
            await net.produce("A", "/queue/SHARED", 3, prefix="s")
            received = await receive_all({"shared": shared, "private": private}, 3)
        finally:
            await consumer.disconnect()
        assert sorted(m.body for m in received["shared"]) == [b"s-000", b"s-001", b"s-002"]
        assert received["private"] == []
        assert net.demand("A", "queue://PRIVATE") == []
        assert net.queue_depth("A", "PRIVATE") == 3  # kept where it was sent
        bridge = next(iter(net["A"].network.connectors[0].bridges.values()))
        assert bridge.state == "started"
    finally:
        await net.stop()


async def test_a_bridge_whose_user_is_not_privileged_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    net = bridged_as_user(tmp_path, "password")
    try:
        await start_secured_b(net, security_xml())
        await net.start("A")

        def refusals() -> list[str]:
            return logged(caplog, "may not open a network bridge")

        await wait_until(lambda: len(refusals()) >= 2, WAIT_S, "the bridge refused and logged")
        assert any(
            line.startswith("user user may not open a network bridge") for line in refusals()
        )
        assert all(b.state != "started" for b in net["A"].network.connectors[0].bridges.values())
        assert net["B"].service.cluster.peers == {}
    finally:
        await net.stop()
