"""Spring's property placeholder configurers: the properties files behind `${...}`.

ActiveMQ's activemq.xml defines its placeholders with a bean such as

    <bean class="org.springframework.beans.factory.config.PropertyPlaceholderConfigurer">
        <property name="locations"><value>file:${activemq.conf}/credentials.properties</value>
        </property>
    </bean>

FerryMQ reads the files such beans list (`location` or `locations`; `file:` paths, and
`classpath:` names looked up in `activemq.conf`, which is on ActiveMQ's classpath). As with
Spring's default (system properties mode "fallback"), a value from a file wins over the same
name given with -D, and -D fills in what the files lack. A missing file is reported and its
placeholders stay undefined (a placeholder then used is an error naming it). Jasypt's
`EncryptablePropertyPlaceholderConfigurer` decrypts `ENC(...)` values with the password its
encryptor bean names (`password`, or `passwordEnvName` / `passwordSysPropertyName` of its
`config` bean), as ActiveMQ's activemq-security.xml example sets it up.
"""

from __future__ import annotations

import os
from pathlib import Path

from ferrymq.config import jasypt
from ferrymq.config.errors import ConfigError
from ferrymq.config.java_properties import PropertiesFileError, read_properties
from ferrymq.config.model import IgnoredElement
from ferrymq.config.xml_document import Element, LoadContext

__all__ = ["PLACEHOLDER_CONFIGURERS", "read_placeholder_files"]

_ENCRYPTABLE = frozenset(
    {
        "org.jasypt.spring4.properties.EncryptablePropertyPlaceholderConfigurer",
        "org.jasypt.spring31.properties.EncryptablePropertyPlaceholderConfigurer",
        "org.jasypt.spring3.properties.EncryptablePropertyPlaceholderConfigurer",
    }
)
PLACEHOLDER_CONFIGURERS = frozenset(
    {
        "org.springframework.beans.factory.config.PropertyPlaceholderConfigurer",
        "org.springframework.context.support.PropertySourcesPlaceholderConfigurer",
        *_ENCRYPTABLE,
    }
)
"""Bean classes whose files FerryMQ reads; they are not reported as ignored."""
_INLINE_REASON = (
    'placeholder values given by a "properties" bean are not read: give them with '
    "ferrymq broker -D name=value (the files in location/locations are read)"
)


def read_placeholder_files(
    context: LoadContext, beans: list[Element], ignored: list[IgnoredElement]
) -> None:
    """Add the properties of every placeholder configurer's files to `context.properties`."""
    found: dict[str, str] = {}
    for bean in beans:
        class_name = bean.attributes.get("class", "")
        if class_name not in PLACEHOLDER_CONFIGURERS:
            continue
        if any(p.attributes.get("name") == "properties" for p in bean.children):
            where = context.location(bean)
            ignored.append(IgnoredElement(where, bean.describe("class"), _INLINE_REASON))
        password = _encryptor_password(context, bean) if class_name in _ENCRYPTABLE else None
        for location in _locations(context, bean):
            path = _path(context, bean, location)
            if not path.is_file():
                reason = f"{path} does not exist: the placeholders it would define are undefined"
                ignored.append(
                    IgnoredElement(context.location(bean), bean.describe("class"), reason)
                )
                continue
            found.update(_read(context, bean, path, password))
    if found:
        context.properties = {**context.properties, **found}


def _locations(context: LoadContext, bean: Element) -> list[str]:
    values: list[str] = []
    for prop in bean.children:
        if prop.name != "property" or prop.attributes.get("name") not in ("location", "locations"):
            continue
        if "value" in prop.attributes:
            values.append(context.resolve(prop, "value", prop.attributes["value"]))
        for child in prop.children:
            items = child.children if child.name == "list" else [child]
            for item in items:
                if item.name == "value":
                    values.append(context.resolve(item, None, item.text.strip()))
    return [v.strip() for text in values for v in text.split(",") if v.strip()]


def _path(context: LoadContext, bean: Element, location: str) -> Path:
    if location.startswith("classpath:"):
        conf = Path(context.properties.get("activemq.conf", "."))
        return conf / location.removeprefix("classpath:").lstrip("/")
    if location.startswith("file:"):
        return Path(location.removeprefix("file:"))
    if "://" in location:
        raise context.error(bean, f"only file: and classpath: locations are read ({location})")
    return Path(location)


def _read(
    context: LoadContext, bean: Element, path: Path, password: str | ConfigError | None
) -> dict[str, str]:
    try:
        lines = read_properties(path)
    except PropertiesFileError as error:
        raise context.error(bean, str(error)) from None
    values: dict[str, str] = {}
    for entry in lines:
        value = entry.value
        if password is not None and jasypt.is_encrypted(value):
            if isinstance(password, ConfigError):
                raise password
            try:
                value = jasypt.decrypt(value, password)
            except jasypt.JasyptError as error:
                raise context.error(bean, f"{path}:{entry.line}: {entry.key}: {error}") from None
        values[entry.key] = value
    return values


def _bean(context: LoadContext, element: Element, *names: str) -> Element | None:
    """The bean a `<property name>` or `<constructor-arg>` of `element` refers to."""
    for child in element.children:
        if child.name not in ("property", "constructor-arg"):
            continue
        if child.name == "property" and child.attributes.get("name") not in names:
            continue
        ref = child.attributes.get("ref")
        if ref is None:
            inner = [c for c in child.children if c.name in ("bean", "ref")]
            if inner and inner[0].name == "bean":
                return inner[0]
            ref = inner[0].attributes.get("bean") if inner else None
        if ref is not None:
            context.referenced_beans.add(ref)
            return context.beans.get(ref)
    return None


def _value(context: LoadContext, element: Element, name: str) -> str | None:
    for child in element.children:
        named = child.name == "property" and child.attributes.get("name") == name
        if named and "value" in child.attributes:
            return context.resolve(child, "value", child.attributes["value"])
    return None


def _encryptor_password(context: LoadContext, bean: Element) -> str | ConfigError | None:
    """The Jasypt password this configurer's encryptor uses, None when none is set, or the
    error to raise once an ENC(...) value needs it."""
    encryptor = _bean(context, bean, "encryptor", "stringEncryptor")
    if encryptor is None:
        return None
    holders = [encryptor]
    config = _bean(context, encryptor, "config")
    if config is not None:
        holders.append(config)
    for holder in holders:
        algorithm = _value(context, holder, "algorithm")
        if algorithm is not None and algorithm != jasypt.ALGORITHM:
            message = (
                f"Jasypt algorithm {algorithm} is not supported (FerryMQ reads {jasypt.ALGORITHM})"
            )
            raise context.error(holder, message, "algorithm")
    for holder in reversed(holders):
        password = _value(context, holder, "password")
        if password is not None:
            return password
        env = _value(context, holder, "passwordEnvName")
        if env is not None:
            return _from_environment(context, holder, env)
        prop = _value(context, holder, "passwordSysPropertyName")
        if prop is not None and prop in context.properties:
            return context.properties[prop]
    return None


def _from_environment(context: LoadContext, holder: Element, name: str) -> str | ConfigError:
    value = os.environ.get(name)
    if not value:
        message = (
            f"the environment variable {name} is not set: it holds the password that decrypts "
            "the ENC(...) values of the properties files (ActiveMQ's encrypted passwords)"
        )
        return context.error(holder, message)
    return value
