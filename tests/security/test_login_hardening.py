"""What keeps a login from telling or costing too much (issue 16 review, items 5, 6, 4 and 10):
the throttle's policy (per user and address, /64 for IPv6, a cap on logins in progress), an
unknown user costing what a known one's hashed password costs, a cap on stored iterations,
and users-file regular expressions checked when the file is read, not at a login."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ferrymq.cli.main import main
from ferrymq.config import ConfigError
from ferrymq.core.errors import BrokerError
from ferrymq.security import properties_files
from ferrymq.security.api import AuthenticationError, Authenticator, Credentials
from ferrymq.security.build import security_for
from ferrymq.security.dn import java_style_dn
from ferrymq.security.passwords import hash_password
from ferrymq.security.throttle import LoginThrottle, address_key
from ferrymq.service import security as service_security
from ferrymq.service.security import LoginQueue
from tests.security.test_authentication import JAAS, PROPERTIES, _broker, _login_config

CERTIFICATES = (
    "org.apache.activemq.jaas.TextFileCertificateLoginModule required\n"
    '  org.apache.activemq.jaas.textfiledn.user="dns.properties" reload=true;'
)


def test_failures_count_per_user_and_address_and_a_success_forgives_only_its_pair() -> None:
    throttle = LoginThrottle(free_failures=2, address_free_failures=4, first_delay_s=1.0)
    assert [throttle.failed("10.0.0.1", 0.0, "victim") for _ in range(3)] == [0.0, 0.0, 1.0]
    assert throttle.wait_s("10.0.0.1", "victim", 0.0) == 2.0  # the next try waits, first
    throttle.succeeded("10.0.0.1", "mine")  # a valid low-privilege account
    assert throttle.failures("10.0.0.1", "victim") == 3
    assert throttle.wait_s("10.0.0.1", "other", 0.0) == 0.0  # 4th of the address: free
    throttle.failed("10.0.0.1", 0.0, "other")
    assert throttle.wait_s("10.0.0.1", "another", 0.0) == 1.0  # the address's 5th
    throttle.succeeded("10.0.0.1", "victim")
    assert throttle.failures("10.0.0.1", "victim") == 0
    assert throttle.failures("10.0.0.1") == 4


def test_ipv6_addresses_count_per_64() -> None:
    throttle = LoginThrottle(free_failures=1, first_delay_s=1.0)
    throttle.failed("2001:db8:1:2::1", 0.0, "u")
    assert throttle.failed("[2001:db8:1:2:ffff::9]", 0.0, "u") == 1.0
    assert throttle.failed("2001:db8:1:3::1", 0.0, "u") == 0.0
    assert address_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert address_key("127.0.0.1") == "127.0.0.1"


def test_the_login_queue_of_one_address_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service_security, "QUEUED_PER_ADDRESS", 2)
    queue = LoginQueue()
    first = queue.enter("2001:db8:1:2::1")
    assert queue.enter("2001:db8:1:2::9") == first  # one place in line per /64
    with pytest.raises(BrokerError, match="too many logins waiting"):
        queue.enter("2001:db8:1:2::1")
    assert queue.enter("10.0.0.2") is not None
    queue.leave(first)
    assert queue.enter("2001:db8:1:2::1") == first
    assert queue.enter(None) is None  # in-process clients take no turn


def _timed(authenticator: Authenticator, login: str) -> float:
    started = time.perf_counter()
    with pytest.raises(AuthenticationError):
        authenticator.authenticate(Credentials(login, "wrong"))
    return time.perf_counter() - started


def test_an_unknown_user_costs_what_a_known_users_hashed_password_costs() -> None:
    hashed = hash_password("right", 200_000)
    users = f'<authenticationUser username="known" password="{hashed}"/>'
    authenticator, _ = security_for(
        _broker(f"<simpleAuthenticationPlugin><users>{users}</users></simpleAuthenticationPlugin>")
    )
    assert authenticator is not None
    known = min(_timed(authenticator, "known") for _ in range(3))
    unknown = min(_timed(authenticator, "nobody") for _ in range(3))
    assert unknown > known / 2, (known, unknown)


def test_an_unknown_jaas_user_costs_what_a_known_ones_hashed_password_costs(
    tmp_path: Path,
) -> None:
    _login_config(tmp_path, PROPERTIES)
    (tmp_path / "users.properties").write_text(
        f"known={hash_password('right', 200_000)}\n", encoding="utf-8"
    )
    (tmp_path / "groups.properties").write_text("users=known\n", encoding="utf-8")
    authenticator, _ = security_for(_broker(JAAS, tmp_path))
    assert authenticator is not None
    known = min(_timed(authenticator, "known") for _ in range(3))
    unknown = min(_timed(authenticator, "nobody") for _ in range(3))
    assert unknown > known / 2, (known, unknown)


def test_a_stored_hash_with_too_many_iterations_is_a_config_error() -> None:
    huge = hash_password("x", 1000).replace("{PBKDF2-SHA256}1000$", "{PBKDF2-SHA256}999999999$")
    users = f'<authenticationUser username="u" password="{huge}"/>'
    with pytest.raises(ConfigError, match="more than the 10000000 FerryMQ accepts") as error:
        security_for(
            _broker(
                f"<simpleAuthenticationPlugin><users>{users}</users></simpleAuthenticationPlugin>"
            )
        )
    assert huge not in str(error.value)


def test_a_bad_dn_regular_expression_is_refused_at_start(tmp_path: Path) -> None:
    _login_config(tmp_path, CERTIFICATES)
    (tmp_path / "dns.properties").write_text("odd=/CN=(unclosed/\n", encoding="utf-8")
    plugin = '<jaasCertificateAuthenticationPlugin configuration="activemq"/>'
    with pytest.raises(ConfigError, match=r"dns.properties:1: odd: not a valid regular"):
        security_for(_broker(plugin, tmp_path))


def test_a_bad_dn_regular_expression_on_reload_keeps_the_last_good_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _login_config(tmp_path, CERTIFICATES)
    dns = tmp_path / "dns.properties"
    dns.write_text("odd=/CN=TEST_\\\\d+/\n", encoding="utf-8")
    plugin = '<jaasCertificateAuthenticationPlugin configuration="activemq"/>'
    authenticator, _ = security_for(_broker(plugin, tmp_path))
    assert authenticator is not None
    monkeypatch.setattr(properties_files, "CHECK_INTERVAL_S", 0.0)
    dns.write_text("odd=/CN=(unclosed/\n", encoding="utf-8")
    os.utime(dns, ns=(dns.stat().st_atime_ns, dns.stat().st_mtime_ns + 10**9))
    assert authenticator.authenticate(Credentials(certificate_subject="CN=TEST_7")).user == "odd"


def test_java_style_keeps_an_escaped_comma_inside_its_value() -> None:
    assert java_style_dn("CN=Doe\\, John,O=Acme") == "CN=Doe\\, John, O=Acme"


def test_hash_password_refuses_too_many_iterations(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hash-password", "--iterations", "10000001"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "ferrymq hash-password: --iterations must be between 1000 and 10000000"
