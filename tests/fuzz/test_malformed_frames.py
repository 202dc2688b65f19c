"""Malformed STOMP against a live broker (issue 2, item 8 and "Fuzz"; DESIGN.md "Testing").

Each generated case (frame_faults.py, session_faults.py; outcomes in cases.py) gets its own raw
connection and must get the answer its outcome demands;
meanwhile a stomp.py client stays connected and round-trips a message every few cases, and the
persistent messages stored before the fuzzing must all be there afterwards, read back after a
restart of the broker on the same store.  ``derandomize`` makes every run the same cases, so a
failure reproduces; run with ``-s`` to see the distinct ERROR messages the broker gave.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrymq.config.cli import config_from_flags
from ferrymq.config.model import BrokerConfig
from ferrymq.testing import BrokerThread, wait_until_blocking

from . import frame_faults, session_faults
from .canary import Canary, Collector, connect, disconnect
from .cases import BODY_LIMIT, Case, Outcome, chunked
from .wire import RawConnection, Reply, connect_frame, frame

EXAMPLES = 300
CANARY_EVERY = 20
STORED = 200
STORED_QUEUE = "/queue/fuzz.stored"


def fuzz_config(data_dir: Path) -> BrokerConfig:
    listen = f"stomp://127.0.0.1:0?wireFormat.maxDataLength={BODY_LIMIT}"
    return config_from_flags("fuzz", data_dir, [listen], "off", True)


@pytest.fixture
def fuzzed(tmp_path: Path) -> Iterator[BrokerThread]:
    broker = BrokerThread(fuzz_config(tmp_path / "data")).start()
    try:
        yield broker
    finally:
        if broker.broker is not None:  # the test may have stopped it already
            broker.stop()


# -- playing one case --------------------------------------------------------------------------


CHUNK_PAUSE_S = 0.001
"""Between the pieces of a split case, so the broker reads them separately (not a wait)."""


def open_session(port: int, case: Case) -> RawConnection:
    conn = RawConnection(port)
    chunks = case.chunks()
    if case.version is not None:
        if case.pipelined:
            chunks[0] = connect_frame(case.version) + chunks[0]
        else:
            conn.handshake(case.version)
    for index, chunk in enumerate(chunks):
        if index:
            time.sleep(CHUNK_PAUSE_S)
        if not conn.send(chunk):
            break  # the broker closed mid-way, as it may after a fault
    if case.pipelined:
        conn.expect("CONNECTED")
        conn.escaped = case.version != "1.0"
    return conn


def check_error(case: Case, error: Reply) -> None:
    assert error.command == "ERROR", f"{case}: expected ERROR, got {error}"
    assert error.message.strip(), f"{case}: ERROR without a message: {error}"
    if case.receipt is not None:
        assert error.headers.get("receipt-id") == case.receipt, f"{case}: {error}"
    if case.mentions is not None:
        assert case.mentions.lower() in error.message.lower(), f"{case}: {error}"


def play(port: int, case: Case) -> list[Reply]:
    """Run one case on a fresh connection; return what the broker answered."""
    with open_session(port, case) as conn:
        if case.outcome is Outcome.FATAL:
            replies = conn.read_until_eof()
            assert replies, f"{case}: the broker closed without an ERROR"
            check_error(case, replies[-1])
            # Messages for the frames handled before the fatal one may come too (a SEND to a
            # topic the case subscribed to); what is owed is every receipt, in order.
            early = [
                (r.command, r.headers.get("receipt-id"))
                for r in replies[:-1]
                if r.command != "MESSAGE"
            ]
            owed = [("RECEIPT", receipt) for receipt in case.receipts_first]
            assert early == owed, f"{case}: expected {owed} before the ERROR, got {replies}"
        elif case.outcome is Outcome.KEPT_OPEN:
            error = conn.read_frame()
            assert error is not None, f"{case}: the broker closed the connection"
            check_error(case, error)
            conn.send(frame("DISCONNECT", ("receipt", "still-open")))
            rest = conn.read_until_eof()
            assert [(r.command, r.headers.get("receipt-id")) for r in rest] == [
                ("RECEIPT", "still-open")
            ], f"{case}: after the ERROR the connection did not work: {rest}"
            replies = [error, *rest]
        else:
            conn.half_close()
            replies = conn.read_until_eof()
            if case.outcome is Outcome.INCOMPLETE:
                assert not replies, f"{case}: an unfinished frame was answered: {replies}"
            for reply in replies:
                assert reply.command in ("ERROR", "RECEIPT", "CONNECTED", "MESSAGE"), reply
                if reply.command == "ERROR":
                    assert reply.message.strip(), f"{case}: ERROR without a message: {reply}"
        return replies


# -- stored messages ---------------------------------------------------------------------------


def store_messages(port: int) -> None:
    collector = Collector()
    conn = connect(port, collector)
    for seq in range(STORED):
        conn.send(
            STORED_QUEUE,
            body=f"stored {seq}",
            headers={"persistent": "true", "seq": str(seq)},
            receipt=f"stored-{seq}",
        )
    collector.wait(lambda: len(collector.receipts) == STORED, f"{STORED} receipts")
    disconnect(conn, collector)


def _seen_end(collector: Collector) -> bool:
    return any(headers.get("seq") == "end" for headers, _ in collector.messages)


def read_stored(port: int) -> list[int]:
    """Every seq on the stored queue, up to an end marker sent after them."""
    collector = Collector()
    conn = connect(port, collector)
    conn.send(STORED_QUEUE, body="end", headers={"persistent": "true", "seq": "end"})
    conn.subscribe(STORED_QUEUE, id="drain", ack="auto")
    collector.wait(lambda: _seen_end(collector), "the end marker")
    disconnect(conn, collector)
    return [int(h["seq"]) for h, _ in collector.messages if h.get("seq") != "end"]


# -- the tests ---------------------------------------------------------------------------------


class ErrorCatalogue:
    """The distinct ERROR messages seen, so a human can judge them (printed with ``-s``)."""

    def __init__(self) -> None:
        self.examples: dict[str, tuple[str, str]] = {}
        self.counts: Counter[str] = Counter()

    def add(self, family: str, message: str) -> None:
        gist = re.sub(r"\[[^\]]*\]|'[^']*'|\"[^\"]*\"|\d+", "_", message)
        self.examples.setdefault(gist, (family, message))
        self.counts[gist] += 1

    def show(self, header: str) -> None:
        print(f"\n{header}; {len(self.examples)} distinct ERROR messages (count, case, example):")
        for gist, (family, message) in sorted(self.examples.items(), key=lambda i: i[1]):
            print(f"  {self.counts[gist]:4d}  {family:38s}  {message[:160]}")


def wait_connections(broker: BrokerThread, count: int, timeout_s: float = 10.0) -> None:
    """Every fuzz connection is gone from the broker's books (none leaked)."""

    def open_count() -> int:
        assert broker.broker is not None
        return len(broker.broker.service.connections)

    wait_until_blocking(
        lambda: broker.call(open_count) == count,
        timeout_s,
        f"{count} connection(s) open",
        detail=lambda: f"{broker.call(open_count)} open",
        interval_s=0.02,
    )


