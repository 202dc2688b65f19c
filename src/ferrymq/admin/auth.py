"""Who may use the admin API: HTTP basic auth against the broker's own users.

The same ``Authenticator`` that checks a STOMP CONNECT checks the ``Authorization: Basic``
header (RFC 7617), so one set of users (``<simpleAuthenticationPlugin>`` or JAAS
users.properties) serves both.  Any authenticated user may read (GET, HEAD); a write (POST,
DELETE: purge, delete, move, retry, close a connection) needs membership of the admin group
(``admins`` unless ``ferrymq broker --admin-group`` says otherwise), as ActiveMQ's example
groups.properties names its operators.  ``/health`` stays open so container and load-balancer
probes need no password, but without a login it says only its state and whether it serves
clients (the reason names hosts, lock paths and the master: for users, who get it by logging in);
``/metrics`` needs a user unless the broker is started with ``--admin-open-metrics``
(Prometheus sends basic auth from its scrape configuration).

A missing or wrong login is answered 401 with ``WWW-Authenticate: Basic realm="FerryMQ"``,
the same words whichever part was wrong; repeated failures from one address wait before their
answer (``security.throttle``).  A waiting answer holds its connection, so one address may have
at most ``MAX_PENDING_LOGINS`` logins in progress (checked, or waiting out their delay): a
further request with credentials is answered 429 at once, without checking them, and its
connection is closed, so one host cannot fill the server's connection limit with failed logins
(and parallel guesses gain nothing).  A broker without authentication keeps its admin API open.
"""

from __future__ import annotations

import asyncio
import binascii
import logging
import time
from base64 import b64decode
from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from ferrymq.admin.routing import READ_METHODS, Response, error_response
from ferrymq.config.model import AdminConfig
from ferrymq.security.api import AuthenticationError, Authenticator, Credentials, Subject
from ferrymq.security.throttle import LoginThrottle, address_key

log = logging.getLogger(__name__)

REALM: Final = "FerryMQ"
CHALLENGE: Final = (("WWW-Authenticate", f'Basic realm="{REALM}", charset="UTF-8"'),)
DEFAULT_ADMIN_GROUP: Final = "admins"
"""The group of ActiveMQ's example groups.properties (``admins=admin``)."""
OPEN_PATHS: Final = frozenset({"/health"})
METRICS_PATH: Final = "/metrics"
_NEEDED = "the admin API needs the user name and password of a broker user (HTTP basic auth)"
_INVALID = "the user name or password is invalid"
MAX_PENDING_LOGINS: Final = 2
"""Logins one address may have in progress at once (a browser's retry while one answer is held
back fits; a guesser's parallel connections do not)."""
RETRY_AFTER_S: Final = 5
"""``Retry-After`` of a 429: the throttle's longest delay, by which a pending answer is sent."""


@dataclass
class AdminAccess:
    """The admin API's access rule; ``admit`` answers a refusal, or None to go on."""

    authenticator: Authenticator
    admin_group: str = DEFAULT_ADMIN_GROUP
    metrics_open: bool = False
    throttle: LoginThrottle = field(default_factory=LoginThrottle)
    max_pending_logins: int = MAX_PENDING_LOGINS
    _pending: Counter[str] = field(default_factory=Counter, init=False, repr=False)
    """Logins in progress per ``address_key`` (an IPv6 /64 counts as one address)."""

    def pending(self, address: str | None) -> int:
        """Logins from ``address`` in progress (waiting out the throttle or being checked)."""
        return self._pending[address_key(address)]

    async def admit(
        self, method: str, path: str, authorization: str | None, address: str | None
    ) -> Response | None:
        if authorization is None and (
            path in OPEN_PATHS or (self.metrics_open and path == METRICS_PATH)
        ):
            return None
        if authorization is None:
            return error_response(401, _NEEDED, CHALLENGE)
        key = address_key(address)
        if self._pending[key] >= self.max_pending_logins:
            return _too_many_logins(address, self.max_pending_logins)
        self._pending[key] += 1
        try:
            return await self._login(method, path, authorization, address)
        finally:
            self._pending[key] -= 1
            if self._pending[key] <= 0:
                del self._pending[key]

    async def _login(
        self, method: str, path: str, authorization: str, address: str | None
    ) -> Response | None:
        """Wait out the throttle, check the credentials, then apply the group rule. The wait
        comes first, for a right password as for a wrong one, as on the broker's own logins:
        a guesser learns nothing sooner by how fast an answer comes."""
        login, _ = _basic_credentials(authorization)
        wait_s = self.throttle.wait_s(address, login, time.monotonic())
        if wait_s > 0:
            await asyncio.sleep(wait_s)
        # A hashed password is slow to check on purpose: off the loop, so that a guesser
        # never stalls the broker (the built-in authenticators are thread-safe).
        subject = await asyncio.to_thread(self._subject, authorization, address)
        if subject is None:
            self.throttle.failed(address, time.monotonic(), login)
            return error_response(401, _INVALID, CHALLENGE)
        self.throttle.succeeded(address, login)
        if method in READ_METHODS or self.admin_group in subject.groups:
            return None
        message = (
            f"user {subject.user} may read the admin API but not change the broker: "
            f"{method} {path} needs membership of group {self.admin_group}"
        )
        return error_response(403, message)

    def _subject(self, authorization: str, address: str | None) -> Subject | None:
        """The subject the header proves, or None (it never says why: a guesser learns
        nothing, and the log gets the user name only)."""
        login, password = _basic_credentials(authorization)
        if login is None:
            log.info("admin API: a malformed Authorization header from %s", address)
            return None
        credentials = Credentials(login=login, passcode=password, remote_address=address)
        try:
            return self.authenticator.authenticate(credentials)
        except AuthenticationError:
            log.info("admin API: failed login for user %r from %s", login, address)
            return None


def _too_many_logins(address: str | None, limit: int) -> Response:
    """429 (RFC 6585) with ``Connection: close``: the server closes the connection after it."""
    message = (
        f"too many logins in progress from {address or 'this client'} (at most {limit} at once): "
        "wait for their answers before sending another"
    )
    headers = (("Retry-After", str(RETRY_AFTER_S)), ("Connection", "close"))
    return error_response(429, message, headers)


def _basic_credentials(authorization: str) -> tuple[str | None, str]:
    """User and password of ``Basic <base64(user:password)>`` (RFC 7617); (None, "") if it is
    not that."""
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None, ""
    try:
        decoded = b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None, ""
    login, colon, password = decoded.partition(":")
    if not colon or not login:
        return None, ""
    return login, password


def admin_access(
    config: AdminConfig, authenticator: Authenticator | None, throttle: LoginThrottle | None = None
) -> AdminAccess | None:
    """The admin API's access rule for a broker; None (open) without authentication.  Given
    the broker's ``throttle``, a guesser is slowed down across STOMP and HTTP alike."""
    if authenticator is None:
        return None
    throttle = LoginThrottle() if throttle is None else throttle
    return AdminAccess(authenticator, config.admin_group, config.metrics_open, throttle)
