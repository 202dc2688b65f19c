"""Authentication at the connection boundary, the same for every protocol.

A protocol adapter hands over what its client presented at the handshake (STOMP's CONNECT
``login``/``passcode``, later AMQP's SASL) and the service adds what the transport knows: the
client's address and, on a TLS listener, the subject of the client certificate it verified. The
broker's ``Authenticator`` answers with a ``Subject`` that the core keeps with the connection
(and authorizes its commands with, ``core.authorization``), or refuses: the refusal carries
ActiveMQ's words, the same whichever part was wrong, and the connection is closed after it.

Checking a password is slow on purpose (PBKDF2), so it runs on a small pool of threads, never on
the event loop: the connection waits for the answer and handles nothing else meanwhile (its
later frames wait), while every other connection goes on.  Repeated failures are slowed down
(``security.throttle``): a throttled address waits before its login is even checked, whatever
the answer, and has at most a couple of logins in progress at once.  Without configured
authentication any login is accepted at once, as in ActiveMQ, and the login is only shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import secrets
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Final

from ferrymq.core.errors import BrokerError
from ferrymq.security.api import (
    AuthenticationError,
    Authenticator,
    Authorizer,
    Credentials,
    Subject,
)
from ferrymq.security.build import security_for
from ferrymq.security.throttle import LoginThrottle, address_key

if TYPE_CHECKING:
    from ferrymq.config.model import BrokerConfig
    from ferrymq.core.region import RegionBroker
    from ferrymq.transport.connection import TransportConnection

log = logging.getLogger(__name__)

LOGIN_THREADS: Final = max(1, min(4, (os.cpu_count() or 2) - 1))
"""Passwords checked at once: a core is left to the event loop, whatever a flood of logins."""
LOGGED_LOGIN_CHARS: Final = 64
REFUSAL_LOG_INTERVAL_S: Final = 10.0
"""One refused-login line per address in this time; the others are counted in the next."""
CHECKED_PER_ADDRESS: Final = 2
"""Logins of one address checked at once; the others wait their turn, so a guesser's parallel
connections gain nothing and a pool of honest clients opening at once is only queued."""
QUEUED_PER_ADDRESS: Final = 64
"""Logins of one address waiting or being checked; beyond it a login is refused."""
QUEUED_LOGINS: Final = 1024
"""Logins of all addresses waiting or being checked; beyond it a login is refused."""


class LoginQueue:
    """Turns for the password check, per client address (an IPv6 /64 counts as one).

    A login beyond ``CHECKED_PER_ADDRESS`` waits, not refused: a connection pool or failover
    clients reconnecting from one host after a restart all get in. Only a queue beyond its
    bounds is refused. In-process (``vm://``) clients have no address and take no turn.
    """

    def __init__(self) -> None:
        self._turns: dict[str, asyncio.Semaphore] = {}
        self._queued: dict[str, int] = {}
        self._total = 0

    def enter(self, address: str | None) -> str | None:
        """The key of the turn to wait for; raises a fatal ``BrokerError`` when full."""
        if address is None:
            return None
        key = address_key(address)
        queued = self._queued.get(key, 0)
        if queued >= QUEUED_PER_ADDRESS or self._total >= QUEUED_LOGINS:
            raise BrokerError(
                "too many logins waiting from this address; try again later", fatal=True
            )
        self._queued[key] = queued + 1
        self._total += 1
        return key

    def turn(self, key: str | None) -> asyncio.Semaphore | contextlib.nullcontext[None]:
        if key is None:
            return contextlib.nullcontext()
        return self._turns.setdefault(key, asyncio.Semaphore(CHECKED_PER_ADDRESS))

    def leave(self, key: str | None) -> None:
        if key is None:
            return
        self._total -= 1
        left = self._queued[key] - 1
        if left:
            self._queued[key] = left
        else:  # nobody else holds or waits for its turn
            del self._queued[key]
            self._turns.pop(key, None)


class LoginRefusedError(BrokerError):
    """A failed login: fatal (a throttled address waited before it was checked)."""

    def __init__(self, error: AuthenticationError) -> None:
        super().__init__(str(error), fatal=True)


class BrokerSecurity:
    """The broker's authenticator (who a client is) and authorizer (what it may do)."""

    def __init__(
        self,
        region: RegionBroker,
        authenticator: Authenticator | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        self._region = region
        self.throttle = LoginThrottle()
        self.privileged_group = "admins"
        """The group a network bridge or a pure master/slave slave must log in with."""
        self._refusals = _RefusalLog()
        self._pool: ThreadPoolExecutor | None = None
        self._logins: set[asyncio.Task[Subject | None]] = set()
        self._queue = LoginQueue()
        self.authenticator: Authenticator | None = None
        self._in_process: dict[str, str] = {}
        """The broker's own in-process logins: user -> passcode (``in_process_login``)."""
        self.use(authenticator, authorizer)

    @classmethod
    def from_config(cls, config: BrokerConfig, region: RegionBroker) -> BrokerSecurity:
        """What the configuration's ``<plugins>`` ask for (none: everyone may do anything)."""
        security = cls(region, *configured_security(config))
        security.privileged_group = config.admin.admin_group
        return security

    def use(self, authenticator: Authenticator | None, authorizer: Authorizer | None) -> None:
        """Enforce these from the next connection on (an embedding application's own
        implementations, or the configuration's)."""
        self.authenticator = authenticator
        self._region.clients.authorizer = authorizer

    @property
    def authorizer(self) -> Authorizer | None:
        return self._region.clients.authorizer

    def in_process_login(self, user: str) -> tuple[str, str]:
        """A login for the broker's own clients over ``vm://`` (its broker connections'
        elements, which Artemis runs inside the broker, beyond its users): accepted only from
        this process, with a passcode made at random here, whatever the authentication
        configured, as a member of the privileged group."""
        passcode = self._in_process.setdefault(user, secrets.token_urlsafe(32))
        return user, passcode

    def _in_process_subject(
        self, transport: TransportConnection | None, login: str | None, passcode: str | None
    ) -> Subject | None:
        expected = self._in_process.get(login or "")
        if expected is None or passcode is None or login is None:
            return None
        if transport is not None and transport.remote_address is not None:
            return None  # a network client: never, whatever it sends
        if not hmac.compare_digest(expected.encode(), passcode.encode(errors="replace")):
            return None
        return Subject(login, frozenset({self.privileged_group}))

    def begin_login(
        self,
        transport: TransportConnection | None,
        login: str | None,
        passcode: str | None,
    ) -> asyncio.Future[Subject | None]:
        """Who the client is, when known: None when no authentication is configured (known at
        once). Fails with ``LoginRefusedError`` (never naming the part that was wrong, never
        the password) or a fatal ``BrokerError`` (too many logins in progress)."""
        loop = asyncio.get_running_loop()
        authenticator = self.authenticator
        if authenticator is None:
            known: asyncio.Future[Subject | None] = loop.create_future()
            known.set_result(None)
            return known
        trusted = self._in_process_subject(transport, login, passcode)
        if trusted is not None:
            own: asyncio.Future[Subject | None] = loop.create_future()
            own.set_result(trusted)
            return own
        credentials = Credentials(
            login=login,
            passcode=passcode,
            certificate_subject=getattr(transport, "peer_certificate_subject", None),
            remote_address=transport.remote_address if transport is not None else None,
        )
        task = loop.create_task(self._login(authenticator, credentials))
        self._logins.add(task)
        task.add_done_callback(self._login_done)
        return task

    def _login_done(self, task: asyncio.Task[Subject | None]) -> None:
        self._logins.discard(task)
        if not task.cancelled():
            task.exception()  # read by the connection, unless it went first: not an error

    async def _login(
        self, authenticator: Authenticator, credentials: Credentials
    ) -> Subject | None:
        address, login = credentials.remote_address, credentials.login
        host, user = client_host(address), login or ""  # "": one user, not any
        throttle = self.throttle
        try:
            key = self._queue.enter(host)
        except BrokerError:
            self._refusals.refused(login, address, "too many logins waiting")
            raise
        try:
            async with self._queue.turn(key):
                wait_s = throttle.wait_s(host, user, time.monotonic())
                if wait_s > 0:
                    await asyncio.sleep(wait_s)
                subject = await self._check(authenticator, credentials, host, user, wait_s)
        finally:
            self._queue.leave(key)
        throttle.succeeded(host, user)
        return subject

    async def _check(
        self,
        authenticator: Authenticator,
        credentials: Credentials,
        host: str | None,
        user: str,
        wait_s: float,
    ) -> Subject | None:
        """The password check, on the login threads (a hash is slow on purpose)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(LOGIN_THREADS, thread_name_prefix="ferrymq-login")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, authenticator.authenticate, credentials)
        except AuthenticationError as error:
            self.throttle.failed(host, time.monotonic(), user)
            why = f"checked after {wait_s:.2f} s: repeated failures" if wait_s else ""
            self._refusals.refused(credentials.login, credentials.remote_address, why)
            raise LoginRefusedError(error) from None
        except Exception as exc:  # the pool stopping, a module failing: not the client's doing
            log.error("checking a login failed: %s", exc, exc_info=log.isEnabledFor(logging.DEBUG))
            raise BrokerError("the broker could not check the login", fatal=True) from None

    async def close(self) -> None:
        """The broker stops: logins in progress are abandoned, the threads end."""
        logins = list(self._logins)
        for task in logins:
            task.cancel()
        if logins:
            await asyncio.gather(*logins, return_exceptions=True)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


class _RefusalLog:
    """The refused-login warning: the login shortened and quoted (a password typed into the
    user field is not logged whole, nor kilobytes of an attacker's text), at most one line
    per address every ``REFUSAL_LOG_INTERVAL_S`` (the next says how many were left out)."""

    def __init__(self, max_addresses: int = 10_000) -> None:
        self._last: OrderedDict[str, tuple[float, int]] = OrderedDict()
        self._max = max_addresses

    def refused(self, login: str | None, address: str | None, why: str) -> None:
        key, now = address_key(client_host(address)), time.monotonic()
        last_s, skipped = self._last.pop(key, (float("-inf"), 0))
        if now - last_s < REFUSAL_LOG_INTERVAL_S:
            self._last[key] = (last_s, skipped + 1)
            return
        self._last[key] = (now, 0)
        while len(self._last) > self._max:
            self._last.popitem(last=False)
        shown = login or ""
        if len(shown) > LOGGED_LOGIN_CHARS:
            shown = shown[:LOGGED_LOGIN_CHARS] + "..."
        more = f"; {skipped} more refused from there not logged" if skipped else ""
        log.warning(
            "login refused for user %r from %s%s%s",
            shown,
            address or "this process (vm://)",
            f" ({why})" if why else "",
            more,
        )


def client_host(address: str | None) -> str | None:
    """The host of ``host:port`` (failures are counted per host, whatever its source port)."""
    if address is None:
        return None
    host, _, port = address.rpartition(":")
    return host if host and port.isdigit() else address


def configured_security(config: BrokerConfig) -> tuple[Authenticator | None, Authorizer | None]:
    """The configuration's authenticator and authorizer (``security.build``; a file it names
    that cannot be used is a ``ConfigError`` naming it)."""
    return security_for(config)
