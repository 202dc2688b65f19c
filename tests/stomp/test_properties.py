"""Property tests: encode/parse round trips, re-chunking, and garbage that must fail cleanly."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ferrymq.stomp import (
    HEARTBEAT,
    ClientSession,
    Frame,
    FrameParser,
    HeartBeat,
    LocalProtocolError,
    RemoteProtocolError,
    ServerSession,
    encode,
)
from ferrymq.stomp.constants import ALL_COMMANDS, UNESCAPED_COMMANDS
from ferrymq.stomp.escaping import JAVA_WHITESPACE

Event = Frame | HeartBeat
VERSIONS = st.sampled_from(["1.0", "1.1", "1.2"])
# Any character UTF-8 can carry except NUL, with the ones that matter for framing made common.
CHARS = st.one_of(
    st.sampled_from(":\n\r\\ \t"),
    st.characters(codec="utf-8", exclude_characters="\x00"),
)
NAMES = st.text(CHARS, min_size=1, max_size=12).filter(
    lambda name: bool(name.strip(JAVA_WHITESPACE)) and name != "content-length"
)
VALUES = st.text(CHARS, max_size=20)
FRAMES = st.builds(
    Frame,
    command=st.sampled_from(sorted(ALL_COMMANDS)),
    headers=st.dictionaries(NAMES, VALUES, max_size=6),
    body=st.binary(max_size=64),
)


def unencodable(frame: Frame, version: str) -> bool:
    """Whether ``encode`` must refuse the frame (see encoder's module docstring)."""
    escaped = version != "1.0" and frame.command not in UNESCAPED_COMMANDS
    for name, value in frame.headers.items():
        if not escaped and ("\n" in name or "\n" in value or ":" in name):
            return True
        if value.endswith("\r") and not (escaped and version == "1.2"):
            return True
    return False


def as_parsed(frame: Frame, version: str) -> Frame:
    """What a peer's parser yields for an encoded ``frame``: 1.0 trims, first name wins."""
    headers: dict[str, str] = {}
    for name, value in frame.headers.items():
        if version == "1.0":
            name, value = name.strip(JAVA_WHITESPACE), value.strip(JAVA_WHITESPACE)
        headers.setdefault(name, value)
    if b"\0" in frame.body:
        headers["content-length"] = str(len(frame.body))
    return Frame(frame.command, headers, frame.body)


def feed_chunks(parser: FrameParser, chunks: list[bytes]) -> list[Event]:
    events: list[Event] = []
    for chunk in chunks:
        new = parser.feed(chunk)
        while new:
            events += new
            last = new[-1]
            paused = isinstance(last, Frame) and last.command in UNESCAPED_COMMANDS
            new = parser.feed(b"") if paused else []
    return events


def new_parser(version: str) -> FrameParser:
    parser = FrameParser()
    parser.version = version
    return parser


@settings(deadline=None, max_examples=300)
@given(FRAMES, VERSIONS)
def test_encode_parse_round_trip(frame: Frame, version: str) -> None:
    if unencodable(frame, version):
        with pytest.raises(LocalProtocolError):
            encode(frame, version)
        return
    (parsed,) = feed_chunks(new_parser(version), [encode(frame, version)])
    expected = as_parsed(frame, version)
    assert parsed == expected
    assert isinstance(parsed, Frame)
    assert list(parsed.headers.items()) == list(expected.headers.items())


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, bytes, list[Event]]:
    version = draw(VERSIONS)
    frames = draw(st.lists(FRAMES, max_size=5))
    data, expected = b"", list[Event]()
    for frame in frames:
        if unencodable(frame, version):
            continue
        for beat in draw(st.lists(st.sampled_from([b"\n", b"\r\n"]), max_size=2)):
            data += beat
            expected.append(HEARTBEAT)
        data += encode(frame, version)
        expected.append(as_parsed(frame, version))
    return version, data, expected


@settings(deadline=None, max_examples=200)
@given(streams(), st.data())
def test_rechunking_yields_the_same_events(
    stream: tuple[str, bytes, list[Event]], data: st.DataObject
) -> None:
    version, raw, expected = stream
    assume(raw)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    assert feed_chunks(new_parser(version), [raw]) == expected
    assert feed_chunks(new_parser(version), chunks) == expected


VALID = (
    b"SEND\ndestination:/queue/a\nk:v\\c\n\nbody\0"
    b"SEND\ncontent-length:3\n\na\0b\0\n"
    b"MESSAGE\ndestination:/q\nmessage-id:1\n\n\0"
    b"ACK\nid:1\n\n\0"
)


@st.composite
def garbage(draw: st.DrawFn) -> bytes:
    """Random bytes, or a valid stream with bytes flipped, inserted or cut off."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=200))
    raw = bytearray(VALID)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(raw) - 1))
        action = draw(st.sampled_from(["flip", "insert", "cut"]))
        if action == "flip":
            raw[at] = draw(st.integers(0, 255))
        elif action == "insert":
            raw[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            del raw[at:]
            if not raw:
                raw = bytearray(b"\0")
    return bytes(raw)


def splits(data: st.DataObject, raw: bytes) -> list[bytes]:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=5)))
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


@settings(deadline=None, max_examples=300)
@given(garbage(), VERSIONS, st.data())
def test_garbage_only_raises_remote_protocol_error(
    raw: bytes, version: str, data: st.DataObject
) -> None:
    parser = new_parser(version)
    failure: RemoteProtocolError | None = None
    try:
        feed_chunks(parser, splits(data, raw))
    except RemoteProtocolError as exc:
        failure = exc
    if failure is not None:
        assert failure.fatal
        assert failure.message
        with pytest.raises(RemoteProtocolError):
            parser.feed(b"")


@settings(deadline=None, max_examples=200)
@given(garbage(), VERSIONS, st.data())
def test_sessions_survive_garbage(raw: bytes, version: str, data: st.DataObject) -> None:
    server = ServerSession()
    server.receive_data(f"CONNECT\naccept-version:{version}\n\n\0".encode())
    for chunk in splits(data, raw):
        try:
            server.receive_data(chunk)
        except RemoteProtocolError as exc:
            if exc.fatal:
                break
    client = ClientSession()
    client.connect_frame(accept_version=(version,))
    with contextlib.suppress(RemoteProtocolError):
        client.receive_data(f"CONNECTED\nversion:{version}\n\n\0".encode() + raw)
