"""Reading the security plugins of activemq.xml: every element, and errors with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.config import ConfigError, load_config, parse_config
from ferrymq.config.jasypt import encrypt
from ferrymq.config.security import (
    AccessConfig,
    AuthorizationEntryConfig,
    JaasAuthenticationConfig,
    SimpleAuthenticationConfig,
)


def _plugins(body: str) -> str:
    return f"<broker>\n<plugins>\n{body}\n</plugins>\n</broker>"


def _error(body: str) -> str:
    with pytest.raises(ConfigError) as error:
        parse_config(_plugins(body), "activemq.xml")
    return str(error.value)


def test_simple_authentication_plugin() -> None:
    config = parse_config(
        _plugins(
            '<simpleAuthenticationPlugin anonymousAccessAllowed="true">\n<users>\n'
            '<authenticationUser username="system" password="${pw}" groups="users,admins"/>\n'
            "</users></simpleAuthenticationPlugin>"
        ),
        properties={"pw": "manager"},
    )
    assert config.security is not None
    simple = config.security.authentication
    assert isinstance(simple, SimpleAuthenticationConfig)
    assert simple.anonymous_access_allowed
    assert simple.anonymous_user == "anonymous"
    (user,) = simple.users
    assert (user.username, user.password, user.groups) == (
        "system",
        "manager",
        frozenset({"users", "admins"}),
    )
    assert "manager" not in repr(config)


def test_authorization_map() -> None:
    config = parse_config(
        _plugins(
            "<authorizationPlugin><map><authorizationMap><authorizationEntries>\n"
            '<authorizationEntry queue="USERS.>" read="users" write="users, admins"/>\n'
            '<authorizationEntry topic="ActiveMQ.Advisory.>" read="*"/>\n'
            '<authorizationEntry tempQueue="true" admin="admins"/>\n'
            "</authorizationEntries>\n"
            '<defaultEntry><authorizationEntry read="ops"/></defaultEntry>\n'
            "<tempDestinationAuthorizationEntry>"
            '<tempDestinationAuthorizationEntry read="t" write="t" admin="t"/>'
            "</tempDestinationAuthorizationEntry>\n"
            "</authorizationMap></map></authorizationPlugin>"
        )
    )
    assert config.security is not None
    assert config.security.authentication is None
    authorization = config.security.authorization
    assert authorization is not None
    assert authorization.entries == (
        AuthorizationEntryConfig("queue", "USERS.>", frozenset({"users"}),
                                 frozenset({"users", "admins"})),
        AuthorizationEntryConfig("topic", "ActiveMQ.Advisory.>", frozenset({"*"})),
        AuthorizationEntryConfig("temp-queue", ">", admin=frozenset({"admins"})),
    )  # fmt: skip
    assert authorization.default_entry == AccessConfig(read=frozenset({"ops"}))
    t = frozenset({"t"})
    assert authorization.temp_destination == AccessConfig(t, t, t)


def test_jaas_plugin_finds_login_config_next_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "login.config").write_text(
        "// comment\nactivemq {\n  org.apache.activemq.jaas.PropertiesLoginModule required\n"
        '    org.apache.activemq.jaas.properties.user="users.properties" reload=true;\n};\n',
        encoding="utf-8",
    )
    xml = tmp_path / "activemq.xml"
    xml.write_text(_plugins('<jaasAuthenticationPlugin configuration="activemq"/>'), "utf-8")
    config = load_config(xml)
    assert config.security is not None
    jaas = config.security.authentication
    assert isinstance(jaas, JaasAuthenticationConfig)
    (module,) = jaas.login.modules
    assert module.flag == "required"
    assert module.option("reload") == "true"
    assert jaas.login.path == tmp_path / "login.config"
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (tmp_path / "login.config").rename(elsewhere / "jaas.conf")
    with pytest.raises(ConfigError) as missing:
        load_config(xml)
    assert str(missing.value).startswith(f"{xml}:3: <jaasAuthenticationPlugin ")
    assert "java.security.auth.login.config" in str(missing.value)
    given = load_config(xml, {"java.security.auth.login.config": str(elsewhere / "jaas.conf")})
    assert given.security is not None


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ('<simpleAuthenticationPlugin><users>\n<authenticationUser username="a" pasword="x"/>'
         "</users></simpleAuthenticationPlugin>", 4, "unknown attribute pasword"),
        ('<simpleAuthenticationPlugin><users>\n<authenticationUser username="a"/>'
         "</users></simpleAuthenticationPlugin>", 4, "password attribute is missing"),
        ('<simpleAuthenticationPlugin userPasswords="#m"/>', 3, "userPasswords is not supported"),
        ("<simpleAuthenticationPlugin/>\n<jaasAuthenticationPlugin/>", 4, "one authentication"),
        ("<authorizationPlugin><map>\n<cachedLDAPAuthorizationMap/></map></authorizationPlugin>",
         4, "<cachedLDAPAuthorizationMap> is not supported"),
        ("<authorizationPlugin><map><authorizationMap><authorizationEntries>\n"
         '<authorizationEntry read="a"/></authorizationEntries></authorizationMap></map>'
         "</authorizationPlugin>", 4, "give exactly one of queue"),
        ("<jaasDualAuthenticationPlugin/>", 3, "not supported yet"),
    ],
)  # fmt: skip
def test_errors_name_file_and_line(body: str, line: int, words: str) -> None:
    message = _error(body)
    assert message.startswith(f"activemq.xml:{line}:"), message
    assert words in message
    assert '"x"' not in message  # a mistyped password attribute's value is not shown


def test_credentials_properties_and_jasypt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "credentials.properties").write_text("a.password=plain\n", encoding="utf-8")
    (tmp_path / "enc.properties").write_text(
        f"b.password={encrypt('hidden', 'key')}\n", encoding="utf-8"
    )
    xml = tmp_path / "activemq.xml"
    xml.write_text(
        '<beans><bean class="org.springframework.beans.factory.config.'
        'PropertyPlaceholderConfigurer"><property name="locations">'
        "<value>file:${activemq.conf}/credentials.properties</value></property></bean>\n"
        '<bean id="c" class="org.jasypt.encryption.pbe.config.EnvironmentStringPBEConfig">'
        '<property name="passwordEnvName" value="KEY_ENV"/></bean>\n'
        '<bean id="e" class="org.jasypt.encryption.pbe.StandardPBEStringEncryptor">'
        '<property name="config" ref="c"/></bean>\n'
        '<bean class="org.jasypt.spring4.properties.EncryptablePropertyPlaceholderConfigurer">'
        '<constructor-arg ref="e"/><property name="location" '
        'value="file:${activemq.conf}/enc.properties"/></bean>\n'
        "<broker><plugins><simpleAuthenticationPlugin><users>"
        '<authenticationUser username="a" password="${a.password}"/>'
        '<authenticationUser username="b" password="${b.password}"/>'
        "</users></simpleAuthenticationPlugin></plugins></broker></beans>",
        encoding="utf-8",
    )
    monkeypatch.setenv("KEY_ENV", "key")
    config = load_config(xml, {"a.password": "from -D"})
    assert config.security is not None
    simple = config.security.authentication
    assert isinstance(simple, SimpleAuthenticationConfig)
    assert [u.password for u in simple.users] == ["plain", "hidden"]  # the file wins, as Spring
    assert not any("PlaceholderConfigurer" in str(i) for i in config.ignored)
    monkeypatch.setenv("KEY_ENV", "wrong")
    with pytest.raises(ConfigError) as wrong:
        load_config(xml)
    assert "enc.properties:1: b.password" in str(wrong.value)
    assert "hidden" not in str(wrong.value)
