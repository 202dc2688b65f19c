"""stomp.py against FerryMQ: every frame, ack mode, transaction, selector and durable subscription.

Where a test reproduces one of ActiveMQ's own STOMP tests (reference/activemq.md §8.2), its
docstring names it.
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from tests.interop.conftest import Clients


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_round_trip_in_each_version(clients: Clients, version: str) -> None:
    conn, listener = clients.connect(version)
    conn.subscribe("/queue/round", id="s1", ack="auto")
    conn.send("/queue/round", f"hello {version}", headers={"receipt": "r1"})
    listener.wait_receipt("r1")
    (message,) = listener.wait_messages(1)
    assert message.body == f"hello {version}"
    assert message.headers["destination"] == "/queue/round"
    assert message.headers["message-id"].startswith("ID:")


def test_persistent_header_round_trips(clients: Clients) -> None:
    """StompTest.testPersistentDefaultValue: absent unless the message was persistent."""
    conn, listener = clients.connect()
    conn.subscribe("/queue/p", id="s", ack="auto")
    conn.send("/queue/p", "plain")
    conn.send("/queue/p", "durable", headers={"persistent": "true"})
    plain, durable = listener.wait_messages(2)
    assert "persistent" not in plain.headers
    assert durable.headers["persistent"] == "true"


def test_custom_headers_and_binary_body_survive(clients: Clients) -> None:
    conn, listener = clients.connect(auto_decode=False)
    conn.subscribe("/queue/bin", id="s", ack="auto")
    body = bytes(range(256)) * 4
    conn.send(
        "/queue/bin",
        body,
        headers={"colour": "red:blue", "note": "line1\nline2", "correlation-id": "c-1"},
    )
    (message,) = listener.wait_messages(1)
    assert message.body == body
    assert message.headers["colour"] == "red:blue"
    assert message.headers["note"] == "line1\nline2"
    assert message.headers["correlation-id"] == "c-1"


def test_client_ack_is_cumulative(clients: Clients) -> None:
    conn, listener = clients.connect()
    for i in range(3):
        conn.send("/queue/cum", str(i), headers={"persistent": "true"})
    conn.subscribe("/queue/cum", id="s", ack="client")
    messages = listener.wait_messages(3)
    conn.ack(messages[2].headers["ack"], receipt="acked")
    listener.wait_receipt("acked")
    assert clients.depth("cum") == 0


def test_client_individual_ack_leaves_the_others(clients: Clients) -> None:
    conn, listener = clients.connect()
    for i in range(3):
        conn.send("/queue/ind", str(i), headers={"persistent": "true"})
    conn.subscribe("/queue/ind", id="s", ack="client-individual")
    messages = listener.wait_messages(3)
    conn.ack(messages[1].headers["ack"], receipt="acked")
    listener.wait_receipt("acked")
    assert clients.depth("ind") == 2


def test_unacked_message_is_redelivered_flagged_after_disconnect(clients: Clients) -> None:
    """StompTest.testSubscribeWithClientAck."""
    first, first_listener = clients.connect()
    first.subscribe("/queue/redeliver", id="s", ack="client")
    first.send("/queue/redeliver", "once", headers={"persistent": "true"})
    (message,) = first_listener.wait_messages(1)
    assert "redelivered" not in message.headers
    first.disconnect()
    second, second_listener = clients.connect()
    second.subscribe("/queue/redeliver", id="s", ack="client")
    (again,) = second_listener.wait_messages(1)
    assert again.headers["redelivered"] == "true"
    assert again.headers["message-id"] == message.headers["message-id"]
    assert again.headers["JMSXDeliveryCount"] == "2"


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_nack_moves_a_persistent_message_to_the_dlq(clients: Clients, version: str) -> None:
    """Stomp11Test.testNackMessage."""
    conn, listener = clients.connect(version)
    conn.send("/queue/nacked", "bad", headers={"persistent": "true"})
    conn.subscribe("/queue/nacked", id="s", ack="client")
    (message,) = listener.wait_messages(1)
    if version == "1.2":
        conn.nack(message.headers["ack"])
    else:
        conn.nack(message.headers["message-id"], "s")
    conn.subscribe("/queue/ActiveMQ.DLQ", id="dlq", ack="auto")
    dead = listener.wait_messages(2)[1]
    assert dead.headers["message-id"] == message.headers["message-id"]
    assert dead.headers["original-destination"] == "/queue/nacked"


def test_aborted_send_is_never_delivered(clients: Clients) -> None:
    """StompTest.testTransactionRollback."""
    conn, listener = clients.connect()
    conn.subscribe("/queue/tx", id="s", ack="auto")
    tx = conn.begin()
    conn.send("/queue/tx", "first", transaction=tx)
    conn.abort(tx)
    tx = conn.begin()
    conn.send("/queue/tx", "second", transaction=tx)
    conn.commit(tx)
    (message,) = listener.wait_messages(1)
    assert message.body == "second"
    assert listener.quiet_for(0.2) == []


def test_acks_must_be_resent_after_abort(clients: Clients) -> None:
    """Stomp12Test.testAckMessagesAfterTransactionAbort."""
    conn, listener = clients.connect()
    conn.send("/queue/txack", "m", headers={"persistent": "true"})
    conn.subscribe("/queue/txack", id="s", ack="client-individual")
    (message,) = listener.wait_messages(1)
    tx = conn.begin()
    conn.ack(message.headers["ack"], transaction=tx)
    conn.abort(tx)
    conn.send("/queue/sync", "x", headers={"receipt": "sync"})
    listener.wait_receipt("sync")
    assert clients.depth("txack") == 1
    tx = conn.begin()
    conn.ack(message.headers["ack"], transaction=tx)
    conn.commit(tx, headers={"receipt": "committed"})
    listener.wait_receipt("committed")
    assert clients.depth("txack") == 0


def test_selectors_on_string_and_numeric_headers(clients: Clients) -> None:
    conn, listener = clients.connect()
    conn.subscribe(
        "/queue/sel", id="s", ack="auto", headers={"selector": "colour = 'red' AND weight > 10"}
    )
    conn.send("/queue/sel", "light red", headers={"colour": "red", "weight": "9"})
    conn.send("/queue/sel", "heavy blue", headers={"colour": "blue", "weight": "20"})
    conn.send("/queue/sel", "heavy red", headers={"colour": "red", "weight": "12.5"})
    (message,) = listener.wait_messages(1)
    assert message.body == "heavy red"


def test_bad_selector_is_an_error_naming_the_position(clients: Clients) -> None:
    conn, listener = clients.connect()
    conn.subscribe("/queue/x", id="s", ack="auto", headers={"selector": "a >< 1"})
    listener.wait_for(lambda: bool(listener.errors), "an ERROR frame")
    text = listener.errors[0].headers["message"]
    assert "position" in text
    listener.wait_for(lambda: listener.disconnected, "the broker to close the connection")


def test_durable_subscription_survives_disconnect_and_unsubscribe_destroys_it(
    clients: Clients,
) -> None:
    """StompTest.testDurableUnsub."""
    conn, _ = clients.connect(client_id="durable-app")
    conn.subscribe(
        "/topic/news", id="d", ack="client", headers={"activemq.subscriptionName": "mine"}
    )
    conn.disconnect()
    producer, producer_listener = clients.connect()
    producer.send("/topic/news", "while away", headers={"persistent": "true", "receipt": "p"})
    producer_listener.wait_receipt("p")
    conn, listener = clients.connect(client_id="durable-app")
    conn.subscribe(
        "/topic/news", id="d", ack="client", headers={"activemq.subscriptionName": "mine"}
    )
    (message,) = listener.wait_messages(1)
    assert message.body == "while away"
    conn.ack(message.headers["ack"])
    conn.unsubscribe("d", headers={"activemq.subscriptionName": "mine", "receipt": "gone"})
    listener.wait_receipt("gone")
    conn.disconnect()
    producer.send("/topic/news", "nobody", headers={"persistent": "true"})
    conn, listener = clients.connect(client_id="durable-app")
    conn.subscribe(
        "/topic/news", id="d", ack="client", headers={"activemq.subscriptionName": "mine"}
    )
    assert listener.quiet_for(0.3) == []


def test_prefetch_of_one_holds_back_until_ack(clients: Clients) -> None:
    """StompTest.testPrefetchSizeOfOneClientAck."""
    conn, listener = clients.connect()
    for i in range(3):
        conn.send("/queue/pf", str(i))
    conn.subscribe(
        "/queue/pf", id="s", ack="client-individual", headers={"activemq.prefetchSize": "1"}
    )
    listener.wait_messages(1)
    assert listener.quiet_for(0.3) == []
    conn.ack(listener.messages[0].headers["ack"])
    listener.wait_messages(2)
    assert [m.body for m in listener.messages] == ["0", "1"]


def test_subscription_receipt_comes_before_messages(clients: Clients) -> None:
    """StompTest.testSubscriptionReceipts."""
    conn, listener = clients.connect()
    for i in range(5):
        conn.send("/queue/order", str(i), headers={"persistent": "true"})
    order: list[str] = []
    listener.on_receipt = lambda frame: order.append("RECEIPT")  # type: ignore[method-assign]
    listener.on_message = lambda frame: order.append("MESSAGE")  # type: ignore[method-assign]
    conn.subscribe("/queue/order", id="s", ack="auto", headers={"receipt": "sub"})
    deadline = time.monotonic() + 5
    while len(order) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert order[0] == "RECEIPT"
    assert order.count("MESSAGE") == 5


def test_temporary_queue_request_reply(clients: Clients) -> None:
    requester, requester_listener = clients.connect()
    responder, responder_listener = clients.connect()
    requester.subscribe("/temp-queue/replies", id="r", ack="auto")
    responder.subscribe("/queue/requests", id="q", ack="auto")
    requester.send("/queue/requests", "ping", headers={"reply-to": "/temp-queue/replies"})
    (request,) = responder_listener.wait_messages(1)
    reply_to = request.headers["reply-to"]
    assert reply_to.startswith("/remote-temp-queue/")
    responder.send(reply_to, "pong")
    (reply,) = requester_listener.wait_messages(1)
    assert reply.body == "pong"
    assert reply.headers["destination"] == "/temp-queue/replies"
    # stomp.py's disconnect() does not wait for its receipt; the broker sends it only after it
    # has forgotten the connection and deleted its temporary queue.
    requester.disconnect(receipt="bye")
    requester_listener.wait_receipt("bye")
    responder.send(reply_to, "late", headers={"receipt": "late"})
    responder_listener.wait_for(lambda: bool(responder_listener.errors), "an ERROR frame")


def test_higher_priority_first_and_expired_never(clients: Clients) -> None:
    conn, listener = clients.connect()
    past = str(int(time.time() * 1000) - 1000)
    conn.send("/queue/prio", "low", headers={"priority": "1"})
    conn.send("/queue/prio", "stale", headers={"expires": past, "persistent": "true"})
    conn.send("/queue/prio", "high", headers={"priority": "9"})
    conn.subscribe("/queue/prio", id="s", ack="auto")
    messages = listener.wait_messages(2)
    assert [m.body for m in messages] == ["high", "low"]
    conn.subscribe("/queue/ActiveMQ.DLQ", id="dlq", ack="auto")
    dead = listener.wait_messages(3)[2]
    assert dead.body == "stale"


def test_topic_fan_out_and_no_local(clients: Clients) -> None:
    publisher, publisher_listener = clients.connect()
    publisher.subscribe("/topic/chat", id="own", ack="auto", headers={"activemq.noLocal": "true"})
    listeners = []
    for i in range(3):
        conn, listener = clients.connect()
        conn.subscribe("/topic/chat", id=f"s{i}", ack="auto", headers={"receipt": f"sub{i}"})
        listener.wait_receipt(f"sub{i}")
        listeners.append(listener)
    publisher.send("/topic/chat", "hello all")
    for listener in listeners:
        assert [m.body for m in listener.wait_messages(1)] == ["hello all"]
    assert publisher_listener.quiet_for(0.2) == []


def test_wildcard_topic_subscription(clients: Clients) -> None:
    conn, listener = clients.connect()
    conn.subscribe("/topic/prices.>", id="s", ack="auto", headers={"receipt": "sub"})
    listener.wait_receipt("sub")
    for name in ("prices.gold", "prices.stock.ibm", "weather.rome"):
        conn.send(f"/topic/{name}", name)
    messages = listener.wait_messages(2)
    assert sorted(m.headers["destination"] for m in messages) == [
        "/topic/prices.gold",
        "/topic/prices.stock.ibm",
    ]


def test_consumer_advisory_is_json(clients: Clients) -> None:
    """StompAdvisoryTest.testConsumerAdvisory."""
    watcher, listener = clients.connect()
    watcher.subscribe(
        "/topic/ActiveMQ.Advisory.Consumer.>", id="adv", ack="auto", headers={"receipt": "w"}
    )
    listener.wait_receipt("w")
    other, _ = clients.connect()
    other.subscribe("/queue/watched", id="s", ack="auto")
    message = next(
        m
        for m in listener.wait_messages(1)
        if m.headers["destination"] == "/topic/ActiveMQ.Advisory.Consumer.Queue.watched"
    )
    assert message.body.startswith('{"ConsumerInfo":')
    assert json.loads(message.body)["ConsumerInfo"]["destination"] == "queue://watched"


def test_browser_sees_messages_without_consuming(clients: Clients) -> None:
    conn, listener = clients.connect()
    for i in range(3):
        conn.send("/queue/browse", str(i), headers={"persistent": "true", "receipt": f"r{i}"})
    listener.wait_receipt("r2")
    conn.subscribe("/queue/browse", id="b", ack="auto", headers={"browser": "true"})
    messages = listener.wait_messages(4)
    assert [m.body for m in messages[:3]] == ["0", "1", "2"]
    assert messages[3].headers["browser"] == "end"
    assert clients.depth("browse") == 3


def test_exclusive_consumer_and_message_groups(clients: Clients) -> None:
    conn, listener = clients.connect()
    conn.subscribe("/queue/ex", id="a", ack="auto", headers={"activemq.exclusive": "true"})
    other, other_listener = clients.connect()
    other.subscribe("/queue/ex", id="b", ack="auto", headers={"receipt": "b"})
    other_listener.wait_receipt("b")
    for i in range(4):
        conn.send("/queue/ex", str(i))
    assert len(listener.wait_messages(4)) == 4
    assert other_listener.messages == []
    g1, l1 = clients.connect()
    g2, l2 = clients.connect()
    g1.subscribe("/queue/groups", id="s", ack="auto", headers={"receipt": "1"})
    g2.subscribe("/queue/groups", id="s", ack="auto", headers={"receipt": "2"})
    l1.wait_receipt("1")
    l2.wait_receipt("2")
    for i in range(10):
        g1.send("/queue/groups", str(i), headers={"JMSXGroupID": f"G{i % 2}"})
    l1.wait_for(lambda: len(l1.messages) + len(l2.messages) == 10, "10 messages in all")
    groups_1 = {m.headers["JMSXGroupID"] for m in l1.messages}
    groups_2 = {m.headers["JMSXGroupID"] for m in l2.messages}
    assert groups_1.isdisjoint(groups_2)


def test_heart_beats_keep_an_idle_connection_open(clients: Clients) -> None:
    """Stomp11Test.testHeartbeatsKeepsConnectionOpen."""
    conn, listener = clients.connect(heartbeats=(200, 200))
    time.sleep(1.0)
    assert conn.is_connected()
    conn.send("/queue/hb", "still here", headers={"receipt": "alive"})
    listener.wait_receipt("alive")


def test_silent_client_is_dropped_and_its_messages_go_to_others(clients: Clients) -> None:
    """Stomp11Test.testHeartbeatsDropsIdleConnection, plus redelivery of its unacked messages."""
    with socket.create_connection(("127.0.0.1", clients.broker.port), timeout=5) as raw:
        raw.sendall(
            b"CONNECT\naccept-version:1.2\nhost:localhost\nheart-beat:300,0\n\n\x00"
            b"SUBSCRIBE\nid:0\ndestination:/queue/hb-drop\nack:client\n\n\x00"
        )
        producer, producer_listener = clients.connect()
        producer.send("/queue/hb-drop", "held", headers={"persistent": "true", "receipt": "s"})
        producer_listener.wait_receipt("s")
        received = b""
        deadline = time.monotonic() + 5
        while b"held" not in received and time.monotonic() < deadline:
            received += raw.recv(4096)
        assert b"held" in received
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < 5:
            if raw.recv(4096) == b"":
                closed = True
                break
        assert closed
        assert time.monotonic() - started >= 0.25
    producer.subscribe("/queue/hb-drop", id="s", ack="auto")
    (again,) = producer_listener.wait_messages(1)
    assert again.body == "held"
    assert again.headers["redelivered"] == "true"


def test_disconnect_receipt(clients: Clients) -> None:
    conn, listener = clients.connect()
    conn.disconnect(receipt="bye")
    listener.wait_receipt("bye")


def test_unknown_destination_prefix_is_an_error(clients: Clients) -> None:
    conn, listener = clients.connect()
    conn.send("/nowhere/x", "lost?")
    listener.wait_for(lambda: bool(listener.errors), "an ERROR frame")
    assert "/nowhere/x" in listener.errors[0].headers["message"]


def test_browser_applies_its_selector(clients: Clients) -> None:
    conn, listener = clients.connect()
    for colour in ("red", "blue", "red"):
        conn.send("/queue/browse-sel", colour, headers={"colour": colour, "receipt": colour})
    listener.wait_receipt("blue")
    conn.subscribe(
        "/queue/browse-sel",
        id="b",
        ack="auto",
        headers={"browser": "true", "selector": "colour = 'red'"},
    )
    messages = listener.wait_messages(3)
    assert [m.body for m in messages[:2]] == ["red", "red"]
    assert messages[2].headers["browser"] == "end"


def test_finished_browser_is_unsubscribed_and_its_id_reused(clients: Clients) -> None:
    """Stomp12Test.testQueueBrowerSubscription."""
    conn, listener = clients.connect()
    conn.send("/queue/browse-again", "m", headers={"receipt": "sent"})
    listener.wait_receipt("sent")
    for round_number in range(2):
        conn.subscribe("/queue/browse-again", id="12345", headers={"browser": "true"})
        end = listener.wait_messages(2 * (round_number + 1))[-1]
        assert end.headers["browser"] == "end"
        conn.unsubscribe("12345", headers={"receipt": f"unsub-{round_number}"})
        listener.wait_receipt(f"unsub-{round_number}")
    assert conn.is_connected()
