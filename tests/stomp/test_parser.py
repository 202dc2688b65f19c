"""FrameParser: framing, escaping, limits and errors, per version (STOMP 1.2 "STOMP Frames")."""

from __future__ import annotations

import pytest

from ferrymq.stomp import (
    HEARTBEAT,
    Frame,
    FrameParser,
    HeartBeat,
    Limits,
    LocalProtocolError,
    RemoteProtocolError,
)
from ferrymq.stomp.constants import UNESCAPED_COMMANDS

Event = Frame | HeartBeat


def parser(version: str = "1.2", limits: Limits | None = None) -> FrameParser:
    p = FrameParser() if limits is None else FrameParser(limits)
    p.version = version
    return p


def feed_chunks(p: FrameParser, chunks: list[bytes]) -> list[Event]:
    """Feed every chunk, resuming after the pause that follows CONNECT/CONNECTED."""
    events: list[Event] = []
    for chunk in chunks:
        new = p.feed(chunk)
        while new:
            events += new
            last = new[-1]
            paused = isinstance(last, Frame) and last.command in UNESCAPED_COMMANDS
            new = p.feed(b"") if paused else []
    return events


def feed_each(p: FrameParser, chunks: list[bytes]) -> None:
    for chunk in chunks:
        p.feed(chunk)


def whole(data: bytes, version: str = "1.2") -> list[Event]:
    return feed_chunks(parser(version), [data])


def bytewise(data: bytes, version: str = "1.2") -> list[Event]:
    return feed_chunks(parser(version), [data[i : i + 1] for i in range(len(data))])


def error_of(data: bytes, version: str = "1.2", limits: Limits | None = None) -> str:
    with pytest.raises(RemoteProtocolError) as info:
        feed_chunks(parser(version, limits), [data])
    assert info.value.fatal
    return info.value.message


STREAM = (
    b"SEND\ndestination:/queue/a\n\nhello\0"
    b"\n"  # the frame's own EOL after its NUL, as ActiveMQ writes it: no heart-beat
    b"\n\r\n"
    b"SEND\r\ndestination:/queue/b\r\ncontent-length:5\r\n\r\na\0b\0c\0"
    b"DISCONNECT\nreceipt:77\n\n\0"
)
EXPECTED: list[Event] = [
    Frame("SEND", {"destination": "/queue/a"}, b"hello"),
    HEARTBEAT,
    HEARTBEAT,
    Frame("SEND", {"destination": "/queue/b", "content-length": "5"}, b"a\0b\0c"),
    Frame("DISCONNECT", {"receipt": "77"}),
]


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_same_events_whole_bytewise_and_split(version: str) -> None:
    assert whole(STREAM, version) == EXPECTED
    assert bytewise(STREAM, version) == EXPECTED
    for cut in range(len(STREAM)):
        assert feed_chunks(parser(version), [STREAM[:cut], STREAM[cut:]]) == EXPECTED


def test_trailing_partial_frame_is_kept_until_completed() -> None:
    p = parser()
    assert p.feed(STREAM + b"SEND\ndestinat") == EXPECTED
    assert p.buffered == len(b"SEND\ndestinat")
    assert p.feed(b"ion:/q\n\nlast") == []
    assert p.feed(b"\0") == [Frame("SEND", {"destination": "/q"}, b"last")]
    assert p.buffered == 0


def test_trailing_junk_raises_after_the_good_frames() -> None:
    p = parser()
    with pytest.raises(RemoteProtocolError) as info:
        p.feed(STREAM + b"JUNK\n\n\0")
    assert info.value.events == tuple(EXPECTED)
    assert "Unknown STOMP action" in info.value.message


def test_parser_is_dead_after_an_error() -> None:
    p = parser()
    with pytest.raises(RemoteProtocolError):
        p.feed(b"BOGUS\n\n\0")
    with pytest.raises(RemoteProtocolError, match="Unknown STOMP action"):
        p.feed(b"SEND\ndestination:/q\n\n\0")


def test_heart_beats_lf_and_crlf() -> None:
    assert whole(b"\n\r\n\n") == [HEARTBEAT, HEARTBEAT, HEARTBEAT]
    p = parser()
    assert p.feed(b"\r") == []
    assert p.feed(b"\n") == [HEARTBEAT]


def test_heart_beat_is_a_singleton() -> None:
    assert HeartBeat() is HEARTBEAT


