"""Authentication at the connection boundary (issue 16, item 1), against real brokers over real
sockets: a wrong password and an unknown user get the same ERROR and a closed socket, repeated
failures from one address are answered ever later, a good login with stomp.py works, and the
admin API and ``ferrymq connections`` show the user, its groups and the client's address."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import stomp
from ferrymq.cli.main import main
from ferrymq.client import connect
from ferrymq.config.cli import config_from_flags
from ferrymq.config.model import AdminConfig
from ferrymq.core.destination import Destination
from ferrymq.embedded import embedded_broker
from ferrymq.security.api import Operation, Subject
from ferrymq.service import security as service_security
from ferrymq.testing import BrokerThread, broker_config
from tests.fuzz.wire import RawConnection, connect_frame, frame
from tests.interop.conftest import Collector

PLUGINS = """<beans><broker xmlns="http://activemq.apache.org/schema/core" brokerName="secured">
<plugins>
  <simpleAuthenticationPlugin><users>
    <authenticationUser username="system" password="manager" groups="admins"/>
    <authenticationUser username="user" password="password" groups="users"/>
    <authenticationUser username="guest" password="password" groups="guests"/>
  </users></simpleAuthenticationPlugin>
  {authorization}
</plugins></broker></beans>"""
"""ActiveMQ's example users (activemq-security.xml), and an ``authorizationPlugin`` if given."""


def security_xml(entries: str = "", temp: str = "") -> str:
    """The users above and, with ``entries``, an authorization map of them (``temp``: the
    tempDestinationAuthorizationEntry's attributes)."""
    if not entries:
        return PLUGINS.format(authorization="")
    temp_entry = (
        "<tempDestinationAuthorizationEntry>"
        f"<tempDestinationAuthorizationEntry {temp}/></tempDestinationAuthorizationEntry>"
        if temp
        else ""
    )
    authorization = (
        "<authorizationPlugin><map><authorizationMap><authorizationEntries>"
        f"{entries}</authorizationEntries>{temp_entry}</authorizationMap></map>"
        "</authorizationPlugin>"
    )
    return PLUGINS.format(authorization=authorization)


def secured(tmp_path: Path, xml: str | None = None, *, admin: bool = False) -> BrokerThread:
    """A broker on its own thread configured by ``xml`` (default: the users, no map)."""
    config = broker_config(tmp_path / "data", name="secured", xml=xml or security_xml())
    if admin:
        config = replace(config, admin=AdminConfig(enabled=True, host="127.0.0.1", port=0))
    return BrokerThread(config).start()


class Grants:
    """An ``Authorizer`` that counts how often it is asked (the cache test): groups per
    (operation, qualified destination name), as an application may embed its own."""

    def __init__(self, grants: dict[tuple[Operation, str], set[str]]) -> None:
        self.grants = grants
        self.asked = 0

    def allowed(self, subject: Subject, operation: Operation, destination: Destination) -> bool:
        self.asked += 1
        return bool(self.grants.get((operation, destination.qualified), set()) & subject.groups)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = secured(tmp_path, admin=True)
    try:
        yield thread
    finally:
        thread.stop()


def refused_login(
    port: int, login: str, passcode: str, source: str | None = None
) -> tuple[str, float]:
    """CONNECT with these credentials (from ``source``): the ERROR's message (the socket must
    close after it) and how long the answer took."""
    with RawConnection(port, source) as raw:
        started = time.monotonic()
        raw.send(connect_frame("1.2", ("login", login), ("passcode", passcode)))
        replies = raw.read_until_eof(timeout_s=15)
        took = time.monotonic() - started
    assert [r.command for r in replies] == ["ERROR"], replies
    return replies[0].message, took


def test_wrong_password_and_unknown_user_are_told_the_same(broker: BrokerThread) -> None:
    wrong_password, _ = refused_login(broker.port, "user", "guess")
    unknown_user, _ = refused_login(broker.port, "nobody", "password")
    assert wrong_password == "User name [user] or password is invalid."
    assert unknown_user == "User name [nobody] or password is invalid."
    assert "guess" not in wrong_password


def test_no_login_is_refused_when_authentication_is_configured(broker: BrokerThread) -> None:
    with RawConnection(broker.port) as raw:
        raw.send(connect_frame("1.2"))
        replies = raw.read_until_eof()
    assert [(r.command, r.message) for r in replies] == [
        ("ERROR", "User name [] or password is invalid.")
    ]


def good_login(port: int, login: str, passcode: str, source: str | None = None) -> float:
    """CONNECT that must succeed; how long CONNECTED took."""
    with RawConnection(port, source) as raw:
        started = time.monotonic()
        raw.send(connect_frame("1.2", ("login", login), ("passcode", passcode)))
        assert raw.expect("CONNECTED")
        return time.monotonic() - started


