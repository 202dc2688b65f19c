"""The contract between the security package and everything that enforces it.

A protocol adapter turns what a client presented (STOMP's ``login``/``passcode``, a verified
TLS client certificate, AMQP's SASL later) into ``Credentials`` and asks the broker's
``Authenticator`` for a ``Subject``; the core keeps the subject with the connection and asks
the ``Authorizer`` before each operation on a destination (ActiveMQ's AuthorizationBroker).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

from ferrymq.core.destination import Destination


@dataclass(frozen=True, slots=True)
class Credentials:
    login: str | None = None
    passcode: str | None = field(default=None, repr=False)
    """Never logged, never echoed (``repr`` leaves it out)."""
    certificate_subject: str | None = None
    """The subject DN (RFC 4514) of the TLS client certificate the transport verified."""
    remote_address: str | None = None


@dataclass(frozen=True, slots=True)
class Subject:
    """An authenticated user and the groups it belongs to (ActiveMQ's SecurityContext)."""

    user: str
    groups: frozenset[str] = frozenset()


class AuthenticationError(Exception):
    """A login that failed. Its text is what the client is told: ActiveMQ's words, the same
    whichever part was wrong."""

    def __init__(self, login: str | None) -> None:
        super().__init__(f"User name [{login or ''}] or password is invalid.")
        self.login = login


class Authenticator(Protocol):
    def authenticate(self, credentials: Credentials) -> Subject:
        """The subject these credentials prove; raises ``AuthenticationError``."""


class Operation(enum.Enum):
    READ = "read"
    """Consume or browse (SUBSCRIBE), including durable subscriptions."""
    WRITE = "write"
    """Produce (SEND)."""
    ADMIN = "admin"
    """Create the destination (it does not exist yet), or remove it."""


_VERBS = {Operation.READ: "read from", Operation.WRITE: "write to", Operation.ADMIN: "create"}


class AuthorizationError(Exception):
    """An operation the subject may not do; the text names user, operation and destination."""

    def __init__(self, subject: Subject, operation: Operation, destination: Destination) -> None:
        # ActiveMQ's AuthorizationBroker words, so clients that match on them keep working.
        verb = _VERBS[operation]
        super().__init__(
            f"User {subject.user} is not authorized to {verb}: {destination.qualified}"
        )
        self.subject = subject
        self.operation = operation
        self.destination = destination


class Authorizer(Protocol):
    def allowed(self, subject: Subject, operation: Operation, destination: Destination) -> bool:
        """Whether ``subject`` may do ``operation`` on ``destination`` (decisions may be
        cached per subject and destination: the map does not change while the broker runs)."""
