"""ServerSession: the broker side's state table, validation per version, the frames it writes."""

from __future__ import annotations

import pytest

from ferrymq.stomp import (
    HEARTBEAT,
    Abort,
    Ack,
    Begin,
    Commit,
    Connect,
    Disconnect,
    Frame,
    FrameParser,
    LocalProtocolError,
    Nack,
    RemoteProtocolError,
    Send,
    ServerEvent,
    ServerSession,
    State,
    Subscribe,
    Unsubscribe,
)


def connect_bytes(version: str | None, extra: str = "") -> bytes:
    accept = "" if version is None else f"accept-version:{version}\n"
    return f"CONNECT\n{accept}host:localhost\n{extra}\n\0".encode()


def session(version: str = "1.2") -> ServerSession:
    s = ServerSession()
    (event,) = s.receive_data(connect_bytes(None if version == "1.0" else version))
    assert isinstance(event, Connect)
    assert s.version == version
    return s


def refused(s: ServerSession, data: bytes) -> RemoteProtocolError:
    with pytest.raises(RemoteProtocolError) as info:
        s.receive_data(data)
    return info.value


def parse(data: bytes, version: str) -> Frame:
    parser = FrameParser()
    parser.version = version
    (frame,) = parser.feed(data)
    assert isinstance(frame, Frame)
    return frame


# ---- connecting ----


def test_connect_event() -> None:
    s = ServerSession()
    data = connect_bytes(
        "1.0,1.1", "login:system\npasscode:manager\nclient-id:c1\nheart-beat:0,1000\nx:y\n"
    )
    (event,) = s.receive_data(data)
    assert event == Connect(
        version="1.1",
        login="system",
        passcode="manager",
        client_id="c1",
        host="localhost",
        heart_beat=(0, 1000),
        request_id=None,
        headers=event.headers,  # type: ignore[union-attr]
        receipt=None,
    )
    assert isinstance(event, Connect)
    assert event.headers["x"] == "y"
    assert "manager" not in repr(event)
    assert s.state is State.CONNECTED


def test_stomp_command_connects_too() -> None:
    s = ServerSession()
    (event,) = s.receive_data(b"STOMP\naccept-version:1.2\nhost:h\n\n\0")
    assert isinstance(event, Connect)
    assert event.version == "1.2"


@pytest.mark.parametrize("command", [b"SEND", b"SUBSCRIBE", b"DISCONNECT", b"ACK"])
def test_anything_before_connect_is_not_connected(command: bytes) -> None:
    error = refused(ServerSession(), command + b"\ndestination:/q\nreceipt:9\n\n\0")
    assert (error.message, error.receipt_id, error.fatal) == ("Not connected.", "9", True)


def test_second_connect_is_a_non_fatal_error_and_later_frames_survive() -> None:
    s = session()
    error = refused(s, connect_bytes("1.2") + b"SEND\ndestination:/q\n\nx\0")
    assert (error.message, error.fatal) == ("Already connected.", False)
    assert s.receive_data(b"") == [Send("/q", {"destination": "/q"}, b"x", None, None)]


def test_bad_version_is_fatal_and_session_stays_dead() -> None:
    s = ServerSession()
    error = refused(s, connect_bytes("2.0", "receipt:r1\n"))
    assert error.fatal
    assert error.receipt_id == "r1"
    assert error.message.startswith("Invalid Protocol version[2.0]")
    with pytest.raises(RemoteProtocolError, match="Invalid Protocol version"):
        s.receive_data(b"")


@pytest.mark.parametrize("value", ["0", "a,b", "1,2,3"])
def test_bad_heart_beat_is_fatal(value: str) -> None:
    error = refused(ServerSession(), connect_bytes("1.1", f"heart-beat:{value}\n"))
    assert error.fatal
    assert "heart-beat" in error.message


def test_connect_switches_escaping_for_pipelined_frames() -> None:
    s = ServerSession()
    events = s.receive_data(connect_bytes("1.2") + b"SEND\ndestination:/q\nk: a\\cb\n\n\0")
    assert events[1] == Send("/q", {"destination": "/q", "k": " a:b"}, b"", None, None)


