"""Faults in the framing: what the parser must refuse (STOMP 1.2 "STOMP Frames"; reference 6.3)."""

from __future__ import annotations

import string

from hypothesis import strategies as st

from .cases import (
    BODY_LIMIT,
    CLIENT_COMMANDS,
    KNOWN_COMMANDS,
    VERSIONS,
    Case,
    Outcome,
    drawn_case,
    session,
    valid_frames,
)
from .wire import frame


@st.composite
def random_bytes(draw: st.DrawFn) -> Case:
    data = draw(st.binary(min_size=1, max_size=300))
    connected = draw(st.booleans())
    version = draw(st.sampled_from(VERSIONS)) if connected else None
    return Case("random bytes", data, Outcome.ANY, version, draw(st.booleans()) and connected)


@st.composite
def damaged_frame(draw: st.DrawFn) -> Case:
    """A valid frame with a few bytes replaced, inserted or deleted."""
    version, pipelined = draw(session())
    data = bytearray(draw(st.sampled_from(valid_frames(version))))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(("replace", "insert", "delete")))
        byte = draw(st.integers(0, 255))
        if op == "replace":
            data[at] = byte
        elif op == "insert":
            data.insert(at, byte)
        elif len(data) > 1:
            del data[at]
    return Case("damaged frame", bytes(data), Outcome.ANY, version, pipelined)


@st.composite
def before_connect(draw: st.DrawFn) -> Case:
    command = draw(st.sampled_from(CLIENT_COMMANDS))
    data = frame(command, ("destination", "/queue/fuzz.early"), ("id", "1"), ("receipt", "r"))
    return Case("frame before CONNECT", data, Outcome.FATAL, mentions="connect")


@st.composite
def unknown_command(draw: st.DrawFn) -> Case:
    command = draw(
        st.one_of(
            st.text(string.ascii_letters, min_size=1, max_size=12),
            st.sampled_from(("MESSAGE", "RECEIPT", "ERROR", "CONNECTED", "send", "SENDX")),
        ).filter(lambda c: c not in KNOWN_COMMANDS)
    )
    data = frame(command, ("destination", "/queue/fuzz.unknown"))
    if draw(st.booleans()):
        return Case("unknown command before CONNECT", data, Outcome.FATAL)
    return drawn_case(draw, "unknown command", data, Outcome.FATAL)


@st.composite
def truncated_head(draw: st.DrawFn) -> Case:
    """A frame whose NUL comes before the blank line that ends its headers."""
    version, pipelined = draw(session())
    whole = draw(st.sampled_from(valid_frames(version)))
    head_end = whole.index(b"\n\n")
    cut = draw(st.integers(1, head_end + 1))
    return Case("truncated head", whole[:cut] + b"\0", Outcome.FATAL, version, pipelined)


@st.composite
def unfinished(draw: st.DrawFn) -> Case:
    version, pipelined = draw(session())
    whole = draw(st.sampled_from(valid_frames(version)))
    cut = draw(st.integers(1, len(whole) - 1))
    return Case("unfinished frame", whole[:cut], Outcome.INCOMPLETE, version, pipelined)


@st.composite
def bad_escape(draw: st.DrawFn) -> Case:
    """STOMP 1.2 "Value Encoding": an undefined escape sequence is a fatal error (1.1 and 1.2)."""
    version = draw(st.sampled_from(("1.1", "1.2")))
    bad = draw(st.sampled_from(("\\t", "\\x", "\\0", "\\ ", "\\a", "\\")))
    if version == "1.1" and draw(st.booleans()):
        bad = "\\r"  # defined only from 1.2 on
    prefix = draw(st.text(string.ascii_letters, max_size=5))
    in_name = draw(st.booleans())
    header = (prefix + bad, "v") if in_name else ("x-fuzz", prefix + bad)
    if bad == "\\" and in_name:
        header = ("x-fuzz" + bad, "v")
    data = frame("SEND", ("destination", "/queue/fuzz.escape"), header, body=b"x")
    return Case("bad escape", data, Outcome.FATAL, version, draw(st.booleans()))


