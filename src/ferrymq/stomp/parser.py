"""Incremental STOMP frame parser: bytes in, frames and heart-beats out.

This is the broker's hot path, so the work per frame is a few ``bytes.find`` calls, one UTF-8
decode of the head, one ``split`` and one ``dict`` built in C; nothing loops over bytes in
Python. A read that holds many frames is parsed in one call. Bytes of an unfinished frame are kept
in a bytearray, and until they can complete the frame (enough bytes for its content-length, a NUL,
a blank line after the headers) each new chunk is only scanned, never reparsed.

Framing rules (STOMP 1.2 "STOMP Frames", "Augmented BNF"), and where we chose:

* EOL is LF or CR LF in every version (ActiveMQ strips the CR in 1.0 and 1.2; we are lenient in
  1.1 too). A bare EOL between frames is a heart-beat, reported as ``HEARTBEAT`` each time,
  except the one EOL straight after a frame's NUL, which belongs to that frame (so a peer that
  ends frames with NUL alone has its first heart-beat after a frame taken as that frame's EOL;
  liveness counts bytes read, not heart-beat events, so nothing times out).
* ``content-length`` gives the exact body size; the body may then hold NULs and must be followed
  by a NUL. Without it the body runs to the first NUL. Any frame may carry content-length (ERROR
  frames need it), not only SEND and MESSAGE as in ActiveMQ.
* Header values are UTF-8. A NUL before the blank line that ends the headers is an error: the
  BNF allows NUL in a value, but no client sends one, and refusing it makes a truncated frame fail
  at once instead of swallowing the next one.
* 1.0: names and values are trimmed like Java's ``String.trim()``, there are no escapes, and a
  header line without a colon is a header with an empty value (what ActiveMQ does). 1.1+: nothing
  is trimmed, a line without a colon is an error, and headers are unescaped except on CONNECT,
  STOMP and CONNECTED frames. A header line is split at its first colon.
* The command may be surrounded by whitespace (ActiveMQ trims it) but must be a known command,
  matched whole (ActiveMQ's prefix match, which takes ``SUBSCRIBEX`` for SUBSCRIBE, is not kept).
* After a CONNECT, STOMP or CONNECTED frame, ``feed`` returns at once and keeps the rest buffered:
  the caller negotiates the version, sets ``version``, and calls ``feed(b"")`` to go on, so the
  frames pipelined behind a CONNECT are decoded with the negotiated rules.

Any violation raises ``RemoteProtocolError`` (fatal) saying what and where. The frames decoded
before it in the same call travel on the exception as ``events``. The parser is dead afterwards.
"""

from __future__ import annotations

from itertools import repeat

from ferrymq.stomp.constants import (
    ALL_COMMANDS,
    CONTENT_LENGTH,
    SUPPORTED_VERSIONS,
    UNESCAPED_COMMANDS,
    V1_0,
)
from ferrymq.stomp.errors import LocalProtocolError, RemoteProtocolError
from ferrymq.stomp.escaping import JAVA_WHITESPACE, unescape
from ferrymq.stomp.frame import HEARTBEAT, Frame, HeartBeat, make_frame
from ferrymq.stomp.limits import DEFAULT_LIMITS, Limits

# What an unfinished frame waits for before it is worth parsing again.
_WAIT_ANY = 0  # any byte at all (a lone CR, or a pause after CONNECT)
_WAIT_HEAD = 1  # the blank line that ends the headers
_WAIT_LENGTH = 2  # ``_need`` bytes, for a content-length body
_WAIT_NUL = 3  # the NUL that ends a body without content-length


