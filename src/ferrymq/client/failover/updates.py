"""Where new broker lists come from: an ``updateURIsURL`` and the brokers themselves.

``updateURIsURL`` (seed 000 §2.1.2) is a file path or a ``file:``/``http:``/``https:`` URL
holding a comma-separated URI list; the failover loop reads it again at the start of every
reconnect pass, in a worker thread, and keeps the previous list when it cannot.

Dynamic failover over STOMP is a FerryMQ extension (docs/semantics.md "Dynamic failover over
STOMP"): a client that sends ``ferrymq.cluster-updates:true`` on CONNECT gets the broker's
cluster list in the CONNECTED header ``ferrymq.cluster-brokers``, and later changes as MESSAGE
frames on the reserved subscription id ``ferrymq.cluster-updates``, which may also carry
``ferrymq.rebalance:true`` (move to the first broker of the list if not on it) or
``ferrymq.reconnect-to:<uri>`` (move there now). A standard STOMP client never asks, so never
gets them.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from ferrymq.client.errors import BrokerURLError
from ferrymq.client.failover.options import parse_member_list
from ferrymq.client.failover.policy import broker_key, unique
from ferrymq.stomp.constants import (
    FERRYMQ_CLUSTER_BROKERS,
    FERRYMQ_REBALANCE,
    FERRYMQ_RECONNECT_TO,
)
from ferrymq.util.uri import URI, URIError, parse_uri, redact_url

log = logging.getLogger(__name__)

READ_TIMEOUT_S: Final = 5.0
"""An ``updateURIsURL`` that takes longer is skipped for this pass."""
MAX_LIST_BYTES: Final = 1024 * 1024


def _read(location: str) -> str:
    if "://" in location or location.startswith("file:"):
        with urllib.request.urlopen(location, timeout=READ_TIMEOUT_S) as response:
            data: bytes = response.read(MAX_LIST_BYTES + 1)
    else:
        with open(location, "rb") as handle:
            data = handle.read(MAX_LIST_BYTES + 1)
    if len(data) > MAX_LIST_BYTES:
        raise ValueError(f"more than {MAX_LIST_BYTES} bytes")
    return data.decode("utf-8")


async def read_uri_list(location: str) -> list[URI] | None:
    """The URIs at ``location``, or None (logged) when it cannot be read or parsed."""
    try:
        async with asyncio.timeout(READ_TIMEOUT_S + 1):
            text = await asyncio.to_thread(_read, location)
    except (OSError, ValueError, TimeoutError) as exc:
        log.warning(
            "cannot read updateURIsURL %s (%s); keeping the previous list",
            redact_url(location),
            exc,
        )
        return None
    return parse_broker_list(" ".join(text.split()), source=f"updateURIsURL {redact_url(location)}")


def parse_broker_list(text: str, *, source: str) -> list[URI] | None:
    """A comma-separated broker list from outside (a file, a broker); None (logged) if bad."""
    try:
        return list(parse_member_list(text.replace(" ", ""), url=text, part=source))
    except BrokerURLError as exc:
        log.warning("ignoring the broker list from %s: %s", source, exc)
        return None


@dataclass(frozen=True, slots=True)
class ClusterUpdate:
    """What a broker pushed: a new list, and maybe a request to move."""

    brokers: list[URI] | None
    rebalance: bool = False
    reconnect_to: URI | None = None


def cluster_update(headers: Mapping[str, str], *, source: str) -> ClusterUpdate:
    """Read the extension's headers (on CONNECTED, or a cluster-updates MESSAGE)."""
    listed = headers.get(FERRYMQ_CLUSTER_BROKERS)
    brokers = parse_broker_list(listed, source=source) if listed is not None else None
    target: URI | None = None
    reconnect_to = headers.get(FERRYMQ_RECONNECT_TO)
    if reconnect_to:
        try:
            parsed = parse_uri(reconnect_to.strip())
        except URIError as exc:
            log.warning("ignoring %s from %s: %s", FERRYMQ_RECONNECT_TO, source, exc)
        else:
            if isinstance(parsed, URI):
                target = parsed
            else:
                log.warning("ignoring %s from %s: not a broker URI", FERRYMQ_RECONNECT_TO, source)
    return ClusterUpdate(brokers, headers.get(FERRYMQ_REBALANCE) == "true", target)


class BrokerList:
    """The brokers a failover transport knows: the static list (the URL's, or a discovery
    agent's), and the updated ones, from ``updateURIsURL`` and from the brokers, which take
    precedence (reference §1.3)."""

    def __init__(self, static: Iterable[URI]) -> None:
        self.static: list[URI] = unique(static)
        self.from_url: list[URI] = []
        self.from_broker: list[URI] = []

    def updated(self) -> list[URI]:
        return unique(self.from_url + self.from_broker)

    def add(self, uri: URI) -> None:
        self.static = unique([*self.static, uri])

    def remove(self, uri: URI) -> None:
        key = broker_key(uri)
        self.static = [known for known in self.static if broker_key(known) != key]

    def learn(self, update: ClusterUpdate, *, reconnect_supported: bool = False) -> URI | None:
        """Take a broker's update; returns where to move now, if anywhere."""
        if update.brokers is not None:
            self.from_broker = update.brokers
        if update.reconnect_to is not None and reconnect_supported:
            # ActiveMQ clears its static list here (reference §9.10); FerryMQ keeps it and
            # puts the target first.
            self.from_broker = unique([update.reconnect_to, *self.from_broker])
            return update.reconnect_to
        if update.rebalance and self.from_broker:
            return self.from_broker[0]
        return None

    def describe(self) -> str:
        return "[" + ", ".join(str(uri) for uri in [*self.updated(), *self.static]) + "]"
