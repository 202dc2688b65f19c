"""The failover loop's steps: connect passes, restoring a connection on a new broker, and
planned moves (to a priority broker, or on a broker's request).

``FailoverTransport`` holds the state and routes the events; its supervisor task calls these
steps one at a time, so two of them never run together. The decisions (which broker, how long
to wait, when to give up) are the ``ReconnectPolicy``'s, what to replay the ``StateTracker``'s.
The ``Reconnector`` reaches brokers through the ``Dialer`` and sees the transport only as a
``FailoverState``: where the connection is, and the moves between brokers.

A planned move first opens the new broker, then holds new writes, sends DISCONNECT to the old
broker and waits for its receipt: what was in flight there is settled (and receipted) before
the move, instead of being replayed and stored twice on two brokers.
"""

from __future__ import annotations

import asyncio
import logging
from asyncio import FIRST_COMPLETED
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Final, Protocol

from ferrymq.client.commands import Disconnect
from ferrymq.client.errors import (
    BrokerErrorFrame,
    BrokerURLError,
    ClientError,
    ConnectAttempt,
    ConnectFailedError,
    ConnectionClosed,
    UsageError,
)
from ferrymq.client.failover.dialer import Dialer
from ferrymq.client.failover.link import Link, Role
from ferrymq.client.failover.policy import broker_key
from ferrymq.client.failover.standby import StandbyKeeper
from ferrymq.client.failover.tracker import StateTracker, SubscriptionReplay
from ferrymq.client.transport import TransportListener
from ferrymq.stomp.events import ErrorEvent, ReceiptEvent
from ferrymq.util.uri import URI

log = logging.getLogger(__name__)

EMPTY_PASS_FLOOR_S: Final = 0.1
"""A pass with no URI at all waits at least this long, so an empty list cannot spin."""
ATTEMPT_HISTORY: Final = 256
"""Connect attempts kept for the statistics and ``ConnectFailedError``."""


class GaveUpError(Exception):
    def __init__(self, passes: int, last_error: str) -> None:
        super().__init__(f"gave up after {passes} pass(es) over the broker list; {last_error}")


class LinkLostError(Exception):
    """The link died while being opened or restored."""


class RestoreRefusedError(Exception):
    """The new broker refused to restore a subscription the application already had."""

    def __init__(self, error: BrokerErrorFrame) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(frozen=True, slots=True)
class Lost:
    link: Link


@dataclass(frozen=True, slots=True)
class SwitchTo:
    target: Link | URI
    reason: str


class FailoverState(Protocol):
    """The ``FailoverTransport`` as its reconnect steps see it: where the connection is, and
    the moves between brokers (each also tells the application and the standby keeper)."""

    link: Link | None
    """The link writes go to once ready, or the one being restored; None while looking."""

    @property
    def failure(self) -> ConnectionClosed | None:
        """Set once the transport is closed for good: no more looking for a broker."""

    @property
    def current(self) -> Link | None:
        """``link`` while writes may go to it."""

    @property
    def last_failed(self) -> URI | None:
        """The broker of the last link lost (the policy tries it last)."""

    def resume(self, link: Link) -> None:
        """``link`` is restored: make it current and tell the application."""

    def detach(self, link: Link) -> None:
        """``link`` is no longer where writes go (keeping its traffic counts)."""

    def link_closed(self, link: Link, error: ConnectionClosed) -> None:
        """``link`` is gone (as its own ``on_closed`` reports it)."""

    def interrupt(self) -> None:
        """The connection left its broker: a new generation, and the application is told."""

    async def hold_writes(self) -> None:
        """New writes wait from now on; returns once the writes under way are done."""

    def request_recovery(self, link: Link) -> None:
        """``link`` was lost: the supervisor looks for a broker next."""