def test_connect_in_1_0_keeps_trimming_and_no_escapes() -> None:
    s = ServerSession()
    events = s.receive_data(connect_bytes(None) + b"SEND\ndestination: /q \nk:a\\cb\n\n\0")
    assert events[1] == Send("/q", {"destination": "/q", "k": "a\\cb"}, b"", None, None)


def test_connected_frame_echoes_request_id() -> None:
    s = ServerSession()
    s.receive_data(connect_bytes("1.1", "request-id:42\n"))
    frame = parse(
        s.connected(session="ID:c1", server="FerryMQ/0.1", heart_beat=(0, 500), headers={"x": "1"}),
        "1.1",
    )
    assert frame.command == "CONNECTED"
    assert frame.headers == {
        "version": "1.1",
        "session": "ID:c1",
        "server": "FerryMQ/0.1",
        "heart-beat": "0,500",
        "response-id": "42",
        "receipt-id": "42",
        "x": "1",
    }


def test_connected_frame_echoes_legacy_receipt_and_is_not_escaped() -> None:
    s = ServerSession()
    s.receive_data(connect_bytes("1.2", "receipt:a:b\n"))
    data = s.connected(session="ID:x:1")
    assert b"session:ID:x:1\n" in data
    assert b"response-id:a:b\nreceipt-id:a:b\n" in data


def test_connected_misuse() -> None:
    with pytest.raises(LocalProtocolError):
        ServerSession().connected()
    with pytest.raises(LocalProtocolError, match="not negotiated"):
        session("1.2").connected(version="1.1")


# ---- frames after CONNECT, per version ----


def test_send() -> None:
    s = session()
    (event,) = s.receive_data(
        b"SEND\ndestination:/queue/a\ntransaction:tx1\nreceipt:r\npersistent:true\n\nbody\0"
    )
    assert event == Send(
        "/queue/a",
        {"destination": "/queue/a", "transaction": "tx1", "receipt": "r", "persistent": "true"},
        b"body",
        "tx1",
        "r",
    )


@pytest.mark.parametrize("data", [b"SEND\nreceipt:r\n\n\0", b"SEND\ndestination:\nreceipt:r\n\n\0"])
def test_send_without_destination(data: bytes) -> None:
    error = refused(session(), data)
    assert (error.message, error.receipt_id, error.fatal) == (
        "SEND received without a Destination specified!",
        "r",
        True,
    )


def test_subscribe() -> None:
    (event,) = session().receive_data(
        b"SUBSCRIBE\nid:s1\ndestination:/topic/a\nack:client-individual\nselector:x > 1\n\n\0"
    )
    assert isinstance(event, Subscribe)
    assert (event.id, event.destination, event.ack, event.selector) == (
        "s1",
        "/topic/a",
        "client-individual",
        "x > 1",
    )


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_subscribe_needs_id_in_1_1_and_later(version: str) -> None:
    error = refused(session(version), b"SUBSCRIBE\ndestination:/q\nreceipt:r\n\n\0")
    assert (error.message, error.receipt_id) == (
        "SUBSCRIBE received without a subscription id!",
        "r",
    )


def test_subscribe_without_id_in_1_0() -> None:
    (event,) = session("1.0").receive_data(b"SUBSCRIBE\ndestination:/q\n\n\0")
    assert isinstance(event, Subscribe)
    assert (event.id, event.ack) == (None, "auto")


@pytest.mark.parametrize("dest", [b"", b"destination:\n"])
def test_subscribe_needs_destination(dest: bytes) -> None:
    error = refused(session(), b"SUBSCRIBE\nid:1\n" + dest + b"\n\0")
    assert "Destination" in error.message


def test_subscribe_bad_ack_mode() -> None:
    error = refused(session(), b"SUBSCRIBE\nid:1\ndestination:/q\nack:sometimes\n\n\0")
    assert error.message.startswith("Invalid ack mode [sometimes]")