def test_repeated_failures_from_one_address_are_answered_later(broker: BrokerThread) -> None:
    times = [refused_login(broker.port, "user", f"guess{n}")[1] for n in range(6)]
    # The first failures are answered at once (a person mistypes); then each waits longer.
    assert max(times[:3]) < times[4] < times[5], times
    # Another address's client (127.0.0.2: loopback too) is not slowed down by it.
    assert good_login(broker.port, "user", "password", source="127.0.0.2") < times[4]


def test_a_throttled_address_waits_before_a_success_too(broker: BrokerThread) -> None:
    """A guesser cannot take "no CONNECTED yet" for "wrong password": from a throttled address
    the right password waits as long as a wrong one, and only that user's count is forgiven."""
    for n in range(4):
        refused_login(broker.port, "user", f"guess{n}")
    # Another user's success from the same address does not reset the guessed user's count.
    assert good_login(broker.port, "guest", "password") < 0.25
    _, took = refused_login(broker.port, "user", "guess-again")  # the 5th: waits 0.5 s
    assert took >= 0.5, took
    assert good_login(broker.port, "user", "password") >= 1.0  # the 6th, right or wrong
    assert good_login(broker.port, "user", "password") < 0.25  # forgiven


def test_logins_beyond_those_checked_at_once_wait_their_turn(broker: BrokerThread) -> None:
    """A pool of honest clients opening at once from one host (or failover clients coming back
    after a restart) all get in: two are checked at a time, the others wait, none is refused."""
    raws = [RawConnection(broker.port) for _ in range(6)]
    try:
        for raw in raws:
            raw.send(connect_frame("1.2", ("login", "user"), ("passcode", "password")))
        answers = [raw.read_frame(timeout_s=15) for raw in raws]
    finally:
        for raw in raws:
            raw.close()
    assert [a.command if a else None for a in answers] == ["CONNECTED"] * 6


def test_a_full_login_queue_refuses_more(
    broker: BrokerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service_security, "QUEUED_PER_ADDRESS", 2)
    for n in range(3):  # the next tries from this address wait before their check
        refused_login(broker.port, "user", f"guess{n}")
    raws = [RawConnection(broker.port) for _ in range(3)]
    try:
        for raw in raws:
            raw.send(connect_frame("1.2", ("login", "user"), ("passcode", "guess")))
        replies = [raw.read_until_eof(timeout_s=15) for raw in raws]
    finally:
        for raw in raws:
            raw.close()
    messages = sorted(r[0].message for r in replies)
    assert messages[0] == "User name [user] or password is invalid.", messages
    assert messages[-1].startswith("too many logins waiting from this address"), messages


def test_the_refused_login_log_is_short_and_rate_limited(
    broker: BrokerThread, caplog: pytest.LogCaptureFixture
) -> None:
    long_login = "L" * 5000
    for _ in range(3):
        refused_login(broker.port, long_login, "guess")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("login refused")]
    assert len(lines) == 1, lines
    assert len(lines[0]) < 200, lines[0]
    assert "'" + "L" * 64 + "'" not in lines[0]
    assert "L" * 64 + "..." in lines[0]


def test_only_the_privileged_group_may_bridge_or_replicate(broker: BrokerThread) -> None:
    """A bridge or a slave gets the store, message ids and failover URLs: ``admins`` only."""
    for header, role in (
        (("ferrymq.network-bridge", "evil"), "open a network bridge"),
        (("ferrymq.cluster-peer", "true"), None),
        (("ferrymq.replication", "true"), "attach as a pure master/slave slave"),
    ):
        with RawConnection(broker.port) as raw:
            headers = [("login", "user"), ("passcode", "password"), header]
            if header[0] == "ferrymq.cluster-peer":
                headers += [("ferrymq.network-bridge", ""), ("ferrymq.broker-url", "tcp://evil:1")]
                role = "open a network bridge"
            raw.send(connect_frame("1.2", *headers))
            raw.escaped = True
            replies = raw.read_until_eof(timeout_s=15)
        assert [r.command for r in replies] == ["ERROR"], replies
        assert replies[0].message.startswith(f"user user may not {role}: "), replies[0].message
    service = broker.broker.service if broker.broker is not None else None
    assert service is not None
    assert broker.call(lambda: dict(service.cluster.peers)) == {}  # no failover URL was taken
    with RawConnection(broker.port) as raw:
        raw.send(
            connect_frame(
                "1.2", ("login", "system"), ("passcode", "manager"), ("ferrymq.network-bridge", "b")
            )
        )
        assert raw.expect("CONNECTED")