def test_frame_get() -> None:
    frame = Frame("SEND", {"a": "1"})
    assert frame.get("a") == "1"
    assert frame.get("b") is None
    assert frame.get("b", "x") == "x"


def test_frame_without_headers_or_body() -> None:
    assert whole(b"DISCONNECT\n\n\0") == [Frame("DISCONNECT", {})]
    assert whole(b"DISCONNECT\r\n\r\n\0") == [Frame("DISCONNECT", {})]


def test_crlf_blank_line_followed_by_a_body_starting_with_lf() -> None:
    assert whole(b"SEND\r\na:1\r\n\r\n\nbody\0") == [Frame("SEND", {"a": "1"}, b"\nbody")]
    assert whole(b"SEND\na:1\n\r\n\nbody\0") == [Frame("SEND", {"a": "1"}, b"\nbody")]


def test_body_runs_to_first_nul_without_content_length() -> None:
    assert whole(b"SEND\ndestination:/q\n\nline1\nline2\n\n\0") == [
        Frame("SEND", {"destination": "/q"}, b"line1\nline2\n\n")
    ]


def test_binary_body_with_nuls_via_content_length() -> None:
    body = bytes(range(256)) * 4
    data = b"SEND\ndestination:/q\ncontent-length:1024\n\n" + body + b"\0"
    assert whole(data)[0] == Frame("SEND", {"destination": "/q", "content-length": "1024"}, body)
    assert bytewise(data)[0].body == body  # type: ignore[union-attr]


def test_content_length_zero() -> None:
    assert whole(b"SEND\ndestination:/q\ncontent-length:0\n\n\0")[0].body == b""  # type: ignore[union-attr]


def test_content_length_too_short() -> None:
    message = error_of(b"SEND\ndestination:/q\ncontent-length:3\n\nhello\0")
    assert "not followed by a NUL" in message


def test_content_length_too_long() -> None:
    data = b"SEND\ndestination:/q\ncontent-length:9\n\nhello\0SEND\ndestination:/q\n\n\0"
    assert "not followed by a NUL" in error_of(data)


def test_content_length_too_long_waits_for_more_bytes() -> None:
    p = parser()
    assert p.feed(b"SEND\ndestination:/q\ncontent-length:9\n\nhello\0") == []
    assert p.feed(b"abc\0") == [
        Frame("SEND", {"destination": "/q", "content-length": "9"}, b"hello\0abc")
    ]


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "0x10", "", "1 2", "\u0661"])
def test_bad_content_length(value: str) -> None:
    data = f"SEND\ndestination:/q\ncontent-length:{value}\n\nx\0".encode()
    assert "content-length" in error_of(data)


def test_content_length_with_spaces_is_accepted() -> None:
    # ActiveMQ trims content-length (parseContentLength) in every version.
    assert whole(b"SEND\ncontent-length: 2 \n\nab\0")[0].body == b"ab"  # type: ignore[union-attr]


def test_content_length_on_error_frame_is_honoured() -> None:
    assert whole(b"ERROR\nmessage:x\ncontent-length:3\n\na\0b\0")[0].body == b"a\0b"  # type: ignore[union-attr]


def test_repeated_header_first_wins_in_order() -> None:
    # ActiveMQ testSendMessageWithRepeatedEntries; STOMP 1.2 "Repeated Header Entries".
    for version in ("1.0", "1.1", "1.2"):
        frame = whole(b"SEND\nb:1\na:1\nb:2\nc:3\na:2\n\n\0", version)[0]
        assert isinstance(frame, Frame)
        assert list(frame.headers.items()) == [("b", "1"), ("a", "1"), ("c", "3")]


def test_header_values_are_trimmed_in_1_0() -> None:
    # ActiveMQ testHeaderValuesAreTrimmed1_0.
    frame = whole(b"SEND\ndestination:/queue/a \n test : value \t\n\n\0", "1.0")[0]
    assert isinstance(frame, Frame)
    assert frame.headers == {"destination": "/queue/a", "test": "value"}


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_header_values_are_not_trimmed_in_1_1_and_later(version: str) -> None:
    # ActiveMQ testHeaderValuesAreNotWSTrimmed.
    frame = whole(b"SEND\ndestination:/queue/a\ntest: value \t\n\n\0", version)[0]
    assert isinstance(frame, Frame)
    assert frame.headers["test"] == " value \t"


