"""An in-memory stream pair: a broker-side protocol driven by a test, with no socket at all.

``MemoryStream.attach(protocol)`` plays the accepted socket for an ``asyncio.Protocol`` (the
broker's ``TransportConnection``): what the test ``send``s arrives through ``data_received``,
what the protocol writes collects in ``received``, and closing either side is seen by the other.
Reading can be paused (producer flow control) and writing reported as backed up
(``back_up``), as a kernel buffer would.
"""

from __future__ import annotations

import asyncio
from typing import Any


class MemoryStream(asyncio.Transport):
    """The broker's end of the pair, as an asyncio transport; the test holds it too."""

    def __init__(self) -> None:
        super().__init__()
        self.received = bytearray()
        """Everything the protocol wrote, in order."""
        self.reading = True
        self.closed = False
        self.aborted = False
        self._protocol: asyncio.Protocol | None = None
        self._backed_up = False

    def attach(self, protocol: asyncio.Protocol) -> MemoryStream:
        self._protocol = protocol
        protocol.connection_made(self)
        return self

    # -- the test's side ----------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        """Bytes from the client: delivered now unless reading is paused (then refused)."""
        if not self.reading:
            raise RuntimeError("the protocol paused reading; the test must wait for it")
        assert self._protocol is not None
        self._protocol.data_received(data)

    def take(self) -> bytes:
        """What arrived since the last ``take``."""
        data = bytes(self.received)
        self.received.clear()
        return data

    def hang_up(self) -> None:
        """The client went away."""
        if not self.closed:
            self.closed = True
            assert self._protocol is not None
            self._protocol.connection_lost(None)

    def back_up(self, backed_up: bool) -> None:
        """Report the write buffer as full (or drained again)."""
        assert self._protocol is not None
        if backed_up and not self._backed_up:
            self._backed_up = True
            self._protocol.pause_writing()
        elif not backed_up and self._backed_up:
            self._backed_up = False
            self._protocol.resume_writing()

    # -- asyncio.Transport --------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self.closed:
            self.received += data

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self._protocol is not None:
                asyncio.get_running_loop().call_soon(self._protocol.connection_lost, None)

    def abort(self) -> None:
        self.aborted = True
        self.close()

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_reading(self) -> bool:
        return self.reading

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 0) if name == "peername" else default
