"""The start-up exposure warning also fires when the configured authentication lets everyone in
(issue 16, review finding 13): `anonymousAccessAllowed="true"`, or a JAAS GuestLoginModule that
no required module guards."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.config import load_config
from ferrymq.config.cli import parse_admin
from ferrymq.service.exposure import exposure_warnings

SIMPLE = """<broker xmlns="http://activemq.apache.org/schema/core" brokerName="open">
  <plugins><simpleAuthenticationPlugin anonymousAccessAllowed="{anonymous}"><users>
    <authenticationUser username="admin" password="change-me" groups="admins"/>
  </users></simpleAuthenticationPlugin></plugins>
  <transportConnectors>
    <transportConnector name="stomp" uri="stomp://0.0.0.0:{port}"/>
  </transportConnectors>
</broker>"""

JAAS = """<broker xmlns="http://activemq.apache.org/schema/core" brokerName="open">
  <plugins><jaasAuthenticationPlugin configuration="activemq"/></plugins>
  <transportConnectors>
    <transportConnector name="stomp" uri="stomp://0.0.0.0:61613"/>
  </transportConnectors>
</broker>"""

PROPERTIES = """    org.apache.activemq.jaas.PropertiesLoginModule {flag}
        org.apache.activemq.jaas.properties.user="users.properties"
        org.apache.activemq.jaas.properties.group="groups.properties";
"""
GUEST = """    org.apache.activemq.jaas.GuestLoginModule sufficient
        org.apache.activemq.jaas.guest.user="visitor"
        org.apache.activemq.jaas.guest.group="guests"{invalidate};
"""


def _simple(tmp_path: Path, anonymous: str, port: int = 61613) -> Path:
    path = tmp_path / "activemq.xml"
    path.write_text(SIMPLE.format(anonymous=anonymous, port=port))
    return path


def _jaas(tmp_path: Path, modules: str) -> Path:
    (tmp_path / "users.properties").write_text("admin=change-me\n")
    (tmp_path / "groups.properties").write_text("admins=admin\n")
    (tmp_path / "login.config").write_text(f"activemq {{\n{modules}}};\n")
    path = tmp_path / "activemq.xml"
    path.write_text(JAAS)
    return path


def test_anonymous_access_allowed_is_warned_about(tmp_path: Path) -> None:
    (line,) = exposure_warnings(load_config(_simple(tmp_path, "true")), authenticated=True)
    assert line.startswith("SECURITY WARNING: the stomp listener stomp binds every network")
    assert 'anonymousAccessAllowed="true"> lets a client that gives no password in' in line
    assert "as user anonymous" in line
    assert exposure_warnings(load_config(_simple(tmp_path, "false")), authenticated=True) == []


@pytest.mark.parametrize(
    ("invalidate", "who"),
    [("", "a client with any password"), (" credentialsInvalidate=true", "gives no password")],
)
def test_an_unguarded_guest_login_module_is_warned_about(
    tmp_path: Path, invalidate: str, who: str
) -> None:
    modules = PROPERTIES.format(flag="sufficient") + GUEST.format(invalidate=invalidate)
    (line,) = exposure_warnings(load_config(_jaas(tmp_path, modules)), authenticated=True)
    assert "GuestLoginModule of login.config entry activemq" in line
    assert who in line
    assert "in as visitor" in line


def test_a_guest_module_behind_a_required_module_admits_nobody_unnamed(tmp_path: Path) -> None:
    modules = PROPERTIES.format(flag="required") + GUEST.format(invalidate="")
    assert exposure_warnings(load_config(_jaas(tmp_path, modules)), authenticated=True) == []


async def test_the_broker_warns_at_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ferrymq")
    config = load_config(_simple(tmp_path, "true", port=0))
    config = replace(config, data_directory=tmp_path / "data", admin=parse_admin("0.0.0.0:0"))
    broker = Broker(config)
    await broker.start()
    await broker.stop()
    loud = [r.getMessage() for r in caplog.records if "SECURITY WARNING" in r.getMessage()]
    assert len(loud) == 2, loud
    assert "anonymousAccessAllowed" in loud[0]
    assert "stomp listener" in loud[0]
    assert "admin API" in loud[1]
    assert "anonymousAccessAllowed" in loud[1]


@pytest.mark.parametrize("kind", ["anonymous", "guest"])
def test_clients_without_a_password_in_the_privileged_group_are_warned_about(
    tmp_path: Path, kind: str
) -> None:
    """Even on loopback: such a client could attach as a slave and copy the whole store."""
    if kind == "anonymous":
        xml = SIMPLE.format(anonymous="true", port=61613).replace(
            'anonymousAccessAllowed="true"',
            'anonymousAccessAllowed="true" anonymousGroup="admins"',
        )
        path = tmp_path / "activemq.xml"
        path.write_text(xml.replace("0.0.0.0", "127.0.0.1"))
    else:
        guest = GUEST.format(invalidate="").replace('guest.group="guests"', 'guest.group="admins"')
        path = _jaas(tmp_path, guest)
        path.write_text(JAAS.replace("0.0.0.0", "127.0.0.1"))
    (line,) = exposure_warnings(load_config(path), authenticated=True)
    assert line.startswith("SECURITY WARNING: clients without a password get group admins")
    assert "attach as a pure master/slave slave" in line
    renamed = replace(load_config(path), admin=replace(load_config(path).admin, admin_group="ops"))
    assert exposure_warnings(renamed, authenticated=True) == []
