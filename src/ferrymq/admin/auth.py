"""Who may use the admin API: HTTP basic auth against the broker's own users.

The same ``Authenticator`` that checks a STOMP CONNECT checks the ``Authorization: Basic``
header (RFC 7617), so one set of users (``<simpleAuthenticationPlugin>`` or JAAS
users.properties) serves both.  Any authenticated user may read (GET, HEAD); a write (POST,
DELETE: purge, delete, move, retry, close a connection) needs membership of the admin group
(``admins`` unless ``ferrymq broker --admin-group`` says otherwise), as ActiveMQ's example
groups.properties names its operators.  ``/health`` stays open so container and load-balancer
probes need no password (it tells whether the broker serves clients, nothing about its data);
``/metrics`` needs a user unless the broker is started with ``--admin-open-metrics``
(Prometheus sends basic auth from its scrape configuration).

A missing or wrong login is answered 401 with ``WWW-Authenticate: Basic realm="FerryMQ"``,
the same words whichever part was wrong; repeated failures from one address wait before their
answer (``security.throttle``).  A broker without authentication keeps its admin API open.
"""

from __future__ import annotations

import asyncio
import binascii
import logging
import time
from base64 import b64decode
from dataclasses import dataclass, field
from typing import Final

from ferrymq.admin.routing import READ_METHODS, Response, error_response
from ferrymq.config.model import AdminConfig
from ferrymq.security.api import AuthenticationError, Authenticator, Credentials, Subject
from ferrymq.security.throttle import LoginThrottle

log = logging.getLogger(__name__)

REALM: Final = "FerryMQ"
CHALLENGE: Final = (("WWW-Authenticate", f'Basic realm="{REALM}", charset="UTF-8"'),)
DEFAULT_ADMIN_GROUP: Final = "admins"
"""The group of ActiveMQ's example groups.properties (``admins=admin``)."""
OPEN_PATHS: Final = frozenset({"/health"})
METRICS_PATH: Final = "/metrics"
_NEEDED = "the admin API needs the user name and password of a broker user (HTTP basic auth)"
_INVALID = "the user name or password is invalid"


@dataclass
class AdminAccess:
    """The admin API's access rule; ``admit`` answers a refusal, or None to go on."""

    authenticator: Authenticator
    admin_group: str = DEFAULT_ADMIN_GROUP
    metrics_open: bool = False
    throttle: LoginThrottle = field(default_factory=LoginThrottle)

    async def admit(
        self, method: str, path: str, authorization: str | None, address: str | None
    ) -> Response | None:
        if path in OPEN_PATHS or (self.metrics_open and path == METRICS_PATH):
            return None
        if authorization is None:
            return error_response(401, _NEEDED, CHALLENGE)
        # A hashed password is slow to check on purpose: off the loop, so that a guesser
        # never stalls the broker (the built-in authenticators are thread-safe).
        subject = await asyncio.to_thread(self._subject, authorization, address)
        if subject is None:
            delay_s = self.throttle.failed(address, time.monotonic())
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            return error_response(401, _INVALID, CHALLENGE)
        self.throttle.succeeded(address)
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
