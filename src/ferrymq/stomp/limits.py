"""Size limits on incoming frames.

The defaults are ActiveMQ's (``StompWireFormat``: ``MAX_COMMAND_LENGTH``, ``MAX_HEADER_LENGTH``,
``MAX_HEADERS``, ``MAX_DATA_LENGTH``, and ``maxFrameSize`` = ``Long.MAX_VALUE`` since 5.12), so a
client that works against ActiveMQ fits, and a peer cannot make the broker buffer without bound.
On a connector URI they are the ``wireFormat.*`` options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# ActiveMQ StompWireFormat.MAX_COMMAND_LENGTH.
MAX_COMMAND_BYTES: Final = 1024
# ActiveMQ StompWireFormat.MAX_HEADER_LENGTH (1024 * 10), per header line.
MAX_HEADER_LINE_BYTES: Final = 10240
# ActiveMQ StompWireFormat.MAX_HEADERS.
MAX_HEADERS: Final = 1000
# ActiveMQ StompWireFormat.MAX_DATA_LENGTH (1024 * 1024 * 100), wireFormat.maxDataLength.
MAX_BODY_BYTES: Final = 104857600


@dataclass(frozen=True, slots=True)
class Limits:
    """What one incoming frame may contain; exceeding any of them is a fatal protocol error."""

    max_command_bytes: int = MAX_COMMAND_BYTES
    """Bytes in the command line, EOL excluded."""
    max_header_line_bytes: int = MAX_HEADER_LINE_BYTES
    """Bytes in one header line, EOL excluded."""
    max_headers: int = MAX_HEADERS
    """Header lines in one frame."""
    max_body_bytes: int = MAX_BODY_BYTES
    """Body bytes (ActiveMQ's ``maxDataLength``), with or without content-length."""
    max_frame_bytes: int | None = None
    """Whole frame, command to NUL; None means unlimited (ActiveMQ's ``maxFrameSize`` default)."""

    @property
    def max_head_bytes(self) -> int:
        """The longest possible command plus headers plus blank line, CRLF line ends included."""
        return self.max_command_bytes + 2 + self.max_headers * (self.max_header_line_bytes + 2) + 2


DEFAULT_LIMITS: Final = Limits()
