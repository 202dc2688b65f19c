"""The security plugins of `<plugins>`: authentication (simple, JAAS, JAAS certificate) and
`<authorizationPlugin>`, read into `config.security` (docs/security.md).

Security is read strictly: a valid ActiveMQ setting that FerryMQ does not run here (LDAP
authorization maps, user maps given as Spring beans, ACLs as child beans) is an error, never
a warning, because ignoring it would run a broker more open than its file says. A password is
never shown in an error: messages about `<authenticationUser>` name its `username`.
"""

from __future__ import annotations

from pathlib import Path

from ferrymq.config.errors import ConfigError
from ferrymq.config.jaas import (
    CERTIFICATE_MODULE,
    GUEST_MODULE,
    LOGIN_CONFIG_PROPERTY,
    PROPERTIES_MODULE,
    find_login_config,
    read_login_entry,
)
from ferrymq.config.security import (
    AccessConfig,
    AuthenticationConfig,
    AuthenticationUser,
    AuthorizationConfig,
    AuthorizationEntryConfig,
    DestinationKind,
    JaasAuthenticationConfig,
    JaasCertificateAuthenticationConfig,
    JaasLoginConfig,
    SimpleAuthenticationConfig,
)
from ferrymq.config.xml_document import Element, ElementReader, LoadContext

__all__ = [
    "AUTHENTICATION_PLUGINS",
    "SECURITY_PLUGINS",
    "read_authentication",
    "read_authorization",
]

AUTHENTICATION_PLUGINS = frozenset(
    {
        "simpleAuthenticationPlugin",
        "jaasAuthenticationPlugin",
        "jaasCertificateAuthenticationPlugin",
    }
)
SECURITY_PLUGINS = AUTHENTICATION_PLUGINS | {"authorizationPlugin"}
_DEFAULT_JAAS_ENTRY = "activemq-domain"
"""ActiveMQ's default `configuration` (its example files name theirs "activemq")."""
_DOCS = "see docs/security.md"


def _strict(context: LoadContext, element: Element, allowed: set[str]) -> list[Element]:
    """The children of a security element; any other is an error (see the module doc)."""
    for child in element.children:
        if child.name not in allowed:
            expected = ", ".join(f"<{name}>" for name in sorted(allowed)) or "no child elements"
            message = (
                f"<{child.name}> is not supported inside <{element.name}> (FerryMQ reads "
                f"{expected}; {_DOCS})"
            )
            raise context.error(child, message)
    return list(element.children)


def _groups(reader: ElementReader, name: str) -> frozenset[str]:
    value = reader.optional(name) or ""
    return frozenset(group.strip() for group in value.split(",") if group.strip())


def read_authentication(
    context: LoadContext, elements: list[Element]
) -> AuthenticationConfig | None:
    """The one authentication plugin of `<plugins>`, if any."""
    if not elements:
        return None
    if len(elements) > 1:
        first = elements[0]
        message = f"a broker has one authentication plugin (<{first.name}> is on line {first.line})"
        raise context.error(elements[1], message)
    element = elements[0]
    if element.name == "simpleAuthenticationPlugin":
        return _simple(context, element)
    return _jaas(context, element)


def _simple(context: LoadContext, element: Element) -> SimpleAuthenticationConfig:
    reader = context.reader(element)
    for name in ("userPasswords", "userGroups"):
        if name in element.attributes:
            message = f"{name} is not supported: list the users in <users><authenticationUser>"
            raise reader.error(message, name)
    users: list[AuthenticationUser] = []
    for wrapper in _strict(context, element, {"users"}):
        for child in _strict(context, wrapper, {"authenticationUser"}):
            users.append(_user(context, child, users))
    config = SimpleAuthenticationConfig(
        users=tuple(users),
        anonymous_access_allowed=reader.boolean("anonymousAccessAllowed", False),
        anonymous_user=reader.string("anonymousUser", "anonymous"),
        anonymous_group=reader.string("anonymousGroup", "anonymous"),
        location=reader.location(),
    )
    reader.optional("id")
    reader.finish()
    return config


def _user(
    context: LoadContext, element: Element, earlier: list[AuthenticationUser]
) -> AuthenticationUser:
    known = {"username", "password", "groups", "id"}
    for name in element.attributes:
        if name not in known:  # checked here so that the error never shows a value
            message = f"unknown attribute {name} (expected: groups, password, username)"
            raise ConfigError(context.source, element.line, "<authenticationUser>", None, message)
    reader = context.reader(element)
    username = reader.required("username")
    if "password" not in element.attributes:
        raise reader.error("the password attribute is missing", "username")
    password = reader.optional("password") or ""
    if any(user.username == username for user in earlier):
        raise reader.error(f"user {username!r} is listed twice", "username")
    user = AuthenticationUser(username, password, _groups(reader, "groups"))
    reader.optional("id")
    _strict(context, element, set())
    reader.finish()
    return user


