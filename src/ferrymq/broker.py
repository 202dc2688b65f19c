"""A broker process: configuration in, every service of the broker started in order.

``Broker`` is the composition root of DESIGN.md ("config -> Broker"): the messaging service
(store, recovery, STOMP listeners) first, then the admin HTTP listener; later issues add network
connectors, discovery agents and the master/slave role here.  ``stop`` runs in reverse order.
Whatever the configuration asks for that FerryMQ does not do yet is logged at start, with file
and line, so nothing in a file is silently without effect.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Self

from ferrymq.admin import AdminServer
from ferrymq.config.model import BrokerConfig
from ferrymq.config.pending import pending_features
from ferrymq.service.broker import BrokerService
from ferrymq.store.base import MessageStore

log = logging.getLogger(__name__)


class Broker:
    def __init__(self, config: BrokerConfig, *, store: MessageStore | None = None) -> None:
        self.config = config
        self.service = BrokerService(config, store=store)
        self.admin: AdminServer | None = None
        self._stopped = asyncio.Event()

    async def start(self) -> None:
        for line in pending_features(self.config):
            log.warning("%s", line)
        await self.service.start()
        admin = self.config.admin
        if admin.enabled:
            self.admin = AdminServer(self.service, admin.host, admin.port)
            try:
                await self.admin.start()
            except BaseException:
                self.admin = None
                await self.service.stop()
                raise

    async def stop(self) -> None:
        if self.admin is not None:
            await self.admin.stop()
            self.admin = None
        await self.service.stop()
        self._stopped.set()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def stomp_ports(self) -> list[int]:
        return self.service.ports

    @property
    def stomp_urls(self) -> list[str]:
        return [f"tcp://{listener.host}:{listener.port}" for listener in self.service.listeners]

    async def run_until_signalled(self) -> None:
        """Serve until SIGINT or SIGTERM, then stop cleanly."""
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        try:
            await stop.wait()
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
