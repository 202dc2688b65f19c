"""Protocol version and heart-beat negotiation (STOMP 1.2 "Protocol Negotiation", "Heart-beating").

Both follow ActiveMQ's ``ProtocolConverter``: the highest common version wins, and a broker
that has no heart-beat policy of its own answers ``heart-beat:cy,cx``, adopting the client's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ferrymq.stomp.constants import SUPPORTED_VERSIONS, V1_0
from ferrymq.stomp.errors import RemoteProtocolError

# ActiveMQ prints Stomp.SUPPORTED_PROTOCOL_VERSIONS newest first with Arrays.toString.
_SUPPORTED_TEXT = "[" + ", ".join(reversed(SUPPORTED_VERSIONS)) + "]"


def negotiate_version(accept_version: str | None) -> str:
    """The version to speak, given the client's ``accept-version`` header.

    Absent means a 1.0 client. Entries are comma-separated and may carry spaces. No common
    version is a fatal error worded as ActiveMQ's.
    """
    if accept_version is None:
        return V1_0
    offered = {entry.strip() for entry in accept_version.split(",")}
    for version in reversed(SUPPORTED_VERSIONS):
        if version in offered:
            return version
    raise RemoteProtocolError(
        f"Invalid Protocol version[{accept_version}], supported versions are: {_SUPPORTED_TEXT}"
    )


def parse_heart_beat(value: str | None) -> tuple[int, int]:
    """``heart-beat: cx,cy`` as two non-negative millisecond counts; absent means (0, 0).

    cx is the smallest interval at which the sender can send heart-beats, cy the interval at
    which it wants to receive them (0: cannot or does not want to). Anything else is the fatal
    "Invalid heart-beat header" of ActiveMQ.
    """
    if value is None:
        return (0, 0)
    parts = value.strip().split(",")
    if len(parts) == 2 and all(
        part.isascii() and part.isdigit() and len(part) <= 18 for part in parts
    ):
        return (int(parts[0]), int(parts[1]))
    raise RemoteProtocolError(f"Invalid heart-beat header:{value[:40]}")


def format_heart_beat(heart_beat: tuple[int, int]) -> str:
    return f"{heart_beat[0]},{heart_beat[1]}"


def mirror_heart_beat(client: tuple[int, int]) -> tuple[int, int]:
    """ActiveMQ's answer to a client's ``cx,cy``: ``cy,cx``, so each side gets what it asked."""
    return (client[1], client[0])


@dataclass(frozen=True, slots=True)
class HeartBeatTiming:
    """What one side of a connection does after negotiation; 0 disables either half.

    ``receive_timeout_ms`` is the negotiated interval itself; the transport may allow a grace
    period on top (ActiveMQ's ``transport.hbGracePeriodMultiplier``).
    """

    send_interval_ms: int
    receive_timeout_ms: int


def negotiate_heart_beat(peer: tuple[int, int], own: tuple[int, int]) -> HeartBeatTiming:
    """Heart-beat timing for our side, from the peer's header and our own (STOMP 1.2).

    The broker calls it as ``negotiate_heart_beat(client, server)``, a client as
    ``negotiate_heart_beat(server, client)``. Each direction runs at the larger of what the
    sender can do and what the receiver wants, and not at all if either of them says 0.
    """
    peer_can_send, peer_wants = peer
    own_can_send, own_wants = own
    send = 0 if own_can_send == 0 or peer_wants == 0 else max(own_can_send, peer_wants)
    receive = 0 if peer_can_send == 0 or own_wants == 0 else max(peer_can_send, own_wants)
    return HeartBeatTiming(send_interval_ms=send, receive_timeout_ms=receive)
