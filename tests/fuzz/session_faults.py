"""Faults in what well-formed frames ask: the session and the broker must refuse them.

Wordings and fatality follow ActiveMQ's STOMP converter (reference/activemq.md section 6), except
that FerryMQ closes the connection after every refusal but the two ActiveMQ keeps open.
"""

from __future__ import annotations

import string

from hypothesis import strategies as st

from .cases import VERSIONS, Case, Outcome, drawn_case, session
from .wire import connect_frame, frame


@st.composite
def bad_heart_beat(draw: st.DrawFn) -> Case:
    value = draw(
        st.one_of(
            st.sampled_from(("0", "1,2,3", "-1,0", "0,-1", "a,b", "", "1,", ",1", "1;2", "0x1,0")),
            st.integers(0, 10**6).map(str),
        )
    )
    version = draw(st.sampled_from((None, *VERSIONS)))
    data = connect_frame(version, ("heart-beat", value))
    return Case("bad heart-beat", data, Outcome.FATAL, mentions="heart-beat")


@st.composite
def bad_version(draw: st.DrawFn) -> Case:
    value = draw(
        st.one_of(
            st.sampled_from(("9.9", "2.0", "1.3", "1", "abc", "1.0.1", "1.1 1.2")),
            st.from_regex(r"[0-9]\.[3-9]", fullmatch=True),
        )
    )
    data = frame(draw(st.sampled_from(("CONNECT", "STOMP"))), ("accept-version", value))
    return Case("unsupported version", data, Outcome.FATAL, mentions="1.2")


BAD_SELECTORS = (
    "a >< 1",
    "a = ",
    "(a = 1",
    "a = 1)",
    "a LIKE",
    "a IN ()",
    "= 1",
    "a = 'open",
    "1 +",
    "a BETWEEN 1",
    "NOT",
    "a IS 1",
    "a = 1 AND",
    "a @ 1",
    "a LIKE 'x' ESCAPE 'xy'",
)


@st.composite
def bad_selector(draw: st.DrawFn) -> Case:
    selector = draw(st.sampled_from(BAD_SELECTORS))
    data = frame(
        "SUBSCRIBE",
        ("id", "sel"),
        ("destination", "/queue/fuzz.selector"),
        ("selector", selector),
        ("receipt", "sel-r"),
    )
    return drawn_case(
        draw, "bad selector", data, Outcome.FATAL, receipt="sel-r", mentions="position"
    )


@st.composite
def bad_destination(draw: st.DrawFn) -> Case:
    destination = draw(
        st.one_of(
            st.sampled_from(("/foo/bar", "/queues/x", "/Queue/x", "/", " ", "/queue/", "/topic/")),
            st.from_regex(r"/[a-z]{1,8}/[a-z]{1,8}", fullmatch=True).filter(
                lambda d: d.split("/")[1] not in ("queue", "topic")
            ),
        )
    )
    command = draw(st.sampled_from(("SEND", "SUBSCRIBE")))
    data = frame(command, ("id", "d"), ("destination", destination), ("receipt", "dest-r"))
    return drawn_case(draw, f"bad destination ({command})", data, Outcome.FATAL, receipt="dest-r")


@st.composite
def unknown_ack(draw: st.DrawFn) -> Case:
    version = draw(st.sampled_from(VERSIONS))
    command = draw(st.sampled_from(("ACK", "NACK")))
    ack_id = draw(st.text(string.ascii_letters + string.digits + "-:", min_size=1, max_size=20))
    ack_id = ack_id.replace(":", "-")
    data = frame(
        command,
        ("id", ack_id),
        ("message-id", ack_id),
        ("subscription", "nobody"),
        ("receipt", "ack-r"),
    )
    if command == "NACK" and version == "1.0":
        outcome, mentions = Outcome.KEPT_OPEN, "1.0"
    else:
        outcome, mentions = Outcome.FATAL, None
    return Case(
        f"{command} of an unknown id",
        data,
        outcome,
        version,
        draw(st.booleans()),
        "ack-r",
        mentions,
    )


