"""broker.xml's security: Artemis's JAAS users and roles, and `<security-settings>`.

Artemis keeps its users outside broker.xml: its etc/ folder has login.config (the JAAS entry
that bootstrap.xml's `<jaas-security domain>` names, "activemq" by default) whose
`PropertiesLoginModule` reads artemis-users.properties (`user=password`) and
artemis-roles.properties (`role=user1,user2`). These are ActiveMQ's login modules under another
package (`config.jaas.read_artemis_login_entry`), so they become the `JaasAuthenticationConfig`
an activemq.xml with `<jaasAuthenticationPlugin>` would give; without a login.config, the two
properties files next to broker.xml are read as Artemis's default entry reads them.

A `<security-setting match>` becomes a queue and a topic entry of FerryMQ's authorization map
(`send` -> write, `consume` -> read, creating an address -> admin; the table is in
docs/artemis-config.md). Artemis uses only the most specific setting that matches an address,
never merging it with less specific ones; FerryMQ's map joins every matching entry unless
`AuthorizationConfig.most_specific`, under which the last covering entry wins: the entries are
therefore given least specific first, in Artemis's order (`_precedence`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from ferrymq.config.artemis_addresses import _translate
from ferrymq.config.artemis_reading import children, finish, unknown
from ferrymq.config.errors import ConfigError
from ferrymq.config.jaas import (
    PROPERTIES_MODULE,
    find_login_config,
    read_artemis_login_entry,
)
from ferrymq.config.java_properties import PropertiesFileError, read_properties
from ferrymq.config.security import (
    AccessConfig,
    AuthorizationConfig,
    AuthorizationEntryConfig,
    JaasAuthenticationConfig,
    JaasLoginConfig,
    LoginModuleConfig,
    SecurityConfig,
)
from ferrymq.config.xml_document import Element, LoadContext, read_document

__all__ = ["PERMISSIONS", "ROLES_FILE", "USERS_FILE", "read_security"]

USERS_FILE = "artemis-users.properties"
ROLES_FILE = "artemis-roles.properties"
_DEFAULT_DOMAIN = "activemq"
_USER_OPTION = "org.apache.activemq.jaas.properties.user"
_GROUP_OPTION = "org.apache.activemq.jaas.properties.group"
_DOCS = "docs/artemis-config.md"

PERMISSIONS: Mapping[str, str] = MappingProxyType(
    {
        "send": "write",
        "consume": "read",
        "browse": "read (with consume)",
        "createAddress": "admin",
        "createDurableQueue": "admin (of a queue, with createAddress)",
        "createNonDurableQueue": "read of a topic (with consume); temporary destinations",
        "deleteDurableQueue": "nothing: no FerryMQ client deletes a destination",
        "deleteNonDurableQueue": "nothing: no FerryMQ client deletes a destination",
        "deleteAddress": "nothing: no FerryMQ client deletes a destination",
        "manage": "nothing: the admin API's admin group (ferrymq broker --admin-group)",
    }
)
"""Each Artemis permission and what it grants in FerryMQ (docs/artemis-config.md)."""
_REFUSED = MappingProxyType(
    {
        "security-setting-plugin": "LDAP security settings; list <security-setting>s",
        "role-mapping": "role mappings; name the roles as the users files give them",
    }
)
_Roles = dict[str, frozenset[str]]


@dataclass(frozen=True)
class _Setting:
    match: str
    roles: _Roles
    element: Element


def read_security(
    context: LoadContext,
    enabled: bool,
    enabled_element: Element | None,
    settings: Element | None,
) -> SecurityConfig | None:
    """The broker's security; None runs it open (no users found, or security-enabled=false)."""
    if not enabled:
        if settings is not None:
            reason = "security-enabled is false: Artemis ignores them, and so does FerryMQ"
            context.ignore(settings, "<security-settings>", reason)
        return None
    authorization = None if settings is None else _authorization(context, settings)
    authentication = _authentication(context)
    if authentication is None:
        anchor = settings if settings is not None else enabled_element
        if anchor is not None:  # the file asks for security (Artemis's own broker.xml does)
            context.ignore(anchor, f"<{anchor.name}>", _no_users(context))
        return None
    if authorization is None:  # Artemis: an address no setting matches is refused to all
        authorization = AuthorizationConfig(most_specific=True)
    return SecurityConfig(authentication, authorization)


