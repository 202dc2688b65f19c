"""``failover:(uri1,...,uriN)?options``: one ``Transport`` over whichever broker is up.

The decisions are the ``ReconnectPolicy``'s (which broker next, how long to wait, when to give
up) and the ``StateTracker``'s (what to replay); the steps of the loop are the
``Reconnector``'s, opening a connection the ``Dialer``'s. This class holds the state, routes
the links' events and the application's writes, and owns the supervisor task (the reconnect
loop and the standby keeper). While no broker is usable, writes wait on ``ready``:

* a SEND waits at most ``timeout`` ms, then fails with ``FailoverTimeoutError`` ("Failover
  timeout of <t> ms reached."); any other command waits for the reconnection;
* an ACK or NACK of a message delivered before the failover is not sent: the broker has
  released that message and will redeliver it (reference §1.4); its receipt, if asked for, is
  answered at once. Messages carry the ``generation`` they arrived on so the transport can
  tell.

A failover runs ``on_transport_interrupted`` (before any reconnect attempt, as ActiveMQ's
``transportInterupted``), the tracker's ``interrupt``, the connect passes, the replay, then
``on_transport_resumed``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from dataclasses import replace

from ferrymq.client.commands import Acknowledge, Command, ConnectionInfo, Disconnect, Send
from ferrymq.client.errors import (
    ConnectFailedError,
    ConnectionClosed,
    FailoverTimeoutError,
    UsageError,
)
from ferrymq.client.failover.dialer import Dialer
from ferrymq.client.failover.link import Link, Role
from ferrymq.client.failover.options import FailoverOptions
from ferrymq.client.failover.policy import broker_key
from ferrymq.client.failover.reconnect import (
    GaveUpError,
    Lost,
    Reconnector,
    RestoreRefusedError,
    SwitchTo,
)
from ferrymq.client.failover.standby import StandbyKeeper
from ferrymq.client.failover.tracker import (
    INTERNAL_RECEIPT_PREFIX,
    LocalAnswer,
    StateTracker,
)
from ferrymq.client.failover.updates import BrokerList, cluster_update
from ferrymq.client.transport import (
    NO_TRAFFIC,
    BrokerEvent,
    Traffic,
    TransportListener,
    TransportStatistics,
    add_traffic,
    combined_statistics,
    unexpected_end,
)
from ferrymq.stomp.constants import CLUSTER_UPDATES_SUBSCRIPTION, FERRYMQ_CLUSTER_UPDATES
from ferrymq.stomp.events import Connected, ErrorEvent, MessageEvent, ReceiptEvent
from ferrymq.util.uri import URI

log = logging.getLogger(__name__)


class FailoverTransport:
    def __init__(
        self,
        uris: Sequence[URI],
        options: FailoverOptions,
        info: ConnectionInfo,
        *,
        url: str = "failover:",
        rng: random.Random | None = None,
    ) -> None:
        self.url = url
        self.options = options
        self.brokers = BrokerList(uris)
        headers = dict(info.headers)
        if options.update_uris_supported:
            headers[FERRYMQ_CLUSTER_UPDATES] = "true"
        rng = rng if rng is not None else random.Random()
        self.dialer = Dialer(self, options, replace(info, headers=headers), self.brokers, rng)
        self.tracker = StateTracker(
            track_messages=options.track_messages, max_cache_bytes=options.max_cache_size_bytes
        )
        self.standbys = StandbyKeeper(self, self.dialer)
        self.reconnector = Reconnector(self, self.dialer, self.standbys, self.tracker)
        self.listener: TransportListener | None = None
        self.link: Link | None = None
        self._last_url = ""
        self.last_failed: URI | None = None
        self._generation = 0
        self.ready = asyncio.Event()
        """Set: writes may go to ``link`` (or must raise ``failure``)."""
        self.failure: ConnectionClosed | None = None
        self._report_close = True
        self._closing = False
        """The application sent DISCONNECT: a lost broker is not replaced."""
        self.requests: asyncio.Queue[Lost | SwitchTo] = asyncio.Queue()
        self._runner: asyncio.Task[None] | None = None
        self._active_writes = 0
        self.writes_idle = asyncio.Event()
        self.writes_idle.set()
        self.failovers = 0
        self._retired: Traffic = NO_TRAFFIC
        """Counters of the links given up: frames, bytes out and in, heart-beats out and in."""

    # ---- what the rest of the package reads ----

    @property
    def remote_url(self) -> str:
        return self.link.url if self.link is not None else self._last_url

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def current(self) -> Link | None:
        """The link writes go to, once ready."""
        return self.link if self.ready.is_set() and self.failure is None else None

    def add_uri(self, uri: URI) -> None:
        """A new broker (a discovery agent's ``on_service_add``)."""
        self.brokers.add(uri)
        self.standbys.wake()

    def remove_uri(self, uri: URI) -> None:
        self.brokers.remove(uri)

    # ---- opening ----

    async def open(self, listener: TransportListener) -> Connected:
        if self.listener is not None:
            raise UsageError("a transport opens once")
        self.listener = listener
        try:
            link = await self.reconnector.episode(startup=True)
        except GaveUpError as exc:
            attempts = tuple(self.reconnector.attempts)
            raise ConnectFailedError(str(exc), self.url, attempts) from None
        self.install(link)
        self._runner = asyncio.get_running_loop().create_task(
            self._run(), name=f"ferrymq-failover {self.url}"
        )
        self._runner.add_done_callback(self._supervisor_done)
        assert link.connected is not None
        return link.connected

    # ---- writing ----

    async def write(self, command: Command) -> None:
        while True:
            if self.failure is not None:
                raise self.failure
            if isinstance(command, Acknowledge) and self._is_stale(command):
                self._perform_answers(self.tracker.track(command, stale=True).answers)
                return
            link = self.current
            if link is None:
                if isinstance(command, Disconnect):
                    self._closing = True
                    if command.receipt is not None:
                        self._answer(LocalAnswer(command.receipt))
                    return
                settled = self.tracker.settle_disconnected(command) if self.link is None else None
                if settled is not None:
                    self._perform_answers(settled.answers)
                    return
                await self._wait_ready(command)
                continue
            if isinstance(command, Disconnect):
                self._closing = True
            outgoing = self.tracker.track(command)
            self._perform_answers(outgoing.answers)
            if outgoing.command is None:
                return
            self._active_writes += 1
            self.writes_idle.clear()
            try:
                await link.transport.write(outgoing.command)
            except ConnectionClosed:
                # Kept by the tracker: replayed on the next broker. A SEND without a receipt
                # is not kept: it goes to the next broker instead (reference §1.4).
                sent = outgoing.command
                if isinstance(sent, Send) and sent.receipt is None and sent.transaction is None:
                    continue
            finally:
                self._active_writes -= 1
                if not self._active_writes:
                    self.writes_idle.set()
            return

    def _is_stale(self, ack: Acknowledge) -> bool:
        """An ack of a message from before the last failover (or, for a caller that does not
        say, any ack while disconnected). An ack of a message the new broker just delivered
        waits for the replay to finish, like any command."""
        if ack.generation is None:
            return self.current is None
        return ack.generation != self._generation

    async def _wait_ready(self, command: Command) -> None:
        timeout_ms = self.options.timeout_ms
        if not isinstance(command, Send) or timeout_ms < 0:
            await self.ready.wait()
            return
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await self.ready.wait()
        except TimeoutError:
            raise FailoverTimeoutError(
                f"Failover timeout of {timeout_ms} ms reached.", timeout_ms=timeout_ms
            ) from None

    def _answer(self, answer: LocalAnswer) -> None:
        listener = self.listener
        if listener is None:
            return
        if answer.error is None:
            listener.on_event(ReceiptEvent(answer.receipt_id))
        else:
            listener.on_request_failed(answer.receipt_id, answer.error)

    def _perform_answers(self, answers: Sequence[LocalAnswer]) -> None:
        for answer in answers:
            self._answer(answer)

    # ---- events from the links ----

    def link_event(self, link: Link, event: BrokerEvent) -> None:
        if link.role not in (Role.CURRENT, Role.REPLAYING, Role.DRAINING):
            if isinstance(event, ErrorEvent) and link.role is Role.STANDBY:
                log.warning("standby %s sent ERROR: %s", link.url, event.message)
                self.standbys.drop(link)
            return
        listener = self.listener
        assert listener is not None
        match event:
            case MessageEvent(subscription=subscription) if (
                subscription == CLUSTER_UPDATES_SUBSCRIPTION
            ):
                self._on_cluster_update(link, event)
            case ReceiptEvent(receipt_id=receipt_id):
                if self.reconnector.answered(receipt_id, None, listener):
                    return
                if self.tracker.on_receipt(receipt_id):
                    listener.on_event(event)
            case ErrorEvent(receipt_id=str() as receipt_id):
                if self.reconnector.answered(receipt_id, event, listener):
                    return
                self.tracker.on_error(receipt_id)
                if receipt_id.startswith(INTERNAL_RECEIPT_PREFIX):
                    if "-track-" not in receipt_id:
                        log.warning("broker %s refused %s: %s", link.url, receipt_id, event.message)
                        return
                    event = replace(event, receipt_id=None)  # as if sent without a receipt
                listener.on_event(event)
            case _:
                listener.on_event(event)

    def link_closed(self, link: Link, error: ConnectionClosed) -> None:
        role = link.role
        if role is Role.STANDBY:
            self.standbys.drop(link)
            return
        if role not in (Role.CURRENT, Role.REPLAYING):
            return
        link.role = Role.RETIRED
        self.detach(link)
        self.last_failed = link.uri
        if self._closing:
            self._fail(error)
            return
        log.warning("connection to %s lost: %s", link.url, error)
        if role is Role.CURRENT:
            # Queued before the application's callbacks run: whatever they do, the reconnect
            # loop has its request.
            self.requests.put_nowait(Lost(link))
        self.interrupt()

    def detach(self, link: Link) -> None:
        if self.link is link:
            self.link = None
            self._last_url = link.url
            self.ready.clear()
        self._retired = add_traffic(self._retired, link.transport.statistics())

    def interrupt(self) -> None:
        self._generation += 1
        self._perform_answers(self.tracker.interrupt())
        self.reconnector.interrupted()
        if self.listener is not None:
            self.listener.on_transport_interrupted()

    def _on_cluster_update(self, link: Link, event: MessageEvent) -> None:
        if not self.options.update_uris_supported:
            return
        target = self.brokers.learn(
            cluster_update(event.headers, source=link.url),
            reconnect_supported=self.options.reconnect_supported,
        )
        self.standbys.wake()
        if target is not None and broker_key(target) != link.key:
            self.requests.put_nowait(SwitchTo(target, "requested by the broker"))

    def request_switch(self, target: Link, reason: str) -> None:
        """Move to the standby ``target`` (the standby keeper found a priority broker)."""
        self.requests.put_nowait(SwitchTo(target, reason))

    def request_recovery(self, link: Link) -> None:
        self.requests.put_nowait(Lost(link))

    async def hold_writes(self) -> None:
        self.ready.clear()
        await self.writes_idle.wait()

    # ---- the supervisor ----

    async def _run(self) -> None:
        try:
            async with asyncio.TaskGroup() as tasks:
                keeper = None
                if self.options.backup or self.options.priority_backup:
                    keeper = tasks.create_task(self.standbys.run(), name="ferrymq-standbys")
                await self._serve()
                if keeper is not None:
                    keeper.cancel()
        except* Exception as group:
            log.error("failover transport failed", exc_info=group.exceptions[0])
            self._fail(ConnectionClosed(f"failover transport failed: {group.exceptions[0]!r}"))
        finally:
            await self.standbys.close()

    def _supervisor_done(self, task: asyncio.Task[None]) -> None:
        """Only a close (which sets ``failure`` first) or a failure it reported may end the
        supervisor."""
        if self.failure is None:
            self._fail(unexpected_end(self.url, task))

    async def _serve(self) -> None:
        while self.failure is None:
            request = await self.requests.get()
            try:
                if isinstance(request, Lost):
                    await self.reconnector.recover()
                else:
                    await self.reconnector.switch(request)
            except GaveUpError as exc:
                self._fail(ConnectionClosed(f"{self.url}: {exc}"))
            except RestoreRefusedError as exc:
                self._fail(
                    ConnectionClosed(
                        f"the broker refused to restore a subscription: {exc.error}", exc.error
                    )
                )

    def resume(self, link: Link) -> None:
        self.install(link)
        self.failovers += 1
        assert link.connected is not None
        assert self.listener is not None
        log.info("reconnected to %s", link.url)
        self.listener.on_transport_resumed(link.connected)

    def install(self, link: Link) -> None:
        link.role = Role.CURRENT
        self.link = link
        self._last_url = link.url
        self.ready.set()
        self.standbys.wake()

    # ---- closing ----

    def _fail(self, error: ConnectionClosed) -> None:
        if self.failure is not None:
            return
        self.failure = error
        self.ready.set()  # waiting writers wake up and raise
        if self.link is not None:
            self.link.transport.abort()
        if self.listener is not None and self._report_close:
            self.listener.on_closed(error)

    def abort(self) -> None:
        self._report_close = False
        if self.failure is None:
            self.failure = ConnectionClosed("connection closed by the application")
        self.ready.set()
        if self.link is not None:
            self.link.transport.abort()
        if self._runner is not None:
            self._runner.cancel()

    async def close(self) -> None:
        self.abort()
        if self._runner is not None:
            await asyncio.wait([self._runner])
        link = self.link
        if link is not None:
            await link.transport.close()
        await self.standbys.close()

    def statistics(self) -> TransportStatistics:
        link = self.link
        current = link.transport.statistics() if link is not None else None
        totals = self._retired if current is None else add_traffic(self._retired, current)
        return combined_statistics(
            totals,
            current,
            remote_url=self.remote_url,
            failovers=self.failovers,
            reconnect_attempts=self.reconnector.reconnect_attempts,
            connect_attempts=tuple(self.reconnector.attempts),
            updated_urls=tuple(str(uri) for uri in self.brokers.updated()),
            standbys=len(self.standbys),
            replayed_commands=self.reconnector.replayed,
        )
