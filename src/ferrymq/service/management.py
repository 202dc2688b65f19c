"""The operator's write operations on a serving broker (ActiveMQ's JMX beans and web console).

``BrokerManagement`` runs each of the core's ``Management`` commands as a batch of its own and
answers only once what it decided is durable: the store write it queued is committed (one
group commit, as for a client's SEND), so a purge or a move survives a kill -9 the moment the
caller hears of it.  ``move`` and ``retry`` page the source queue in from the store, page by
page, until the limit is reached or nothing is left there.  A broker that is not serving (a
slave, a broker stopping) refuses every operation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from functools import partial
from typing import Protocol

from ferrymq.core.destination import Destination
from ferrymq.core.management import ManagementError, Refusal
from ferrymq.core.outcome import Outcome
from ferrymq.core.queue import PAGE_SIZE
from ferrymq.core.region import RegionBroker
from ferrymq.store.base import MessageStore


class Closable(Protocol):
    """A connection as the operator closes it (``service.connection.BrokerConnection``)."""

    def close(self, reason: str) -> None: ...


class ManagedService(Protocol):
    """The parts of ``service.broker.BrokerService`` the operations use."""

    @property
    def region(self) -> RegionBroker: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def started(self) -> bool: ...

    @property
    def halted(self) -> asyncio.Event: ...

    @property
    def connections(self) -> Mapping[str, Closable]: ...

    def tick_clock(self) -> None: ...

    def commit_barrier(self) -> asyncio.Future[None] | None: ...

    def process(self) -> None: ...


class BrokerManagement:
    def __init__(self, service: ManagedService) -> None:
        self._service = service

    def _check_serving(self) -> None:
        service = self._service
        if not service.started or service.halted.is_set():
            raise ManagementError(
                "the broker is not serving (a slave, or stopping): send write operations to "
                "the master",
                reason=Refusal.NOT_SERVING,
            )

    async def _run(self, command: Callable[[], Outcome]) -> int:
        """One command as a batch: refused, or carried out and durable; how many it touched."""
        self._check_serving()
        service = self._service
        service.tick_clock()
        outcome = command()
        barrier = service.commit_barrier()
        service.process()
        if barrier is not None:
            try:
                await barrier
            except Exception as exc:  # the store failed (a lost lock, the disk): not done
                raise ManagementError(
                    f"the store did not take the change: {exc}", reason=Refusal.NOT_SERVING
                ) from exc
        if outcome.refused is not None:
            raise outcome.refused
        return outcome.affected

    async def purge(self, queue: str) -> int:
        """Remove every message of a queue; returns how many there were."""
        return await self._run(lambda: self._region.management.purge(Destination.queue(queue)))

    async def remove_destination(self, destination: Destination) -> int:
        """Delete a queue or a topic; returns how many messages it held."""
        return await self._run(lambda: self._region.management.remove_destination(destination))

    async def move(
        self,
        source: str,
        target: str,
        selector: str | None = None,
        limit: int | None = None,
        *,
        copy: bool = False,
    ) -> int:
        """Move (or copy) the messages of ``source`` that ``selector`` selects to ``target``."""
        origin, destination = Destination.queue(source), Destination.queue(target)

        def command(remaining: int | None, from_seq: int) -> Outcome:
            management = self._region.management
            return management.move(
                origin, destination, selector, remaining, copy=copy, from_seq=from_seq
            )

        return await self._through_store(origin, command, limit)

    async def retry(self, queue: str, selector: str | None = None, limit: int | None = None) -> int:
        """Send dead letters back to where they were first sent."""
        dead_letters = Destination.queue(queue)

        def command(remaining: int | None, from_seq: int) -> Outcome:
            return self._region.management.retry(dead_letters, selector, remaining, from_seq)

        return await self._through_store(dead_letters, command, limit)

    async def _through_store(
        self, source: Destination, command: Callable[[int | None, int], Outcome], limit: int | None
    ) -> int:
        """Run ``command`` on what ``source`` holds in memory, then page the store in and run
        it on each page just read (a copy leaves what it copied in place: it must not see it
        twice).  Bounded by the pages the store held when it began, plus one."""
        done = await self._run(lambda: command(limit, 0))
        paging = self._region.management.paging(source)
        pages = 0 if paging is None else paging.paged_out // PAGE_SIZE + 2
        for _ in range(pages):
            paging = self._region.management.paging(source)
            if paging is None or (limit is not None and done >= limit):
                break
            self._check_serving()
            records = await self._service.store.load(paging.container, paging.cursor, PAGE_SIZE)
            self._service.tick_clock()
            self._region.management.read_page(source, records)
            self._service.process()
            remaining = None if limit is None else limit - done
            done += await self._run(partial(command, remaining, paging.cursor))
            if not records:
                break
        return done

    async def destroy_durable(self, client_id: str, subscription_name: str) -> int:
        """Remove an inactive durable subscription and the messages it kept."""
        return await self._run(
            lambda: self._region.management.destroy_durable(client_id, subscription_name)
        )

    async def send(self, destination: Destination, body: bytes, headers: Mapping[str, str]) -> str:
        """Send a message as the broker (the console's "send to"); returns its message id."""
        message_id = ""

        def command() -> Outcome:
            nonlocal message_id
            outcome, message_id = self._region.management.send(destination, body, headers)
            return outcome

        await self._run(command)
        return message_id

    def close_connection(self, connection_id: str) -> None:
        """Close a client's connection, as ActiveMQ's ``ConnectionViewMBean.stop`` does."""
        self._check_serving()
        connection = self._service.connections.get(connection_id)
        if connection is None:
            raise ManagementError(f"no connection {connection_id!r}", reason=Refusal.NOT_FOUND)
        connection.close("closed by an administrator")
        self._service.process()

    @property
    def _region(self) -> RegionBroker:
        return self._service.region
