"""ClientSession, mostly against ServerSession so the two sides are checked against each other."""

from __future__ import annotations

import pytest

from ferrymq.stomp import (
    HEARTBEAT,
    Abort,
    Ack,
    Begin,
    ClientEvent,
    ClientSession,
    ClientState,
    Commit,
    Connect,
    Connected,
    Disconnect,
    ErrorEvent,
    LocalProtocolError,
    MessageEvent,
    Nack,
    ReceiptEvent,
    RemoteProtocolError,
    Send,
    ServerSession,
    Subscribe,
    Unsubscribe,
    mirror_heart_beat,
)


def pair(offer: tuple[str, ...] = ("1.0", "1.1", "1.2")) -> tuple[ClientSession, ServerSession]:
    client, server = ClientSession(), ServerSession()
    (connect,) = server.receive_data(
        client.connect_frame(host="localhost", heart_beat=(0, 500), accept_version=offer)
    )
    assert isinstance(connect, Connect)
    assert client.state is ClientState.CONNECTING
    (connected,) = client.receive_data(
        server.connected(session="s1", server="FerryMQ", heart_beat=mirror_heart_beat((0, 500)))
    )
    assert connected == Connected(
        connect.version,
        "s1",
        "FerryMQ",
        (500, 0),
        connected.headers,  # type: ignore[union-attr]
    )
    assert client.state.value == "CONNECTED"
    return client, server


@pytest.mark.parametrize("offer", [("1.0",), ("1.1",), ("1.2",), ("1.0", "1.1", "1.2")])
def test_negotiates_the_offered_version(offer: tuple[str, ...]) -> None:
    client, server = pair(offer)
    assert client.version == server.version == offer[-1]


def test_connect_frame_headers() -> None:
    data = ClientSession().connect_frame(
        host="h", login="u", passcode="p:w", client_id="c", headers={"x": "1", "host": "no"}
    )
    assert data == (
        b"CONNECT\naccept-version:1.0,1.1,1.2\nhost:h\nlogin:u\npasscode:p:w\nclient-id:c\n"
        b"x:1\n\n\0\n"
    )
    assert ClientSession().connect_frame(accept_version=("1.0",), command="STOMP") == (
        b"STOMP\n\n\0\n"
    )


def test_connect_frame_misuse() -> None:
    client = ClientSession()
    with pytest.raises(LocalProtocolError):
        client.connect_frame(accept_version=("3.0",))
    with pytest.raises(LocalProtocolError):
        client.connect_frame(command="SEND")
    client.connect_frame()
    with pytest.raises(LocalProtocolError, match="already"):
        client.connect_frame()
    with pytest.raises(LocalProtocolError, match="CONNECTING"):
        client.send("/q")


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_frames_reach_the_server_as_events(version: str) -> None:
    client, server = pair((version,))
    tx = "tx:1"
    data = b"".join(
        [
            client.subscribe("/queue/a", "s:1", ack="client", selector="a > 1", receipt="r1"),
            client.begin(tx),
            client.send("/queue/a", b"\0bin", headers={"persistent": "true"}, transaction=tx),
            client.commit(tx, receipt="r2"),
            client.abort("t2"),
            client.unsubscribe("s:1"),
            client.disconnect(receipt="bye"),
        ]
    )
    events = server.receive_data(data)
    assert isinstance(events[0], Subscribe)
    assert (events[0].id, events[0].ack, events[0].selector, events[0].receipt) == (
        "s:1",
        "client",
        "a > 1",
        "r1",
    )
    assert events[1] == Begin(tx, None)
    assert isinstance(events[2], Send)
    assert (events[2].destination, events[2].body, events[2].transaction) == (
        "/queue/a",
        b"\0bin",
        tx,
    )
    assert events[2].headers["persistent"] == "true"
    assert events[3:] == [
        Commit(tx, "r2"),
        Abort("t2", None),
        Unsubscribe("s:1", None, None, None),
        Disconnect("bye"),
    ]
    assert client.state is ClientState.DISCONNECTING
    with pytest.raises(LocalProtocolError):
        client.send("/q")


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_messages_and_acks_per_version(version: str) -> None:
    client, server = pair((version,))
    data = server.message(
        "/queue/a", "ID:m:1", subscription="s1", ack="k1", headers={"x": "a:b"}, body=b"hi"
    )
    (message,) = client.receive_data(data)
    assert isinstance(message, MessageEvent)
    assert (message.destination, message.message_id, message.subscription, message.body) == (
        "/queue/a",
        "ID:m:1",
        "s1",
        b"hi",
    )
    assert message.headers["x"] == "a:b"
    assert message.ack == ("k1" if version == "1.2" else None)
    (ack,) = server.receive_data(client.ack(message, transaction="t", receipt="r"))
    if version == "1.2":
        assert ack == Ack("k1", None, None, "t", "r")
    else:
        assert ack == Ack(None, "ID:m:1", "s1", "t", "r")
    if version == "1.0":
        with pytest.raises(LocalProtocolError):
            client.nack(message)
    else:
        (nack,) = server.receive_data(client.nack(message))
        assert isinstance(nack, Nack)


