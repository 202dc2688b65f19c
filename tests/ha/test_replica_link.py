"""The slave's replication link against a master that dies hard (a reset connection)."""

from __future__ import annotations

import asyncio
import socket
import struct
from pathlib import Path

from ferrymq.ha.replica import MasterConnector
from ferrymq.store.base import AddMessage
from ferrymq.store.oplog import encode_ops
from ferrymq.store.sqlite import SqliteStore


async def test_a_reset_connection_means_the_master_is_gone(tmp_path: Path) -> None:
    """A SIGKILLed master with unread data in its socket resets the connection: the slave must
    treat that as the master's death (and take over), not crash."""
    batch = encode_ops([AddMessage("queue://q", 7, b"replicated")])
    acked = asyncio.Event()

    async def dying_master(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\x00\n")  # CONNECT
        writer.write(b"CONNECTED\nversion:1.2\n\n\x00")
        writer.write(
            b"MESSAGE\ndestination:/queue/ferrymq.replication\nmessage-id:1\n"
            b"subscription:ferrymq.replication\nack:1\nferrymq.batch:1\n"
            b"ferrymq.replication-reset:true\ncontent-length:%d\n\n%b\x00" % (len(batch), batch)
        )
        await writer.drain()
        await reader.readuntil(b"\x00\n")  # the slave's ACK of batch 1
        acked.set()
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # RST, as the kernel sends for a killed process

    server = await asyncio.start_server(dying_master, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    store = SqliteStore(tmp_path / "slave")
    connector = MasterConnector(f"tcp://127.0.0.1:{port}", store, name="slave")
    async with server:
        await asyncio.wait_for(connector.run(), 10)  # returns: the master is gone
    assert acked.is_set()
    assert connector.statistics.batches == 1
    await store.stop()
    reopened = SqliteStore(tmp_path / "slave")
    await reopened.start()
    assert [m.blob for m in await reopened.load("queue://q", 0, 10)] == [b"replicated"]
    await reopened.stop()
