"""login.config: Java's JAAS configuration file, as ActiveMQ's JAAS plugins read it.

    activemq {
        org.apache.activemq.jaas.PropertiesLoginModule required
            org.apache.activemq.jaas.properties.user="users.properties"
            org.apache.activemq.jaas.properties.group="groups.properties"
            reload=true;
    };

Entries hold login modules, each with a flag (`required`, `requisite`, `sufficient`,
`optional`) and options; `//` and `/* */` comments; `${name}` in a value is replaced from the
broker's properties (-D), as Java expands system properties there. Where the file is:
`java.security.auth.login.config` (-D), else login.config in `activemq.conf` (the folder of
activemq.xml unless -D says otherwise), as ActiveMQ's start script and classpath arrange.
Only the entry a plugin names is checked for its modules: FerryMQ runs ActiveMQ's properties,
guest and text-file certificate modules; LDAP and Kerberos are refused (docs/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Literal, cast

from ferrymq.config.errors import ConfigError, Location
from ferrymq.config.security import JaasLoginConfig, LoginModuleConfig

__all__ = [
    "CERTIFICATE_MODULE",
    "GUEST_MODULE",
    "LOGIN_CONFIG_PROPERTY",
    "PROPERTIES_MODULE",
    "find_login_config",
    "read_artemis_login_entry",
    "read_login_entry",
]

LOGIN_CONFIG_PROPERTY = "java.security.auth.login.config"
PROPERTIES_MODULE = "org.apache.activemq.jaas.PropertiesLoginModule"
GUEST_MODULE = "org.apache.activemq.jaas.GuestLoginModule"
CERTIFICATE_MODULE = "org.apache.activemq.jaas.TextFileCertificateLoginModule"
_SUPPORTED = (PROPERTIES_MODULE, GUEST_MODULE, CERTIFICATE_MODULE)
_REFUSED = re.compile(r".*(LDAPLoginModule|Krb5LoginModule|Kerberos\w*LoginModule)")
_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|[{};=]|[^\s{};="]+', re.DOTALL)
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")

_Token = tuple[str, int, bool]
"""(text, line, quoted)."""


def find_login_config(properties: Mapping[str, str]) -> Path:
    """Where ActiveMQ would find login.config for these broker properties."""
    explicit = properties.get(LOGIN_CONFIG_PROPERTY)
    if explicit:
        return Path(explicit.removeprefix("file:"))
    return Path(properties.get("activemq.conf", ".")) / "login.config"


def read_login_entry(path: Path, name: str, properties: Mapping[str, str]) -> JaasLoginConfig:
    """The entry `name` of the login.config at `path`, its modules checked."""
    entry = _read_entry(path, name, properties)
    for module in entry.modules:
        _check_module(module, str(path))
    return entry


def _read_entry(path: Path, name: str, properties: Mapping[str, str]) -> JaasLoginConfig:
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(source, None, "", None, f"cannot read: {error.strerror}") from None
    entries = _parse(text, source, properties)
    if name not in entries:
        known = ", ".join(sorted(entries)) or "none"
        message = f"no entry named {name!r} in this login.config (it has: {known})"
        raise ConfigError(source, None, "", None, message)
    return entries[name]


_ARTEMIS_PACKAGE = "org.apache.activemq.artemis.spi.core.security.jaas."
_ARTEMIS_OPTIONS = {
    "org.apache.activemq.jaas.properties.role": "org.apache.activemq.jaas.properties.group",
    "org.apache.activemq.jaas.guest.role": "org.apache.activemq.jaas.guest.group",
    "org.apache.activemq.jaas.textfiledn.role": "org.apache.activemq.jaas.textfiledn.group",
}
"""Artemis's login modules are ActiveMQ's under another package, with `role` for `group`."""


def read_artemis_login_entry(
    path: Path, name: str, properties: Mapping[str, str]
) -> JaasLoginConfig:
    """The entry `name` of an ActiveMQ Artemis login.config, read as its ActiveMQ twin (the
    same modules and files; `...properties.role` is ActiveMQ's `...properties.group`)."""
    entry = _read_entry(path, name, properties)
    modules = tuple(
        replace(
            module,
            class_name=_activemq_class(module.class_name),
            options=tuple((_ARTEMIS_OPTIONS.get(k, k), v) for k, v in module.options),
        )
        for module in entry.modules
    )
    for module in modules:
        _check_module(module, str(path))
    return replace(entry, modules=modules)


def _activemq_class(class_name: str) -> str:
    if class_name.startswith(_ARTEMIS_PACKAGE):
        return "org.apache.activemq.jaas." + class_name.removeprefix(_ARTEMIS_PACKAGE)
    return class_name


def _check_module(module: LoginModuleConfig, source: str) -> None:
    line = module.location.line if module.location is not None else None
    if module.class_name in _SUPPORTED:
        return
    if _REFUSED.fullmatch(module.class_name):
        message = (
            f"{module.class_name} is not supported: FerryMQ has no LDAP or Kerberos login; "
            "use PropertiesLoginModule or a certificate login (see docs/security.md)"
        )
    else:
        supported = ", ".join(_SUPPORTED)
        message = f"unknown login module {module.class_name} (FerryMQ runs: {supported})"
    raise ConfigError(source, line, "", None, message)


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    line = 1
    for match in _TOKEN.finditer(text):
        token = match.group()
        if not token.isspace() and not token.startswith(("//", "/*")):
            quoted = token.startswith('"')
            tokens.append((token[1:-1] if quoted else token, line, quoted))
        line += token.count("\n")
    return tokens


class _Parser:
    def __init__(self, text: str, source: str, properties: Mapping[str, str]) -> None:
        self.tokens = _tokens(text)
        self.index = 0
        self.source = source
        self.properties = properties

    def error(self, line: int | None, message: str) -> ConfigError:
        return ConfigError(self.source, line, "", None, message)

    def peek(self) -> _Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, expected: str) -> _Token:
        token = self.peek()
        if token is None:
            raise self.error(None, f"the file ends where {expected} was expected")
        self.index += 1
        return token

    def expect(self, symbol: str) -> None:
        text, line, quoted = self.take(f"'{symbol}'")
        if text != symbol or quoted:
            raise self.error(line, f"expected '{symbol}' but found {text!r}")

    def entry(self, path: Path) -> JaasLoginConfig:
        name, line, _ = self.take("an entry name")
        self.expect("{")
        modules: list[LoginModuleConfig] = []
        while (token := self.peek()) is not None and token[0] != "}":
            modules.append(self.module())
        self.expect("}")
        self.expect(";")
        location = Location(self.source, line)
        return JaasLoginConfig(name, tuple(modules), path, location)

    def module(self) -> LoginModuleConfig:
        class_name, line, _ = self.take("a login module class")
        flag, flag_line, _ = self.take("a flag")
        if flag.lower() not in _FLAGS:
            message = f"expected a flag ({', '.join(_FLAGS)}) after {class_name}, found {flag!r}"
            raise self.error(flag_line, message)
        options: list[tuple[str, str]] = []
        while (token := self.peek()) is not None and token[0] != ";":
            key, key_line, _ = self.take("an option")
            self.expect("=")
            value, _, _ = self.take(f"the value of {key}")
            options.append((key, self.expand(value, key_line)))
        self.expect(";")
        chosen = cast(Literal["required", "requisite", "sufficient", "optional"], flag.lower())
        location = Location(self.source, line)
        return LoginModuleConfig(class_name, chosen, tuple(options), location)

    def expand(self, value: str, line: int) -> str:
        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.properties:
                raise self.error(line, f"unknown property ${{{name}}} (give it with -D)")
            return self.properties[name]

        return _PLACEHOLDER.sub(replace, value)


def _parse(text: str, source: str, properties: Mapping[str, str]) -> dict[str, JaasLoginConfig]:
    parser = _Parser(text, source, properties)
    entries: dict[str, JaasLoginConfig] = {}
    path = Path(source)
    while parser.peek() is not None:
        entry = parser.entry(path)
        entries[entry.name] = entry
    return entries