def test_browser_needs_1_1() -> None:
    error = refused(session("1.0"), b"SUBSCRIBE\ndestination:/q\nbrowser:true\n\n\0")
    assert error.message == "Queue Browser feature only valid for Stomp v1.1+ clients!"


def test_unsubscribe() -> None:
    s = session()
    (event,) = s.receive_data(b"UNSUBSCRIBE\nid:1\nactivemq.subscriptionName:d\nreceipt:r\n\n\0")
    assert event == Unsubscribe("1", None, "d", "r")
    error = refused(session("1.1"), b"UNSUBSCRIBE\ndestination:/q\n\n\0")
    assert error.message == "UNSUBSCRIBE received without a subscription id!"


def test_unsubscribe_in_1_0_by_destination() -> None:
    s = session("1.0")
    assert s.receive_data(b"UNSUBSCRIBE\ndestination:/q\n\n\0") == [
        Unsubscribe(None, "/q", None, None)
    ]
    error = refused(s, b"UNSUBSCRIBE\n\n\0")
    assert error.message.startswith("Must specify the subscriptionId or the destination")


def test_ack_1_2_needs_id() -> None:
    s = session("1.2")
    assert s.receive_data(b"ACK\nid:a1\ntransaction:t\n\n\0") == [Ack("a1", None, None, "t", None)]
    error = refused(s, b"ACK\nmessage-id:m\nsubscription:s\nreceipt:r\n\n\0")
    assert (error.message, error.receipt_id) == (
        "ACK received without a ack id for acknowledge!",
        "r",
    )


def test_nack_1_2_needs_id() -> None:
    error = refused(session("1.2"), b"NACK\nmessage-id:m\n\n\0")
    assert error.message == "NACK received without an ack header to acknowledge!"


@pytest.mark.parametrize("command", [b"ACK", b"NACK"])
def test_ack_1_1_needs_message_id_and_subscription(command: bytes) -> None:
    s = session("1.1")
    kind = Ack if command == b"ACK" else Nack
    assert s.receive_data(command + b"\nmessage-id:m\nsubscription:s\n\n\0") == [
        kind(None, "m", "s", None, None)
    ]
    name = command.decode()
    no_sub = refused(session("1.1"), command + b"\nmessage-id:m\n\n\0")
    assert no_sub.message == f"{name} received without a subscription id for acknowledge!"
    no_id = refused(session("1.1"), command + b"\nsubscription:s\n\n\0")
    assert no_id.message == f"{name} received without a message-id to acknowledge!"


def test_ack_1_0_needs_message_id_only() -> None:
    s = session("1.0")
    assert s.receive_data(b"ACK\nmessage-id:m\n\n\0") == [Ack(None, "m", None, None, None)]
    error = refused(s, b"ACK\nid:x\n\n\0")
    assert error.message == "ACK received without a message-id to acknowledge!"


def test_nack_in_1_0_is_non_fatal() -> None:
    s = session("1.0")
    error = refused(s, b"NACK\nmessage-id:m\nreceipt:r\n\n\0BEGIN\ntransaction:t\n\n\0")
    assert (error.message, error.receipt_id, error.fatal) == (
        "NACK received but connection is in v1.0 mode.",
        "r",
        False,
    )
    assert s.receive_data(b"") == [Begin("t", None)]


def test_transactions() -> None:
    s = session()
    events = s.receive_data(
        b"BEGIN\ntransaction:t\n\n\0COMMIT\ntransaction:t\n\n\0ABORT\ntransaction:u\nreceipt:r\n\n\0"
    )
    assert events == [Begin("t", None), Commit("t", None), Abort("u", "r")]


@pytest.mark.parametrize(
    ("command", "verb"),
    [(b"BEGIN", "beginning"), (b"COMMIT", "committing"), (b"ABORT", "aborting")],
)
def test_transaction_header_required(command: bytes, verb: str) -> None:
    error = refused(session(), command + b"\nreceipt:r\n\n\0")
    assert (error.message, error.receipt_id, error.fatal) == (
        f"Must specify the transaction you are {verb}",
        "r",
        True,
    )