class Reconnector:
    """The supervisor's steps for one ``FailoverTransport`` (``failover``): reconnect passes,
    restoring the connection's state on a new broker, and planned moves."""

    def __init__(
        self,
        failover: FailoverState,
        dialer: Dialer,
        standbys: StandbyKeeper,
        tracker: StateTracker,
    ) -> None:
        self.failover = failover
        self.dialer = dialer
        self.standbys = standbys
        self.tracker = tracker
        self.attempts: deque[ConnectAttempt] = deque(maxlen=ATTEMPT_HISTORY)
        self.reconnect_attempts = self.replayed = 0
        """Connect attempts after the first connection; commands written again."""
        self.replay_waiters: dict[str, tuple[asyncio.Future[None], SubscriptionReplay]] = {}
        """Receipts of the subscriptions being restored."""
        self.drain_waiters: dict[str, asyncio.Future[None]] = {}
        """Receipts of DISCONNECTs sent to a broker being left."""

    def answered(
        self, receipt_id: str, error: ErrorEvent | None, listener: TransportListener
    ) -> bool:
        """A receipt (or ERROR) for a restored subscription or a drain: True if it was one
        (the application's ``listener`` hears what it asked for)."""
        drain = self.drain_waiters.pop(receipt_id, None)
        if drain is not None:
            if not drain.done():
                drain.set_result(None)
            return True
        entry = self.replay_waiters.pop(receipt_id, None)
        if entry is None:
            return False
        waiter, step = entry
        if error is None:
            original = self.tracker.confirm_subscription(step.command.id)
            if original is not None:
                listener.on_event(ReceiptEvent(original))
            if not waiter.done():
                waiter.set_result(None)
        elif step.original_receipt is not None:
            # The application's own SUBSCRIBE, still unanswered: the refusal is its answer.
            self.tracker.forget_subscription(step.command.id)
            listener.on_event(replace(error, receipt_id=step.original_receipt))
            if not waiter.done():
                waiter.set_result(None)
        elif not waiter.done():
            waiter.set_exception(BrokerErrorFrame.from_event(error))
        return True

    def interrupted(self) -> None:
        """The link being restored is gone: its answers will not come.

        The waiters fail with ``ConnectionClosed`` rather than being cancelled: a cancelled
        child of the ``gather`` that ``restore`` awaits would come out of it as a
        ``CancelledError``, which the supervisor would take for its own cancellation and end
        without a word, leaving the connection waiting for ever.
        """
        waiters, self.replay_waiters = self.replay_waiters, {}
        for waiter, _ in waiters.values():
            if not waiter.done():
                waiter.set_exception(ConnectionClosed("the connection was lost"))

    async def recover(self) -> None:
        if self.failover.link is not None or self.failover.failure is not None:
            return
        if not self.dialer.policy.may_reconnect():
            raise GaveUpError(0, "maxReconnectAttempts=0: no reconnect once connected")
        link = await self.episode(startup=False)
        self.failover.resume(link)

    async def episode(self, *, startup: bool) -> Link:
        """Connect passes until a broker takes the connection (restored, unless ``startup``);
        raises ``GaveUpError`` at the policy's limit."""
        loop = asyncio.get_running_loop()
        if not startup:
            link = await self.promote_standby()
            if link is not None:
                return link
        policy = self.dialer.policy
        failures = 0
        last_error = "no broker to try"
        while True:
            self._check_open()
            pass_number = failures + 1
            delay_ms = policy.delay_before_pass_ms(
                pass_number, startup=startup, jitter=self.dialer.rng.random()
            )
            await asyncio.sleep(delay_ms / 1000)
            candidates = await self.dialer.connect_list(self.failover.last_failed)
            if not candidates:
                await asyncio.sleep(EMPTY_PASS_FLOOR_S)
            for uri in candidates:
                self._check_open()
                started = loop.time()
                if not startup:
                    self.reconnect_attempts += 1
                try:
                    link = await self.dialer.connect_link(uri)
                    if link.lost.is_set():
                        raise LinkLostError("the broker closed the connection")
                    if not startup:
                        await self.restore(link)
                except RestoreRefusedError:
                    raise
                except BrokerErrorFrame as exc:
                    if startup:
                        raise
                    error = f"refused: {exc.message}"
                except (ConnectFailedError, BrokerURLError, LinkLostError) as exc:
                    error = exc.message if isinstance(exc, ClientError) else str(exc)
                else:
                    self.attempts.append(ConnectAttempt(link.url, pass_number, started))
                    return link
                self.attempts.append(ConnectAttempt(str(uri), pass_number, started, error))
                last_error = f"last error: {uri}: {error}"
            failures += 1
            if policy.gives_up(failures, startup=startup):
                log.error(
                    "failed to connect to %s after %d pass(es)",
                    self.dialer.brokers.describe(),
                    failures,
                )
                raise GaveUpError(failures, last_error)
            if policy.warns(failures):
                log.warning(
                    "failed to connect to %s after %d pass(es), continuing to retry (%s)",
                    self.dialer.brokers.describe(),
                    failures,
                    last_error,
                )

    def _check_open(self) -> None:
        """A closed transport stops looking for a broker, even if a cancellation of the loop
        was lost on the way (3.11 drops one that races a completing future)."""
        if self.failover.failure is not None:
            raise GaveUpError(0, f"the connection is closed ({self.failover.failure})")

    async def promote_standby(self) -> Link | None:
        loop = asyncio.get_running_loop()
        for link in self.standbys.candidates():
            if not self.standbys.take(link):
                continue
            started = loop.time()
            self.reconnect_attempts += 1
            try:
                if link.lost.is_set():
                    raise LinkLostError("the standby connection was closed")
                if link.connected is None:
                    await self.dialer.handshake(link)
                await self.restore(link)
            except (ConnectFailedError, BrokerErrorFrame, LinkLostError) as exc:
                error = exc.message if isinstance(exc, ClientError) else str(exc)
                self.attempts.append(ConnectAttempt(link.url, 1, started, f"standby: {error}"))
                link.role = Role.RETIRED
                await link.transport.close()
                continue
            self.attempts.append(ConnectAttempt(link.url, 1, started))
            return link
        return None

    async def restore(self, link: Link) -> None:
        """Replay the tracked state on ``link`` (the tracker's module docstring); raises
        ``LinkLostError`` if it dies meanwhile, ``RestoreRefusedError`` if it refuses to restore a
        subscription the application already had."""
        link.role = Role.REPLAYING
        self.failover.link = link
        plan = self.tracker.replay()
        loop = asyncio.get_running_loop()
        waiters: list[asyncio.Future[None]] = []
        try:
            for step in plan.subscriptions:
                assert step.command.receipt is not None
                waiter = loop.create_future()
                self.replay_waiters[step.command.receipt] = (waiter, step)
                waiters.append(waiter)
                await link.transport.write(step.command)
            if waiters:
                await self.wait_for(link, asyncio.gather(*waiters))
            for command in plan.commands:
                await link.transport.write(command)
        except ConnectionClosed as exc:
            if link.role is Role.REPLAYING:
                self.failover.link_closed(link, exc)
            await link.transport.close()
            raise LinkLostError(f"lost while restoring the connection: {exc}") from None
        except BrokerErrorFrame as exc:
            link.role = Role.RETIRED
            self.failover.detach(link)
            await link.transport.close()
            raise RestoreRefusedError(exc) from None
        finally:
            for receipt in [r for r, (w, _) in self.replay_waiters.items() if w in waiters]:
                del self.replay_waiters[receipt]
            for waiter in waiters:
                if waiter.done() and not waiter.cancelled():
                    waiter.exception()  # seen: a failure already reached restore's caller
                waiter.cancel()
        if link.role is not Role.REPLAYING:
            # Lost in the loop turn its last answer came in: never install a dead link.
            await link.transport.close()
            raise LinkLostError("lost while restoring the connection")
        self.replayed += len(plan.subscriptions) + len(plan.commands)

    async def wait_for(self, link: Link, work: asyncio.Future[Any]) -> None:
        """Await ``work``; raise ``ConnectionClosed`` if ``link`` dies first or no answer
        comes within the connect timeout (then ``link`` is aborted), and ``work``'s own error
        (a refusal: ``BrokerErrorFrame``) if it fails.

        ``work`` ending cancelled, or with a ``CancelledError`` (a gather with a cancelled
        child), means its answers were given up on: that is the link's loss, never a
        cancellation of this task, which ``asyncio.wait`` lets through untouched.
        """
        lost = asyncio.ensure_future(link.lost.wait())
        try:
            await asyncio.wait(
                [work, lost],
                timeout=self.dialer.info.connect_timeout_s,
                return_when=FIRST_COMPLETED,
            )
        finally:
            lost.cancel()
        if work.done():
            error = asyncio.CancelledError() if work.cancelled() else work.exception()
            if isinstance(error, asyncio.CancelledError):
                raise ConnectionClosed("the connection was lost")
            if error is not None:
                raise error
            return
        work.cancel()
        await asyncio.wait([work])  # let it settle; a cancellation of this task goes through
        if not work.cancelled():
            work.exception()  # seen (it finished while being cancelled)
        if link.lost.is_set():
            raise ConnectionClosed("the connection was lost")
        link.transport.abort()
        raise ConnectionClosed(f"no answer from {link.url} within the connect timeout")

    async def switch(self, request: SwitchTo) -> None:
        """A planned failover: open the new broker, settle the old one, move (module
        docstring)."""
        target = request.target
        old = self.failover.current
        if isinstance(target, Link):
            if target.role is not Role.STANDBY or not self.standbys.take(target):
                return
            if old is None or old.key == target.key:
                target.role = Role.RETIRED
                await target.transport.close()
                return
            link = target
        else:
            if old is None or old.key == broker_key(target):
                return
            try:
                link = await self.dialer.connect_link(target)
            except (ConnectFailedError, BrokerErrorFrame, BrokerURLError) as exc:
                log.warning("cannot move to %s (%s): %s", target, request.reason, exc)
                return
        try:
            if link.connected is None:
                await self.dialer.handshake(link)
            if link.lost.is_set():
                raise ConnectFailedError("closed by the broker", url=link.url)
        except (ConnectFailedError, BrokerErrorFrame) as exc:
            log.warning("cannot move to %s (%s): %s", link.url, request.reason, exc)
            link.role = Role.RETIRED
            await link.transport.close()
            return
        old = self.failover.current
        if old is None:
            link.role = Role.RETIRED
            await link.transport.close()
            return
        log.info("moving from %s to %s (%s)", old.url, link.url, request.reason)
        await self.failover.hold_writes()
        await self.drain(old)
        old.role = Role.RETIRED
        self.failover.detach(old)
        await old.transport.close()
        self.failover.interrupt()
        try:
            await self.restore(link)
        except LinkLostError:
            self.failover.request_recovery(link)
            return
        self.failover.resume(link)

    async def drain(self, old: Link) -> None:
        old.role = Role.DRAINING
        receipt = self.tracker.internal_receipt("drain")
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.drain_waiters[receipt] = waiter
        try:
            await old.transport.write(Disconnect(receipt))
            await self.wait_for(old, waiter)
        except (ConnectionClosed, UsageError) as exc:
            log.info("leaving %s without its DISCONNECT receipt: %s", old.url, exc)
        finally:
            self.drain_waiters.pop(receipt, None)
