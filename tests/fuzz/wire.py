"""Raw STOMP over a socket: exactly the bytes a test chooses, and the frames the broker answers.

Deliberately independent of FerryMQ's own codec, so a bug there cannot hide itself: the reply
reader below knows just enough STOMP (STOMP 1.2 "STOMP Frames") to split the broker's output
into frames.
"""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass

READ_TIMEOUT_S = 5.0
"""How long the broker may take to answer or close; it is immediate when the broker is right."""

_UNESCAPES = {"\\\\": "\\", "\\c": ":", "\\n": "\n", "\\r": "\r"}


@dataclass(frozen=True)
class Reply:
    """A frame the broker sent."""

    command: str
    headers: dict[str, str]
    body: bytes

    @property
    def message(self) -> str:
        return self.headers.get("message", "")


def frame(command: str, *headers: tuple[str, str], body: bytes = b"") -> bytes:
    """A frame with headers written exactly as given (callers escape, or deliberately do not)."""
    head = "".join(f"{name}:{value}\n" for name, value in headers)
    return f"{command}\n{head}\n".encode() + body + b"\0"


def connect_frame(version: str | None, *extra: tuple[str, str]) -> bytes:
    """CONNECT offering one version (None: a 1.0 client, which sends no accept-version)."""
    headers = [("host", "fuzz"), *extra]
    if version is not None:
        headers.insert(0, ("accept-version", version))
    return frame("CONNECT", *headers)


def _unescape(value: str) -> str:
    out = []
    i = 0
    while i < len(value):
        pair = value[i : i + 2]
        if pair in _UNESCAPES:
            out.append(_UNESCAPES[pair])
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


class RawConnection:
    """One TCP connection to the broker, read frame by frame."""

    def __init__(self, port: int, source: str | None = None) -> None:
        """``source``: the local address to connect from (127.0.0.2 is loopback too, on Linux:
        another client address)."""
        self.sock = socket.create_connection(
            ("127.0.0.1", port),
            timeout=READ_TIMEOUT_S,
            source_address=(source, 0) if source is not None else None,
        )
        self.buffer = bytearray()
        self.eof = False
        self.escaped = False
        """Whether the broker escapes header values (1.1 and 1.2, except CONNECTED)."""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send(self, data: bytes) -> bool:
        """Send everything; False if the broker already closed (it may, mid-way, on a fault)."""
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True

    def half_close(self) -> None:
        """Tell the broker nothing more is coming, so an unfinished frame ends in EOF."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def handshake(self, version: str | None) -> Reply:
        """CONNECT and wait for CONNECTED."""
        self.send(connect_frame(version))
        reply = self.expect("CONNECTED")
        self.escaped = reply.headers.get("version", "1.0") != "1.0"
        return reply

    def _fill(self, deadline: float) -> bool:
        """Read more; False at EOF or when the deadline passes."""
        if self.eof:
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError:
            return False
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buffer += chunk
        return True

    def expect(self, command: str) -> Reply:
        """The next frame, which must be ``command``."""
        reply = self.read_frame()
        assert reply is not None, f"the broker closed the connection instead of sending {command}"
        assert reply.command == command, f"expected {command}, got {reply}"
        return reply

    def count_heart_beats(self, wanted: int, timeout_s: float) -> int:
        """Read raw bytes until ``wanted`` EOLs arrived (or the time is up); how many came."""
        deadline = time.monotonic() + timeout_s
        beats = 0
        while beats < wanted and self._fill(deadline):
            beats += self.buffer.count(b"\n")
            self.buffer.clear()
        return beats

    def read_frame(self, timeout_s: float = READ_TIMEOUT_S) -> Reply | None:
        """The next frame, skipping heart-beats; None at EOF; raises TimeoutError if silent."""
        deadline = time.monotonic() + timeout_s
        while True:
            while self.buffer and self.buffer[0] in b"\r\n":  # heart-beats
                del self.buffer[:1]
            reply = self._take()
            if reply is not None:
                return reply
            if not self._fill(deadline):
                if self.eof:
                    assert not self.buffer.strip(), f"EOF inside a frame: {bytes(self.buffer)!r}"
                    return None
                raise TimeoutError(f"no frame and no EOF within {timeout_s} s")

    def _take(self) -> Reply | None:
        buf = self.buffer
        end = buf.find(b"\n\n")
        if end < 0:
            return None
        lines = buf[:end].decode().replace("\r", "").split("\n")
        command = lines[0]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if self.escaped and command != "CONNECTED":
                name, value = _unescape(name), _unescape(value)
            headers.setdefault(name, value)
        start = end + 2
        length = headers.get("content-length")
        if length is not None:
            stop = start + int(length)
            if len(buf) <= stop:
                return None
            assert buf[stop] == 0, f"{command}: no NUL after content-length {length}"
        else:
            stop = buf.find(b"\0", start)
            if stop < 0:
                return None
        body = bytes(buf[start:stop])
        del buf[: stop + 1]
        return Reply(command, headers, body)

    def read_until_eof(self, timeout_s: float = READ_TIMEOUT_S) -> list[Reply]:
        """Every frame until the broker closes; raises TimeoutError if it keeps the socket open."""
        deadline = time.monotonic() + timeout_s
        replies: list[Reply] = []
        while True:
            reply = self.read_frame(max(0.0, deadline - time.monotonic()))
            if reply is None:
                return replies
            replies.append(reply)
