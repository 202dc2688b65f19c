"""The fanout transport: one ``TcpTransport`` per announced broker, each with its own reconnect
loop, under one ``TaskGroup``; the ``FanoutLedger`` decides what goes where."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from typing import Final

from ferrymq.client.commands import Acknowledge, Command, ConnectionInfo, Disconnect
from ferrymq.client.discovery import DiscoveryAgent
from ferrymq.client.errors import (
    BrokerErrorFrame,
    BrokerURLError,
    ClientError,
    ConnectAttempt,
    ConnectFailedError,
    ConnectionClosed,
    UsageError,
)
from ferrymq.client.failover.options import inject
from ferrymq.client.failover.policy import BrokerKey, broker_key
from ferrymq.client.failover.tracker import LocalAnswer
from ferrymq.client.failover.urls import MEMBER_SCHEMES
from ferrymq.client.fanout.ledger import FanoutLedger, fans_out, for_member
from ferrymq.client.fanout.member import Member
from ferrymq.client.fanout.options import FanoutOptions
from ferrymq.client.tcp import TcpTransport
from ferrymq.client.tcp_options import tcp_options
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
from ferrymq.stomp.events import Connected, ErrorEvent, MessageEvent, ReceiptEvent
from ferrymq.util.uri import URI, URIError, parse_uri

log = logging.getLogger(__name__)

ATTEMPT_HISTORY: Final = 256


class FanoutTransport:
    def __init__(
        self, agent: DiscoveryAgent, options: FanoutOptions, info: ConnectionInfo, *, url: str
    ) -> None:
        self.agent = agent
        self.options = options
        self.info = info
        self.url = url
        self.policy = options.reconnect_policy()
        self.ledger = FanoutLedger(
            min_ack_count=options.min_ack_count, fan_out_queues=options.fan_out_queues
        )
        self.members: dict[BrokerKey, Member] = {}
        self.primary: Member | None = None
        self.listener: TransportListener | None = None
        self.failure: ConnectionClosed | None = None
        self._open_error: ClientError | None = None
        self._first: Connected | None = None
        self._opened = self._closing = self._interrupted = False
        self._generation = 0
        self._enough = asyncio.Event()
        """Set while ``minAckCount`` members are connected (or the transport is done)."""
        self._primary_ready = asyncio.Event()
        """Set while the primary is connected with the subscriptions in place (or done)."""
        self._done = asyncio.Event()
        self._group: asyncio.TaskGroup | None = None
        self._runner: asyncio.Task[None] | None = None
        self._last_url = ""
        self.failovers = self.reconnect_attempts = self.replayed = 0
        self.attempts: deque[ConnectAttempt] = deque(maxlen=ATTEMPT_HISTORY)
        self._retired: Traffic = NO_TRAFFIC

    @property
    def remote_url(self) -> str:
        """The primary's broker (the last one while there is none)."""
        return self.primary.url if self.primary is not None else self._last_url

    @property
    def generation(self) -> int:
        """Moves on each time the primary, which delivers the messages, is lost."""
        return self._generation

    @property
    def connected_urls(self) -> tuple[str, ...]:
        """The members connected now."""
        return tuple(member.url for member in self.members.values() if member.up)

    # ---- DiscoveryListener ----

    def on_service_add(self, uri: str) -> None:
        target = self._member_uri(uri)
        if target is None or self.failure is not None or broker_key(target) in self.members:
            return
        member = Member(self, target)
        self.members[member.key] = member
        self._start(member)

    def on_service_remove(self, uri: str) -> None:
        target = self._member_uri(uri)
        member = self.members.pop(broker_key(target), None) if target is not None else None
        if member is None:
            return
        log.info("fanout: %s removed by the discovery agent", member.url)
        self.member_lost(member, None)
        if member.task is not None:
            member.task.cancel()

    def _member_uri(self, text: str) -> URI | None:
        try:
            parsed = parse_uri(text)
            if not isinstance(parsed, URI) or parsed.scheme.lower() not in MEMBER_SCHEMES:
                raise URIError(text, 0, text, "not a tcp:// or stomp:// broker URI")
            target = inject(parsed, self.options.discovered)
            tcp_options(target)
        except (URIError, BrokerURLError) as exc:
            log.warning("fanout: ignoring service %r: %s", text, exc)
            return None
        return target

    # ---- opening and keeping members ----

    async def open(self, listener: TransportListener) -> Connected:
        """Start the agent; return once a first member, the primary, is connected."""
        if self.listener is not None:
            raise UsageError("a transport opens once")
        self.listener = listener
        self._runner = asyncio.get_running_loop().create_task(
            self._run(), name=f"ferrymq-fanout {self.url}"
        )
        self._runner.add_done_callback(self._supervisor_done)
        try:
            await self.agent.start(self)
            await self._primary_ready.wait()
            if self.failure is not None:
                raise self._open_error or self.failure
        except BaseException:
            await self.close()
            raise
        self._opened = True
        assert self._first is not None
        return self._first

    async def _run(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for member in list(self.members.values()):
                    self._start(member)
                await self._done.wait()
                for member in self.members.values():
                    if member.task is not None:
                        member.task.cancel()
        except* Exception as failed:
            log.error("fanout transport failed", exc_info=failed.exceptions[0])
            self._fail(ConnectionClosed(f"fanout transport failed: {failed.exceptions[0]!r}"))
        finally:
            self._group = None
            if self._opened:  # failed after opening: nothing more to announce to
                await self.agent.stop()

    def _supervisor_done(self, task: asyncio.Task[None]) -> None:
        """As the failover transport's: only a close or a reported failure may end it."""
        if self.failure is None:
            self._fail(unexpected_end(self.url, task))

    def _start(self, member: Member) -> None:
        if self._group is not None and member.task is None:
            member.task = self._group.create_task(
                self._serve(member), name=f"ferrymq-fanout {member.url}"
            )

    async def _serve(self, member: Member) -> None:
        """Connect ``member``, keep it, reconnect it with back-off (Table 8.2), until closing."""
        loop = asyncio.get_running_loop()
        failed, startup = 0, True
        while not self._closing:
            delay_ms = self.policy.delay_before_pass_ms(failed + 1, startup=startup)
            if delay_ms:
                await asyncio.sleep(delay_ms / 1000)
            if not startup:
                self.reconnect_attempts += 1
            transport = TcpTransport(member.uri, self.info, tcp_options(member.uri))
            started = loop.time()
            try:
                connected = await transport.open(member)
            except (ConnectFailedError, BrokerErrorFrame) as exc:
                failed += 1
                self.attempts.append(ConnectAttempt(member.url, failed, started, str(exc)))
                if isinstance(exc, BrokerErrorFrame) and self._first is None:
                    self._open_error = exc  # the same CONNECT goes to every broker
                    self._fail(ConnectionClosed(f"{member.url} refused CONNECT: {exc}"))
                    return
                if self.policy.gives_up(failed, startup=startup):
                    self._give_up(member, failed, str(exc))
                    return
                if self.policy.warns(failed):
                    log.warning("fanout: %s failed %d time(s): %s", member.url, failed, exc)
                continue
            self.attempts.append(ConnectAttempt(member.url, failed + 1, started))
            failed, startup = 0, False
            await self._keep(member, transport, connected)

    async def _keep(self, member: Member, transport: TcpTransport, connected: Connected) -> None:
        member.transport, member.connected, member.lost = transport, connected, False
        log.info("fanout: connected to %s", member.url)
        try:
            if self.primary is None:
                self._promote(member)
            self._refresh()
            while not member.lost:
                member.changed.clear()
                await self._catch_up(member, transport, connected)
                await member.changed.wait()
        finally:
            self._retired = add_traffic(self._retired, transport.statistics())
            member.transport = member.connected = None
            await transport.close()

    def _promote(self, member: Member) -> None:
        self.primary = member
        self._primary_ready.clear()
        member.changed.set()

    async def _catch_up(
        self, member: Member, transport: TcpTransport, connected: Connected
    ) -> None:
        """Write what ``member`` must have now: the subscriptions when it has just become
        primary, then the requests still due that it can take."""
        if member is self.primary and not self._primary_ready.is_set():
            replay = self.ledger.subscriptions_for(member.key)
            self.replayed += len(replay) if self._first is not None else 0
            if not await _write_all(transport, replay) or member is not self.primary:
                return
            self._primary_ready.set()
            self._last_url = member.url
            if self._first is None:
                self._first = connected
            elif self._interrupted and self.listener is not None:
                self._interrupted = False
                self.failovers += 1
                self.listener.on_transport_resumed(connected)
        resend = self.ledger.resend_to(member.key, primary=member is self.primary)
        self.replayed += len(resend)
        await _write_all(transport, resend)

    # ---- writing ----

    async def write(self, command: Command) -> None:
        fan = fans_out(command, self.options.fan_out_queues)
        while True:
            if self.failure is not None:
                raise self.failure
            if isinstance(command, Acknowledge) and command.generation not in (
                None,
                self._generation,
            ):
                self._answer([LocalAnswer(command.receipt)] if command.receipt else [])
                return  # its message went with a lost primary, which released it
            if isinstance(command, Disconnect):
                self._closing = True
            elif not self._enough.is_set():
                await self._enough.wait()
                continue
            elif not fan and not self._primary_ready.is_set():
                await self._primary_ready.wait()
                continue
            break
        up = [member for member in self.members.values() if member.up]
        primary = self.primary.key if self.primary is not None else None
        plan = self.ledger.plan(command, [member.key for member in up], primary)
        targets = [(m, m.transport) for m in up if m.key in plan.targets and m.transport]
        try:
            for member, transport in targets:
                await _write_all(transport, [for_member(plan.command, member.key, plan.fan)])
        except BaseException:
            if plan.command.receipt is not None:
                self.ledger.forget(plan.command.receipt)
            raise
        self._answer(plan.answers)

    # ---- events from the members ----

    def member_event(self, member: Member, event: BrokerEvent) -> None:
        listener = self.listener
        if listener is None or self.failure is not None:
            return
        match event:
            case ReceiptEvent(receipt_id=receipt_id):
                self._answer(self.ledger.confirmed(member.key, receipt_id))
            case ErrorEvent(receipt_id=None):
                listener.on_event(event)  # as from one broker: it closes the connection
            case ErrorEvent(receipt_id=str() as receipt_id):
                if self.ledger.refused(receipt_id):
                    listener.on_event(event)  # fails the request
                else:
                    log.warning("fanout: %s refused %s: %s", member.url, receipt_id, event.message)
            case MessageEvent() if member is self.primary:
                listener.on_event(event)
            case MessageEvent():
                log.debug("fanout: dropped a message from %s, not the primary", member.url)

    def _answer(self, answers: Sequence[LocalAnswer]) -> None:
        listener = self.listener
        if listener is None:
            return
        for answer in answers:
            if answer.error is None:
                listener.on_event(ReceiptEvent(answer.receipt_id))
            else:
                listener.on_request_failed(answer.receipt_id, answer.error)

    def member_lost(self, member: Member, error: ConnectionClosed | None) -> None:
        """``member`` lost its connection (``error``) or was removed (None)."""
        was_up = member.up
        member.lost = True
        member.changed.set()
        if not was_up:
            return
        if error is not None and self.failure is None and not self._closing:
            log.warning("fanout: lost %s: %s", member.url, error)
        self._answer(self.ledger.lost(member.key))
        if member is self.primary:
            self.primary = None
            self._last_url = member.url
            self._primary_ready.clear()
            self._generation += 1
            if not self._closing and self.failure is None and self.listener is not None:
                self._interrupted = True
                self.listener.on_transport_interrupted()
            successor = next((m for m in self.members.values() if m.up), None)
            if successor is not None:
                self._promote(successor)
        for other in self.members.values():
            if other.up:
                other.changed.set()  # to take what the lost member owed
        self._refresh()

    def _refresh(self) -> None:
        up = sum(1 for member in self.members.values() if member.up)
        if self.failure is not None or up >= self.options.min_ack_count:
            self._enough.set()
        else:
            self._enough.clear()

    # ---- failing and closing ----

    def _give_up(self, member: Member, failed: int, reason: str) -> None:
        message = (
            f"{self.url}: gave up on {member.url} after {failed} failed connect attempt(s) "
            f"(maxReconnectAttempts={self.options.max_reconnect_attempts}): {reason}"
        )
        log.error("%s", message)
        self._open_error = ConnectFailedError(message, member.url, tuple(self.attempts))
        self._fail(ConnectionClosed(message))

    def _fail(self, error: ConnectionClosed) -> None:
        if self.failure is not None:
            return
        self.failure = error
        self._stop_all()
        self.ledger.clear()
        if self.listener is not None and self._opened:
            self.listener.on_closed(error)

    def _stop_all(self) -> None:
        self._enough.set()
        self._primary_ready.set()
        self._done.set()
        for member in self.members.values():
            if member.transport is not None:
                member.transport.abort()

    def abort(self) -> None:
        if self.failure is None:
            self.failure = ConnectionClosed("connection closed by the application")
        self._stop_all()

    async def close(self) -> None:
        self.abort()
        if self._runner is not None:
            await asyncio.wait([self._runner])
        await self.agent.stop()

    def statistics(self) -> TransportStatistics:
        totals = self._retired
        for member in self.members.values():
            if member.transport is not None:
                totals = add_traffic(totals, member.transport.statistics())
        primary = self.primary.transport if self.primary is not None else None
        return combined_statistics(
            totals,
            primary.statistics() if primary is not None else None,
            remote_url=self.remote_url,
            failovers=self.failovers,
            reconnect_attempts=self.reconnect_attempts,
            connect_attempts=tuple(self.attempts),
            replayed_commands=self.replayed,
        )


async def _write_all(transport: TcpTransport, commands: Sequence[Command]) -> bool:
    """Write to one member; False once its connection is gone (its loss is reported apart)."""
    try:
        for command in commands:
            await transport.write(command)
    except ConnectionClosed:
        return False
    return True