class FrameParser:
    """Turns a byte stream into ``Frame`` and ``HeartBeat`` events (sans-IO)."""

    __slots__ = (
        "_body_start",
        "_buf",
        "_error",
        "_fast_head",
        "_frame_eol",
        "_limits",
        "_lines",
        "_need",
        "_scan",
        "_version",
        "_wait",
    )

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._limits = limits
        self._version: str = V1_0
        self._buf = bytearray()
        self._error: RemoteProtocolError | None = None
        self._wait = _WAIT_ANY
        # Whether the last frame's NUL ended the input: its EOL may still be on its way.
        self._frame_eol = False
        self._need = 0
        self._scan = 0
        self._lines = 0
        self._body_start = 0
        # A head no longer than this cannot break a line or header-count limit: every line is
        # shorter than the head, and each header takes at least two bytes.
        self._fast_head = min(
            limits.max_command_bytes, limits.max_header_line_bytes, 2 * limits.max_headers + 1
        )

    @property
    def version(self) -> str:
        """The negotiated protocol version; "1.0" until the caller sets it after CONNECT."""
        return self._version

    @version.setter
    def version(self, value: str) -> None:
        if value not in SUPPORTED_VERSIONS:
            raise LocalProtocolError(f"unsupported STOMP version {value!r}")
        self._version = value

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as an event."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Frame | HeartBeat]:
        """Add ``data`` and return every event it completes, in order."""
        if self._error is not None:
            raise RemoteProtocolError(
                self._error.message, self._error.receipt_id, self._error.fatal
            )
        buf = self._buf
        if buf:
            if data:
                buf += data
            if not self._ready(buf):
                return []
            work = bytes(buf)
        elif data:
            work = data if type(data) is bytes else bytes(data)
        else:
            return []
        events: list[Frame | HeartBeat] = []
        try:
            pos = self._parse(work, events)
        except RemoteProtocolError as exc:
            exc.events = tuple(events)
            self._error = exc
            self._buf = bytearray()
            raise
        if buf:
            del buf[:pos]
        elif pos < len(work):
            buf += memoryview(work)[pos:]
        return events

    def _parse(self, b: bytes, out: list[Frame | HeartBeat]) -> int:
        """Append the complete events in ``b`` to ``out``; return where the rest begins."""
        n = len(b)
        pos = 0
        find = b.find
        append = out.append
        parse_head = self._parse_head
        max_body = self._limits.max_body_bytes
        max_frame = self._limits.max_frame_bytes
        # The one EOL that ActiveMQ (and FerryMQ) write after each frame's NUL belongs to that
        # frame, even when it arrives in a later read; any other EOL is a heart-beat.
        owed = self._frame_eol
        while pos < n:
            first = b[pos]
            if first == 10:
                if not owed:
                    append(HEARTBEAT)
                owed = False
                pos += 1
                continue
            if first == 13:
                if pos + 1 == n:
                    self._wait = _WAIT_ANY
                    self._frame_eol = owed
                    return pos
                if b[pos + 1] == 10:
                    if not owed:
                        append(HEARTBEAT)
                    owed = False
                    pos += 2
                    continue
            owed = False
            nul = find(b"\0", pos)
            if nul < 0:
                self._incomplete(b, pos)
                self._frame_eol = False
                return pos
            # The blank line is LF LF, or LF CR LF when lines end in CR LF; it precedes any NUL.
            blank = find(b"\n\n", pos, nul)
            crlf = find(b"\n\r\n", pos, nul if blank < 0 else blank + 2)
            if crlf >= 0:
                head_end, body_start = crlf, crlf + 3
            elif blank >= 0:
                head_end, body_start = blank, blank + 2
            else:
                self._check_head_limits(b, pos, nul)
                raise RemoteProtocolError(
                    f"frame at stream offset +{pos} reached its NUL before the blank line "
                    "that ends the headers"
                )
            command, headers = parse_head(b, pos, head_end)
            length = headers.get(CONTENT_LENGTH)
            if length is None:
                stop = nul
                if stop - body_start > max_body:
                    raise _body_too_large(max_body)
            else:
                if length.isdigit() and length.isascii() and len(length) < 10:
                    size = int(length)
                    if size > max_body:
                        size = self._content_length(length)
                else:
                    size = self._content_length(length)
                stop = body_start + size
                if stop >= n:
                    self._wait_for_length(pos, stop)
                    self._frame_eol = False
                    return pos
                if b[stop] != 0:
                    raise RemoteProtocolError(
                        f"{command} frame: the {stop - body_start}-byte body given by "
                        "content-length is not followed by a NUL octet"
                    )
            if max_frame is not None and stop + 1 - pos > max_frame:
                raise _frame_too_large(max_frame)
            append(make_frame(command, headers, b[body_start:stop]))
            pos = stop + 1
            owed = True
            if command in UNESCAPED_COMMANDS:
                self._wait = _WAIT_ANY
                self._frame_eol = True
                return pos
        self._frame_eol = owed
        return pos

    def _parse_head(self, b: bytes, start: int, stop: int) -> tuple[str, dict[str, str]]:
        """Decode the command line and header lines in ``b[start:stop]``."""
        if stop - start > self._fast_head:
            self._check_head_limits(b, start, stop)
        try:
            text = b[start:stop].decode()
        except UnicodeDecodeError as exc:
            raise RemoteProtocolError(
                f"frame head is not valid UTF-8 at byte {exc.start} of the frame"
            ) from None
        if "\r" in text:
            text = text.replace("\r\n", "\n")
            if text[-1] == "\r":
                text = text[:-1]
        command, eol, rest = text.partition("\n")
        if command not in ALL_COMMANDS:
            command = _known_command(command)
        if not eol:
            return command, {}
        lines = rest.split("\n")
        version = self._version
        if version != V1_0:
            # Fast path: split each line at its first colon and build the dict in C; with
            # escapes, decode all names and values in one pass over them joined by NUL (which
            # a head cannot hold). Anything odd (a line without a colon, a bad escape, an empty
            # name, a repeated header) falls through to the careful loop below.
            try:
                if "\\" not in text or command in UNESCAPED_COMMANDS:
                    headers = dict(map(str.split, lines, repeat(":"), repeat(1)))
                else:
                    # Each line's first colon becomes a NUL, then the lines are joined by NUL.
                    colon = repeat(":")
                    flat = "\x00".join(map(str.replace, lines, colon, repeat("\x00"), repeat(1)))
                    if flat.count("\x00") != 2 * len(lines) - 1:
                        raise ValueError("a line without a colon")
                    decoded = iter(unescape(flat, version).split("\x00"))
                    headers = dict(zip(decoded, decoded))  # noqa: B905 - even by the count
            except ValueError:
                pass
            else:
                if len(headers) == len(lines) and "" not in headers:
                    return command, headers
        return command, self._parse_headers(command, lines)

    def _parse_headers(self, command: str, lines: list[str]) -> dict[str, str]:
        version = self._version
        trim = version == V1_0
        decode = not trim and command not in UNESCAPED_COMMANDS
        headers: dict[str, str] = {}
        for number, line in enumerate(lines, 1):
            name, colon, value = line.partition(":")
            if trim:
                name = name.strip(JAVA_WHITESPACE)
                value = value.strip(JAVA_WHITESPACE)
            elif not colon:
                raise RemoteProtocolError(f"header line {number} has no colon: {line[:40]!r}")
            elif decode:
                try:
                    name = unescape(name, version)
                    value = unescape(value, version)
                except ValueError as exc:
                    raise RemoteProtocolError(
                        f"header line {number}: {exc} (STOMP {version})"
                    ) from None
            if not name:
                raise RemoteProtocolError(f"header line {number} has an empty name")
            if name not in headers:
                headers[name] = value
        return headers

    def _check_head_limits(self, b: bytes, start: int, stop: int) -> None:
        """Raise if the (possibly unfinished) head in ``b[start:stop]`` breaks a limit."""
        limits = self._limits
        lines = b[start:stop].split(b"\n")
        if _length(lines[0]) > limits.max_command_bytes:
            raise RemoteProtocolError(f"command exceeds {limits.max_command_bytes} bytes")
        if len(lines) - 1 > limits.max_headers:
            raise RemoteProtocolError(f"frame has more than {limits.max_headers} headers")
        limit = limits.max_header_line_bytes
        if max(map(len, lines)) > limit:
            for number, line in enumerate(lines[1:], 1):
                if _length(line) > limit:
                    raise RemoteProtocolError(f"header line {number} exceeds {limit} bytes")

    def _content_length(self, value: str) -> int:
        if not (value.isascii() and value.isdigit()):
            stripped = value.strip(JAVA_WHITESPACE)
            if not (stripped.isascii() and stripped.isdigit()):
                raise RemoteProtocolError(
                    f"content-length {value[:40]!r} is not a valid non-negative integer"
                )
            value = stripped
        max_body = self._limits.max_body_bytes
        if len(value) > 20 or int(value) > max_body:
            raise RemoteProtocolError(
                f"content-length {value[:40]} exceeds the maximum body size of {max_body} bytes"
            )
        return int(value)

    def _incomplete(self, b: bytes, pos: int) -> None:
        """Check the unfinished frame at ``pos`` against the limits; note what it waits for."""
        n = len(b)
        blank = b.find(b"\n\n", pos)
        crlf = b.find(b"\n\r\n", pos, n if blank < 0 else blank + 2)
        if crlf < 0 and blank < 0:
            self._check_head_limits(b, pos, n)
            eol = b.find(b"\n", pos)
            if eol >= 0:
                _known_command(b[pos:eol].decode(errors="replace").rstrip("\r"))
            self._wait = _WAIT_HEAD
            self._scan = n - pos
            self._lines = b.count(b"\n", pos)
            return
        head_end, body_start = (crlf, crlf + 3) if crlf >= 0 else (blank, blank + 2)
        _, headers = self._parse_head(b, pos, head_end)
        length = headers.get(CONTENT_LENGTH)
        if length is not None:
            self._wait_for_length(pos, body_start + self._content_length(length))
            return
        max_body = self._limits.max_body_bytes
        if n - body_start > max_body:
            raise _body_too_large(max_body)
        max_frame = self._limits.max_frame_bytes
        if max_frame is not None and n - pos > max_frame:
            raise _frame_too_large(max_frame)
        self._wait = _WAIT_NUL
        self._scan = n - pos
        self._body_start = body_start - pos

    def _wait_for_length(self, pos: int, stop: int) -> None:
        max_frame = self._limits.max_frame_bytes
        if max_frame is not None and stop + 1 - pos > max_frame:
            raise _frame_too_large(max_frame)
        self._wait = _WAIT_LENGTH
        self._need = stop + 1 - pos

    def _ready(self, buf: bytearray) -> bool:
        """Whether the buffered, unfinished frame may now complete or break a limit.

        Only the bytes added since the last look are scanned, so a frame that trickles in
        costs time in proportion to its size, not its size times the number of reads.
        """
        wait = self._wait
        if wait == _WAIT_LENGTH:
            return len(buf) >= self._need
        limits = self._limits
        scan = self._scan
        if wait == _WAIT_NUL:
            if buf.find(b"\0", scan) >= 0:
                return True
            self._scan = len(buf)
            max_frame = limits.max_frame_bytes
            return len(buf) - self._body_start > limits.max_body_bytes or (
                max_frame is not None and len(buf) > max_frame
            )
        if wait == _WAIT_HEAD:
            start = max(scan - 2, 0)
            if (
                buf.find(b"\0", start) >= 0
                or buf.find(b"\n\n", start) >= 0
                or buf.find(b"\n\r\n", start) >= 0
                or len(buf) - scan > self._fast_head
            ):
                return True
            new_lines = buf.count(b"\n", scan)
            first_line_done = self._lines == 0 and new_lines > 0
            self._lines += new_lines
            self._scan = len(buf)
            last_eol = buf.rfind(b"\n")
            line_limit = limits.max_command_bytes if last_eol < 0 else limits.max_header_line_bytes
            return (
                first_line_done
                or self._lines > limits.max_headers
                or len(buf) - last_eol - 2 > line_limit
            )
        return True


def _length(line: bytes) -> int:
    """Length of a line without the CR of a CR LF ending."""
    return len(line) - 1 if line.endswith(b"\r") else len(line)


def _known_command(command: str) -> str:
    trimmed = command.strip(JAVA_WHITESPACE)
    if trimmed in ALL_COMMANDS:
        return trimmed
    raise RemoteProtocolError(f"Unknown STOMP action: {command[:40]}")


def _body_too_large(max_body: int) -> RemoteProtocolError:
    return RemoteProtocolError(f"body exceeds the maximum of {max_body} bytes")


def _frame_too_large(max_frame: int) -> RemoteProtocolError:
    return RemoteProtocolError(f"frame exceeds the maximum of {max_frame} bytes")
