"""STOMP over WebSocket with a real WebSocket client (``websockets``) speaking raw STOMP frames:
the subprotocols stomp.js and ActiveMQ use, one frame per WebSocket message both ways, messages
crossing between TCP and WebSocket clients, heart-beats as bare EOL messages, and the same
limits and ERROR frames as over TCP (ActiveMQ documentation, "WebSockets")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from ferrymq.core.destination import Destination
from tests.websocket.support import TIMEOUT_S, TcpStomp, ws_broker

CONNECT = "CONNECT\naccept-version:{version}\nhost:localhost\n\n\x00"


async def _recv(ws: ClientConnection, *, skip_eol: bool = True) -> str | bytes:
    """The next WebSocket message (heart-beat EOL messages skipped unless asked)."""
    while True:
        message = await asyncio.wait_for(ws.recv(), TIMEOUT_S)
        if not skip_eol or message not in ("\n", b"\n"):
            return message


async def _frame(ws: ClientConnection) -> str:
    """The next message, which must be exactly one whole text STOMP frame (NUL and, as from
    ActiveMQ, an EOL after it)."""
    message = await _recv(ws)
    assert isinstance(message, str), message
    assert message.endswith("\x00\n"), repr(message)
    assert message.count("\x00") == 1, repr(message)
    return message[:-1]


async def _open(url: str, version: str = "1.2") -> ClientConnection:
    ws = await connect(url, subprotocols=[Subprotocol("v12.stomp"), Subprotocol("v11.stomp")])
    await ws.send(CONNECT.format(version=version))
    assert (await _frame(ws)).startswith("CONNECTED\n")
    return ws


@pytest.mark.parametrize(
    ("subprotocol", "version"),
    [("v10.stomp", "1.0"), ("v11.stomp", "1.1"), ("v12.stomp", "1.2"), ("stomp", "1.2")],
)
async def test_each_stomp_subprotocol_is_agreed_and_connects(
    tmp_path: Path, subprotocol: str, version: str
) -> None:
    async with ws_broker(tmp_path) as served:
        offered = [Subprotocol("mqtt"), Subprotocol(subprotocol)]
        async with connect(served.ws_url + "/any/path", subprotocols=offered) as ws:
            assert ws.subprotocol == subprotocol
            await ws.send(CONNECT.format(version=version))
            connected = await _frame(ws)
            assert connected.startswith("CONNECTED\n")
            assert f"version:{version}\n" in connected


async def test_a_client_offering_no_stomp_subprotocol_is_served_without_one(
    tmp_path: Path,
) -> None:
    async with (
        ws_broker(tmp_path) as served,
        connect(served.ws_url) as ws,  # the Origin check: tests/websocket/test_origins.py
    ):
        assert ws.subprotocol is None
        await ws.send(CONNECT.format(version="1.2"))
        assert (await _frame(ws)).startswith("CONNECTED\n")


async def test_send_subscribe_message_ack_one_frame_per_message(tmp_path: Path) -> None:
    async with ws_broker(tmp_path) as served:
        ws = await _open(served.ws_url)
        await ws.send("SUBSCRIBE\nid:s1\ndestination:/queue/web\nack:client-individual\n\n\x00")
        # Three frames in three messages, and the RECEIPT of the last: four messages back.
        for n in range(3):
            await ws.send(f"SEND\ndestination:/queue/web\n\nbody {n}\x00")
        await ws.send("SEND\ndestination:/queue/web\nreceipt:r1\n\nbody 3\x00")
        frames = [await _frame(ws) for _ in range(5)]
        messages = [f for f in frames if f.startswith("MESSAGE\n")]
        assert [m.split("\n\n", 1)[1] for m in messages] == [f"body {n}\x00" for n in range(4)]
        assert any(f.startswith("RECEIPT\nreceipt-id:r1\n") for f in frames)
        for message in messages:
            ack = next(h for h in message.split("\n") if h.startswith("ack:"))[4:]
            await ws.send(f"ACK\nid:{ack}\n\n\x00")
        await ws.send("DISCONNECT\nreceipt:bye\n\n\x00")
        assert (await _frame(ws)).startswith("RECEIPT\nreceipt-id:bye\n")
        await ws.wait_closed()
        queue = served.broker.service.region.queues[Destination.queue("web")]
        assert queue.depth == 0  # every message was acknowledged


async def test_a_message_sent_over_tcp_arrives_over_websocket_and_back(tmp_path: Path) -> None:
    async with ws_broker(tmp_path) as served:
        ws = await _open(served.ws_url)
        tcp = await TcpStomp.connect(served.tcp_port)
        await ws.send("SUBSCRIBE\nid:w\ndestination:/topic/cross\nreceipt:w\n\n\x00")
        assert (await _frame(ws)).startswith("RECEIPT\n")
        tcp.send("SUBSCRIBE\nid:t\ndestination:/queue/back\nreceipt:t\n\n")
        assert (await tcp.frame()).startswith(b"RECEIPT\n")

        tcp.send(b"SEND\ndestination:/topic/cross\n\nfrom tcp \xc3\xa9")
        received = await _frame(ws)
        assert received.startswith("MESSAGE\n")
        assert received.endswith("\n\nfrom tcp \u00e9\x00")

        await ws.send("SEND\ndestination:/queue/back\n\nfrom the browser\x00")
        back = await tcp.frame()
        assert back.startswith(b"MESSAGE\n")
        assert back.endswith(b"\n\nfrom the browser\x00")
        await tcp.close()
        await ws.close()


async def test_a_binary_body_leaves_as_a_binary_message(tmp_path: Path) -> None:
    async with ws_broker(tmp_path) as served:
        ws = await _open(served.ws_url)
        await ws.send("SUBSCRIBE\nid:b\ndestination:/queue/bin\n\n\x00")
        body = b"\xff\x00\xfe"
        await ws.send(b"SEND\ndestination:/queue/bin\ncontent-length:3\n\n" + body + b"\x00")
        message = await _recv(ws)
        assert isinstance(message, bytes)
        assert message.startswith(b"MESSAGE\n")
        assert message.endswith(b"\n\n" + body + b"\x00\n")
        await ws.close()


async def test_heart_beats_are_bare_eol_messages_both_ways(tmp_path: Path) -> None:
    async with ws_broker(tmp_path) as served:
        ws = await connect(served.ws_url, subprotocols=[Subprotocol("v12.stomp")])
        # The client sends every 100 ms and wants something at least every 100 ms.
        await ws.send("CONNECT\naccept-version:1.2\nhost:x\nheart-beat:100,100\n\n\x00")
        assert (await _frame(ws)).startswith("CONNECTED\n")
        beats = 0
        for _ in range(8):  # eight promised intervals: kept alive by the client's EOLs
            await ws.send("\n")
            try:
                message = await asyncio.wait_for(ws.recv(), 0.1)
            except TimeoutError:
                continue
            assert message == "\n"  # a heart-beat is one message holding one EOL
            beats += 1
        assert beats >= 2
        # Silent past its promise (and the grace), the client is dropped.
        await asyncio.wait_for(ws.wait_closed(), TIMEOUT_S)
        assert ws.close_code == 1006  # dropped, as a dead TCP peer is: no closing handshake


async def test_an_oversized_frame_gets_the_same_error_as_over_tcp(tmp_path: Path) -> None:
    async with ws_broker(tmp_path, "?wireFormat.maxDataLength=1000") as served:
        frame = "SEND\ndestination:/queue/big\n\n" + "x" * 2000 + "\x00"
        tcp = await TcpStomp.connect(served.tcp_port)
        tcp.send(frame[:-1])
        over_tcp = (await tcp.frame()).decode()
        await tcp.close()
        ws = await _open(served.ws_url)
        await ws.send(frame)
        over_ws = await _frame(ws)
        with pytest.raises(ConnectionClosed):
            await _recv(ws)
        assert ws.close_code == 1000  # closed in order, after the ERROR
    assert over_ws.startswith("ERROR\n")
    assert over_ws == over_tcp
