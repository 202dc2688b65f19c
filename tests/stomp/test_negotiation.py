"""Version and heart-beat negotiation (STOMP 1.2 "Protocol Negotiation", "Heart-beating")."""

from __future__ import annotations

import pytest

from ferrymq.stomp import (
    HeartBeatTiming,
    RemoteProtocolError,
    format_heart_beat,
    mirror_heart_beat,
    negotiate_heart_beat,
    negotiate_version,
    parse_heart_beat,
)


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, "1.0"),
        ("1.0", "1.0"),
        ("1.1", "1.1"),
        ("1.0,1.1", "1.1"),
        ("1.2,1.0", "1.2"),
        ("1.0, 1.1, 1.2", "1.2"),
        ("1.1,2.0", "1.1"),
    ],
)
def test_highest_common_version(accept: str | None, expected: str) -> None:
    assert negotiate_version(accept) == expected


@pytest.mark.parametrize("accept", ["2.0", "", "1.3,0.9"])
def test_no_common_version_is_fatal(accept: str) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        negotiate_version(accept)
    assert info.value.fatal
    assert info.value.message == (
        f"Invalid Protocol version[{accept}], supported versions are: [1.2, 1.1, 1.0]"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, (0, 0)), ("0,0", (0, 0)), ("1000,500", (1000, 500)), (" 10,20 ", (10, 20))],
)
def test_parse_heart_beat(value: str | None, expected: tuple[int, int]) -> None:
    assert parse_heart_beat(value) == expected


@pytest.mark.parametrize("value", ["0", "a,b", "1,2,3", "", "-1,0", "1,", ",1", "1.5,2", "1, 2"])
def test_malformed_heart_beat_is_fatal(value: str) -> None:
    # ActiveMQ Stomp11Test.testRejectInvalidHeartbeats1-3.
    with pytest.raises(RemoteProtocolError, match="heart-beat") as info:
        parse_heart_beat(value)
    assert info.value.fatal


@pytest.mark.parametrize(
    ("client", "server", "send", "receive"),
    [
        ((0, 0), (0, 0), 0, 0),
        ((0, 1000), (500, 0), 1000, 0),
        ((0, 1000), (1500, 0), 1500, 0),
        ((1000, 0), (0, 300), 0, 1000),
        ((1000, 0), (0, 3000), 0, 3000),
        ((100, 200), (0, 0), 0, 0),
        ((100, 200), (300, 50), 300, 100),
    ],
)
def test_negotiate_heart_beat(
    client: tuple[int, int], server: tuple[int, int], send: int, receive: int
) -> None:
    assert negotiate_heart_beat(client, server) == HeartBeatTiming(send, receive)


def test_the_two_sides_agree() -> None:
    client, server = (100, 700), (400, 250)
    broker = negotiate_heart_beat(client, server)
    peer = negotiate_heart_beat(server, client)
    assert broker.send_interval_ms == peer.receive_timeout_ms == 700
    assert broker.receive_timeout_ms == peer.send_interval_ms == 250


def test_activemq_mirrors_the_client() -> None:
    # ActiveMQ answers heart-beat:cy,cx and then sends every cy, expects data every cx.
    client = (1000, 0)
    assert mirror_heart_beat(client) == (0, 1000)
    assert format_heart_beat(mirror_heart_beat((0, 1000))) == "1000,0"
    assert negotiate_heart_beat(client, mirror_heart_beat(client)) == HeartBeatTiming(0, 1000)
    assert negotiate_heart_beat((0, 1000), mirror_heart_beat((0, 1000))) == (
        HeartBeatTiming(1000, 0)
    )
