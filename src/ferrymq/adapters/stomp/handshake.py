"""CONNECT: who is connecting, and which request handler serves them.

A STOMP CONNECT can open three kinds of connection, told apart by FerryMQ's own headers: a pure
master/slave slave (``ferrymq.replication:true``: it gets the replication stream and nothing
else), another broker's network bridge (``ferrymq.network-bridge``: the brokers exchange ids and
URLs, and a cluster peer joins the list failover clients are given) or an application client.
Each of them authenticates first (``service.security``: a failed login is a fatal ERROR in
ActiveMQ's words, slowed down after repeated failures).  With authentication configured, a
slave and a bridge are trusted with everything (the whole store, message ids, the URLs failover
clients are sent to), so they must log in as a member of the broker's privileged group (the
admin group, ``admins`` unless ``ferrymq broker --admin-group`` says otherwise, as ActiveMQ's
examples give network connectors the ``system`` user in ``admins``); anyone else asking is
refused with a fatal ERROR. Any of them may ask for cluster updates
(``ferrymq.cluster-updates:true``), the brokers a failover client may use (ActiveMQ's
updateClusterClients).
"""

from __future__ import annotations

import logging

from ferrymq.adapters.stomp.base import RequestHandler, StompLink
from ferrymq.adapters.stomp.network import BridgeRequests
from ferrymq.adapters.stomp.replication import ReplicationRequests
from ferrymq.adapters.stomp.requests import ClientRequests
from ferrymq.core.errors import BrokerError
from ferrymq.security.api import Subject
from ferrymq.service.cluster import ClusterClient
from ferrymq.service.connection import BridgePeer
from ferrymq.stomp import constants as h
from ferrymq.stomp.events import Connect

log = logging.getLogger(__name__)


def choose_requests(
    link: StompLink,
    cluster_client: ClusterClient,
    connector: str,
    event: Connect,
    subject: Subject | None,
) -> tuple[RequestHandler, dict[str, str]]:
    """The handler for this CONNECT (whose login proved ``subject``: None without
    authentication), and the headers its CONNECTED frame adds."""
    service = link.service
    connection = link.connection
    headers = event.headers
    requests: RequestHandler
    extra: dict[str, str] = {}
    transport = connection.transport
    _check_privileged(link, event, subject)
    if headers.get(h.FERRYMQ_REPLICATION) == "true":
        name = headers.get(h.FERRYMQ_REPLICA) or connection.connection_id
        requests = ReplicationRequests(link, name)
    elif not service.accepting_clients:
        raise BrokerError("this broker is waiting for its slave to attach (waitForSlave)")
    else:
        added = connection.region.add_connection(
            connection.connection_id,
            event.client_id or None,
            user=event.login,
            remote_address=transport.remote_address if transport else None,
            subject=subject,
        )
        if added.refused is not None:
            raise added.refused  # the client id is taken
        bridge = headers.get(h.FERRYMQ_NETWORK_BRIDGE)
        if bridge is None:
            requests = ClientRequests(link)
        else:
            connection.network_bridge = bridge or "bridge"
            requests = BridgeRequests(link, connection.network_bridge, headers)
            extra.update(_bridge_handshake(link, headers))
    cluster = service.cluster
    if headers.get(h.FERRYMQ_CLUSTER_UPDATES) == "true" and cluster.serves(connector):
        extra[h.FERRYMQ_CLUSTER_BROKERS] = ",".join(cluster.attach(connector, cluster_client))
    return requests, extra


def _bridge_handshake(link: StompLink, headers: dict[str, str]) -> dict[str, str]:
    """The brokers introduce themselves; a cluster peer joins the failover clients' list."""
    service = link.service
    connection = link.connection
    region = connection.region
    extra = {h.FERRYMQ_BROKER_ID: region.broker_id, h.FERRYMQ_BROKER_NAME: region.broker_name}
    own_url = service.cluster_url()
    if own_url is not None:
        extra[h.FERRYMQ_BROKER_URL] = own_url
    peer_url = headers.get(h.FERRYMQ_BROKER_URL)
    broker_id = headers.get(h.FERRYMQ_BROKER_ID) or connection.connection_id
    name = headers.get(h.FERRYMQ_BROKER_NAME) or broker_id
    if headers.get(h.FERRYMQ_CLUSTER_PEER) == "true" and peer_url:
        service.cluster.peer_joined(connection.connection_id, broker_id, name, peer_url)
    if headers.get(h.FERRYMQ_DUPLEX) == "true":
        connection.duplex_peer = BridgePeer(broker_id, name)
    return extra


def _check_privileged(link: StompLink, event: Connect, subject: Subject | None) -> None:
    """A slave or a bridge must be a member of the privileged group (with authentication)."""
    headers = event.headers
    if headers.get(h.FERRYMQ_REPLICATION) == "true":
        role = "attach as a pure master/slave slave"
    elif h.FERRYMQ_NETWORK_BRIDGE in headers:
        role = "open a network bridge"
    else:
        return
    group = link.service.security.privileged_group
    if subject is None or group in subject.groups:
        return
    transport = link.connection.transport
    address = transport.remote_address if transport is not None else None
    message = (
        f"user {subject.user} may not {role}: that needs membership of group {group} "
        "(ferrymq broker --admin-group)"
    )
    log.warning("%s; refused from %s", message, address or "this process (vm://)")
    raise BrokerError(message, fatal=True)