def test_ack_needs_what_the_version_needs() -> None:
    client, server = pair(("1.2",))
    (message,) = client.receive_data(server.message("/q", "m"))
    assert isinstance(message, MessageEvent)
    with pytest.raises(LocalProtocolError, match="no ack header"):
        client.ack(message)
    client, server = pair(("1.1",))
    (message,) = client.receive_data(server.message("/q", "m"))
    assert isinstance(message, MessageEvent)
    with pytest.raises(LocalProtocolError, match="no subscription header"):
        client.ack(message)


def test_subscribe_and_unsubscribe_need_ids_after_1_0() -> None:
    client, _ = pair(("1.1",))
    with pytest.raises(LocalProtocolError):
        client.subscribe("/q")
    with pytest.raises(LocalProtocolError):
        client.unsubscribe(destination="/q")
    with pytest.raises(LocalProtocolError):
        client.subscribe("/q", "1", ack="never")
    old, server = pair(("1.0",))
    assert server.receive_data(old.subscribe("/q") + old.unsubscribe(destination="/q")) == [
        Subscribe(None, "/q", "auto", None, {"destination": "/q"}, None),
        Unsubscribe(None, "/q", None, None),
    ]


def test_receipts_errors_and_heart_beats() -> None:
    client, server = pair()
    data = server.receipt("r:1") + b"\n" + server.error("boom", b"detail", receipt_id="r:2")
    events: list[ClientEvent] = client.receive_data(data)
    assert events[:2] == [ReceiptEvent("r:1"), HEARTBEAT]
    error = events[2]
    assert isinstance(error, ErrorEvent)
    assert (error.message, error.receipt_id, error.body) == ("boom", "r:2", b"detail")


def test_error_instead_of_connected() -> None:
    client, server = ClientSession(), ServerSession()
    client.connect_frame()
    (event,) = client.receive_data(server.error("Invalid Protocol version"))
    assert isinstance(event, ErrorEvent)
    assert client.state is ClientState.CONNECTING


def test_pipelined_connected_and_messages_use_negotiated_escaping() -> None:
    client = ClientSession()
    client.connect_frame()
    events = client.receive_data(
        b"CONNECTED\nversion:1.2\n\n\0MESSAGE\ndestination:/q\nmessage-id:a\\cb\n\n\0"
    )
    assert isinstance(events[1], MessageEvent)
    assert events[1].message_id == "a:b"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"MESSAGE\ndestination:/q\nmessage-id:1\n\n\0", "MESSAGE received in client state"),
        (b"CONNECTED\nversion:1.3\n\n\0", "not offered"),
        (b"CONNECTED\nversion:1.2\nheart-beat:x\n\n\0", "heart-beat"),
        (b"SEND\ndestination:/q\n\n\0", "Unknown STOMP action from the broker: SEND"),
    ],
)
def test_broker_protocol_errors_while_connecting(data: bytes, message: str) -> None:
    client = ClientSession()
    client.connect_frame()
    with pytest.raises(RemoteProtocolError, match=message):
        client.receive_data(data)


@pytest.mark.parametrize(
    "data",
    [
        b"MESSAGE\ndestination:/q\n\n\0",
        b"RECEIPT\n\n\0",
        b"CONNECTED\nversion:1.2\n\n\0",
    ],
)
def test_broker_protocol_errors_when_connected(data: bytes) -> None:
    client, server = pair()
    with pytest.raises(RemoteProtocolError) as info:
        client.receive_data(server.receipt("first") + data)
    assert info.value.events == (ReceiptEvent("first"),)


def test_parse_error_keeps_earlier_events() -> None:
    client, server = pair()
    with pytest.raises(RemoteProtocolError) as info:
        client.receive_data(server.receipt("first") + b"GARBAGE\n\n\0")
    assert info.value.events == (ReceiptEvent("first"),)


def test_frames_before_connect_frame_are_refused() -> None:
    with pytest.raises(RemoteProtocolError, match="IDLE"):
        ClientSession().receive_data(b"CONNECTED\n\n\0")
