"""The real browser STOMP client, stomp.js (@stomp/stompjs from npm), under Node over the ``ws``
package: it connects to a ``ws://`` listener with its subprotocols, subscribes, sends,
receives and acknowledges, and exchanges messages with a TCP client."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from tests.websocket.support import TIMEOUT_S, TcpStomp, ws_broker

COUNT = 3


async def test_stompjs_under_node_sends_receives_and_meets_a_tcp_client(
    tmp_path: Path, stompjs: Path
) -> None:
    node = shutil.which("node")
    assert node is not None, "node is missing: install Debian's nodejs (make system-deps)"
    async with ws_broker(tmp_path) as served:
        tcp = await TcpStomp.connect(served.tcp_port)
        tcp.send("SEND\ndestination:/queue/node-in\nx-from:tcp\nreceipt:in\n\nfrom tcp")
        assert (await tcp.frame()).startswith(b"RECEIPT\n")
        process = await asyncio.create_subprocess_exec(
            node,
            str(stompjs / "roundtrip.cjs"),
            f"{served.ws_url}/stomp",
            str(COUNT),
            cwd=stompjs,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 0, (out, err)
        report = json.loads(out.decode().strip().splitlines()[-1])
        tcp.send("SUBSCRIBE\nid:o\ndestination:/queue/node-out\n\n")
        from_node = await asyncio.wait_for(tcp.frame(), TIMEOUT_S)
        await tcp.close()

    assert report["subprotocol"] == "v12.stomp"
    assert report["version"] == "1.2"
    received = sorted((m["destination"], m["body"], m["header"]) for m in report["received"])
    assert received == [
        ("/queue/node-in", "from tcp", "tcp"),
        *[("/queue/node-loop", f"node {n}", "node") for n in range(COUNT)],
    ]
    assert from_node.startswith(b"MESSAGE\n")
    assert from_node.endswith(b"\n\nfrom stomp.js\x00")