def _jaas(
    context: LoadContext, element: Element
) -> JaasAuthenticationConfig | JaasCertificateAuthenticationConfig:
    reader = context.reader(element)
    name = reader.string("configuration", _DEFAULT_JAAS_ENTRY).strip()
    discover = reader.boolean("discoverLoginConfig", True)
    reader.optional("id")
    _strict(context, element, set())
    reader.finish()
    if not discover and LOGIN_CONFIG_PROPERTY not in context.properties:
        message = (
            f'discoverLoginConfig="false" needs -D {LOGIN_CONFIG_PROPERTY}=PATH to the '
            "login.config file"
        )
        raise reader.error(message, "discoverLoginConfig")
    path = find_login_config(context.properties).resolve()
    if not path.is_file():
        message = (
            f"no login.config at {path}: put one next to this file or give its path with "
            f"-D {LOGIN_CONFIG_PROPERTY}=PATH ({_DOCS})"
        )
        raise reader.error(message, "configuration")
    entry = read_login_entry(path, name, context.properties)
    certificate = element.name == "jaasCertificateAuthenticationPlugin"
    _check_modules(reader, entry, certificate, path)
    if certificate:
        return JaasCertificateAuthenticationConfig(name, entry, reader.location())
    return JaasAuthenticationConfig(name, entry, reader.location())


def _check_modules(
    reader: ElementReader, entry: JaasLoginConfig, certificate: bool, path: Path
) -> None:
    wanted = (
        {CERTIFICATE_MODULE, GUEST_MODULE} if certificate else {PROPERTIES_MODULE, GUEST_MODULE}
    )
    for module in entry.modules:
        if module.class_name not in wanted:
            plugin = (
                "<jaasAuthenticationPlugin>"
                if certificate
                else ("<jaasCertificateAuthenticationPlugin>")
            )
            message = (
                f"login.config entry {entry.name!r} ({path}) uses {module.class_name}, "
                f"which belongs with {plugin}"
            )
            raise reader.error(message, "configuration")
    if not entry.modules:
        raise reader.error(
            f"login.config entry {entry.name!r} has no login module", "configuration"
        )


def read_authorization(context: LoadContext, element: Element) -> AuthorizationConfig:
    """`<authorizationPlugin><map><authorizationMap>`."""
    plugin = context.reader(element)
    plugin.optional("id")
    if "map" in element.attributes:
        raise plugin.error(f"a map given as a bean reference is not supported ({_DOCS})", "map")
    plugin.finish()
    (wrapper,) = _one(context, element, {"map"})
    (map_element,) = _one(context, wrapper, {"authorizationMap"})
    reader = context.reader(map_element)
    for attribute in ("defaultEntry", "tempDestinationAuthorizationEntry"):
        if attribute in map_element.attributes:
            raise reader.error(f"give {attribute} as a child element ({_DOCS})", attribute)
    reader.optional("groupClass")  # FerryMQ compares groups by name
    reader.optional("id")
    entries: list[AuthorizationEntryConfig] = []
    default: AccessConfig | None = None
    temp: AccessConfig | None = None
    allowed = {
        "authorizationEntries",
        "entries",
        "defaultEntry",
        "tempDestinationAuthorizationEntry",
    }
    for child in _strict(context, map_element, allowed):
        if child.name in ("authorizationEntries", "entries"):
            for item in _strict(context, child, {"authorizationEntry"}):
                entries.append(_entry(context, item))
        elif child.name == "defaultEntry":
            (inner,) = _one(context, child, {"authorizationEntry"})
            default = _access(context, inner)
        else:
            (inner,) = _one(context, child, {"tempDestinationAuthorizationEntry"})
            temp = _access(context, inner)
    reader.finish()
    return AuthorizationConfig(tuple(entries), default, temp, reader.location())


def _one(context: LoadContext, element: Element, allowed: set[str]) -> list[Element]:
    children = _strict(context, element, allowed)
    if len(children) != 1:
        names = " or ".join(f"<{name}>" for name in sorted(allowed))
        raise context.error(element, f"expected exactly one {names} inside")
    return children


_KINDS: tuple[tuple[str, DestinationKind], ...] = (
    ("queue", "queue"),
    ("topic", "topic"),
    ("tempQueue", "temp-queue"),
    ("tempTopic", "temp-topic"),
)


def _entry(context: LoadContext, element: Element) -> AuthorizationEntryConfig:
    reader = context.reader(element)
    given = [(attribute, kind) for attribute, kind in _KINDS if attribute in element.attributes]
    if len(given) != 1:
        message = 'give exactly one of queue="pattern", topic="pattern", tempQueue or tempTopic'
        raise reader.error(message)
    attribute, kind = given[0]
    if kind in ("queue", "topic"):
        pattern = reader.required(attribute).strip()
    else:  # ActiveMQ: any value names every temporary destination of that kind
        reader.optional(attribute)
        pattern = ">"
    access = _access(context, element, entry=reader)
    return AuthorizationEntryConfig(
        kind, pattern, access.read, access.write, access.admin, access.location
    )


def _access(
    context: LoadContext, element: Element, entry: ElementReader | None = None
) -> AccessConfig:
    reader = entry or context.reader(element)
    if "destination" in element.attributes:
        raise reader.error('use queue="..." or topic="..."', "destination")
    access = AccessConfig(
        read=_groups(reader, "read"),
        write=_groups(reader, "write"),
        admin=_groups(reader, "admin"),
        location=reader.location(),
    )
    reader.optional("groupClass")
    reader.optional("id")
    if entry is None:
        for attribute in ("queue", "topic", "tempQueue", "tempTopic"):
            reader.optional(attribute)  # a default or temporary entry names no destination
    _strict(context, element, set())
    reader.finish()
    return access
