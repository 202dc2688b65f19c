"""Wildcards and temporary destinations do not get around authorization (issue 16, review
findings 1 and 8), against a real broker over real sockets: a pattern is granted only what every
destination it could reach is granted, each destination a wildcard reaches is checked again
(ActiveMQ's AuthorizationDestinationFilter), and another connection's temporary destination
cannot be consumed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.security.api import Operation
from ferrymq.testing import BrokerThread
from tests.fuzz.wire import RawConnection, Reply, frame
from tests.security.test_enforcement_authentication import Grants, secured, security_xml
from tests.security.test_enforcement_authorization import depth, login, ok, refused, send

ENTRIES = """
<authorizationEntry queue=">" read="admins" write="admins" admin="admins"/>
<authorizationEntry queue="ORDERS" read="users" write="users" admin="users"/>
<authorizationEntry queue="USERS.>" read="users" write="users" admin="users"/>
<authorizationEntry topic=">" read="admins" write="admins" admin="admins"/>
<authorizationEntry topic="USERS.>" read="users" write="users" admin="users"/>
<authorizationEntry topic="ActiveMQ.Advisory.>" read="*" write="*" admin="*"/>
"""
TEMP = 'read="users,admins" write="users,admins" admin="users,admins"'
QUIET_S = 0.3
"""How long a consumer listens for a message that must not come (after a marker that must)."""
EARLY: dict[int, list[str]] = {}
"""Destinations of the messages a connection got while it waited for a receipt (by id(raw))."""


@pytest.fixture(autouse=True)
def forget_early() -> Iterator[None]:
    """``EARLY`` is keyed by connection object ids, which a later test may reuse."""
    EARLY.clear()
    yield
    EARLY.clear()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = secured(tmp_path, security_xml(ENTRIES, TEMP))
    try:
        yield thread
    finally:
        thread.stop()


def answer(raw: RawConnection, command: str, receipt: str, *headers: tuple[str, str]) -> Reply:
    """A frame with a receipt and the broker's answer to it; the messages (advisories left
    out) the connection got before the answer are kept for ``heard``."""
    body = b"x" if command == "SEND" else b""
    raw.send(frame(command, *headers, ("receipt", receipt), body=body))
    for _ in range(50):
        reply = raw.read_frame()
        assert reply is not None, f"the broker closed the connection after {command}"
        if reply.command != "MESSAGE":
            assert reply.headers.get("receipt-id") == receipt, reply
            return reply
        keep(EARLY.setdefault(id(raw), []), reply)
    raise AssertionError(f"no answer to {command}")


def keep(seen: list[str], message: Reply) -> None:
    destination = message.headers["destination"]
    if not destination.startswith("/topic/ActiveMQ.Advisory."):
        seen.append(destination)


def subscribe(raw: RawConnection, receipt: str, destination: str, sub_id: str) -> Reply:
    return answer(raw, "SUBSCRIBE", receipt, ("destination", destination), ("id", sub_id))


def browse(raw: RawConnection, receipt: str, destination: str) -> Reply:
    headers = (("destination", destination), ("id", receipt), ("browser", "true"))
    return answer(raw, "SUBSCRIBE", receipt, *headers)


def quiet(raw: RawConnection) -> Reply | None:
    """The next frame within ``QUIET_S``, None if there is none."""
    try:
        return raw.read_frame(timeout_s=QUIET_S)
    except TimeoutError:
        return None


def publish(broker: BrokerThread, user: str, *destinations: str) -> None:
    """One message to each destination, sent by ``user`` on a connection of its own; the body
    names the destination, so a consumer can tell where what it got came from."""
    with login(broker, user) as raw:
        for n, destination in enumerate(destinations):
            ok(send(raw, f"p{n}", destination))


def heard(raw: RawConnection, marker: str) -> list[str]:
    """The destinations of the messages ``raw`` gets up to the one from ``marker`` (sent last),
    then of any that follow within ``QUIET_S``."""
    seen = EARLY.pop(id(raw), [])
    for _ in range(50):
        if seen and seen[-1] == marker:
            break
        keep(seen, raw.expect("MESSAGE"))
    while (late := quiet(raw)) is not None:
        keep(seen, late)
    return seen


# -- the reviewer's exploit: a user with grants on ORDERS and USERS.> only --------------------


def test_a_wildcard_send_does_not_reach_what_its_user_may_not_write(broker: BrokerThread) -> None:
    publish(broker, "system", "/queue/SECRET", "/queue/ORDERS", "/queue/USERS.A")
    with login(broker, "user") as user:
        for n, pattern in enumerate(("/queue/*", "/queue/>", "/queue/*.A")):
            name = pattern.removeprefix("/queue/")
            refused(
                send(user, f"r{n}", pattern),
                f"User user is not authorized to write to: queue://{name}",
            )
        refused(send(user, "t", "/topic/>"), "User user is not authorized to write to: topic://>")
        ok(send(user, "r9", "/queue/USERS.*"))  # every USERS.x is the user's
    assert [depth(broker, n) for n in ("SECRET", "ORDERS", "USERS.A")] == [1, 1, 2]


def test_a_wildcard_subscription_does_not_read_what_its_user_may_not(
    broker: BrokerThread,
) -> None:
    publish(broker, "system", "/queue/SECRET", "/queue/USERS.A")
    with login(broker, "user") as user:
        refused(
            subscribe(user, "r1", "/queue/*", "s1"),
            "User user is not authorized to read from: queue://*",
        )
        refused(
            subscribe(user, "r2", "/queue/>", "s1"),
            "User user is not authorized to read from: queue://>",
        )
        refused(
            subscribe(user, "r3", "/topic/*", "s1"),
            "User user is not authorized to read from: topic://*",
        )
        ok(subscribe(user, "r4", "/queue/USERS.*", "s1"))
        ok(subscribe(user, "r5", "/topic/USERS.>", "s2"))
        publish(broker, "system", "/queue/SECRET", "/topic/SECRET", "/queue/USERS.LATER")
        publish(broker, "system", "/topic/USERS.NEWS", "/topic/USERS.LATE.R")
        seen = heard(user, "/topic/USERS.LATE.R")
    assert sorted(seen) == [
        "/queue/USERS.A",
        "/queue/USERS.LATER",  # created after the subscription
        "/topic/USERS.LATE.R",
        "/topic/USERS.NEWS",
    ]
    assert depth(broker, "SECRET") == 2


def test_an_admins_wildcard_reaches_everything_but_others_temporary_queues(
    broker: BrokerThread,
) -> None:
    publish(broker, "system", "/queue/SECRET", "/queue/ORDERS")
    with login(broker, "user") as user, login(broker, "system") as admin:
        ok(send(user, "t1", "/temp-queue/replies"))  # creates the user's temporary queue
        ok(subscribe(admin, "r1", "/queue/>", "all"))
        ok(subscribe(admin, "r2", "/topic/>", "topics"))
        ok(send(user, "t2", "/temp-queue/replies"))
        ok(send(user, "t3", "/temp-topic/news"))
        # Every queue once more, not the temporary one:
        ok(answer(admin, "SEND", "r3", ("destination", "/queue/>")))
        publish(broker, "system", "/queue/LATER", "/topic/MARK")
        seen = heard(admin, "/topic/MARK")
        ok(subscribe(user, "t4", "/temp-queue/replies", "mine"))
        own = [user.expect("MESSAGE").headers["destination"] for _ in range(2)]
    assert sorted(seen) == sorted(
        ["/queue/SECRET", "/queue/ORDERS"] * 2 + ["/queue/LATER", "/topic/MARK"]
    )
    assert own == ["/temp-queue/replies"] * 2  # both the user sent there, none taken


# -- each destination a wildcard reaches is checked: an application's own authorizer ----------


def grants_for_patterns() -> Grants:
    """An authorizer granting ``users`` the patterns queue://* and topic://* but, of the
    destinations they reach, only the OPEN ones (the map above never grants such a pattern)."""
    every = set(Operation)
    grants: dict[tuple[Operation, str], set[str]] = {}
    for kind in ("queue", "topic"):
        for name in ("SECRET", "OPEN", "OPEN2", "SECRET2", "*", ">", "MARK"):
            for op in every:
                grants[(op, f"{kind}://{name}")] = {"admins"}
        for name in ("*", "OPEN", "OPEN2", "MARK"):
            for op in every:
                grants[(op, f"{kind}://{name}")].add("users")
    return Grants(grants)


def use(broker: BrokerThread, grants: Grants) -> None:
    def install() -> None:
        assert broker.broker is not None
        security = broker.broker.service.security
        security.use(security.authenticator, grants)

    broker.call(install)


def test_a_wildcard_consumer_joins_only_what_it_may_read(broker: BrokerThread) -> None:
    use(broker, grants_for_patterns())
    publish(broker, "system", "/queue/SECRET", "/queue/OPEN", "/topic/SECRET")
    with login(broker, "user") as user:
        ok(subscribe(user, "r1", "/queue/*", "q"))
        ok(subscribe(user, "r2", "/topic/*", "t"))
        publish(broker, "system", "/topic/SECRET", "/topic/OPEN", "/queue/SECRET2", "/queue/OPEN2")
        publish(broker, "system", "/topic/SECRET2", "/topic/OPEN2", "/topic/MARK")
        seen = heard(user, "/topic/MARK")
    assert sorted(seen) == [
        "/queue/OPEN",
        "/queue/OPEN2",  # created later, and readable
        "/topic/MARK",
        "/topic/OPEN",
        "/topic/OPEN2",
    ]
    assert (depth(broker, "SECRET"), depth(broker, "SECRET2")) == (1, 1)


def test_a_wildcard_send_is_refused_whole_if_it_reaches_what_it_may_not_write(
    broker: BrokerThread,
) -> None:
    use(broker, grants_for_patterns())
    publish(broker, "system", "/queue/SECRET", "/queue/OPEN")
    with login(broker, "user") as user:
        refused(
            send(user, "r1", "/queue/*"), "User user is not authorized to write to: queue://SECRET"
        )
    with login(broker, "system") as admin:
        ok(send(admin, "r2", "/queue/*"))
    assert (depth(broker, "SECRET"), depth(broker, "OPEN")) == (2, 2)


# -- temporary destinations -------------------------------------------------------------------


def test_another_connections_temporary_queue_cannot_be_consumed(broker: BrokerThread) -> None:
    with login(broker, "user") as requester, login(broker, "user") as thief:
        ok(subscribe(requester, "r1", "/temp-queue/replies", "replies"))
        ok(send(requester, "r2", "/queue/ORDERS", ("reply-to", "/temp-queue/replies")))
        ok(subscribe(thief, "t1", "/queue/ORDERS", "orders"))
        reply_to = thief.expect("MESSAGE").headers["reply-to"]
        assert reply_to.startswith("/remote-temp-queue/")
        answer = subscribe(thief, "t2", reply_to, "steal")
        assert answer.command == "ERROR", answer
        assert answer.message.startswith("Cannot subscribe to remote temporary destination: ")
        peek = browse(thief, "t4", reply_to)  # nor may it look at what waits there
        assert peek.command == "ERROR", peek
        assert peek.message.startswith("Cannot subscribe to remote temporary destination: ")
        ok(send(thief, "t3", reply_to))  # replying is what a reply-to is for
        assert requester.expect("MESSAGE").body == b"x"
        assert quiet(thief) is None
