"""Dynamic failover, broker side: which brokers a failover client is told about, and when.

Seed 000 §2.1.2 (Table 2.2) and reference §2. A broker's cluster is itself plus the peers it
reaches through network bridges: the brokers its own connectors bridge to, and the brokers that
opened a duplex bridge to it (ActiveMQ learns peers in exactly these two places). A connector
with ``updateClusterClients`` gives every FerryMQ failover client that asks
(``ferrymq.cluster-updates:true`` on CONNECT) the list on CONNECTED, and a new list on the
reserved subscription whenever a peer joins; with ``updateClusterClientsOnRemove`` also when one
leaves. ``rebalanceClusterClients`` asks the clients to move when a peer joins, each client
given the list rotated by one more place, so the clients spread over the brokers instead of
all moving to the same one. ``updateClusterFilter`` keeps out peers whose broker name does not
match one of its regular expressions (whole-name matches, as Java's ``Pattern.matches``); this
broker itself is always listed first.

The wire format is FerryMQ's STOMP extension (docs/semantics.md "Dynamic failover over STOMP").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ferrymq.config.model import TransportConnectorConfig

log = logging.getLogger(__name__)


class ClusterClient(Protocol):
    def send_cluster_update(self, brokers: Sequence[str], *, rebalance: bool) -> None:
        """Tell the client the brokers it may fail over to, in order (``rebalance``: it should
        reconnect to the first), in its protocol (STOMP: a MESSAGE on the reserved
        cluster-updates subscription)."""


@dataclass(slots=True)
class Peer:
    broker_id: str
    name: str
    url: str
    links: set[str] = field(default_factory=set)
    """The bridge connections that stand for it: it leaves when the last one closes."""


@dataclass(slots=True)
class _Listener:
    config: TransportConnectorConfig
    own_url: str
    filters: tuple[re.Pattern[str], ...]
    clients: dict[ClusterClient, int] = field(default_factory=dict)
    """Each client and its rotation (the place in the list it was last given first)."""

    def admits(self, peer: Peer) -> bool:
        return not self.filters or any(f.fullmatch(peer.name) for f in self.filters)


class ClusterMembership:
    def __init__(self) -> None:
        self.peers: dict[str, Peer] = {}
        self._listeners: dict[str, _Listener] = {}
        self._rotation = 0

    # -- listeners and their clients ----------------------------------------------------------

    def add_listener(self, config: TransportConnectorConfig, own_url: str) -> None:
        filters = tuple(re.compile(pattern) for pattern in config.update_cluster_filter)
        self._listeners[config.display_name] = _Listener(config, own_url, filters)

    def clear_listeners(self) -> None:
        self._listeners.clear()

    def serves(self, connector: str) -> bool:
        """Whether clients of this listener get cluster updates."""
        listener = self._listeners.get(connector)
        return listener is not None and (
            listener.config.update_cluster_clients or listener.config.rebalance_cluster_clients
        )

    def attach(self, connector: str, client: ClusterClient) -> list[str]:
        """A client asked for updates: remember it; returns its first list (for CONNECTED)."""
        listener = self._listeners[connector]
        self._rotation += 1
        listener.clients[client] = self._rotation
        # A connecting (or reconnecting) client is not asked to move: its list starts here.
        return self._brokers(listener, 0)

    def detach(self, client: ClusterClient) -> None:
        for listener in self._listeners.values():
            listener.clients.pop(client, None)

    def brokers(self, connector: str) -> list[str]:
        """The list a client of ``connector`` is given, unrotated (admin, tests)."""
        return self._brokers(self._listeners[connector], 0)

    def _brokers(self, listener: _Listener, rotation: int) -> list[str]:
        urls = [listener.own_url]
        for peer in self.peers.values():
            if listener.admits(peer) and peer.url not in urls:
                urls.append(peer.url)
        if rotation and len(urls) > 1:
            shift = rotation % len(urls)
            urls = urls[shift:] + urls[:shift]
        return urls

    # -- peers --------------------------------------------------------------------------------

    def peer_joined(self, link: str, broker_id: str, name: str, url: str) -> None:
        peer = self.peers.get(broker_id)
        if peer is not None:
            peer.links.add(link)
            if peer.url == url:
                return
            peer.url = url
        else:
            self.peers[broker_id] = Peer(broker_id, name, url, {link})
        log.info("cluster: broker %s (%s) joined at %s", name, broker_id, url)
        self._announce(joined=True)

    def peer_left(self, link: str) -> None:
        for broker_id, peer in list(self.peers.items()):
            if link not in peer.links:
                continue
            peer.links.discard(link)
            if not peer.links:
                del self.peers[broker_id]
                log.info("cluster: broker %s (%s) left", peer.name, broker_id)
                self._announce(joined=False)

    def _announce(self, *, joined: bool) -> None:
        for listener in self._listeners.values():
            config = listener.config
            if not (config.update_cluster_clients or config.rebalance_cluster_clients):
                continue
            if not joined and not config.update_cluster_clients_on_remove:
                continue
            rebalance = joined and config.rebalance_cluster_clients
            for client, rotation in list(listener.clients.items()):
                if rebalance:
                    rotation = listener.clients[client] = rotation + 1
                _send(client, self._brokers(listener, rotation), rebalance=rebalance)


def _send(client: ClusterClient, brokers: Sequence[str], *, rebalance: bool) -> None:
    try:
        client.send_cluster_update(brokers, rebalance=rebalance)
    except Exception:  # one client's broken socket must not stop the others' updates
        log.exception("cluster update to %r failed", client)