def _no_users(context: LoadContext) -> str:
    folder = context.properties.get("activemq.conf", ".")
    return (
        f"Artemis would require a login here, but there is neither a login.config nor "
        f"{USERS_FILE} in {folder}: FerryMQ runs without authentication or authorization "
        f"(anyone may connect and do anything); add the users files ({_DOCS}) or set "
        "<security-enabled>false</security-enabled>"
    )


# -- users and roles ---------------------------------------------------------------------------


def _authentication(context: LoadContext) -> JaasAuthenticationConfig | None:
    folder = Path(context.properties.get("activemq.conf", "."))
    domain = _domain(folder / "bootstrap.xml")
    login = find_login_config(context.properties).resolve()
    if login.is_file():
        entry = read_artemis_login_entry(login, domain, context.properties)
    elif (folder / USERS_FILE).is_file():
        entry = _default_entry(folder.resolve() / "login.config", domain)
    else:
        return None
    _check_users(entry)
    return JaasAuthenticationConfig(domain, entry, entry.location)


def _domain(bootstrap: Path) -> str:
    """`<jaas-security domain>` of bootstrap.xml next to broker.xml (default: activemq)."""
    if not bootstrap.is_file():
        return _DEFAULT_DOMAIN
    try:
        root = read_document(bootstrap.read_bytes(), str(bootstrap))
    except OSError as error:
        message = f"cannot read: {error.strerror}"
        raise ConfigError(str(bootstrap), None, "", None, message) from None
    for child in root.children:
        if child.name == "jaas-security":
            return child.attributes.get("domain", _DEFAULT_DOMAIN).strip() or _DEFAULT_DOMAIN
        if child.name == "security-manager":
            message = (
                "a custom <security-manager> is not supported: FerryMQ reads the JAAS "
                f"properties files (<jaas-security domain=...>, {_DOCS})"
            )
            raise ConfigError(str(bootstrap), child.line, "", None, message)
    return _DEFAULT_DOMAIN


def _default_entry(path: Path, domain: str) -> JaasLoginConfig:
    """What Artemis's default login.config says: the two properties files of its folder."""
    options = ((_USER_OPTION, USERS_FILE), (_GROUP_OPTION, ROLES_FILE))
    module = LoginModuleConfig(PROPERTIES_MODULE, "required", options)
    return JaasLoginConfig(domain, (module,), path)


def _check_users(entry: JaasLoginConfig) -> None:
    """Artemis stores hashed (or masked) passwords as `ENC(...)` with its own codec, which
    FerryMQ cannot verify: refused at start naming the user, rather than compared as text."""
    for module in entry.modules:
        name = module.option(_USER_OPTION)
        if module.class_name != PROPERTIES_MODULE or name is None:
            continue
        path = entry.path.parent / (module.option("baseDir") or "") / name
        if not path.is_file():
            continue  # reported with its login module when the broker reads the users
        try:
            lines = read_properties(path)
        except PropertiesFileError as error:
            raise ConfigError(str(path), None, "", None, str(error)) from None
        for line in lines:
            value = line.value.strip()
            if value.startswith("ENC(") and value.endswith(")"):
                message = (
                    f"user {line.key!r}: Artemis's ENC(...) password (hashed or masked by "
                    "Artemis's codec) cannot be checked by FerryMQ; write the password "
                    "itself, or its hash from `ferrymq hash-password` ({PBKDF2-SHA256}...)"
                )
                raise ConfigError(str(path), line.line, "", None, message)


# -- security-settings -------------------------------------------------------------------------


