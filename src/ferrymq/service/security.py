"""Authentication at the connection boundary, the same for every protocol.

A protocol adapter hands over what its client presented at the handshake (STOMP's CONNECT
``login``/``passcode``, later AMQP's SASL) and the service adds what the transport knows: the
client's address and, on a TLS listener, the subject of the client certificate it verified. The
broker's ``Authenticator`` answers with a ``Subject`` that the core keeps with the connection
(and authorizes its commands with, ``core.authorization``), or refuses: the refusal carries
ActiveMQ's words, the same whichever part was wrong, and the connection is closed after it.

Repeated failures from one address are slowed down (``security.throttle``): the refusal waits,
on that connection alone (a timer, nothing blocks), before it is sent. Without configured
authentication any login is accepted, as in ActiveMQ, and the login is only shown.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ferrymq.core.errors import BrokerError
from ferrymq.security.api import (
    AuthenticationError,
    Authenticator,
    Authorizer,
    Credentials,
    Subject,
)
from ferrymq.security.build import security_for
from ferrymq.security.throttle import LoginThrottle

if TYPE_CHECKING:
    from ferrymq.config.model import BrokerConfig
    from ferrymq.core.region import RegionBroker
    from ferrymq.transport.connection import TransportConnection

log = logging.getLogger(__name__)


class LoginRefusedError(BrokerError):
    """A failed login: fatal, and its answer is held back ``delay_s`` (repeated failures)."""

    def __init__(self, error: AuthenticationError, delay_s: float) -> None:
        super().__init__(str(error), fatal=True)
        self.delay_s = delay_s


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
        self.authenticator: Authenticator | None = None
        self.use(authenticator, authorizer)

    @classmethod
    def from_config(cls, config: BrokerConfig, region: RegionBroker) -> BrokerSecurity:
        """What the configuration's ``<plugins>`` ask for (none: everyone may do anything)."""
        return cls(region, *configured_security(config))

    def use(self, authenticator: Authenticator | None, authorizer: Authorizer | None) -> None:
        """Enforce these from the next connection on (an embedding application's own
        implementations, or the configuration's)."""
        self.authenticator = authenticator
        self._region.clients.authorizer = authorizer

    @property
    def authorizer(self) -> Authorizer | None:
        return self._region.clients.authorizer

    def login(
        self,
        transport: TransportConnection | None,
        login: str | None,
        passcode: str | None,
    ) -> Subject | None:
        """Who the client is; None when no authentication is configured. Raises
        ``LoginRefusedError`` (never naming the part that was wrong, never the password)."""
        authenticator = self.authenticator
        if authenticator is None:
            return None
        address = transport.remote_address if transport is not None else None
        credentials = Credentials(
            login=login,
            passcode=passcode,
            certificate_subject=getattr(transport, "peer_certificate_subject", None),
            remote_address=address,
        )
        host = client_host(address)
        try:
            subject = authenticator.authenticate(credentials)
        except AuthenticationError as error:
            delay_s = self.throttle.failed(host, time.monotonic())
            log.warning(
                "login refused for user %r from %s%s",
                login or "",
                address or "this process (vm://)",
                f" (answered after {delay_s:.2f} s: repeated failures)" if delay_s else "",
            )
            raise LoginRefusedError(error, delay_s) from None
        self.throttle.succeeded(host)
        return subject


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
