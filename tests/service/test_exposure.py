"""The start-up warning for listeners others can reach without a password (issue 16, item 5)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.config.cli import config_from_flags
from ferrymq.security.api import AuthenticationError, Credentials, Subject
from ferrymq.service.exposure import exposure_warnings, is_loopback


class NobodyAuthenticator:
    """An embedding application's own authenticator: refuses everyone."""

    def authenticate(self, credentials: Credentials) -> Subject:
        raise AuthenticationError(credentials.login)


def warnings_for(tmp_path: Path, listen: str, admin: str) -> list[str]:
    config = config_from_flags("exposed", tmp_path, [listen], admin, False)
    return exposure_warnings(config, authenticated=False)


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.0.1.1", "::1", "[::1]", "localhost", "LOCALHOST", "broker.localhost"],
)
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "10.0.0.5", "192.168.1.2", "broker.example"])
def test_addresses_others_may_reach(host: str) -> None:
    assert not is_loopback(host)


def test_loopback_listeners_need_no_warning(tmp_path: Path) -> None:
    assert warnings_for(tmp_path, "stomp://127.0.0.1:61613", "127.0.0.1:8161") == []
    assert warnings_for(tmp_path, "stomp://localhost:61613", "off") == []


def test_every_exposed_listener_is_named_with_the_fix(tmp_path: Path) -> None:
    lines = warnings_for(tmp_path, "stomp://0.0.0.0:61613", "0.0.0.0:8161")
    assert len(lines) == 2
    stomp, admin = lines
    assert stomp.startswith("SECURITY WARNING: the stomp listener")
    assert "every network interface (0.0.0.0)" in stomp
    assert "without a password" in stomp
    assert "docs/security.md" in stomp
    assert "bind 127.0.0.1" in stomp
    assert admin.startswith("SECURITY WARNING: the admin API binds every network interface")
    assert "purge, delete and move messages" in admin
    assert "--admin 127.0.0.1:8161" in admin
    named = warnings_for(tmp_path, "stomp://10.1.2.3:61613", "off")
    assert "binds 10.1.2.3, which is not a loopback address" in named[0]


def test_authentication_silences_it(tmp_path: Path) -> None:
    config = config_from_flags("exposed", tmp_path, ["stomp://0.0.0.0:61613"], "0.0.0.0:8161")
    assert exposure_warnings(config, authenticated=True) == []


async def test_the_broker_says_so_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ferrymq")
    config = config_from_flags("exposed", tmp_path, ["stomp://0.0.0.0:0"], "0.0.0.0:0", False)
    broker = Broker(config)
    await broker.start()
    await broker.stop()
    loud = [r for r in caplog.records if "SECURITY WARNING" in r.getMessage()]
    assert [r.levelno for r in loud] == [logging.WARNING, logging.WARNING]
    assert "stomp listener" in loud[0].getMessage()
    assert "admin API" in loud[1].getMessage()


async def test_a_broker_with_authentication_is_quiet(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ferrymq")
    config = config_from_flags("exposed", tmp_path, ["stomp://0.0.0.0:0"], "0.0.0.0:0", False)
    broker = Broker(config)
    broker.service.security.use(NobodyAuthenticator(), None)
    await broker.start()
    try:
        assert broker.admin is not None
        assert broker.admin.access is not None, "the admin API was left open"
    finally:
        await broker.stop()
    assert not [r for r in caplog.records if "SECURITY WARNING" in r.getMessage()]
