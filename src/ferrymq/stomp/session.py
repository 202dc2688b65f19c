"""The broker's side of one STOMP connection, without I/O (h11's ``Connection`` is the model).

Everything that affects the state machine lives in the tables at the top of this module.

Feed it what the socket read with ``receive_data``; it returns typed, validated events. Ask it
for the bytes of CONNECTED, MESSAGE, RECEIPT and ERROR frames with ``connected``, ``message``,
``receipt`` and ``error``; it encodes them for the negotiated version.

A protocol violation raises ``RemoteProtocolError``: answer it with ``error(exc.message,
receipt_id=exc.receipt_id)`` and, if ``exc.fatal``, close the connection. The events decoded
before the fault ride on ``exc.events`` and come first. FerryMQ makes every violation fatal
(an ERROR frame with a useful ``message`` header, then the connection closes), unlike ActiveMQ,
which keeps the connection open after a missing header; only "Already connected." and a NACK
on a 1.0 connection stay non-fatal, as in ActiveMQ. After one of those, the frames that followed
are kept: call ``receive_data(b"")`` to get them::

    while True:
        try:
            events = session.receive_data(data)
        except RemoteProtocolError as exc:
            handle(exc.events)
            write(session.error(exc.message, receipt_id=exc.receipt_id))
            if exc.fatal:
                close()
                break
            data = b""
        else:
            handle(events)
            break
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import Final

from ferrymq.stomp.constants import (
    ABORT,
    ACCEPT_VERSION,
    ACK,
    ACK_AUTO,
    ACK_HEADER,
    ACK_MODES,
    ACTIVEMQ_SUBSCRIPTION_NAME,
    BEGIN,
    BROWSER,
    CLIENT_COMMANDS,
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
    MESSAGE_HEADER,
    MESSAGE_ID,
    NACK,
    PASSCODE,
    RECEIPT,
    RECEIPT_HEADER,
    RECEIPT_ID,
    REQUEST_ID,
    RESPONSE_ID,
    SELECTOR,
    SEND,
    SERVER,
    SESSION,
    STOMP,
    SUBSCRIBE,
    SUBSCRIPTION,
    TRANSACTION,
    UNSUBSCRIBE,
    V1_0,
    V1_1,
    V1_2,
    VERSION,
)
from ferrymq.stomp.encoder import assemble_message, encode_frame, encode_message
from ferrymq.stomp.errors import LocalProtocolError, RemoteProtocolError
from ferrymq.stomp.events import (
    Abort,
    Ack,
    Begin,
    Commit,
    Connect,
    Disconnect,
    Nack,
    Send,
    ServerEvent,
    Subscribe,
    Unsubscribe,
)
from ferrymq.stomp.frame import Frame, HeartBeat
from ferrymq.stomp.limits import DEFAULT_LIMITS, Limits
from ferrymq.stomp.negotiation import format_heart_beat, negotiate_version, parse_heart_beat
from ferrymq.stomp.parser import FrameParser


class State(Enum):
    CONNECTING = "CONNECTING"
    """Nothing but CONNECT or STOMP yet."""
    CONNECTED = "CONNECTED"
    DISCONNECTED = "DISCONNECTED"
    """DISCONNECT received; the broker may still send its RECEIPT."""


# Client commands each state accepts.
ACCEPTED: Final[dict[State, frozenset[str]]] = {
    State.CONNECTING: frozenset({CONNECT, STOMP}),
    State.CONNECTED: CLIENT_COMMANDS - {CONNECT, STOMP},
    State.DISCONNECTED: frozenset(),
}
# A command a state does not accept: (state, command) first, then (state, None).
# The value is (ERROR message, fatal).
REFUSED: Final[dict[tuple[State, str | None], tuple[str, bool]]] = {
    (State.CONNECTING, None): ("Not connected.", True),
    (State.CONNECTED, CONNECT): ("Already connected.", False),
    (State.CONNECTED, STOMP): ("Already connected.", False),
    (State.DISCONNECTED, None): ("Already disconnected.", True),
}
# Accepted commands that change the state; all others keep it.
TRANSITIONS: Final[dict[tuple[State, str], State]] = {
    (State.CONNECTING, CONNECT): State.CONNECTED,
    (State.CONNECTING, STOMP): State.CONNECTED,
    (State.CONNECTED, DISCONNECT): State.DISCONNECTED,
}

_TRANSACTION_VERBS: Final = {BEGIN: "beginning", COMMIT: "committing", ABORT: "aborting"}


class ServerSession:
    """One client connection as the broker sees it."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._parser = FrameParser(limits)
        self._state = State.CONNECTING
        self._version: str = V1_0
        self._request_id: str | None = None
        self._backlog: list[Frame | HeartBeat] = []
        self._failure: RemoteProtocolError | None = None
        self._handlers: dict[str, Callable[[Frame], ServerEvent]] = {
            CONNECT: self._on_connect,
            STOMP: self._on_connect,
            SEND: self._on_send,
            SUBSCRIBE: self._on_subscribe,
            UNSUBSCRIBE: self._on_unsubscribe,
            ACK: self._on_ack,
            NACK: self._on_ack,
            BEGIN: self._on_transaction,
            COMMIT: self._on_transaction,
            ABORT: self._on_transaction,
            DISCONNECT: self._on_disconnect,
        }

    @property
    def state(self) -> State:
        return self._state

    @property
    def version(self) -> str:
        """The negotiated version; "1.0" until CONNECT."""
        return self._version

    # ---- receiving ----

    def receive_data(self, data: bytes) -> list[ServerEvent]:
        """Decode ``data`` (possibly empty) into events, in the order the client sent them."""
        if self._failure is not None:
            failure = self._failure
            raise RemoteProtocolError(failure.message, failure.receipt_id, failure.fatal)
        events: list[ServerEvent] = []
        frames, self._backlog = self._backlog, []
        while True:
            parse_error = None
            try:
                frames += self._parser.feed(data)
            except RemoteProtocolError as exc:
                frames += exc.events  # type: ignore[arg-type]
                parse_error = exc
            self._handle(frames, events)
            if parse_error is not None:
                parse_error.events = tuple(events)
                self._failure = parse_error
                raise parse_error
            # The parser pauses after CONNECT so what follows is decoded as negotiated.
            last = frames[-1] if frames else None
            if not (isinstance(last, Frame) and last.command in (CONNECT, STOMP)):
                return events
            frames, data = [], b""

    def _handle(self, frames: list[Frame | HeartBeat], events: list[ServerEvent]) -> None:
        handlers = self._handlers
        append = events.append
        for index, frame in enumerate(frames):
            if isinstance(frame, HeartBeat):
                append(frame)
                continue
            command = frame.command
            state = self._state
            try:
                if command not in ACCEPTED[state]:
                    self._refuse(state, frame)
                append(handlers[command](frame))
            except RemoteProtocolError as exc:
                exc.events = tuple(events)
                if exc.fatal:
                    self._failure = exc
                else:
                    self._backlog = frames[index + 1 :]
                raise
            next_state = TRANSITIONS.get((state, command))
            if next_state is not None:
                self._state = next_state

    def _refuse(self, state: State, frame: Frame) -> None:
        receipt = frame.headers.get(RECEIPT_HEADER)
        if frame.command not in CLIENT_COMMANDS:
            raise RemoteProtocolError(f"Unknown STOMP action: {frame.command}", receipt)
        message, fatal = REFUSED.get((state, frame.command)) or REFUSED[(state, None)]
        raise RemoteProtocolError(message, receipt, fatal)

    def _on_connect(self, frame: Frame) -> Connect:
        headers = frame.headers
        receipt = headers.get(RECEIPT_HEADER)
        try:
            version = negotiate_version(headers.get(ACCEPT_VERSION))
            heart_beat = parse_heart_beat(headers.get(HEART_BEAT))
        except RemoteProtocolError as exc:
            raise RemoteProtocolError(exc.message, receipt) from None
        self._version = self._parser.version = version
        request_id = headers.get(REQUEST_ID)
        # ActiveMQ answers a legacy ``receipt`` on CONNECT like a request-id.
        self._request_id = request_id if request_id is not None else receipt
        return Connect(
            version=version,
            login=headers.get(LOGIN),
            passcode=headers.get(PASSCODE),
            client_id=headers.get(CLIENT_ID),
            host=headers.get(HOST),
            heart_beat=heart_beat,
            request_id=request_id,
            headers=headers,
            receipt=receipt,
        )

    def _on_send(self, frame: Frame) -> Send:
        headers = frame.headers
        get = headers.get
        destination = get(DESTINATION)
        if not destination:
            raise RemoteProtocolError(
                "SEND received without a Destination specified!", get(RECEIPT_HEADER)
            )
        return Send(destination, headers, frame.body, get(TRANSACTION), get(RECEIPT_HEADER))

    def _on_subscribe(self, frame: Frame) -> Subscribe:
        headers = frame.headers
        receipt = headers.get(RECEIPT_HEADER)
        subscription_id = headers.get(ID)
        if subscription_id is None and self._version != V1_0:
            raise RemoteProtocolError("SUBSCRIBE received without a subscription id!", receipt)
        destination = headers.get(DESTINATION)
        if not destination:
            raise RemoteProtocolError(
                "SUBSCRIBE received without a Destination specified!", receipt
            )
        ack = headers.get(ACK_HEADER, ACK_AUTO)
        if ack not in ACK_MODES:
            raise RemoteProtocolError(
                f"Invalid ack mode [{ack[:40]}]: must be auto, client or client-individual",
                receipt,
            )
        if headers.get(BROWSER) == "true" and self._version == V1_0:
            raise RemoteProtocolError(
                "Queue Browser feature only valid for Stomp v1.1+ clients!", receipt
            )
        return Subscribe(subscription_id, destination, ack, headers.get(SELECTOR), headers, receipt)

    def _on_unsubscribe(self, frame: Frame) -> Unsubscribe:
        headers = frame.headers
        receipt = headers.get(RECEIPT_HEADER)
        subscription_id = headers.get(ID)
        destination = headers.get(DESTINATION)
        if subscription_id is None:
            if self._version != V1_0:
                raise RemoteProtocolError(
                    "UNSUBSCRIBE received without a subscription id!", receipt
                )
            if not destination:
                raise RemoteProtocolError(
                    "Must specify the subscriptionId or the destination you are unsubscribing from",
                    receipt,
                )
        return Unsubscribe(
            subscription_id, destination, headers.get(ACTIVEMQ_SUBSCRIPTION_NAME), receipt
        )

    def _on_ack(self, frame: Frame) -> Ack | Nack:
        headers = frame.headers
        receipt = headers.get(RECEIPT_HEADER)
        command = frame.command
        version = self._version
        if command == NACK and version == V1_0:
            raise RemoteProtocolError(
                "NACK received but connection is in v1.0 mode.", receipt, fatal=False
            )
        ack_id = headers.get(ID)
        message_id = headers.get(MESSAGE_ID)
        subscription = headers.get(SUBSCRIPTION)
        if version == V1_2:
            if ack_id is None:
                # ActiveMQ's two wordings, kept verbatim.
                message = (
                    "ACK received without a ack id for acknowledge!"
                    if command == ACK
                    else "NACK received without an ack header to acknowledge!"
                )
                raise RemoteProtocolError(message, receipt)
        elif message_id is None:
            raise RemoteProtocolError(
                f"{command} received without a message-id to acknowledge!", receipt
            )
        elif subscription is None and version == V1_1:
            raise RemoteProtocolError(
                f"{command} received without a subscription id for acknowledge!", receipt
            )
        kind = Ack if command == ACK else Nack
        return kind(ack_id, message_id, subscription, headers.get(TRANSACTION), receipt)

    def _on_transaction(self, frame: Frame) -> Begin | Commit | Abort:
        headers = frame.headers
        receipt = headers.get(RECEIPT_HEADER)
        transaction = headers.get(TRANSACTION)
        if transaction is None:
            verb = _TRANSACTION_VERBS[frame.command]
            raise RemoteProtocolError(f"Must specify the transaction you are {verb}", receipt)
        if frame.command == BEGIN:
            return Begin(transaction, receipt)
        if frame.command == COMMIT:
            return Commit(transaction, receipt)
        return Abort(transaction, receipt)

    def _on_disconnect(self, frame: Frame) -> Disconnect:
        return Disconnect(frame.headers.get(RECEIPT_HEADER))

    # ---- sending ----

    def connected(
        self,
        *,
        session: str | None = None,
        server: str | None = None,
        heart_beat: tuple[int, int] = (0, 0),
        headers: Mapping[str, str] | None = None,
        version: str | None = None,
    ) -> bytes:
        """The CONNECTED frame answering the client's CONNECT.

        ``heart_beat`` is the broker's own ``sx,sy`` (see ``negotiation.mirror_heart_beat``
        for ActiveMQ's answer). ``response-id`` and ``receipt-id`` echo the CONNECT's
        ``request-id`` or legacy ``receipt``, as ActiveMQ does.
        """
        if self._state is State.CONNECTING:
            raise LocalProtocolError("CONNECTED before the client's CONNECT")
        if version is not None and version != self._version:
            raise LocalProtocolError(f"version {version} was not negotiated ({self._version})")
        out = {VERSION: self._version}
        if session is not None:
            out[SESSION] = session
        if server is not None:
            out[SERVER] = server
        out[HEART_BEAT] = format_heart_beat(heart_beat)
        if self._request_id is not None:
            out[RESPONSE_ID] = out[RECEIPT_ID] = self._request_id
        if headers:
            out = {**out, **headers, **out}
        return encode_frame(CONNECTED, out, b"", self._version)

    def message(
        self,
        destination: str,
        message_id: str,
        *,
        subscription: str | None = None,
        ack: str | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> bytes:
        """A MESSAGE frame for one delivery.

        ``subscription`` is the SUBSCRIBE's id, when it had one. ``ack`` is the ack id of a
        client or client-individual subscription; it is written only on 1.2 connections, as
        ActiveMQ does. ``headers`` are the message's own headers and properties; the ones this
        method writes win over them, and content-length is always computed from ``body``.
        """
        if self._state is State.CONNECTING:
            raise LocalProtocolError("MESSAGE before the client's CONNECT")
        out = {DESTINATION: destination, MESSAGE_ID: message_id}
        if subscription is not None:
            out[SUBSCRIPTION] = subscription
        if ack is not None and self._version == V1_2:
            out[ACK_HEADER] = ack
        if headers:
            out = {**out, **headers, **out}
        return encode_message(out, body, self._version)

    def assembled_message(self, blocks: tuple[bytes, ...], body: bytes) -> bytes:
        """A MESSAGE frame from pre-rendered header blocks (``encoder.header_block``): the
        broker's fast path, which renders a message's own headers once and shares them between
        its deliveries; the blocks must already be escaped for this session's version."""
        if self._state is State.CONNECTING:
            raise LocalProtocolError("MESSAGE before the client's CONNECT")
        return assemble_message(blocks, body)

    def receipt(self, receipt_id: str) -> bytes:
        return encode_frame(RECEIPT, {RECEIPT_ID: receipt_id}, b"", self._version)

    def error(self, message: str, body: bytes = b"", receipt_id: str | None = None) -> bytes:
        """An ERROR frame; usable in any state, also after a fatal error.

        ``message`` is put on one line (CR, LF and NUL would not survive every version).
        """
        text = message.replace("\r", " ").replace("\n", " ").replace("\x00", "")
        out = {MESSAGE_HEADER: text}
        if receipt_id is not None:
            out[RECEIPT_ID] = receipt_id
        if body:
            out[CONTENT_TYPE] = "text/plain"
        return encode_frame(ERROR, out, body, self._version, content_length=bool(body))
