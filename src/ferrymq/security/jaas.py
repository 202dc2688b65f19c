"""JAAS login as ActiveMQ's `jaasAuthenticationPlugin` and `jaasCertificateAuthenticationPlugin`
run it: the modules of one login.config entry, stacked by their flags.

Modules (options as in ActiveMQ; relative file names are read from the login.config's folder):

* `PropertiesLoginModule`: `org.apache.activemq.jaas.properties.user` (users.properties,
  `user=password`) and `...properties.group` (groups.properties, `group=user1,user2`);
  `reload=true` rereads a changed file (`properties_files`); `decrypt=true` reads Jasypt
  `ENC(...)` passwords with `ACTIVEMQ_ENCRYPTION_PASSWORD`. Passwords may be hashed
  (`passwords`).
* `TextFileCertificateLoginModule`: `org.apache.activemq.jaas.textfiledn.user` maps a user to
  its certificate's subject DN (`user=CN=client, OU=..., C=...`, compared by `dn`), or to a
  `/regular expression/` the DN must match; `...textfiledn.group` as above.
* `GuestLoginModule`: everybody is `org.apache.activemq.jaas.guest.user` (default "guest") in
  `...guest.group` ("guests"); with `credentialsInvalidate=true`, only a client that gave no
  password.

Flags as in JAAS: every `required` and `requisite` module must succeed (a failed `requisite`
ends the login at once); a `sufficient` one that succeeds, with no required failure before it,
ends the login successfully; when there is no required module, one success is enough. The
subject's groups are those of every module that succeeded; its user, the first one's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ferrymq.config import jasypt
from ferrymq.config.errors import ConfigError
from ferrymq.config.jaas import CERTIFICATE_MODULE, GUEST_MODULE, PROPERTIES_MODULE
from ferrymq.config.security import JaasLoginConfig, LoginModuleConfig
from ferrymq.security.api import AuthenticationError, Credentials, Subject
from ferrymq.security.dn import java_style_dn, normalize_dn
from ferrymq.security.passwords import PasswordVerifier, dummy_for
from ferrymq.security.properties_files import PropertiesFile, PropertiesFileError

__all__ = ["JaasAuthenticator"]

_Login = Callable[[Credentials], tuple[str, frozenset[str]] | None]


def _groups_of(groups: PropertiesFile | None, user: str) -> frozenset[str]:
    if groups is None:
        return frozenset()
    return frozenset(
        group
        for group, members in groups.values().items()
        if user in (member.strip() for member in members.split(","))
    )


@dataclass
class _PropertiesModule:
    users: PropertiesFile
    groups: PropertiesFile | None
    verifier: PasswordVerifier
    _dummy_of: object = None
    _dummy_value: str = "\0"

    def login(self, credentials: Credentials) -> tuple[str, frozenset[str]] | None:
        user = credentials.login
        if user is None:
            return None
        stored = self.users.values().get(user)
        if stored is None:
            self.verifier.verify(self._dummy(), credentials.passcode or "")  # same work
            return None
        if not self.verifier.verify(stored, credentials.passcode or ""):
            return None
        return user, _groups_of(self.groups, user)

    def _dummy(self) -> str:
        """What an unknown user's password is checked against (as costly as a known one's),
        worked out again when the users file was reread."""
        values = self.users.values()
        if self._dummy_of is not values:
            self._dummy_of, self._dummy_value = values, dummy_for(values.values())
        return self._dummy_value


@dataclass
class _CertificateModule:
    users: PropertiesFile
    groups: PropertiesFile | None

    def login(self, credentials: Credentials) -> tuple[str, frozenset[str]] | None:
        subject = credentials.certificate_subject
        if not subject:
            return None
        wanted = normalize_dn(subject)
        java_style = java_style_dn(subject)
        patterns = self.users.patterns()
        for user, value in self.users.values().items():
            pattern = patterns.get(user)
            if pattern is not None:
                if pattern.fullmatch(subject) or pattern.fullmatch(java_style):
                    return user, _groups_of(self.groups, user)
            elif normalize_dn(value) == wanted:
                return user, _groups_of(self.groups, user)
        return None


@dataclass
class _GuestModule:
    user: str
    group: str
    credentials_invalidate: bool

    def login(self, credentials: Credentials) -> tuple[str, frozenset[str]] | None:
        if self.credentials_invalidate and credentials.passcode is not None:
            return None
        return self.user, frozenset({self.group})


def _file(
    module: LoginModuleConfig,
    base: Path,
    option: str,
    *,
    passwords: bool = False,
    dn_patterns: bool = False,
) -> PropertiesFile | None:
    name = module.option(option)
    if name is None:
        return None
    decrypt = None
    if passwords and (module.option("decrypt") or "").lower() == "true":
        decrypt = os.environ.get(jasypt.DEFAULT_PASSWORD_ENV)
        if not decrypt:
            raise _error(module, f"decrypt=true needs {jasypt.DEFAULT_PASSWORD_ENV} to be set")
    reload = (module.option("reload") or "").lower() == "true"
    path = base / (module.option("baseDir") or "") / name
    try:
        return PropertiesFile(
            path,
            reload=reload,
            passwords=passwords,
            decrypt_password=decrypt,
            dn_patterns=dn_patterns,
        )
    except PropertiesFileError as error:
        raise _error(module, str(error)) from None


def _error(module: LoginModuleConfig, message: str) -> ConfigError:
    location = module.location
    source = location.source if location is not None else "login.config"
    line = location.line if location is not None else None
    return ConfigError(source, line, "", None, f"{module.class_name}: {message}")


def _required_file(
    module: LoginModuleConfig, base: Path, option: str, **kw: bool
) -> PropertiesFile:
    found = _file(module, base, option, **kw)
    if found is None:
        raise _error(module, f"the option {option} (the file to read) is missing")
    return found


def _module(module: LoginModuleConfig, base: Path, verifier: PasswordVerifier) -> _Login:
    if module.class_name == PROPERTIES_MODULE:
        users = _required_file(
            module, base, "org.apache.activemq.jaas.properties.user", passwords=True
        )
        groups = _file(module, base, "org.apache.activemq.jaas.properties.group")
        return _PropertiesModule(users, groups, verifier).login
    if module.class_name == CERTIFICATE_MODULE:
        users = _required_file(
            module, base, "org.apache.activemq.jaas.textfiledn.user", dn_patterns=True
        )
        groups = _file(module, base, "org.apache.activemq.jaas.textfiledn.group")
        return _CertificateModule(users, groups).login
    if module.class_name == GUEST_MODULE:
        return _GuestModule(
            module.option("org.apache.activemq.jaas.guest.user") or "guest",
            module.option("org.apache.activemq.jaas.guest.group") or "guests",
            (module.option("credentialsInvalidate") or "").lower() == "true",
        ).login
    raise _error(module, "is not a login module FerryMQ runs")  # config.jaas refused it


class JaasAuthenticator:
    """An `Authenticator` for one login.config entry; its files are read when it is built."""

    def __init__(self, entry: JaasLoginConfig) -> None:
        verifier = PasswordVerifier()
        base = entry.path.parent
        self._modules = [(m.flag, _module(m, base, verifier)) for m in entry.modules]

    def authenticate(self, credentials: Credentials) -> Subject:
        user: str | None = None
        groups: set[str] = set()
        failed_required = False
        succeeded = False
        for flag, login in self._modules:
            result = login(credentials)
            if result is None:
                if flag == "requisite":
                    raise AuthenticationError(credentials.login)
                failed_required = failed_required or flag == "required"
                continue
            succeeded = True
            user = user or result[0]
            groups.update(result[1])
            if flag == "sufficient" and not failed_required:
                break
        if failed_required or not succeeded or user is None:
            raise AuthenticationError(credentials.login)
        return Subject(user, frozenset(groups))
