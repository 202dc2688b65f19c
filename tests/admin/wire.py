"""Raw HTTP/1.1 over asyncio streams, for tests that need exact control of the bytes sent."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any

HEAD_END = b"\r\n\r\n"


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def read_response(reader: asyncio.StreamReader, *, head: bool = False) -> RawResponse:
    """One response framed by Content-Length (the server always sends it); HEAD has no body."""
    raw = await reader.readuntil(HEAD_END)
    status_line, *lines = raw[: -len(HEAD_END)].decode("latin-1").split("\r\n")
    version, status, _reason = status_line.split(" ", 2)
    assert version == "HTTP/1.1"
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = b"" if head else await reader.readexactly(int(headers["content-length"]))
    return RawResponse(int(status), headers, body)


def request(method: str, target: str, *extra: str) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", *extra, "", ""]
    return "\r\n".join(lines).encode()


async def open_connection(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


async def read_to_end(reader: asyncio.StreamReader) -> bytes:
    """Everything until the server closes (a reset counts as closed)."""
    try:
        return await reader.read()
    except ConnectionResetError:
        return b""