def _authorization(context: LoadContext, element: Element) -> AuthorizationConfig:
    reader = context.reader(element)
    settings: list[_Setting] = []
    seen: dict[str, int] = {}
    for child in children(context, element, {"security-setting"}, refused=_REFUSED):
        try:
            setting = _setting(context, child)
        except ConfigError as error:
            context.report(error)
            continue
        if setting.match in seen:
            message = f'match="{setting.match}" given twice (first on line {seen[setting.match]})'
            context.report(context.error(child, message, "match"))
            continue
        seen[setting.match] = child.line
        settings.append(setting)
    finish(reader)
    ordered = sorted(settings, key=lambda s: _precedence(s.match))
    entries: list[AuthorizationEntryConfig] = []
    for setting in ordered:
        entries.extend(_entries(context, setting))
    temp = _temporary(ordered)
    location = context.location(element)
    return AuthorizationConfig(tuple(entries), None, temp, location, most_specific=True)


def _precedence(match: str) -> tuple[int, int, int]:
    """Artemis's order of settings that match one address, least specific first: any with `#`,
    then any with `*`, then the exact address; among equals, more literal words, then the
    longer match, win (Artemis's MatchComparator)."""
    words = match.split(".")
    kind = 0 if "#" in words else 1 if "*" in words else 2
    return kind, sum(1 for word in words if word not in ("#", "*")), len(match)


def _setting(context: LoadContext, element: Element) -> _Setting:
    reader = context.reader(element)
    match = reader.required("match").strip()
    finish(reader)
    _translate(context, element, match)
    if any(w not in ("#", "*") and ("#" in w or "*" in w) for w in match.split(".")):
        message = (
            f"match {match!r}: FerryMQ's wildcards are whole words (# and * between dots), "
            "so name the addresses in full (a mirror's is $ACTIVEMQ_ARTEMIS_MIRROR_<name>)"
        )
        raise context.error(element, message, "match")
    roles: _Roles = {}
    for child in children(context, element, {"permission"}):
        permission = context.reader(child)
        kind = permission.required("type").strip()
        if kind not in PERMISSIONS:
            message = unknown("permission type", repr(kind), "permission", PERMISSIONS)
            raise permission.error(message, "type")
        if kind in roles:
            raise permission.error(f"permission {kind} given twice in this setting", "type")
        names = frozenset(r.strip() for r in permission.required("roles").split(",") if r.strip())
        if not names:
            raise permission.error("roles is empty: give at least one role", "roles")
        roles[kind] = names
        finish(permission)
    return _Setting(match, roles, element)


def _entries(context: LoadContext, setting: _Setting) -> list[AuthorizationEntryConfig]:
    element = setting.element
    pattern = _translate(context, element, setting.match)
    roles = setting.roles
    none: frozenset[str] = frozenset()
    consume = roles.get("consume", none)
    if "manage" in roles:
        reason = (
            "Artemis's management is FerryMQ's admin API, whose write operations need the "
            "group admins (or the one `ferrymq broker --admin-group ROLE` names): ignored"
        )
        context.ignore(element, f'<security-setting match="{setting.match}"> manage', reason)
    browse_only = roles.get("browse", none) - consume
    if browse_only:
        reason = (
            f"FerryMQ's read permission covers consuming and browsing alike: role(s) "
            f"{', '.join(sorted(browse_only))} with browse but not consume may do neither"
        )
        context.ignore(element, f'<security-setting match="{setting.match}"> browse', reason)
    create = roles.get("createAddress", none)
    subscribe = roles.get("createNonDurableQueue", none) | roles.get("createDurableQueue", none)
    location = context.location(element)
    queue = AuthorizationEntryConfig(
        "queue",
        pattern,
        read=consume,
        write=roles.get("send", none),
        admin=create & roles.get("createDurableQueue", none),
        location=location,
    )
    topic = AuthorizationEntryConfig(
        "topic",
        pattern,
        read=consume & subscribe,
        write=roles.get("send", none),
        admin=create,
        location=location,
    )
    return [queue, topic]


def _temporary(ordered: list[_Setting]) -> AccessConfig:
    """Temporary destinations have generated one-word names: the most specific setting that
    matches any such name governs them (creating one is Artemis's createNonDurableQueue)."""
    general = [s for s in ordered if s.match in ("#", "*")]
    if not general:
        return AccessConfig()  # as in Artemis, no setting matches them: nobody may
    roles = general[-1].roles
    none: frozenset[str] = frozenset()
    return AccessConfig(
        read=roles.get("consume", none),
        write=roles.get("send", none),
        admin=roles.get("createNonDurableQueue", none),
    )
