"""The multicast discovery datagram, ActiveMQ's format (reference §3.4), without sockets.

A datagram is the text ``<group>.ActiveMQ-4.<kind>.%<broker name>%<service URI>`` with kind
``alive`` (sent every keep-alive interval while a service is up) or ``dead`` (sent once when it
stops), for example ``default.ActiveMQ-4.alive.%localhost%tcp://host1:61616``. ActiveMQ always
writes the broker name ``localhost`` and never reads it; FerryMQ does the same, so both discover
each other. Encoding is UTF-8 (service URIs are ASCII in practice; ActiveMQ uses the JVM's
default charset).

Reading is stricter than ActiveMQ's, whose parser assumes the ``%`` follows the kind: a datagram
of another group is ``None`` (not ours, nothing wrong), one of this group that does not have the
shape above raises ``DatagramError`` (the sender's fault). Because a group name may not contain
``%``, a datagram of one group is never taken for one of another, whatever the names: it is
ignored or refused.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

TYPE_SUFFIX: Final = "ActiveMQ-4."
"""What follows ``<group>.`` in every datagram (ActiveMQ's ``TYPE_SUFFIX``)."""
DELIMITER: Final = "%"
BROKER_NAME: Final = "localhost"
"""The broker-name field ActiveMQ 5.x always writes."""
MAX_DATAGRAM_BYTES: Final = 8192
"""ActiveMQ's receive buffer (``BUFF_SIZE``): a longer datagram is cut short by its agents."""


class Kind(enum.Enum):
    ALIVE = "alive."
    DEAD = "dead."


@dataclass(frozen=True, slots=True)
class Advertisement:
    """One datagram: ``service`` is ``kind`` (alive or dead) in ``group``."""

    group: str
    kind: Kind
    service: str
    broker_name: str = BROKER_NAME


class DatagramError(ValueError):
    """A datagram of our group that does not have ActiveMQ's shape (the sender's fault)."""


def check_group(group: str) -> str:
    """``group``, if it can name a group: not empty and without ``%`` (see the module
    docstring); raises ``ValueError`` saying why not."""
    if not group:
        raise ValueError("a group name cannot be empty")
    if DELIMITER in group:
        raise ValueError(f"a group name cannot contain {DELIMITER!r}")
    return group


def type_prefix(group: str) -> str:
    """What every datagram of ``group`` starts with (ActiveMQ's ``getType()``)."""
    return f"{group}.{TYPE_SUFFIX}"


def encode(advertisement: Advertisement) -> bytes:
    check_group(advertisement.group)
    if DELIMITER in advertisement.broker_name:
        raise ValueError(f"a broker name cannot contain {DELIMITER!r}")
    if not advertisement.service:
        raise ValueError("a service URI cannot be empty")
    text = (
        f"{type_prefix(advertisement.group)}{advertisement.kind.value}"
        f"{DELIMITER}{advertisement.broker_name}{DELIMITER}{advertisement.service}"
    )
    return text.encode("utf-8")


def alive(group: str, service: str) -> bytes:
    return encode(Advertisement(group, Kind.ALIVE, service))


def dead(group: str, service: str) -> bytes:
    return encode(Advertisement(group, Kind.DEAD, service))


def decode(data: bytes, group: str) -> Advertisement | None:
    """The advertisement in ``data`` if it belongs to ``group``; ``None`` if it belongs to
    another group or is not a discovery datagram at all."""
    prefix = type_prefix(group).encode("utf-8")
    if not data.startswith(prefix):
        return None
    try:
        payload = data[len(prefix) :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatagramError(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    for kind in Kind:
        if payload.startswith(kind.value):
            break
    else:
        raise DatagramError(f"unknown kind in {payload[:20]!r} (expected alive. or dead.)")
    rest = payload[len(kind.value) :]
    if not rest.startswith(DELIMITER):
        raise DatagramError(f"no {DELIMITER}broker name{DELIMITER} after {kind.value!r}")
    end = rest.find(DELIMITER, 1)
    if end < 0:
        raise DatagramError(f"the broker name has no closing {DELIMITER!r}")
    service = rest[end + 1 :]
    if not service:
        raise DatagramError("no service URI")
    return Advertisement(group, kind, service, rest[1:end])
