"""The broker's authenticator and authorizer, made from its configuration at start.

`security_for` is what the broker service calls once: it reads the files the configuration
names (a login.config entry's users and groups files) and returns the two decision objects.
None for either means the file configures no such plugin, and the broker behaves as before
security existed: any login is accepted, everything is allowed.
"""

from __future__ import annotations

from pathlib import Path

from ferrymq.config.errors import ConfigError
from ferrymq.config.model import BrokerConfig
from ferrymq.config.security import SimpleAuthenticationConfig
from ferrymq.security.api import Authenticator, Authorizer
from ferrymq.security.authorization import AuthorizationMap
from ferrymq.security.jaas import JaasAuthenticator
from ferrymq.security.passwords import PasswordFormatError
from ferrymq.security.simple import SimpleAuthenticator

__all__ = ["security_for"]


def security_for(
    config: BrokerConfig, base_dir: Path | None = None
) -> tuple[Authenticator | None, Authorizer | None]:
    """Raises `ConfigError` (file and line) when a file the configuration names is unusable.
    `base_dir` is unused: every path in the configuration is already resolved (a
    login.config's files against its own folder); it is accepted for callers that pass it."""
    del base_dir
    security = config.security
    if security is None:
        return None, None
    authenticator: Authenticator | None = None
    authentication = security.authentication
    if isinstance(authentication, SimpleAuthenticationConfig):
        try:
            authenticator = SimpleAuthenticator(authentication)
        except PasswordFormatError as error:
            location = authentication.location
            source = location.source if location is not None else config.source or "config"
            line = location.line if location is not None else None
            raise ConfigError(
                source, line, "<simpleAuthenticationPlugin>", None, str(error)
            ) from None
    elif authentication is not None:
        authenticator = JaasAuthenticator(authentication.login)
    authorizer = (
        None if security.authorization is None else AuthorizationMap(security.authorization)
    )
    return authenticator, authorizer