@st.composite
def oversized(draw: st.DrawFn) -> Case:
    """Over ActiveMQ's StompWireFormat limits (reference 6.3); unfinished frames included."""
    kind = draw(
        st.sampled_from(
            (
                "command",
                "command, unfinished",
                "header line",
                "header line, unfinished",
                "headers",
                "body",
                "body, unfinished",
            )
        )
    )
    destination = ("destination", "/queue/fuzz.big")
    if kind == "command":
        data = frame("S" * 1100, destination)
    elif kind == "command, unfinished":
        data = b"S" * 1100
    elif kind == "header line":
        data = frame("SEND", destination, ("x-big", "v" * 10300))
    elif kind == "header line, unfinished":
        data = b"SEND\nx-big:" + b"v" * 10300
    elif kind == "headers":
        data = frame("SEND", destination, *[(f"h{i}", "v") for i in range(1001)])
    elif kind == "body":
        data = frame("SEND", destination, body=b"b" * (BODY_LIMIT + 1))
    else:
        data = b"SEND\ndestination:/queue/fuzz.big\n\n" + b"b" * (BODY_LIMIT + 10)
    return drawn_case(draw, f"oversized {kind}", data, Outcome.FATAL)


@st.composite
def bad_content_length(draw: st.DrawFn) -> Case:
    body = b"payload"
    kind = draw(st.sampled_from(("not a number", "too large", "too short", "too long")))
    destination = ("destination", "/queue/fuzz.length")
    if kind == "not a number":
        value = draw(
            st.one_of(
                st.sampled_from(("-1", "+7", "7.0", "0x7", "1e3", "", "seven", "\u0667")),
                st.text(min_size=1, max_size=8).filter(
                    lambda v: (
                        not (v.strip().isascii() and v.strip().isdigit())
                        and "\n" not in v
                        and "\r" not in v
                        and "\0" not in v
                        and "\\" not in v
                        and ":" not in v
                    )
                ),
            )
        )
        data = frame("SEND", destination, ("content-length", value), body=body)
        return drawn_case(draw, "content-length not a number", data, Outcome.FATAL)
    if kind == "too large":
        value = str(draw(st.integers(BODY_LIMIT + 1, 10**30)))
        data = frame("SEND", destination, ("content-length", value), body=body)
        return drawn_case(draw, "content-length over the limit", data, Outcome.FATAL)
    if kind == "too short":
        length = draw(st.integers(0, len(body) - 1))
        data = frame("SEND", destination, ("content-length", str(length)), body=body)
        return drawn_case(draw, "content-length shorter than the body", data, Outcome.FATAL)
    length = draw(st.integers(len(body) + 1, 1000))
    data = frame("SEND", destination, ("content-length", str(length)), body=body)
    return drawn_case(draw, "content-length longer than the body", data, Outcome.INCOMPLETE)


@st.composite
def misplaced_nul(draw: st.DrawFn) -> Case:
    version, pipelined = draw(session())
    whole = draw(st.sampled_from(valid_frames(version)))
    at = draw(st.integers(1, whole.index(b"\n\n")))
    return Case(
        "NUL in the head", whole[:at] + b"\0" + whole[at:], Outcome.FATAL, version, pipelined
    )


@st.composite
def not_utf8(draw: st.DrawFn) -> Case:
    bad = draw(st.sampled_from((b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80", b"\xf8\x88\x80")))
    where = draw(st.sampled_from(("value", "name", "command")))
    if where == "command":
        data = b"SEND" + bad + b"\ndestination:/queue/fuzz.utf8\n\n\0"
    elif where == "name":
        data = b"SEND\ndestination:/queue/fuzz.utf8\nx" + bad + b":v\n\n\0"
    else:
        data = b"SEND\ndestination:/queue/fuzz.utf8\nx:" + bad + b"\n\n\0"
    return drawn_case(draw, f"non-UTF-8 {where}", data, Outcome.FATAL)


FAMILIES = (
    random_bytes(),
    damaged_frame(),
    before_connect(),
    unknown_command(),
    truncated_head(),
    unfinished(),
    bad_escape(),
    oversized(),
    bad_content_length(),
    misplaced_nul(),
    not_utf8(),
)
