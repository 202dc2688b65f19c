"""The authenticators: simple users, JAAS properties files (reloaded), certificates, guests,
hashed passwords; and that a password never shows in a repr or an error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ferrymq.config import ConfigError, parse_config
from ferrymq.config.model import BrokerConfig
from ferrymq.security import properties_files
from ferrymq.security.api import AuthenticationError, Credentials, Subject
from ferrymq.security.build import security_for
from ferrymq.security.dn import normalize_dn
from ferrymq.security.passwords import PasswordVerifier, hash_password

SECRET = "s3cr3t-Pa55"


def _broker(plugins: str, conf: Path | None = None) -> BrokerConfig:
    text = f"<broker><plugins>{plugins}</plugins></broker>"
    properties = {} if conf is None else {"activemq.conf": str(conf)}
    return parse_config(text, "activemq.xml", properties)


def _authenticate(config: BrokerConfig, credentials: Credentials) -> Subject:
    authenticator, _ = security_for(config, None)
    assert authenticator is not None
    return authenticator.authenticate(credentials)


def test_simple_users_plaintext_and_hashed() -> None:
    hashed = hash_password(SECRET, iterations=1000)
    config = _broker(
        "<simpleAuthenticationPlugin><users>"
        f'<authenticationUser username="plain" password="{SECRET}" groups="users, admins"/>'
        f'<authenticationUser username="hashed" password="{hashed}" groups="users"/>'
        "</users></simpleAuthenticationPlugin>"
    )
    assert _authenticate(config, Credentials("plain", SECRET)) == Subject(
        "plain", frozenset({"users", "admins"})
    )
    assert _authenticate(config, Credentials("hashed", SECRET)).groups == {"users"}
    assert _authenticate(config, Credentials("hashed", SECRET)).user == "hashed"  # cached
    for login, passcode in [("hashed", hashed), ("plain", "x"), ("x", SECRET), (None, None)]:
        with pytest.raises(AuthenticationError):
            _authenticate(config, Credentials(login, passcode))
    assert SECRET not in repr(config)


def test_anonymous_access() -> None:
    config = _broker(
        '<simpleAuthenticationPlugin anonymousAccessAllowed="true" anonymousUser="anon" '
        'anonymousGroup="everyone"><users>'
        '<authenticationUser username="u" password="p"/></users></simpleAuthenticationPlugin>'
    )
    assert _authenticate(config, Credentials()) == Subject("anon", frozenset({"everyone"}))
    with pytest.raises(AuthenticationError):  # a login given must be right
        _authenticate(config, Credentials("u", None))
    closed = _broker("<simpleAuthenticationPlugin><users/></simpleAuthenticationPlugin>")
    with pytest.raises(AuthenticationError):
        _authenticate(closed, Credentials())


def test_a_verified_hash_is_remembered_not_rederived() -> None:
    verifier = PasswordVerifier()
    stored = hash_password(SECRET, iterations=1000)
    assert verifier.verify(stored, SECRET)
    assert verifier.verify(stored, SECRET)
    assert not verifier.verify(stored, SECRET + "x")
    assert not verifier.verify("{PBKDF2-SHA256}broken", SECRET)


def _login_config(folder: Path, body: str) -> None:
    (folder / "login.config").write_text(f"activemq {{\n{body}\n}};\n", encoding="utf-8")


PROPERTIES = (
    "org.apache.activemq.jaas.PropertiesLoginModule required\n"
    '  org.apache.activemq.jaas.properties.user="users.properties"\n'
    '  org.apache.activemq.jaas.properties.group="groups.properties"\n'
    "  reload=true;"
)
JAAS = '<jaasAuthenticationPlugin configuration="activemq"/>'


def test_jaas_properties_files_and_their_reload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _login_config(tmp_path, PROPERTIES)
    users = tmp_path / "users.properties"
    users.write_text(f"admin={SECRET}\n", encoding="utf-8")
    (tmp_path / "groups.properties").write_text("admins=admin\nusers=admin,bob\n", "utf-8")
    authenticator, _ = security_for(_broker(JAAS, tmp_path), None)
    assert authenticator is not None
    admin = authenticator.authenticate(Credentials("admin", SECRET))
    assert admin == Subject("admin", frozenset({"admins", "users"}))
    with pytest.raises(AuthenticationError):
        authenticator.authenticate(Credentials("bob", "pw"))
    users.write_text(f"admin={SECRET}\nbob={hash_password('pw', iterations=1000)}\n", "utf-8")
    os.utime(users, ns=(users.stat().st_atime_ns, users.stat().st_mtime_ns + 10**9))
    monkeypatch.setattr(properties_files, "CHECK_INTERVAL_S", 0.0)
    assert authenticator.authenticate(Credentials("bob", "pw")).groups == {"users"}
    users.write_text("bob=\\u00zz\n", encoding="utf-8")  # a broken edit keeps the last contents
    os.utime(users, ns=(users.stat().st_atime_ns, users.stat().st_mtime_ns + 2 * 10**9))
    assert authenticator.authenticate(Credentials("bob", "pw")).user == "bob"


def test_jaas_guest_after_properties(tmp_path: Path) -> None:
    _login_config(
        tmp_path,
        PROPERTIES.replace("required", "sufficient")
        + "\norg.apache.activemq.jaas.GuestLoginModule sufficient credentialsInvalidate=true;",
    )
    (tmp_path / "users.properties").write_text(f"admin={SECRET}\n", encoding="utf-8")
    (tmp_path / "groups.properties").write_text("admins=admin\n", encoding="utf-8")
    config = _broker(JAAS, tmp_path)
    assert _authenticate(config, Credentials()) == Subject("guest", frozenset({"guests"}))
    assert _authenticate(config, Credentials("admin", SECRET)).groups == {"admins"}
    with pytest.raises(AuthenticationError):
        _authenticate(config, Credentials("admin", "wrong"))


def test_certificate_subjects_map_to_users(tmp_path: Path) -> None:
    _login_config(
        tmp_path,
        "org.apache.activemq.jaas.TextFileCertificateLoginModule required\n"
        '  org.apache.activemq.jaas.textfiledn.user="dns.properties"\n'
        '  org.apache.activemq.jaas.textfiledn.group="groups.properties";',
    )
    (tmp_path / "dns.properties").write_text(
        "client=CN=localhost, OU=activemq.org, O=activemq.org, L=Unknown, ST=Unknown, C=Unknown\n"
        "odd=/CN=TEST_USER_\\\\d*[13579].*/\n",
        encoding="utf-8",
    )
    (tmp_path / "groups.properties").write_text("admins=client\n", encoding="utf-8")
    config = _broker('<jaasCertificateAuthenticationPlugin configuration="activemq"/>', tmp_path)
    rfc4514 = "CN=localhost,OU=activemq.org,O=activemq.org,L=Unknown,ST=Unknown,C=Unknown"
    subject = _authenticate(config, Credentials(certificate_subject=rfc4514))
    assert subject == Subject("client", frozenset({"admins"}))
    assert (
        _authenticate(config, Credentials(certificate_subject="CN=TEST_USER_7,O=x")).user == "odd"
    )
    for dn in ("CN=other,OU=activemq.org", "C=Unknown,ST=Unknown,L=Unknown,O=activemq.org,"
               "OU=activemq.org,CN=localhost", None):  # fmt: skip
        with pytest.raises(AuthenticationError):
            _authenticate(config, Credentials("client", "x", certificate_subject=dn))


def test_dn_spellings() -> None:
    assert normalize_dn("CN=a b,  O=X\\, Inc") == normalize_dn("cn=A  B,o=x\\2C inc")
    assert normalize_dn("2.5.4.3=a,O=b") == normalize_dn("CN=a, O=b")
    assert normalize_dn("CN=a,O=b") != normalize_dn("O=b,CN=a")


def test_ldap_and_kerberos_modules_are_refused_naming_the_doc(tmp_path: Path) -> None:
    for module in ("org.apache.activemq.jaas.LDAPLoginModule",
                   "com.sun.security.auth.module.Krb5LoginModule"):  # fmt: skip
        _login_config(tmp_path, f"{module} required debug=true;")
        with pytest.raises(ConfigError) as refused:
            _broker(JAAS, tmp_path)
        assert "docs/security.md" in str(refused.value)
        assert str(refused.value).startswith(f"{tmp_path / 'login.config'}:2:")


def test_a_missing_users_file_is_an_error_at_start(tmp_path: Path) -> None:
    _login_config(tmp_path, PROPERTIES)
    with pytest.raises(ConfigError) as missing:
        security_for(_broker(JAAS, tmp_path), None)
    assert "users.properties" in str(missing.value)
    assert str(missing.value).startswith(f"{tmp_path / 'login.config'}:2:")