def test_value_colons_are_kept() -> None:
    frame = whole(b"SEND\nreply-to:/queue/a:b\n\n\0", "1.0")[0]
    assert isinstance(frame, Frame)
    assert frame.headers == {"reply-to": "/queue/a:b"}


def test_header_line_without_colon_is_lenient_in_1_0() -> None:
    frame = whole(b"SEND\ndestination:/q\nflag\n\n\0", "1.0")[0]
    assert isinstance(frame, Frame)
    assert frame.headers == {"destination": "/q", "flag": ""}


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_header_line_without_colon_is_an_error_in_1_1_and_later(version: str) -> None:
    assert error_of(b"SEND\ndestination:/q\nflag\n\n\0", version).startswith(
        "header line 2 has no colon"
    )


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_empty_header_name(version: str) -> None:
    assert "header line 1 has an empty name" in error_of(b"SEND\n:value\n\n\0", version)


def test_escapes_1_2() -> None:
    frame = whole(b"SEND\na\\cb:x\\\\y\\nz\\r\\c\n\n\0", "1.2")[0]
    assert isinstance(frame, Frame)
    assert frame.headers == {"a:b": "x\\y\nz\r:"}


def test_escapes_1_1_have_no_cr() -> None:
    frame = whole(b"SEND\na:\\\\\\n\\c\n\n\0", "1.1")[0]
    assert isinstance(frame, Frame)
    assert frame.headers == {"a": "\\\n:"}
    assert "undefined escape sequence '\\r'" in error_of(b"SEND\na:x\\ry\n\n\0", "1.1")


@pytest.mark.parametrize("version", ["1.1", "1.2"])
@pytest.mark.parametrize("bad", [b"\\t", b"\\", b"\\x", b"\\C"])
def test_undefined_escape_is_fatal(version: str, bad: bytes) -> None:
    message = error_of(b"SEND\ndestination:/q\nkey:a" + bad + b"\n\n\0", version)
    assert message.startswith("header line 2: undefined escape sequence")


def test_no_escapes_in_1_0() -> None:
    frame = whole(b"SEND\na:x\\ny\\c\\t\n\n\0", "1.0")[0]
    assert isinstance(frame, Frame)
    assert frame.headers == {"a": "x\\ny\\c\\t"}


@pytest.mark.parametrize("command", [b"CONNECT", b"STOMP", b"CONNECTED"])
def test_connect_headers_are_never_unescaped(command: bytes) -> None:
    # ActiveMQ Stomp11Test.testConnectedNeverEncoded; STOMP 1.2 "Value Encoding".
    frame = whole(command + b"\nlogin:a\\nb\\cc\\t\n\n\0", "1.2")[0]
    assert isinstance(frame, Frame)
    assert frame.headers == {"login": "a\\nb\\cc\\t"}


def test_parser_pauses_after_connect_until_version_is_set() -> None:
    p = FrameParser()
    data = b"CONNECT\naccept-version:1.2\n\n\0SEND\ndestination:/q\nk: a\\cb \n\n\0"
    assert p.feed(data) == [Frame("CONNECT", {"accept-version": "1.2"})]
    p.version = "1.2"
    assert p.feed(b"") == [Frame("SEND", {"destination": "/q", "k": " a:b "})]


def test_unknown_version_is_refused() -> None:
    with pytest.raises(LocalProtocolError):
        FrameParser().version = "2.0"


def test_command_is_trimmed_like_activemq() -> None:
    assert whole(b"  SEND \ndestination:/q\n\n\0")[0] == Frame("SEND", {"destination": "/q"})


@pytest.mark.parametrize("command", [b"FOO", b"SUBSCRIBEX", b"send", b"\x01"])
def test_unknown_command(command: bytes) -> None:
    assert error_of(command + b"\n\n\0").startswith("Unknown STOMP action")


def test_command_that_is_not_utf8() -> None:
    assert "not valid UTF-8 at byte 0" in error_of(b"\xff\xfe\n\n\0")


def test_unknown_command_is_reported_before_the_frame_ends() -> None:
    p = parser()
    with pytest.raises(RemoteProtocolError, match="Unknown STOMP action"):
        p.feed(b"HELLO\nand then nothing")


def test_invalid_utf8_in_headers() -> None:
    assert "not valid UTF-8" in error_of(b"SEND\ndestination:\xff\n\n\0")


