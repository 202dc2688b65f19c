"""The client's side of one STOMP connection, without I/O.

FerryMQ's client library and benchmark tools build on it: it writes the frames a client sends
for the version the broker chose, and turns what the broker sends into typed events. Its state
table is at the top of the module, as in ``session``.

Errors follow ``session``: a broken frame from the broker raises ``RemoteProtocolError`` (always
fatal here; events decoded before it are on ``exc.events``); asking for a frame the connection
cannot send yet, or one the negotiated version cannot express, raises ``LocalProtocolError``.
An ERROR frame from the broker is an ``ErrorEvent``, not an exception: the broker is allowed to
send it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Final

from ferrymq.stomp.constants import (
    ABORT,
    ACCEPT_VERSION,
    ACK,
    ACK_AUTO,
    ACK_HEADER,
    ACK_MODES,
    BEGIN,
    CLIENT_ID,
    COMMIT,
    CONNECT,
    CONNECTED,
    CONTENT_TYPE,
    DESTINATION,
    DISCONNECT,
    ERROR,
    HEART_BEAT,
    HOST,
    ID,
    LOGIN,
    MESSAGE,
    MESSAGE_HEADER,
    MESSAGE_ID,
    NACK,
    PASSCODE,
    RECEIPT,
    RECEIPT_HEADER,
    RECEIPT_ID,
    SELECTOR,
    SEND,
    SERVER,
    SESSION,
    STOMP,
    SUBSCRIBE,
    SUBSCRIPTION,
    SUPPORTED_VERSIONS,
    TRANSACTION,
    UNSUBSCRIBE,
    V1_0,
    V1_2,
    VERSION,
)
from ferrymq.stomp.encoder import encode_frame
from ferrymq.stomp.errors import LocalProtocolError, RemoteProtocolError
from ferrymq.stomp.events import ClientEvent, Connected, ErrorEvent, MessageEvent, ReceiptEvent
from ferrymq.stomp.frame import Frame, HeartBeat
from ferrymq.stomp.limits import DEFAULT_LIMITS, Limits
from ferrymq.stomp.negotiation import format_heart_beat, parse_heart_beat
from ferrymq.stomp.parser import FrameParser


class ClientState(Enum):
    IDLE = "IDLE"
    """No CONNECT written yet."""
    CONNECTING = "CONNECTING"
    """CONNECT written, waiting for CONNECTED."""
    CONNECTED = "CONNECTED"
    DISCONNECTING = "DISCONNECTING"
    """DISCONNECT written; messages and receipts may still arrive."""


# Server commands each state accepts from the broker.
RECEIVES: Final[dict[ClientState, frozenset[str]]] = {
    ClientState.IDLE: frozenset(),
    ClientState.CONNECTING: frozenset({CONNECTED, ERROR}),
    ClientState.CONNECTED: frozenset({MESSAGE, RECEIPT, ERROR}),
    ClientState.DISCONNECTING: frozenset({MESSAGE, RECEIPT, ERROR}),
}
# Received commands that change the state.
TRANSITIONS: Final[dict[tuple[ClientState, str], ClientState]] = {
    (ClientState.CONNECTING, CONNECTED): ClientState.CONNECTED,
}
# States in which the client may write frames other than CONNECT.
CAN_SEND: Final = frozenset({ClientState.CONNECTED})


class ClientSession:
    """One connection to a broker as the client sees it."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._parser = FrameParser(limits)
        self._state = ClientState.IDLE
        self._version: str = V1_0
        self._offered: tuple[str, ...] = SUPPORTED_VERSIONS
        self._handlers: dict[str, Callable[[Frame], ClientEvent]] = {
            CONNECTED: self._on_connected,
            MESSAGE: self._on_message,
            RECEIPT: self._on_receipt,
            ERROR: self._on_error,
        }

    @property
    def state(self) -> ClientState:
        return self._state

    @property
    def version(self) -> str:
        """The version the broker chose; "1.0" until CONNECTED."""
        return self._version

    # ---- receiving ----

    def receive_data(self, data: bytes) -> list[ClientEvent]:
        """Decode ``data`` (possibly empty) into events, in the order the broker sent them."""
        events: list[ClientEvent] = []
        while True:
            try:
                frames = self._parser.feed(data)
            except RemoteProtocolError as exc:
                self._handle(exc.events, events)  # type: ignore[arg-type]
                exc.events = tuple(events)
                raise
            self._handle(frames, events)
            # The parser pauses after CONNECTED so what follows is decoded as negotiated.
            if not frames or getattr(frames[-1], "command", None) != CONNECTED:
                return events
            data = b""

    def _handle(self, frames: Sequence[Frame | HeartBeat], events: list[ClientEvent]) -> None:
        """Turn frames into events; a fault raises with the events before it attached."""
        append = events.append
        on_message = self._on_message
        try:
            for frame in frames:
                if isinstance(frame, HeartBeat):
                    append(frame)
                elif frame.command == MESSAGE and self._state is ClientState.CONNECTED:
                    append(on_message(frame))  # the hot path: a consumer's stream
                else:
                    append(self._dispatch(frame))
        except RemoteProtocolError as exc:
            exc.events = tuple(events)
            raise

    def _dispatch(self, frame: Frame) -> ClientEvent:
        state = self._state
        command = frame.command
        if command not in RECEIVES[state]:
            if command in self._handlers:
                raise RemoteProtocolError(f"{command} received in client state {state.value}")
            raise RemoteProtocolError(f"Unknown STOMP action from the broker: {command}")
        event = self._handlers[command](frame)
        self._state = TRANSITIONS.get((state, command), state)
        return event

    def _on_connected(self, frame: Frame) -> Connected:
        headers = frame.headers
        version = headers.get(VERSION, V1_0)
        if version not in self._offered:
            raise RemoteProtocolError(f"broker chose version {version[:10]!r}, not offered")
        heart_beat = parse_heart_beat(headers.get(HEART_BEAT))
        self._version = self._parser.version = version
        return Connected(version, headers.get(SESSION), headers.get(SERVER), heart_beat, headers)

    def _on_message(self, frame: Frame) -> MessageEvent:
        headers = frame.headers
        get = headers.get
        destination = get(DESTINATION)
        message_id = get(MESSAGE_ID)
        if destination is None or message_id is None:
            raise RemoteProtocolError("MESSAGE without a destination or message-id header")
        return MessageEvent(
            destination, message_id, get(SUBSCRIPTION), get(ACK_HEADER), headers, frame.body
        )

    def _on_receipt(self, frame: Frame) -> ReceiptEvent:
        receipt_id = frame.headers.get(RECEIPT_ID)
        if receipt_id is None:
            raise RemoteProtocolError("RECEIPT without a receipt-id header")
        return ReceiptEvent(receipt_id)

    def _on_error(self, frame: Frame) -> ErrorEvent:
        headers = frame.headers
        return ErrorEvent(
            headers.get(MESSAGE_HEADER, ""), headers.get(RECEIPT_ID), headers, frame.body
        )

    # ---- sending ----

    def connect_frame(
        self,
        *,
        host: str | None = None,
        login: str | None = None,
        passcode: str | None = None,
        client_id: str | None = None,
        heart_beat: tuple[int, int] = (0, 0),
        accept_version: Sequence[str] = SUPPORTED_VERSIONS,
        headers: Mapping[str, str] | None = None,
        command: str = CONNECT,
    ) -> bytes:
        """The CONNECT (or STOMP) frame that opens the connection.

        ``accept_version`` lists the versions offered; offering only "1.0" sends no
        accept-version header, which is how a 1.0 client looks to a broker.
        """
        if self._state is not ClientState.IDLE:
            raise LocalProtocolError("CONNECT was already sent")
        if command not in (CONNECT, STOMP):
            raise LocalProtocolError(f"{command} cannot open a connection")
        offered = tuple(accept_version)
        if not offered or not set(offered) <= set(SUPPORTED_VERSIONS):
            raise LocalProtocolError(f"cannot offer versions {offered!r}")
        out: dict[str, str] = {}
        if offered != (V1_0,):
            out[ACCEPT_VERSION] = ",".join(offered)
        for name, value in (
            (HOST, host),
            (LOGIN, login),
            (PASSCODE, passcode),
            (CLIENT_ID, client_id),
        ):
            if value is not None:
                out[name] = value
        if heart_beat != (0, 0):
            out[HEART_BEAT] = format_heart_beat(heart_beat)
        if headers:
            out = {**out, **headers, **out}
        frame = encode_frame(command, out, b"", V1_0)
        self._offered = offered
        self._state = ClientState.CONNECTING
        return frame

    def send(
        self,
        destination: str,
        body: bytes = b"",
        *,
        headers: Mapping[str, str] | None = None,
        content_type: str | None = None,
        transaction: str | None = None,
        receipt: str | None = None,
        content_length: bool = True,
    ) -> bytes:
        """A SEND frame. Without ``content_length`` ActiveMQ makes it a TextMessage."""
        out = {DESTINATION: destination}
        if content_type is not None:
            out[CONTENT_TYPE] = content_type
        if transaction is not None:
            out[TRANSACTION] = transaction
        if receipt is not None:
            out[RECEIPT_HEADER] = receipt
        if headers:
            out = {**out, **headers, **out}
        return self._encode(SEND, out, body, content_length)

    def subscribe(
        self,
        destination: str,
        id: str | None = None,
        *,
        ack: str = ACK_AUTO,
        selector: str | None = None,
        headers: Mapping[str, str] | None = None,
        receipt: str | None = None,
    ) -> bytes:
        if id is None and self._version != V1_0:
            raise LocalProtocolError(f"SUBSCRIBE needs an id in STOMP {self._version}")
        if ack not in ACK_MODES:
            raise LocalProtocolError(f"unknown ack mode {ack!r}")
        out = {DESTINATION: destination}
        if id is not None:
            out[ID] = id
        if ack != ACK_AUTO:
            out[ACK_HEADER] = ack
        if selector is not None:
            out[SELECTOR] = selector
        if receipt is not None:
            out[RECEIPT_HEADER] = receipt
        if headers:
            out = {**out, **headers, **out}
        return self._encode(SUBSCRIBE, out)

    def unsubscribe(
        self,
        id: str | None = None,
        *,
        destination: str | None = None,
        headers: Mapping[str, str] | None = None,
        receipt: str | None = None,
    ) -> bytes:
        if id is None and (self._version != V1_0 or destination is None):
            raise LocalProtocolError(f"UNSUBSCRIBE needs an id in STOMP {self._version}")
        out: dict[str, str] = {}
        if id is not None:
            out[ID] = id
        if destination is not None:
            out[DESTINATION] = destination
        if receipt is not None:
            out[RECEIPT_HEADER] = receipt
        if headers:
            out = {**out, **headers, **out}
        return self._encode(UNSUBSCRIBE, out)

    def ack(
        self, message: MessageEvent, *, transaction: str | None = None, receipt: str | None = None
    ) -> bytes:
        """ACK ``message`` with the headers its version needs (1.2: id; 1.1: message-id and
        subscription; 1.0: message-id)."""
        return self._encode(ACK, self._ack_headers(ACK, message, transaction, receipt))

    def nack(
        self, message: MessageEvent, *, transaction: str | None = None, receipt: str | None = None
    ) -> bytes:
        if self._version == V1_0:
            raise LocalProtocolError("NACK does not exist in STOMP 1.0")
        return self._encode(NACK, self._ack_headers(NACK, message, transaction, receipt))

    def _ack_headers(
        self, command: str, message: MessageEvent, transaction: str | None, receipt: str | None
    ) -> dict[str, str]:
        out: dict[str, str] = {}
        if self._version == V1_2:
            if message.ack is None:
                raise LocalProtocolError(f"{command}: the message has no ack header")
            out[ID] = message.ack
        else:
            out[MESSAGE_ID] = message.message_id
            if message.subscription is not None:
                out[SUBSCRIPTION] = message.subscription
            elif self._version != V1_0:
                raise LocalProtocolError(f"{command}: the message has no subscription header")
        if transaction is not None:
            out[TRANSACTION] = transaction
        if receipt is not None:
            out[RECEIPT_HEADER] = receipt
        return out

    def begin(self, transaction: str, *, receipt: str | None = None) -> bytes:
        return self._encode(BEGIN, _with_receipt({TRANSACTION: transaction}, receipt))

    def commit(self, transaction: str, *, receipt: str | None = None) -> bytes:
        return self._encode(COMMIT, _with_receipt({TRANSACTION: transaction}, receipt))

    def abort(self, transaction: str, *, receipt: str | None = None) -> bytes:
        return self._encode(ABORT, _with_receipt({TRANSACTION: transaction}, receipt))

    def disconnect(self, *, receipt: str | None = None) -> bytes:
        frame = self._encode(DISCONNECT, _with_receipt({}, receipt))
        self._state = ClientState.DISCONNECTING
        return frame

    def _encode(
        self, command: str, headers: dict[str, str], body: bytes = b"", length: bool = False
    ) -> bytes:
        if self._state not in CAN_SEND:
            raise LocalProtocolError(f"cannot send {command} in client state {self._state.value}")
        return encode_frame(command, headers, body, self._version, content_length=length)


def _with_receipt(headers: dict[str, str], receipt: str | None) -> dict[str, str]:
    if receipt is not None:
        headers[RECEIPT_HEADER] = receipt
    return headers
