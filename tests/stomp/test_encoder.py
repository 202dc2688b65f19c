"""encode, encode_frame and encode_message: escaping per version and what cannot be sent."""

from __future__ import annotations

import pytest

from ferrymq.stomp import (
    HEARTBEAT_BYTES,
    Frame,
    FrameParser,
    LocalProtocolError,
    encode,
    encode_frame,
    encode_message,
)


def parse_one(data: bytes, version: str) -> Frame:
    parser = FrameParser()
    parser.version = version
    (frame,) = parser.feed(data)
    assert isinstance(frame, Frame)
    return frame


def test_frame_ends_with_nul_only() -> None:
    assert encode(Frame("SEND", {"destination": "/q"}, b"hi"), "1.2") == (
        b"SEND\ndestination:/q\n\nhi\0\n"
    )
    assert encode(Frame("DISCONNECT", {}), "1.0") == b"DISCONNECT\n\n\0\n"


def test_heartbeat_bytes() -> None:
    assert HEARTBEAT_BYTES == b"\n"


def test_escaping_per_version() -> None:
    headers = {"a:b": "x\\y\nz:"}
    assert encode(Frame("SEND", headers), "1.1") == b"SEND\na\\cb:x\\\\y\\nz\\c\n\n\0\n"
    assert encode(Frame("SEND", {"k": "a\rb"}), "1.2") == b"SEND\nk:a\\rb\n\n\0\n"
    assert encode(Frame("SEND", {"k": "a\rb"}), "1.1") == b"SEND\nk:a\rb\n\n\0\n"
    assert encode(Frame("SEND", {"k": "a:b\\c"}), "1.0") == b"SEND\nk:a:b\\c\n\n\0\n"


@pytest.mark.parametrize("command", ["CONNECT", "STOMP", "CONNECTED"])
def test_connect_frames_are_never_escaped(command: str) -> None:
    # ActiveMQ Stomp11Test.testConnectedNeverEncoded.
    assert encode(Frame(command, {"login": "a\\b:c"}), "1.2") == (
        command.encode() + b"\nlogin:a\\b:c\n\n\0\n"
    )


@pytest.mark.parametrize(
    ("headers", "version", "what"),
    [
        ({"": "x"}, "1.2", "empty"),
        ({"k": "a\0b"}, "1.2", "NUL"),
        ({"k\0": "b"}, "1.1", "NUL"),
        ({"k": "a\nb"}, "1.0", "LF"),
        ({"k\n": "b"}, "1.0", "LF"),
        ({"a:b": "c"}, "1.0", "colon"),
        ({"k": "ends in cr\r"}, "1.1", "CR"),
        ({"k": "ends in cr\r"}, "1.0", "CR"),
    ],
)
def test_unrepresentable_headers(headers: dict[str, str], version: str, what: str) -> None:
    with pytest.raises(LocalProtocolError, match=what):
        encode(Frame("SEND", headers), version)


def test_lf_in_connect_frame_is_unrepresentable_in_any_version() -> None:
    with pytest.raises(LocalProtocolError, match="LF"):
        encode(Frame("CONNECT", {"login": "a\nb"}), "1.2")


def test_unknown_command_and_version() -> None:
    with pytest.raises(LocalProtocolError):
        encode(Frame("HELLO", {}), "1.2")
    with pytest.raises(LocalProtocolError):
        encode(Frame("SEND", {}), "2.0")
    with pytest.raises(LocalProtocolError):
        encode_message({"a": "b"}, b"", "0.9")


def test_content_length_added_only_for_bodies_with_nul() -> None:
    assert encode(Frame("SEND", {}, b"text"), "1.2") == b"SEND\n\ntext\0\n"
    assert encode(Frame("SEND", {}, b"a\0b"), "1.2") == b"SEND\ncontent-length:3\n\na\0b\0\n"


def test_given_content_length_must_match() -> None:
    assert encode(Frame("SEND", {"content-length": "2"}, b"ab"), "1.2") == (
        b"SEND\ncontent-length:2\n\nab\0\n"
    )
    with pytest.raises(LocalProtocolError, match="does not match"):
        encode(Frame("SEND", {"content-length": "3"}, b"ab"), "1.2")


def test_encode_message_always_writes_content_length_last() -> None:
    data = encode_message({"content-length": "99", "destination": "/q"}, b"abc", "1.2")
    assert data == b"MESSAGE\ndestination:/q\ncontent-length:3\n\nabc\0\n"
    assert encode_message({}, b"", "1.0") == b"MESSAGE\ncontent-length:0\n\n\0\n"


def test_encode_message_accepts_pairs() -> None:
    pairs = [("destination", "/q"), ("message-id", "ID:1"), ("content-length", "1")]
    assert encode_message(pairs, b"x", "1.2") == (
        b"MESSAGE\ndestination:/q\nmessage-id:ID\\c1\ncontent-length:1\n\nx\0\n"
    )


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_encode_message_round_trips(version: str) -> None:
    headers = {
        "destination": "/queue/a",
        "message-id": "ID:broker-1:1:1:7",
        "subscription": "0",
        "persistent": "true",
        "JMSXGroupID": "g\\1" if version != "1.0" else "g1",
    }
    body = b"\0binary\0"
    frame = parse_one(encode_message(headers, body, version), version)
    assert frame.command == "MESSAGE"
    assert frame.headers == {**headers, "content-length": str(len(body))}
    assert frame.body == body


def test_encode_frame_from_parts() -> None:
    assert encode_frame("ACK", {"id": "1"}, version="1.2") == b"ACK\nid:1\n\n\0\n"
    assert encode_frame("SEND", [("a", "1")], b"x", "1.2", content_length=True) == (
        b"SEND\na:1\ncontent-length:1\n\nx\0\n"
    )


def test_slow_path_escapes_newlines_in_values() -> None:
    headers = {"destination": "/q", "text": "line1\nline2", "plain": "v"}
    data = encode_message(headers, b"", "1.2")
    assert b"text:line1\\nline2\n" in data
    assert parse_one(data, "1.2").headers["text"] == "line1\nline2"
