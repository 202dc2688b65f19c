"""ActiveMQ's own activemq-security.xml (Debian's examples/conf), loaded as it is with the
credentials-enc.properties it reads, decides like ActiveMQ: every entry of its map, for each
of its users, through `security_for` (what the broker calls at start)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.config import load_config
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.security.api import (
    AuthenticationError,
    Authenticator,
    Authorizer,
    Credentials,
    Operation,
    Subject,
)
from ferrymq.security.build import security_for

EXAMPLES = Path("/usr/share/doc/activemq/examples/conf")
PASSWORDS = {"system": "manager", "user": "password", "guest": "password"}
"""credentials-enc.properties decrypted: activemq.password and guest.password."""

Q, T, TQ = DestinationType.QUEUE, DestinationType.TOPIC, DestinationType.TEMP_QUEUE
R, W, A = Operation.READ, Operation.WRITE, Operation.ADMIN
ADVISORY = "ActiveMQ.Advisory.Consumer.Queue.USERS.X"

# (user, kind, destination, operation, allowed), derived from the file's entries:
#   queue/topic ">" admins; "USERS.>" users; "GUEST.>" read guests, write+admin guests,users;
#   queue "TEST.Q" read+write guests; topic "ActiveMQ.Advisory.>" guests,users for everything.
TABLE = [
    *[("system", k, n, op, True) for k in (Q, T) for n in ("FOO", "USERS.X", "GUEST.X", "TEST.Q")
      for op in (R, W, A)],
    ("system", Q, ">", R, True),
    ("system", T, ADVISORY, R, True),
    *[("user", k, "USERS.X", op, True) for k in (Q, T) for op in (R, W, A)],
    ("user", Q, "USERS", R, True),  # "USERS.>" covers USERS itself
    *[("user", k, "GUEST.X", R, False) for k in (Q, T)],
    *[("user", k, "GUEST.X", op, True) for k in (Q, T) for op in (W, A)],
    *[("user", Q, "TEST.Q", op, False) for op in (R, W, A)],
    *[("user", k, "FOO", op, False) for k in (Q, T) for op in (R, W, A)],
    *[("user", T, ADVISORY, op, True) for op in (R, W, A)],
    ("user", Q, "USERS.>", R, True),
    ("user", Q, ">", R, False),
    # A pattern gets only what every destination it could reach gets: *.X reaches FOO.X too
    # (ActiveMQ's map would grant it, then check each destination it reaches).
    ("user", Q, "*.X", R, False),
    ("user", Q, "USERS.*", R, True),
    ("guest", T, "ActiveMQ.Advisory.*", R, True),
    *[("guest", k, "GUEST.X", op, True) for k in (Q, T) for op in (R, W, A)],
    ("guest", Q, "TEST.Q", R, True),
    ("guest", Q, "TEST.Q", W, True),
    ("guest", Q, "TEST.Q", A, False),
    ("guest", T, "TEST.Q", R, False),  # a queue entry says nothing about topics
    *[("guest", k, "USERS.X", op, False) for k in (Q, T) for op in (R, W, A)],
    *[("guest", k, "FOO", op, False) for k in (Q, T) for op in (R, W, A)],
    *[("guest", T, ADVISORY, op, True) for op in (R, W, A)],
    ("guest", T, "ActiveMQ.Advisory.Connection", R, True),
    *[(u, TQ, "ID:c-1:1", op, True) for u in PASSWORDS for op in (R, W, A)],  # no temp entry
]  # fmt: skip


@pytest.fixture(scope="module")
def security(tmp_path_factory: pytest.TempPathFactory) -> tuple[Authenticator, Authorizer]:
    folder = tmp_path_factory.mktemp("conf")
    for name in ("activemq-security.xml", "credentials-enc.properties"):
        path = EXAMPLES / name
        if not path.is_file():
            pytest.fail(f"{path} is missing: install Debian's activemq package (make system-deps)")
        (folder / name).write_bytes(path.read_bytes())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ACTIVEMQ_ENCRYPTION_PASSWORD", "activemq")
        config = load_config(folder / "activemq-security.xml")
    authenticator, authorizer = security_for(config, folder)
    assert authenticator is not None
    assert authorizer is not None
    return authenticator, authorizer


def _login(authenticator: Authenticator, user: str) -> Subject:
    return authenticator.authenticate(Credentials(user, PASSWORDS[user], None, "127.0.0.1"))


@pytest.mark.parametrize(("user", "kind", "name", "operation", "expected"), TABLE)
def test_every_entry_for_every_user(
    security: tuple[Authenticator, Authorizer],
    user: str,
    kind: DestinationType,
    name: str,
    operation: Operation,
    expected: bool,
) -> None:
    authenticator, authorizer = security
    subject = _login(authenticator, user)
    destination = Destination(kind, name)
    assert authorizer.allowed(subject, operation, destination) is expected
    assert authorizer.allowed(subject, operation, destination) is expected  # cached


def test_the_users_and_their_groups(security: tuple[Authenticator, Authorizer]) -> None:
    authenticator, _ = security
    assert _login(authenticator, "system") == Subject("system", frozenset({"users", "admins"}))
    assert _login(authenticator, "user") == Subject("user", frozenset({"users"}))
    assert _login(authenticator, "guest") == Subject("guest", frozenset({"guests"}))


@pytest.mark.parametrize(
    ("login", "passcode"),
    [("system", "wrong"), ("nobody", "manager"), ("system", None), (None, None), ("", "")],
)
def test_a_wrong_login_is_refused_in_activemqs_words(
    security: tuple[Authenticator, Authorizer], login: str | None, passcode: str | None
) -> None:
    authenticator, _ = security
    with pytest.raises(AuthenticationError) as refused:
        authenticator.authenticate(Credentials(login, passcode))
    assert str(refused.value) == f"User name [{login or ''}] or password is invalid."
    assert "manager" not in str(refused.value)
