"""Reaching the brokers of a failover transport: the broker list, the policy over it, and a new
``Link`` to one of them.

The reconnect loop (``reconnect``) and the standby keeper (``standby``) both open connections;
they share this, and know nothing else of the ``FailoverTransport`` for it.
"""

from __future__ import annotations

import asyncio
import random

from ferrymq.client.amqp_transport import AMQP_SCHEMES, AmqpTransport
from ferrymq.client.commands import ConnectionInfo
from ferrymq.client.failover.link import Link, LinkOwner
from ferrymq.client.failover.options import FailoverOptions, inject
from ferrymq.client.failover.policy import ReconnectPolicy
from ferrymq.client.failover.updates import BrokerList, cluster_update, read_uri_list
from ferrymq.client.tcp import TcpTransport
from ferrymq.client.tcp_options import tcp_options
from ferrymq.util.uri import URI


class Dialer:
    def __init__(
        self,
        owner: LinkOwner,
        options: FailoverOptions,
        info: ConnectionInfo,
        brokers: BrokerList,
        rng: random.Random,
    ) -> None:
        self.owner = owner
        """What every link it opens reports to."""
        self.options = options
        self.info = info
        self.brokers = brokers
        self.rng = rng
        self.policy = ReconnectPolicy(options)

    async def connect_list(self, last_failed: URI | None) -> list[URI]:
        """The brokers to try in one connect pass, in order (after reading ``updateURIsURL``,
        if set)."""
        if self.options.update_uris_url:
            listed = await read_uri_list(self.options.update_uris_url)
            if listed is not None:
                self.brokers.from_url = listed
        return self.policy.connect_list(
            self.brokers.static, self.brokers.updated(), last_failed, self.rng
        )

    async def connect_link(self, uri: URI, *, socket_only: bool = False) -> Link:
        """A new connection to ``uri`` (with ``nested.*``): CONNECTed, or with ``socket_only``
        just the TCP socket. Raises ``ConnectFailedError``, ``BrokerErrorFrame`` or (a bad
        option in a learnt URI) ``BrokerURLError``."""
        target = inject(uri, self.options.nested)
        transport: TcpTransport | AmqpTransport
        if target.scheme.lower() in AMQP_SCHEMES:
            transport = AmqpTransport(target, self.info)
        else:
            transport = TcpTransport(target, self.info, tcp_options(target))
        link = Link(self.owner, target, transport, asyncio.get_running_loop().time())
        try:
            if socket_only:
                await transport.preconnect()
            else:
                await self.handshake(link)
        except BaseException:
            await transport.close()
            raise
        return link

    async def handshake(self, link: Link) -> None:
        """CONNECT on ``link``, and learn the brokers its CONNECTED lists."""
        link.connected = await link.transport.open(link)
        if self.options.update_uris_supported:
            self.brokers.learn(cluster_update(link.connected.headers, source=link.url))
