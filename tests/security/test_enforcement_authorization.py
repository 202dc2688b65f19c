"""Authorization checked once, in the core (issue 16, item 2), against a real broker over real
sockets: a forbidden SEND, SUBSCRIBE, browse, durable subscription, destination creation and
temporary destination are each an ERROR naming the user, the operation and the destination
(with the frame's receipt id), nothing is stored, and the connection's other work goes on; a
forbidden SEND inside a transaction makes its COMMIT fail, so it is never half committed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.core.destination import Destination
from ferrymq.security.api import Operation
from ferrymq.testing import BrokerThread
from tests.fuzz.wire import RawConnection, Reply, connect_frame, frame
from tests.security.test_enforcement_authentication import Grants, secured, security_xml

ENTRIES = """
<authorizationEntry queue="ORDERS" read="users,admins" write="users,admins" admin="admins"/>
<authorizationEntry queue="NEW" write="users,admins" admin="admins"/>
<authorizationEntry queue="SECRET" read="admins" write="admins" admin="admins"/>
<authorizationEntry topic="NEWS" read="users" write="users" admin="users"/>
"""
TEMP = 'read="users" write="users" admin="users"'
PASSWORDS = {"system": "manager", "user": "password", "guest": "password"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = secured(tmp_path, security_xml(ENTRIES, TEMP))
    try:
        yield thread
    finally:
        thread.stop()


def login(broker: BrokerThread, user: str, *headers: tuple[str, str]) -> RawConnection:
    raw = RawConnection(broker.port)
    raw.send(connect_frame("1.2", ("login", user), ("passcode", PASSWORDS[user]), *headers))
    raw.expect("CONNECTED")
    raw.escaped = True
    return raw


def request(raw: RawConnection, command: str, receipt: str, *headers: tuple[str, str]) -> Reply:
    """A frame with a receipt, and the broker's answer to it (RECEIPT or ERROR)."""
    raw.send(
        frame(command, *headers, ("receipt", receipt), body=b"x" if command == "SEND" else b"")
    )
    reply = raw.read_frame()
    assert reply is not None, f"the broker closed the connection after {command}"
    assert reply.headers.get("receipt-id") == receipt, reply
    return reply


def send(raw: RawConnection, receipt: str, destination: str, *extra: tuple[str, str]) -> Reply:
    return request(raw, "SEND", receipt, ("destination", destination), *extra)


def depth(broker: BrokerThread, name: str) -> int | None:
    """The queue's depth, None when it does not exist."""

    def read() -> int | None:
        assert broker.broker is not None
        for statistics in broker.broker.service.region.destination_statistics():
            if statistics.destination == Destination.queue(name):
                return statistics.depth
        return None

    return broker.call(read)


def ok(reply: Reply) -> None:
    assert reply.command == "RECEIPT", reply


def refused(reply: Reply, text: str) -> None:
    assert (reply.command, reply.message) == ("ERROR", text), reply


def test_a_forbidden_send_stores_nothing_and_the_connection_goes_on(broker: BrokerThread) -> None:
    with login(broker, "system") as admin:
        ok(send(admin, "r0", "/queue/ORDERS"))
    with login(broker, "user") as user:
        refused(
            send(user, "r1", "/queue/SECRET"),
            "User user is not authorized to write to: queue://SECRET",
        )
        ok(send(user, "r2", "/queue/ORDERS"))
        refused(
            send(user, "r3", "/queue/ORDERS,/queue/SECRET"),  # a composite: all or nothing
            "User user is not authorized to write to: queue://SECRET",
        )
    assert (depth(broker, "SECRET"), depth(broker, "ORDERS")) == (None, 2)


def test_creating_a_destination_needs_admin(broker: BrokerThread) -> None:
    with login(broker, "user") as user:
        refused(
            send(user, "r1", "/queue/NEW"), "User user is not authorized to create: queue://NEW"
        )
        with login(broker, "system") as admin:
            ok(send(admin, "r2", "/queue/NEW"))
        ok(send(user, "r3", "/queue/NEW"))  # it exists now: writing is enough
    assert depth(broker, "NEW") == 2


