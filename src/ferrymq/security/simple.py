"""`<simpleAuthenticationPlugin>`: users and passwords from activemq.xml itself.

As ActiveMQ's SimpleAuthenticationBroker: with `anonymousAccessAllowed`, a client that gives
neither a user name nor a password is `anonymousUser` in `anonymousGroup`; anybody else needs
a listed user and its password (plaintext or hashed, `passwords`). The error never says which
of the two was wrong, and an unknown user costs the same comparison as a wrong password.
"""

from __future__ import annotations

from types import MappingProxyType

from ferrymq.config.security import SimpleAuthenticationConfig
from ferrymq.security.api import AuthenticationError, Credentials, Subject
from ferrymq.security.passwords import PasswordVerifier, check_stored, dummy_for

__all__ = ["SimpleAuthenticator"]


class SimpleAuthenticator:
    def __init__(self, config: SimpleAuthenticationConfig) -> None:
        for user in config.users:
            check_stored(user.password)  # xml_security's caller reports it with the line
        self._passwords = MappingProxyType({u.username: u.password for u in config.users})
        self._subjects = MappingProxyType(
            {u.username: Subject(u.username, u.groups) for u in config.users}
        )
        self._anonymous = (
            Subject(config.anonymous_user, frozenset({config.anonymous_group}))
            if config.anonymous_access_allowed
            else None
        )
        self._verifier = PasswordVerifier()
        self._dummy = dummy_for(self._passwords.values())

    def authenticate(self, credentials: Credentials) -> Subject:
        login, passcode = credentials.login, credentials.passcode
        if self._anonymous is not None and login is None and passcode is None:
            return self._anonymous
        stored = self._passwords.get(login) if login is not None else None
        if login is None or stored is None:
            self._verifier.verify(self._dummy, passcode or "")
            raise AuthenticationError(login)
        if not self._verifier.verify(stored, passcode or ""):
            raise AuthenticationError(login)
        return self._subjects[login]