def test_a_good_login_connects_and_is_shown_with_its_groups(
    broker: BrokerThread, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    listener = Collector()
    client = stomp.Connection12([("127.0.0.1", broker.port)])
    client.set_listener("collector", listener)
    client.connect("user", "password", wait=True, headers={"client-id": "shop"})
    try:
        client.subscribe("/queue/orders", id="s1")
        client.send("/queue/orders", "hello")
        assert listener.wait_messages(1)[0].body == "hello"
        assert broker.broker is not None
        assert broker.broker.admin is not None
        url = broker.broker.admin.url
        (connection,) = admin_connections(url)
        assert (connection["user"], connection["groups"]) == ("user", ["users"])
        assert connection["remote_address"].startswith("127.0.0.1:")
        monkeypatch.setenv("FERRYMQ_ADMIN_PASSWORD", "manager")
        code = main(["connections", "--admin", url, "--admin-user", "system"])
        out = capsys.readouterr().out
        assert code == 0, out
        header, row = out.splitlines()
        assert header.split()[3:5] == ["USER", "GROUPS"]
        assert row.split()[2:4] == ["user", "users"]
    finally:
        client.disconnect()


def admin_connections(url: str) -> list[dict[str, Any]]:
    """``GET /api/v1/connections`` as an administrator (sent even where the API is open)."""
    token = base64.b64encode(b"system:manager").decode()
    request = urllib.request.Request(
        f"{url}/api/v1/connections", headers={"Authorization": f"Basic {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return list(json.loads(response.read())["connections"])


def test_without_authentication_any_login_is_accepted(tmp_path: Path) -> None:
    config = config_from_flags("open", tmp_path / "data", ["stomp://127.0.0.1:0"], "off", True)
    with BrokerThread(config) as thread, RawConnection(thread.port) as raw:
        raw.send(connect_frame("1.2", ("login", "anyone"), ("passcode", "anything")))
        assert raw.expect("CONNECTED")


def test_anonymous_access_when_the_plugin_allows_it(tmp_path: Path) -> None:
    xml = security_xml(
        '<authorizationEntry queue="PUBLIC" read="anonymous" write="anonymous" admin="anonymous"/>'
    ).replace(
        "<simpleAuthenticationPlugin>", '<simpleAuthenticationPlugin anonymousAccessAllowed="true">'
    )
    thread = secured(tmp_path, xml)
    try:
        with RawConnection(thread.port) as raw:
            raw.send(connect_frame("1.2"))
            raw.expect("CONNECTED")
            raw.escaped = True
            raw.send(frame("SEND", ("destination", "/queue/PUBLIC"), ("receipt", "r1")))
            assert raw.expect("RECEIPT").headers["receipt-id"] == "r1"
            raw.send(frame("SEND", ("destination", "/queue/OTHER"), ("receipt", "r2")))
            refused = raw.expect("ERROR")
            assert refused.message == "User anonymous is not authorized to write to: queue://OTHER"

            def users() -> list[tuple[str | None, frozenset[str]]]:
                assert thread.broker is not None
                states = thread.broker.service.region.connections.values()
                return [(state.user, state.groups) for state in states]

            assert thread.call(users) == [("anonymous", frozenset({"anonymous"}))]
        message, _ = refused_login(thread.port, "user", "wrong")
        assert message == "User name [user] or password is invalid."
    finally:
        thread.stop()


def test_frames_sent_with_connect_wait_for_its_login(broker: BrokerThread) -> None:
    """What a client sends right behind its CONNECT is handled only once the login is known
    (here held back by the throttle): after CONNECTED, or never after a refusal."""
    for n in range(3):
        refused_login(broker.port, "user", f"guess{n}")
    send = frame("SEND", ("destination", "/queue/behind"), ("receipt", "r1"), body=b"early")
    service = broker.broker.service if broker.broker is not None else None
    assert service is not None
    for passcode, expected in (("guess", ["ERROR"]), ("password", ["CONNECTED", "RECEIPT"])):
        with RawConnection(broker.port) as raw:
            raw.send(connect_frame("1.2", ("login", "user"), ("passcode", passcode)) + send)
            if expected[0] == "CONNECTED":
                assert raw.expect("CONNECTED")
                assert raw.expect("RECEIPT").headers["receipt-id"] == "r1"
                continue
            replies = raw.read_until_eof(timeout_s=15)
        assert [r.command for r in replies] == expected, replies
        queue = broker.call(lambda: service.region.queues.get(Destination.queue("behind")))
        assert queue is None  # the SEND was never handled: not even before the refusal


async def test_in_process_clients_log_in_together(tmp_path: Path) -> None:
    """vm:// clients have no address: an application opening many at once is never refused."""
    async with embedded_broker(xml=security_xml(), name="vmauth", persistent=False):
        connections = await asyncio.gather(
            *(connect("vm://vmauth", login="user", passcode="password") for _ in range(8))
        )
        for connection in connections:
            await connection.disconnect()
    assert len(connections) == 8