def test_a_forbidden_send_in_a_transaction_fails_its_commit(broker: BrokerThread) -> None:
    with login(broker, "system") as admin:
        ok(send(admin, "r0", "/queue/ORDERS"))
    with login(broker, "user") as user:
        ok(request(user, "BEGIN", "b1", ("transaction", "tx1")))
        ok(send(user, "s1", "/queue/ORDERS", ("transaction", "tx1")))
        refused(
            send(user, "s2", "/queue/SECRET", ("transaction", "tx1")),
            "User user is not authorized to write to: queue://SECRET",
        )
        ok(send(user, "s3", "/queue/ORDERS", ("transaction", "tx1")))
        refused(
            request(user, "COMMIT", "c1", ("transaction", "tx1")),
            "Transaction tx1 was rolled back: a send in it was refused "
            "(User user is not authorized to write to: queue://SECRET)",
        )
        assert (depth(broker, "ORDERS"), depth(broker, "SECRET")) == (1, None)
        # The transaction is gone; a new one with allowed sends commits.
        ok(request(user, "BEGIN", "b2", ("transaction", "tx2")))
        ok(send(user, "s4", "/queue/ORDERS", ("transaction", "tx2")))
        ok(request(user, "COMMIT", "c2", ("transaction", "tx2")))
    assert depth(broker, "ORDERS") == 2


def test_a_forbidden_subscribe_and_browse(broker: BrokerThread) -> None:
    with login(broker, "system") as admin:
        ok(send(admin, "r0", "/queue/SECRET"))
        ok(send(admin, "r1", "/queue/ORDERS"))
    with login(broker, "user") as user:
        refused(
            request(user, "SUBSCRIBE", "r2", ("destination", "/queue/SECRET"), ("id", "s1")),
            "User user is not authorized to read from: queue://SECRET",
        )
        refused(
            request(
                user,
                "SUBSCRIBE",
                "r3",
                ("destination", "/queue/SECRET"),
                ("id", "b1"),
                ("browser", "true"),
            ),
            "User user is not authorized to read from: queue://SECRET",
        )
        # The refused id is free, and an allowed subscription gets its message.
        ok(request(user, "SUBSCRIBE", "r4", ("destination", "/queue/ORDERS"), ("id", "s1")))
        message = user.expect("MESSAGE")
        assert message.headers["destination"] == "/queue/ORDERS"
    assert depth(broker, "SECRET") == 1


def test_a_forbidden_durable_subscription_is_not_kept(broker: BrokerThread) -> None:
    durable = [("destination", "/topic/NEWS"), ("id", "d1"), ("activemq.subscriptionName", "d")]
    with login(broker, "guest", ("client-id", "guest-app")) as guest:
        refused(
            request(guest, "SUBSCRIBE", "r1", *durable),
            "User guest is not authorized to read from: topic://NEWS",
        )
    with login(broker, "user", ("client-id", "user-app")) as user:
        ok(request(user, "SUBSCRIBE", "r2", *durable))

    def durables() -> list[str]:
        assert broker.broker is not None
        return [s.key for s in broker.broker.service.region.subscriptions.durables()]

    assert broker.call(durables) == ["durable:user-app:d"]


def test_temporary_destinations_follow_the_temp_entry(broker: BrokerThread) -> None:
    with login(broker, "guest") as guest:
        reply = send(guest, "r1", "/temp-queue/replies")
        assert reply.command == "ERROR"
        assert reply.message.startswith("User guest is not authorized to create: temp-queue://")
    with login(broker, "user") as user:
        ok(request(user, "SUBSCRIBE", "r2", ("destination", "/temp-queue/replies"), ("id", "t")))
        ok(send(user, "r3", "/temp-queue/replies"))
        assert user.expect("MESSAGE").body == b"x"


def test_allowed_decisions_are_cached_per_connection(broker: BrokerThread) -> None:
    """An application's own authorizer (``BrokerSecurity.use``) is asked once per connection,
    operation and destination: the hot path of a producer is a dict lookup."""
    grants = Grants({(op, "queue://ORDERS"): {"users"} for op in Operation})

    def use() -> None:
        assert broker.broker is not None
        security = broker.broker.service.security
        security.use(security.authenticator, grants)

    broker.call(use)
    with login(broker, "user") as user:
        ok(send(user, "r1", "/queue/ORDERS"))
        asked = grants.asked
        for n in range(20):
            ok(send(user, f"r{n + 2}", "/queue/ORDERS"))
        assert grants.asked == asked == 2  # WRITE, and ADMIN to create it
    with login(broker, "user") as user:  # another connection asks again, once each
        ok(send(user, "r1", "/queue/ORDERS"))
        ok(send(user, "r2", "/queue/ORDERS"))
        assert grants.asked == 4