def test_disconnect_then_nothing_more() -> None:
    s = session()
    events = s.receive_data(b"DISCONNECT\nreceipt:bye\n\n\0\n\n")
    assert events == [Disconnect("bye"), HEARTBEAT]
    assert s.state is State.DISCONNECTED
    assert s.receipt("bye") == b"RECEIPT\nreceipt-id:bye\n\n\0\n"
    error = refused(s, b"SEND\ndestination:/q\n\n\0")
    assert (error.message, error.fatal) == ("Already disconnected.", True)


def test_server_commands_from_a_client_are_unknown() -> None:
    error = refused(session(), b"MESSAGE\ndestination:/q\nreceipt:r\n\n\0")
    assert (error.message, error.receipt_id, error.fatal) == (
        "Unknown STOMP action: MESSAGE",
        "r",
        True,
    )


def test_events_before_an_error_ride_on_the_exception() -> None:
    s = session()
    error = refused(s, b"BEGIN\ntransaction:t\n\n\0\n\nSEND\n\n\0")
    assert error.events == (Begin("t", None), HEARTBEAT)
    parse_error = refused(session(), b"BEGIN\ntransaction:t\n\n\0JUNK\n\n\0")
    assert parse_error.events == (Begin("t", None),)
    assert parse_error.message.startswith("Unknown STOMP action")


def test_validation_error_before_a_parse_error_comes_first() -> None:
    s = session()
    error = refused(s, b"SEND\n\n\0JUNK\n\n\0")
    assert error.message == "SEND received without a Destination specified!"


def test_byte_at_a_time() -> None:
    data = connect_bytes("1.2") + b"SEND\ndestination:/q\ncontent-length:2\n\n\0\0\0\n\n"
    s = ServerSession()
    events: list[ServerEvent] = []
    for i in range(len(data)):
        events += s.receive_data(data[i : i + 1])
    assert [type(e).__name__ for e in events] == ["Connect", "Send", "HeartBeat"]
    assert isinstance(events[1], Send)
    assert events[1].body == b"\0\0"


# ---- frames the broker writes ----


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
@pytest.mark.parametrize("mode_ack", [None, "ack-7"])
def test_message_frame(version: str, mode_ack: str | None) -> None:
    s = session(version)
    data = s.message(
        "/queue/a",
        "ID:b-1:1:1:1",
        subscription="sub-0",
        ack=mode_ack,
        headers={"priority": "4", "destination": "/wrong", "content-length": "9"},
        body=b"a\0b",
    )
    frame = parse(data, version)
    expected = {"destination": "/queue/a", "message-id": "ID:b-1:1:1:1", "subscription": "sub-0"}
    if mode_ack is not None and version == "1.2":
        expected["ack"] = mode_ack
    expected |= {"priority": "4", "content-length": "3"}
    assert frame.headers == expected
    assert list(frame.headers) == list(expected)
    assert frame.body == b"a\0b"


def test_message_without_subscription_id() -> None:
    frame = parse(session("1.0").message("/q", "m1"), "1.0")
    assert frame.headers == {"destination": "/q", "message-id": "m1", "content-length": "0"}


def test_message_before_connect_is_misuse() -> None:
    with pytest.raises(LocalProtocolError):
        ServerSession().message("/q", "m")


def test_receipt_is_escaped_per_version() -> None:
    assert session("1.2").receipt("a:b") == b"RECEIPT\nreceipt-id:a\\cb\n\n\0\n"
    assert session("1.0").receipt("a:b") == b"RECEIPT\nreceipt-id:a:b\n\n\0\n"


def test_error_frame() -> None:
    s = ServerSession()
    assert s.error("Not connected.") == b"ERROR\nmessage:Not connected.\n\n\0\n"
    frame = parse(session("1.2").error("bad\r\nthing\0", b"trace", receipt_id="r:1"), "1.2")
    assert frame.headers == {
        "message": "bad  thing",
        "receipt-id": "r:1",
        "content-type": "text/plain",
        "content-length": "5",
    }
    assert frame.body == b"trace"