def test_malformed_input_is_refused_and_harms_no_one(
    fuzzed: BrokerThread, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    port = fuzzed.port
    store_messages(port)
    canary = Canary(port).start()
    catalogue = ErrorCatalogue()
    outcomes: Counter[str] = Counter()
    played = 0

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=chunked(st.one_of(*frame_faults.FAMILIES, *session_faults.FAMILIES)))
    def fuzz(case: Case) -> None:
        nonlocal played
        replies = play(port, case)
        for reply in replies:
            if reply.command == "ERROR":
                catalogue.add(case.family, reply.message)
        outcomes[case.outcome.value] += 1
        played += 1
        if played % CANARY_EVERY == 0:
            canary.round_trip()

    started = time.monotonic()
    try:
        fuzz()
    finally:
        elapsed = time.monotonic() - started
        catalogue.show(f"{played} cases in {elapsed:.1f} s, outcomes {dict(outcomes)}")
    canary.round_trip()
    wait_connections(fuzzed, 1)
    canary.stop()
    broken = [r for r in caplog.records if r.name.startswith(("ferrymq", "asyncio"))]
    assert not broken, "broker logged:\n" + "\n".join(r.getMessage() for r in broken)

    # The store survived: every message stored before the fuzzing, read back after a restart.
    fuzzed.stop()
    with BrokerThread(fuzz_config(tmp_path / "data")) as again:
        stored = read_stored(again.port)
    assert sorted(stored) == list(range(STORED)), f"stored messages lost or doubled: {stored}"


# -- hand-written cases: ActiveMQ's answers (reference/activemq.md section 6) -------------------


def exchange(port: int, version: str | None, data: bytes) -> list[Reply]:
    """Send ``data`` (after CONNECT for ``version``), return every frame up to the close."""
    with RawConnection(port) as conn:
        if version is not None:
            conn.handshake(version)
        conn.send(data)
        return conn.read_until_eof()


def only_error(replies: list[Reply]) -> Reply:
    assert [r.command for r in replies] == ["ERROR"], replies
    return replies[0]


def test_unsupported_version_is_refused_naming_the_supported_ones(fuzzed: BrokerThread) -> None:
    error = only_error(exchange(fuzzed.port, None, connect_frame("9.9")))
    assert error.message == "Invalid Protocol version[9.9], supported versions are: [1.2, 1.1, 1.0]"


def test_malformed_heart_beat_is_fatal(fuzzed: BrokerThread) -> None:
    error = only_error(exchange(fuzzed.port, None, connect_frame("1.2", ("heart-beat", "0"))))
    assert error.message.startswith("Invalid heart-beat header"), error


def test_send_without_destination_is_refused(fuzzed: BrokerThread) -> None:
    error = only_error(exchange(fuzzed.port, "1.2", frame("SEND", ("receipt", "r"), body=b"x")))
    assert error.message == "SEND received without a Destination specified!"
    assert error.headers.get("receipt-id") == "r"


