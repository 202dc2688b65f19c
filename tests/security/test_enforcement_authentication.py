"""Authentication at the connection boundary (issue 16, item 1), against real brokers over real
sockets: a wrong password and an unknown user get the same ERROR and a closed socket, repeated
failures from one address are answered ever later, a good login with stomp.py works, and the
admin API and ``ferrymq connections`` show the user, its groups and the client's address."""

from __future__ import annotations

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
from ferrymq.config.cli import config_from_flags
from ferrymq.config.model import AdminConfig
from ferrymq.core.destination import Destination
from ferrymq.security.api import Operation, Subject
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


def refused_login(port: int, login: str, passcode: str) -> tuple[str, float]:
    """CONNECT with these credentials: the ERROR's message (the socket must close after it) and
    how long the answer took."""
    with RawConnection(port) as raw:
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


def test_repeated_failures_from_one_address_are_answered_later(broker: BrokerThread) -> None:
    times = [refused_login(broker.port, "user", f"guess{n}")[1] for n in range(6)]
    # The first failures are answered at once (a person mistypes); then each waits longer.
    assert max(times[:3]) < times[4] < times[5], times
    # Another address's client is not slowed down by it; a good login still works meanwhile.
    with RawConnection(broker.port) as raw:
        raw.send(connect_frame("1.2", ("login", "user"), ("passcode", "password")))
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
