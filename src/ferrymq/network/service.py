"""The network connectors of one broker, started after its listeners and stopped before them.

They share one ``RouteRegistry`` (suppressDuplicateQueueSubscriptions looks across every bridge
of the broker). A broker that is a slave runs none: connectors belong to the serving master.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ferrymq.config.model import BrokerConfig
from ferrymq.network.connector import NetworkConnector, NetworkConnectorError
from ferrymq.network.link import LocalBroker
from ferrymq.network.routes import RouteRegistry

log = logging.getLogger(__name__)


class NetworkService:
    def __init__(
        self, config: BrokerConfig, local: LocalBroker, own_urls: Callable[[], list[str]]
    ) -> None:
        self.routes = RouteRegistry()
        self.connectors: list[NetworkConnector] = []
        # Names are unique: the configuration loader refuses a repeated one with file and line.
        for connector_config in config.network_connectors:
            try:
                connector = NetworkConnector(connector_config, local, self.routes, own_urls)
            except NetworkConnectorError as exc:
                log.error("%s: not started", exc)
                continue
            self.connectors.append(connector)

    async def start(self) -> None:
        for connector in self.connectors:
            await connector.start()

    async def stop(self) -> None:
        for connector in reversed(self.connectors):
            await connector.stop()

    def statistics(self) -> list[dict[str, object]]:
        return [bridge for c in self.connectors for bridge in c.statistics()]
