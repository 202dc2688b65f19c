"""Hostile credentials against a broker with authentication configured (issue 16, "Fuzz").

The malformed-frame fuzzer's harness (``play``: one raw connection per case, the answer its
outcome demands) throws CONNECT frames with wrong, huge, binary, non-UTF-8 and NUL-cut logins at a
broker that knows one user, from ``<simpleAuthenticationPlugin>`` or, hashed, from JAAS
users.properties.  Meanwhile a stomp.py client logged in as that user round-trips a message
every few cases; afterwards a fresh login still works and no connection leaked.  No ERROR may
carry the password.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrymq.config.cli import config_from_flags
from ferrymq.security.passwords import hash_password
from ferrymq.testing import BrokerThread

from . import auth_faults
from .auth_faults import PASSWORD, USER
from .canary import Canary, Collector, connect, disconnect
from .cases import BODY_LIMIT, Case, chunked
from .test_malformed_frames import ErrorCatalogue, play, wait_connections

EXAMPLES = 200
CANARY_EVERY = 20

SIMPLE = f"""\
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="fuzz-auth">
    <plugins>
      <simpleAuthenticationPlugin>
        <users>
          <authenticationUser username="{USER}" password="{PASSWORD}" groups="users"/>
        </users>
      </simpleAuthenticationPlugin>
    </plugins>
  </broker>
</beans>
"""
JAAS = """\
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="fuzz-auth">
    <plugins><jaasAuthenticationPlugin configuration="activemq"/></plugins>
  </broker>
</beans>
"""
LOGIN_CONFIG = """\
activemq {
    org.apache.activemq.jaas.PropertiesLoginModule required
        org.apache.activemq.jaas.properties.user="users.properties"
        org.apache.activemq.jaas.properties.group="groups.properties"
        reload=true;
};
"""


def write_jaas(folder: Path) -> str:
    """JAAS with a hashed password (fewest iterations: every failed case derives a hash)."""
    (folder / "login.config").write_text(LOGIN_CONFIG)
    (folder / "users.properties").write_text(f"{USER}={hash_password(PASSWORD, 1000)}\n")
    (folder / "groups.properties").write_text(f"users={USER}\n")
    return JAAS


@pytest.fixture(params=["simple", "jaas-hashed"])
def secured(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerThread]:
    path = tmp_path / "activemq.xml"
    path.write_text(SIMPLE if request.param == "simple" else write_jaas(tmp_path))
    listen = f"stomp://127.0.0.1:0?wireFormat.maxDataLength={BODY_LIMIT}"
    config = config_from_flags(None, tmp_path / "data", [listen], "off", False, config_path=path)
    broker = BrokerThread(config).start()
    try:
        _no_throttle(broker)
        yield broker
    finally:
        broker.stop()


def _no_throttle(broker: BrokerThread) -> None:
    """Every case comes from 127.0.0.1: the failed-login throttle would make hundreds of
    cases wait seconds each.  It has its own tests; here every failure is answered at once."""

    def relax() -> None:
        assert broker.broker is not None
        throttle = broker.broker.service.security.throttle
        throttle.free_failures = throttle.address_free_failures = 10**9

    broker.call(relax)


def test_hostile_credentials_are_refused_and_harm_no_one(
    secured: BrokerThread, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    port = secured.port
    canary = Canary(port, login=USER, passcode=PASSWORD).start()
    catalogue = ErrorCatalogue()
    outcomes: Counter[str] = Counter()
    played = 0

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=chunked(st.one_of(*auth_faults.FAMILIES)))
    def fuzz(case: Case) -> None:
        nonlocal played
        replies = play(port, case)
        assert all(r.command != "CONNECTED" for r in replies), f"{case}: connected: {replies}"
        for reply in replies:
            if reply.command == "ERROR":
                catalogue.add(case.family, reply.message)
                assert PASSWORD not in reply.message, f"{case}: the ERROR echoes the password"
        outcomes[case.outcome.value] += 1
        played += 1
        if played % CANARY_EVERY == 0:
            canary.round_trip()

    started = time.monotonic()
    try:
        fuzz()
    finally:
        elapsed = time.monotonic() - started
        catalogue.show(f"{played} cases in {elapsed:.1f} s, outcomes {dict(outcomes)}")
    canary.round_trip()
    wait_connections(secured, 1)
    # A new client logs in after all that.
    collector = Collector()
    disconnect(connect(port, collector, login=USER, passcode=PASSWORD), collector)
    canary.stop()
    broken = [r for r in caplog.records if r.name.startswith(("ferrymq", "asyncio"))]
    # Each refused login is logged (user and address); anything else is a broker problem.
    broken = [r for r in broken if not r.getMessage().startswith("login refused for user")]
    assert not broken, "broker logged:\n" + "\n".join(r.getMessage() for r in broken)
