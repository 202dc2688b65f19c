"""The typed configuration of authentication and authorization (`<plugins>` of activemq.xml).

ActiveMQ's vocabulary, read by `xml_security`: `<simpleAuthenticationPlugin>` (users in the
file), `<jaasAuthenticationPlugin>` (users in the files a login.config names),
`<jaasCertificateAuthenticationPlugin>` (TLS client certificates mapped to users) and
`<authorizationPlugin>` (a map of destination patterns to the groups that may read, write and
administer them). The decisions live in `ferrymq.security`; `security.build.security_for`
turns this slice into them. Passwords are never in a `repr`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ferrymq.config.errors import Location

__all__ = [
    "AccessConfig",
    "AuthenticationConfig",
    "AuthenticationUser",
    "AuthorizationConfig",
    "AuthorizationEntryConfig",
    "DestinationKind",
    "JaasAuthenticationConfig",
    "JaasCertificateAuthenticationConfig",
    "JaasLoginConfig",
    "LoginModuleConfig",
    "SecurityConfig",
    "SimpleAuthenticationConfig",
]

DestinationKind = Literal["queue", "topic", "temp-queue", "temp-topic"]
"""The kinds of `ferrymq.core.destination.DestinationType`, spelled as its values."""


@dataclass(frozen=True)
class AuthenticationUser:
    """`<authenticationUser username password groups>`."""

    username: str
    password: str = field(repr=False)
    """Plaintext, or a hash in the format of docs/security.md ("Hashed passwords")."""
    groups: frozenset[str] = frozenset()
    """`groups`: a comma-separated list in the file."""


@dataclass(frozen=True)
class SimpleAuthenticationConfig:
    """`<simpleAuthenticationPlugin>`: users and passwords written in activemq.xml."""

    users: tuple[AuthenticationUser, ...] = ()
    anonymous_access_allowed: bool = False
    """`anonymousAccessAllowed`: a connection that gives neither user name nor password is let
    in as `anonymous_user`. Default false."""
    anonymous_user: str = "anonymous"
    """`anonymousUser`. Default "anonymous"."""
    anonymous_group: str = "anonymous"
    """`anonymousGroup`. Default "anonymous"."""
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class LoginModuleConfig:
    """One login module of a login.config entry: `Class flag option=value ...;`."""

    class_name: str
    """`org.apache.activemq.jaas.PropertiesLoginModule`, `...GuestLoginModule` or
    `...TextFileCertificateLoginModule`."""
    flag: Literal["required", "requisite", "sufficient", "optional"]
    options: tuple[tuple[str, str], ...] = ()
    location: Location | None = field(default=None, compare=False)

    def option(self, name: str, default: str | None = None) -> str | None:
        return next((value for key, value in self.options if key == name), default)


@dataclass(frozen=True)
class JaasLoginConfig:
    """One named entry of a login.config file (Java's JAAS `Configuration` syntax)."""

    name: str
    modules: tuple[LoginModuleConfig, ...]
    path: Path
    """The login.config file: relative file names in its options are read from its folder,
    as ActiveMQ's PropertiesLoader does with `java.security.auth.login.config`."""
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class JaasAuthenticationConfig:
    """`<jaasAuthenticationPlugin configuration>`: users from a login.config entry."""

    configuration: str
    """`configuration`: the login.config entry's name. Default "activemq-domain" (ActiveMQ's
    own example files use "activemq")."""
    login: JaasLoginConfig
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class JaasCertificateAuthenticationConfig:
    """`<jaasCertificateAuthenticationPlugin configuration>`: the TLS client certificate's
    subject DN is looked up by the entry's `TextFileCertificateLoginModule`."""

    configuration: str
    login: JaasLoginConfig
    location: Location | None = field(default=None, compare=False)


AuthenticationConfig = (
    SimpleAuthenticationConfig | JaasAuthenticationConfig | JaasCertificateAuthenticationConfig
)


@dataclass(frozen=True)
class AuthorizationEntryConfig:
    """`<authorizationEntry queue|topic="pattern" read write admin>`: the groups that may
    consume, produce and create or remove destinations the pattern matches (wildcards `.`,
    `*`, `>`). `tempQueue="true"` / `tempTopic="true"` name every temporary destination."""

    kind: DestinationKind
    pattern: str
    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    admin: frozenset[str] = frozenset()
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AccessConfig:
    """The groups of an entry that names no destination: `<defaultEntry>`'s, and
    `<tempDestinationAuthorizationEntry read write admin>`'s."""

    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    admin: frozenset[str] = frozenset()
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AuthorizationConfig:
    """`<authorizationPlugin><map><authorizationMap>`."""

    entries: tuple[AuthorizationEntryConfig, ...] = ()
    """`<authorizationEntries>`, in file order."""
    default_entry: AccessConfig | None = None
    """`<defaultEntry>`: its groups are added to those of every (non-temporary) destination."""
    temp_destination: AccessConfig | None = None
    """`<tempDestinationAuthorizationEntry>`: who may use temporary destinations. None:
    anybody may (as ActiveMQ)."""
    location: Location | None = field(default=None, compare=False)
    most_specific: bool = False
    """Artemis's `<security-settings>` (docs/artemis-config.md): only the last entry of
    `entries` that covers a destination counts (they come least specific first), rather than
    every matching entry joined as in ActiveMQ."""


@dataclass(frozen=True)
class SecurityConfig:
    """Everything `<plugins>` says about security. None in a part: not configured (anyone
    connects; anything is allowed)."""

    authentication: AuthenticationConfig | None = None
    authorization: AuthorizationConfig | None = None