@st.composite
def refused_headers(draw: st.DrawFn) -> Case:
    """Frames missing a required header or carrying a value the broker cannot use."""
    choices = {
        "SEND without destination": frame("SEND", ("receipt", "h-r"), body=b"x"),
        "SUBSCRIBE without destination": frame("SUBSCRIBE", ("id", "s"), ("receipt", "h-r")),
        "invalid ack mode": frame(
            "SUBSCRIBE",
            ("id", "s"),
            ("destination", "/queue/fuzz.ackmode"),
            ("ack", draw(st.sampled_from(("none", "Client", "individual", "", "auto ")))),
            ("receipt", "h-r"),
        ),
        "BEGIN without transaction": frame("BEGIN", ("receipt", "h-r")),
        "COMMIT of an unknown transaction": frame(
            "COMMIT", ("transaction", "never-begun"), ("receipt", "h-r")
        ),
        "ABORT without transaction": frame("ABORT", ("receipt", "h-r")),
        "bad priority": frame(
            "SEND",
            ("destination", "/queue/fuzz.priority"),
            ("priority", draw(st.sampled_from(("high", "10", "-1", "4.5")))),
            ("receipt", "h-r"),
        ),
        "bad prefetch": frame(
            "SUBSCRIBE",
            ("id", "s"),
            ("destination", "/queue/fuzz.prefetch"),
            ("activemq.prefetchSize", draw(st.sampled_from(("many", "0", "-5", "1.5")))),
            ("receipt", "h-r"),
        ),
        "bad expires": frame(
            "SEND", ("destination", "/queue/fuzz.expires"), ("expires", "soon"), ("receipt", "h-r")
        ),
    }
    name = draw(st.sampled_from(sorted(choices)))
    return drawn_case(draw, name, choices[name], Outcome.FATAL, receipt="h-r")


@st.composite
def missing_id(draw: st.DrawFn) -> Case:
    """Headers required from 1.1 on (reference 6.7, 6.8)."""
    command = draw(st.sampled_from(("SUBSCRIBE", "UNSUBSCRIBE", "ACK")))
    data = frame(
        command, ("destination", "/queue/fuzz.id"), ("subscription", "s"), ("receipt", "id-r")
    )
    versions = ("1.2",) if command == "ACK" else ("1.1", "1.2")
    return drawn_case(
        draw, f"{command} without id", data, Outcome.FATAL, receipt="id-r", versions=versions
    )


@st.composite
def second_connect(draw: st.DrawFn) -> Case:
    data = connect_frame(draw(st.sampled_from(VERSIONS)))
    return drawn_case(draw, "second CONNECT", data, Outcome.KEPT_OPEN, mentions="already connected")


@st.composite
def valid_then_fatal(draw: st.DrawFn) -> Case:
    """Valid frames with receipts, then a fatal one, all in one write: the receipts come first.

    STOMP keeps frame order, and the valid frames took effect (a persistent message is
    stored), so the client is owed their receipts before the ERROR.
    """
    version, pipelined = draw(session())
    data = b""
    receipts = []
    for index in range(draw(st.integers(1, 4))):
        receipt = ("receipt", f"ok-{index}")
        kind = draw(st.sampled_from(("persistent SEND", "SEND", "BEGIN", "SUBSCRIBE")))
        if kind == "persistent SEND":
            destination = ("destination", "/queue/fuzz.before-fatal")
            data += frame("SEND", destination, ("persistent", "true"), receipt, body=b"p")
        elif kind == "SEND":
            data += frame("SEND", ("destination", "/topic/fuzz.before-fatal"), receipt)
        elif kind == "BEGIN":
            data += frame("BEGIN", ("transaction", f"tx-{index}"), receipt)
        else:
            destination = ("destination", "/topic/fuzz.before-fatal")
            data += frame("SUBSCRIBE", ("id", f"s-{index}"), destination, receipt)
        receipts.append(receipt[1])
    fault = draw(
        st.sampled_from(
            (
                frame("BOGUS"),
                frame("SEND", ("receipt", "bad")),
                b"SEND\ndestination\0",
                frame("COMMIT", ("transaction", "never-begun")),
            )
        )
    )
    return Case(
        "valid frames, then a fatal one",
        data + fault,
        Outcome.FATAL,
        version,
        pipelined,
        receipts_first=tuple(receipts),
    )


@st.composite
def extreme_heart_beat(draw: st.DrawFn) -> Case:
    """Legal but extreme heart-beat values; the broker must survive whatever they ask of it."""
    big = "999999999999999999"
    value = draw(st.sampled_from(("0,1", "1,0", "1,1", f"{big},{big}", f"0,{big}", f"{big},0")))
    data = connect_frame(draw(st.sampled_from(VERSIONS)), ("heart-beat", value))
    return Case("extreme heart-beat", data, Outcome.ANY)


FAMILIES = (
    bad_heart_beat(),
    bad_version(),
    bad_selector(),
    bad_destination(),
    unknown_ack(),
    refused_headers(),
    missing_id(),
    second_connect(),
    valid_then_fatal(),
    extreme_heart_beat(),
)
