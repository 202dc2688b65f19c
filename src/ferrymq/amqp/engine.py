"""proton's engine as bytes in, events out: one AMQP 1.0 connection's protocol state.

``Engine`` binds a proton ``Connection`` to a ``Transport`` (server or client mode) and a
``Collector``; the caller pushes what the socket read, takes the events the bytes caused, acts on
them through proton's endpoint objects (open, attach, flow, send, settle, close) and takes the
bytes to write. proton checks the framing and the performatives: a malformed frame or an
unknown performative closes the connection with ``amqp:decode-error`` or
``amqp:connection:framing-error``, and ``output`` then ends in that close.

proton's Python objects are wrappers made afresh on each access: compare them with ``==``,
never ``is`` (the same endpoint comes back as another wrapper).
"""

from __future__ import annotations

from collections.abc import Iterator

import proton

from ferrymq.amqp import codes

EOS = -1


class Engine:
    """One connection's proton state machine."""

    __slots__ = ("collector", "connection", "transport")

    def __init__(
        self,
        *,
        server: bool,
        max_frame_size: int,
        idle_timeout_ms: int,
        container_id: str,
    ) -> None:
        self.connection = proton.Connection()
        self.connection.container = container_id
        self.collector = proton.Collector()
        self.connection.collect(self.collector)
        self.transport = proton.Transport(proton.Transport.SERVER if server else None)
        self.transport.max_frame_size = max_frame_size
        if idle_timeout_ms:
            self.transport.idle_timeout = idle_timeout_ms / 1000
        self.transport.bind(self.connection)

    def push(self, data: bytes) -> bool:
        """Hand proton what the socket read; False once proton reads no more (it closed)."""
        transport = self.transport
        view = memoryview(data)
        while view:
            capacity = transport.capacity()
            if capacity < 0:
                return False
            if capacity == 0:
                # proton's input buffer is full only if nobody took its events; it never is
                # when events are drained after every push, so this is a closed transport.
                return False
            transport.push(bytes(view[:capacity]))
            view = view[capacity:]
        return True

    def events(self) -> Iterator[proton.Event]:
        collector = self.collector
        while True:
            event = collector.peek()
            if event is None:
                return
            yield event
            collector.pop()

    def output(self) -> bytes:
        """What proton has to send, all of it (ends at a frame boundary). proton hands its
        output over a buffer at a time and writes the next frames of a large message only once
        the buffer was taken, so this takes buffers until nothing is left."""
        transport = self.transport
        pending = transport.pending()
        if pending <= 0:
            return b""
        chunks: list[bytes] = []
        while pending > 0:
            data = transport.peek(pending) or b""
            transport.pop(len(data))
            chunks.append(bytes(data))
            pending = transport.pending()
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    @property
    def finished(self) -> bool:
        """proton will write nothing more: the socket may close once ``output`` was sent."""
        return self.transport.pending() == EOS

    def close_if_unreadable(self) -> bool:
        """Close the connection with ``amqp:decode-error`` if proton stopped reading silently.

        On a frame it cannot dispatch (an unknown performative, a body that is no performative)
        proton closes its input but neither sets a condition nor closes the connection, so the
        peer would wait for ever; AMQP 1.0 (part 2.8.15) names the error ``decode-error``.
        True when it closed (the caller sends ``output`` and ends the connection).
        """
        transport = self.transport
        if transport.capacity() >= 0 or transport.condition is not None:
            return False
        connection = self.connection
        if connection.state & proton.Endpoint.REMOTE_CLOSED:
            return False  # the peer closed: the input ended as it should
        if not connection.state & proton.Endpoint.LOCAL_ACTIVE:
            connection.open()
        connection.condition = proton.Condition(
            codes.DECODE_ERROR, "a frame could not be decoded (malformed or unknown performative)"
        )
        connection.close()
        return True

    def close_input(self) -> None:
        """The socket is gone: proton reads nothing more."""
        self.transport.close_tail()
