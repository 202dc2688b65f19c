"""`ferrymq broker` flags, with and without an activemq.xml file."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.config import AdminConfig, ConfigError, KahaDBConfig, config_from_flags, parse_admin

DATA = Path(__file__).parent / "data"


def test_quick_start_without_a_file() -> None:
    config = config_from_flags()
    (listener,) = config.transport_connectors
    assert listener.uri == "stomp://127.0.0.1:61613"
    assert listener.location is None
    assert config.broker_name == "localhost"
    assert config.persistence == KahaDBConfig()
    assert config.admin == AdminConfig()


def test_flags_set_name_data_listeners_admin_and_persistence() -> None:
    config = config_from_flags(
        "b1", "/srv/ferry", ["tcp://0.0.0.0:61616", "stomp://[::1]:0"], ":9000", False
    )
    assert config.broker_name == "b1"
    assert config.data_directory == Path("/srv/ferry")
    assert [c.port for c in config.transport_connectors] == [61616, 0]
    assert config.transport_connectors[1].host == "::1"
    assert config.admin == AdminConfig(True, "127.0.0.1", 9000)
    assert config.persistence is None
    assert not config.persistent


def test_flags_override_a_file_and_add_listeners() -> None:
    config = config_from_flags(
        "b2", "/srv/b2", ["stomp://127.0.0.1:0"], config_path=DATA / "activemq.xml"
    )
    assert config.broker_name == "b2"
    assert config.data_directory == Path("/srv/b2")
    # The file's ${activemq.data} follows --data-dir too.
    assert config.persistence == KahaDBConfig(directory=Path("/srv/b2/kahadb"))
    assert [c.name for c in config.transport_connectors] == ["openwire", "stomp", None]
    assert config.source == str(DATA / "activemq.xml")


def test_bad_listen_flag_names_the_flag() -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_flags(listen=["mqtt://0.0.0.0:1883"])
    assert str(caught.value).startswith(
        "command line: --listen mqtt://0.0.0.0:1883: scheme mqtt://"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.0.0.0:8161", AdminConfig(True, "0.0.0.0", 8161)),
        ("8200", AdminConfig(True, "127.0.0.1", 8200)),
        ("[::1]:0", AdminConfig(True, "::1", 0)),
        ("off", AdminConfig(enabled=False)),
    ],
)
def test_admin_flag(text: str, expected: AdminConfig) -> None:
    assert parse_admin(text) == expected


def test_bad_admin_flag() -> None:
    with pytest.raises(ConfigError, match="--admin: expected host:port"):
        parse_admin("localhost")