def test_nul_before_end_of_headers() -> None:
    message = error_of(b"SEND\ndestination:/q\0SEND\ndestination:/q\n\n\0")
    assert "before the blank line" in message


def test_command_limit() -> None:
    limits = Limits(max_command_bytes=8)
    assert error_of(b"SEND" + b" " * 10 + b"\n\n\0", limits=limits) == "command exceeds 8 bytes"
    p = parser(limits=limits)
    with pytest.raises(RemoteProtocolError, match="command exceeds 8 bytes"):
        feed_each(p, [b" "] * 20)


def test_default_limits_are_activemqs() -> None:
    limits = Limits()
    assert limits.max_command_bytes == 1024
    assert limits.max_header_line_bytes == 10240
    assert limits.max_headers == 1000
    assert limits.max_body_bytes == 104857600
    assert limits.max_frame_bytes is None


def test_header_line_limit_names_the_line() -> None:
    data = b"SEND\na:1\nb:2\nc:" + b"x" * 10240 + b"\n\n\0"
    assert error_of(data) == "header line 3 exceeds 10240 bytes"
    assert whole(b"SEND\nc:" + b"x" * 10238 + b"\n\n\0")[0].get("c") == "x" * 10238  # type: ignore[union-attr]


def test_header_line_limit_while_the_line_trickles_in() -> None:
    p = parser()
    p.feed(b"SEND\na:")
    with pytest.raises(RemoteProtocolError, match="header line 1 exceeds 10240 bytes"):
        feed_each(p, [b"x" * 100] * 200)


def test_header_count_limit() -> None:
    limits = Limits(max_headers=3)
    assert whole(b"SEND\na:1\nb:2\nc:3\n\n\0")[0].headers == {"a": "1", "b": "2", "c": "3"}  # type: ignore[union-attr]
    assert error_of(b"SEND\na:1\nb:2\nc:3\nd:4\n\n\0", limits=limits) == (
        "frame has more than 3 headers"
    )
    p = parser(limits=limits)
    with pytest.raises(RemoteProtocolError, match="more than 3 headers"):
        feed_each(p, [b"SEND\n", b"a:1\n", b"b:2\n", b"c:3\n", b"d:4\n", b"e:5\n"])


def test_body_limit_with_content_length() -> None:
    limits = Limits(max_body_bytes=4)
    assert "exceeds the maximum body size of 4" in error_of(
        b"SEND\ncontent-length:5\n\n12345\0", limits=limits
    )
    p = parser(limits=limits)
    with pytest.raises(RemoteProtocolError, match="maximum body size"):
        p.feed(b"SEND\ncontent-length:99999999999999999999999\n\n")


def test_body_limit_without_content_length() -> None:
    limits = Limits(max_body_bytes=4)
    assert whole(b"SEND\n\n1234\0")[0].body == b"1234"  # type: ignore[union-attr]
    assert "body exceeds the maximum of 4" in error_of(b"SEND\n\n12345\0", limits=limits)
    p = parser(limits=limits)
    p.feed(b"SEND\n\n12")
    with pytest.raises(RemoteProtocolError, match="body exceeds"):
        p.feed(b"345")


def test_frame_limit() -> None:
    limits = Limits(max_frame_bytes=20)
    assert feed_chunks(parser(limits=limits), [b"SEND\n\n" + b"x" * 13 + b"\0"]) != []
    assert "frame exceeds the maximum of 20" in error_of(
        b"SEND\n\n" + b"x" * 14 + b"\0", limits=limits
    )
    p = parser(limits=limits)
    with pytest.raises(RemoteProtocolError, match="frame exceeds"):
        p.feed(b"SEND\ncontent-length:50\n\n")


def test_large_body_arriving_in_pieces() -> None:
    body = b"\0".join([b"x" * 1000] * 100)
    p = parser()
    assert p.feed(b"SEND\ncontent-length:%d\n\n" % len(body)) == []
    for i in range(0, len(body), 997):
        assert p.feed(body[i : i + 997]) == []
    assert p.feed(b"\0") == [Frame("SEND", {"content-length": str(len(body))}, body)]


def test_accepts_bytearray_and_memoryview() -> None:
    data = b"SEND\ndestination:/q\n\n\0"
    assert parser().feed(bytearray(data)) == parser().feed(memoryview(data))  # type: ignore[arg-type]