def test_bad_selector_error_names_the_position(fuzzed: BrokerThread) -> None:
    subscribe = frame(
        "SUBSCRIBE", ("id", "1"), ("destination", "/queue/fuzz.sel"), ("selector", "a >< 1")
    )
    error = only_error(exchange(fuzzed.port, "1.1", subscribe))
    # The '<' at offset 3 is where "a >< 1" stops making sense.
    assert re.search(r"\bposition 3\b", error.message), error.message
    assert "a >< 1" in error.message


def test_second_connect_is_refused_but_the_connection_stays_open(fuzzed: BrokerThread) -> None:
    with RawConnection(fuzzed.port) as conn:
        conn.handshake("1.2")
        conn.send(connect_frame("1.2"))
        error = conn.expect("ERROR")
        assert error.message == "Already connected."
        conn.send(frame("SEND", ("destination", "/queue/fuzz.again"), ("receipt", "after")))
        receipt = conn.expect("RECEIPT")
        assert receipt.headers["receipt-id"] == "after"


@pytest.mark.parametrize(
    "data",
    [
        frame("SEND", ("destination", "/queue/fuzz.big"), body=b"b" * (BODY_LIMIT + 1)),
        frame("SEND", ("destination", "/queue/fuzz.big"), ("content-length", str(BODY_LIMIT + 1))),
    ],
    ids=["body", "content-length"],
)
def test_frame_over_the_body_limit_is_fatal(fuzzed: BrokerThread, data: bytes) -> None:
    """``wireFormat.maxDataLength`` on the listener URI (reference 6.3)."""
    error = only_error(exchange(fuzzed.port, "1.2", data))
    assert error.message == f"body exceeds the maximum of {BODY_LIMIT} bytes" or (
        str(BODY_LIMIT) in error.message and "content-length" in error.message
    ), error


def test_frame_before_connect_is_fatal(fuzzed: BrokerThread) -> None:
    send = frame("SEND", ("destination", "/queue/fuzz.early"))
    assert only_error(exchange(fuzzed.port, None, send)).message == "Not connected."


def test_unknown_command_is_fatal(fuzzed: BrokerThread) -> None:
    error = only_error(exchange(fuzzed.port, "1.2", frame("PUBLISH", ("destination", "/q"))))
    assert error.message.startswith("Unknown STOMP action"), error


def test_ack_of_an_unknown_id_is_refused(fuzzed: BrokerThread) -> None:
    error = only_error(exchange(fuzzed.port, "1.2", frame("ACK", ("id", "nope"))))
    assert error.message == "Unexpected ACK received for message-id [nope]"


def test_nack_on_a_1_0_connection_is_refused_but_kept_open(fuzzed: BrokerThread) -> None:
    with RawConnection(fuzzed.port) as conn:
        conn.handshake(None)
        conn.send(frame("NACK", ("message-id", "m"), ("receipt", "n")))
        error = conn.expect("ERROR")
        assert error.message == "NACK received but connection is in v1.0 mode."
        conn.send(frame("DISCONNECT", ("receipt", "bye")))
        rest = conn.read_until_eof()
        assert [(r.command, r.headers.get("receipt-id")) for r in rest] == [("RECEIPT", "bye")]


@pytest.mark.parametrize("persistent", ["true", "false"])
def test_receipts_for_frames_ahead_of_a_fatal_one_are_sent(
    fuzzed: BrokerThread, persistent: str
) -> None:
    """A stored message's receipt is owed even if a bad frame follows it in the same packet.

    Without it the client must assume the send failed and send it again: a duplicate.
    """
    send = frame(
        "SEND",
        ("destination", "/queue/fuzz.owed"),
        ("persistent", persistent),
        ("receipt", "owed"),
        body=b"kept",
    )
    replies = exchange(fuzzed.port, "1.2", send + frame("BOGUS"))
    with RawConnection(fuzzed.port) as conn:
        conn.handshake("1.2")
        conn.send(frame("SUBSCRIBE", ("id", "1"), ("destination", "/queue/fuzz.owed")))
        message = conn.expect("MESSAGE")
    assert message.body == b"kept"
    answers = [(r.command, r.headers.get("receipt-id")) for r in replies]
    assert answers == [("RECEIPT", "owed"), ("ERROR", None)], (
        f"the message was accepted (a consumer got it), but the broker answered {replies}"
    )


@pytest.mark.parametrize("asked_ms", [1, 50])
def test_the_broker_keeps_the_heart_beat_it_promised(fuzzed: BrokerThread, asked_ms: int) -> None:
    """CONNECTED's ``heart-beat:sx,_`` promises one every sx ms (STOMP 1.2 "Heart-beating")."""
    with RawConnection(fuzzed.port) as conn:
        conn.send(connect_frame("1.2", ("heart-beat", f"0,{asked_ms}")))
        connected = conn.expect("CONNECTED")
        promised_ms = int(connected.headers["heart-beat"].split(",")[0])
        assert 0 < promised_ms <= asked_ms
        window_s = 1.0  # twenty promised intervals at least
        beats = conn.count_heart_beats(2, window_s)
        assert beats >= 2, (
            f"CONNECTED promised a heart-beat every {promised_ms} ms; {beats} came in {window_s} s"
        )
