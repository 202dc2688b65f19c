"""``NetworkBridge``: the two connections of one bridge and the directions they carry.

The bridge connects to the remote broker (the discovered URI) and to its own broker over
``vm://``; both CONNECT frames name the bridge and the broker on the other side, which makes
them network connections (``ferrymq.network-bridge``): there a SUBSCRIBE may be a demand
subscription and a SEND keeps its message id. The remote broker's CONNECTED says which broker it
is; one with this broker's own id is a loop and ends the bridge for good. A plain connector
forwards local -> remote; ``duplex="true"`` adds remote -> local over the same remote connection,
so the remote broker needs no configuration (seed 001 Figure 2.3).

When a bridge starts and when it stops, it publishes ``ActiveMQ.Advisory.NetworkBridge`` on its
own broker (property ``started``, true or false, and the remote broker's name and id).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ferrymq.client import ClientError, Connection, ConnectionClosed, connect
from ferrymq.config.network import NetworkConnectorConfig
from ferrymq.network.bridge import BridgeFailedError, DemandForwardingBridge
from ferrymq.network.routes import RouteRegistry
from ferrymq.stomp import constants as h
from ferrymq.util.aio import leaf_exceptions
from ferrymq.util.uri import redact_url

log = logging.getLogger(__name__)

NETWORK_BRIDGE_ADVISORY = "/topic/ActiveMQ.Advisory.NetworkBridge"
HEART_BEAT_MS = 10_000
"""Both ways on the remote connection: a broker that stops answering (SIGSTOP, a cut cable)
ends the bridge within 1.5 of these (ActiveMQ's inactivity monitor does the same at 30 s)."""


def _no_url() -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class LocalBroker:
    broker_id: str
    broker_name: str
    cluster_url: Callable[[], str | None] = _no_url
    """The URL failover clients use for this broker, told to peers (dynamic failover)."""


class NetworkLoopError(Exception):
    """The connector reached this very broker."""


class NetworkBridge:
    def __init__(
        self,
        config: NetworkConnectorConfig,
        local: LocalBroker,
        uri: str,
        routes: RouteRegistry,
    ) -> None:
        self.config = config
        self.local = local
        self.uri = uri
        self.shown_uri = redact_url(uri)
        """How logs, errors and the admin API name the remote broker: no password in it."""
        self.routes = routes
        self.state = "connecting"
        self.remote_broker_id: str | None = None
        self.remote_broker_name: str | None = None
        self.remote_url: str | None = None
        self.started_at: float | None = None
        self.directions: list[DemandForwardingBridge] = []

    async def run(self) -> None:
        """Serve the bridge until a connection is lost (``BridgeFailedError``) or cancelled."""
        config = self.config
        local = self.local
        identity = {
            h.FERRYMQ_NETWORK_BRIDGE: config.name,
            h.FERRYMQ_BROKER_ID: local.broker_id,
            h.FERRYMQ_BROKER_NAME: config.broker_name or local.broker_name,
        }
        own_url = local.cluster_url()
        if own_url is not None:
            identity[h.FERRYMQ_BROKER_URL] = own_url
        if config.duplex:
            # ActiveMQ's responder side of a duplex bridge counts the initiator as a peer.
            identity[h.FERRYMQ_CLUSTER_PEER] = "true"
            identity[h.FERRYMQ_DUPLEX] = "true"
        remote = await connect(
            self.uri,
            login=config.user_name,
            passcode=config.password,
            heart_beat=(HEART_BEAT_MS, HEART_BEAT_MS),
            headers=identity,
        )
        try:
            remote_id = remote.connected_headers.get(h.FERRYMQ_BROKER_ID)
            if not remote_id:
                raise BridgeFailedError(
                    f"{self.shown_uri} did not say which broker it is (not a FerryMQ broker?)"
                )
            if remote_id == local.broker_id:
                raise NetworkLoopError(
                    f"{self.shown_uri} is this broker ({local.broker_id}): "
                    "the bridge is not started"
                )
            self.remote_broker_id = remote_id
            self.remote_broker_name = remote.connected_headers.get(h.FERRYMQ_BROKER_NAME)
            self.remote_url = remote.remote_url
            remote_name = self.remote_broker_name or remote_id
            token = config.client_id_token
            own = await connect(
                f"vm://{local.broker_id}",
                # ActiveMQ's bridge logs in to its own broker with the same userName/password.
                login=config.user_name,
                passcode=config.password,
                # ActiveMQ's local bridge client id: durable demand lives under it.
                client_id=f"{config.name}{token}{remote_name}{token}inbound{token}"
                f"{local.broker_name}",
                headers={
                    h.FERRYMQ_NETWORK_BRIDGE: config.name,
                    h.FERRYMQ_BROKER_ID: remote_id,
                    h.FERRYMQ_BROKER_NAME: self.remote_broker_name or remote_id,
                    # The broker that opens a bridge counts the remote broker as a peer.
                    h.FERRYMQ_BROKER_URL: remote.connected_headers.get(h.FERRYMQ_BROKER_URL, ""),
                    h.FERRYMQ_CLUSTER_PEER: "true",
                },
            )
            try:
                await self._serve(remote, own, remote_id)
            finally:
                self.state = "stopped"
                await self._advise(own, started=False)
                await own.close()
        finally:
            self.state = "stopped"
            await remote.close()

    async def _serve(self, remote: Connection, own: Connection, remote_id: str) -> None:
        config = self.config
        self.directions = [
            DemandForwardingBridge(
                config,
                source=own,
                target=remote,
                source_broker_id=self.local.broker_id,
                target_broker_id=remote_id,
                routes=self.routes,
                direction="outbound",
                durable_prefix=f"NC-DS{config.client_id_token}{self.local.broker_name}"
                f"{config.client_id_token}",
            )
        ]
        if config.duplex:
            self.directions.append(
                DemandForwardingBridge(
                    config,
                    source=remote,
                    target=own,
                    source_broker_id=remote_id,
                    target_broker_id=self.local.broker_id,
                    direction="inbound",
                )
            )
        lost = asyncio.Event()
        unregister = remote.on_interrupted(lost.set)
        try:
            async with asyncio.TaskGroup() as group:
                for direction in self.directions:
                    group.create_task(direction.run())
                group.create_task(_watch(remote, own, lost))
                self.state = "started"
                self.started_at = time.time()
                log.info(
                    "network bridge %s: %s (%s) %s %s (%s) started",
                    config.name,
                    self.local.broker_name,
                    self.local.broker_id,
                    "<->" if config.duplex else "->",
                    self.remote_broker_name,
                    remote_id,
                )
                await self._advise(own, started=True)
        except BaseExceptionGroup as group:
            causes = dict.fromkeys(self._cause(e, remote) for e in leaf_exceptions(group))
            raise BridgeFailedError("; ".join(causes)) from group
        finally:
            unregister()

    def _cause(self, error: BaseException, remote: Connection) -> str:
        """What ended the bridge, in a user's words."""
        if isinstance(error, ConnectionClosed) and remote.closed:
            name = self.remote_broker_name or self.remote_broker_id
            return f"the remote broker {name} closed the connection"
        return str(error) or type(error).__name__

    async def _advise(self, own: Connection, *, started: bool) -> None:
        if own.closed:
            return
        info = {
            "BrokerInfo": {
                "brokerId": self.remote_broker_id,
                "brokerName": self.remote_broker_name,
                "brokerURL": self.remote_url,
                "networkConnection": True,
                "duplexConnection": self.config.duplex,
            }
        }
        headers = {
            "started": "true" if started else "false",
            "remoteBrokerName": self.remote_broker_name or "",
            "remoteBrokerId": self.remote_broker_id or "",
            "networkConnector": self.config.name,
            "type": "Advisory",
        }
        with contextlib.suppress(ClientError):
            await own.send(NETWORK_BRIDGE_ADVISORY, json.dumps(info), headers=headers)

    def statistics(self) -> dict[str, object]:
        return {
            "name": self.config.name,
            "uri": self.shown_uri,
            "state": self.state,
            "duplex": self.config.duplex,
            "localBrokerName": self.local.broker_name,
            "localBrokerId": self.local.broker_id,
            "remoteBrokerName": self.remote_broker_name,
            "remoteBrokerId": self.remote_broker_id,
            "startedAt": self.started_at,
            "directions": [
                {
                    "direction": d.direction,
                    "from": d.source_broker_id,
                    "to": d.target_broker_id,
                    "forwarded": d.forwarded,
                    "demandSubscriptions": [
                        {
                            "destination": demand.destination.qualified,
                            "selector": demand.selector,
                            "priority": demand.priority,
                            "consumers": len(demand.consumers),
                            "static": demand.static,
                            "brokerPath": list(demand.broker_path),
                            "forwarded": demand.forwarded,
                        }
                        for demand in d.demand_subscriptions
                    ],
                }
                for d in self.directions
            ],
        }


async def _watch(remote: Connection, own: Connection, lost: asyncio.Event) -> None:
    """Raise ``BridgeFailedError`` as soon as either connection is gone or the remote one fails
    over underneath (the bridge is rebuilt rather than resumed, as ActiveMQ does)."""
    waits = {
        asyncio.ensure_future(remote.wait_closed()): "the remote broker's connection closed",
        asyncio.ensure_future(own.wait_closed()): "the local broker's connection closed",
        asyncio.ensure_future(lost.wait()): "the remote connection failed over",
    }
    try:
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waits:
            waiter.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
    raise BridgeFailedError(waits[next(iter(done))])
