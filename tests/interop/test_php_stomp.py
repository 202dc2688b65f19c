"""PHP's PECL stomp client (Debian's php-stomp) against FerryMQ.

PECL stomp reads two bytes after a frame's body, expecting NUL and the LF that ActiveMQ writes
after it; when FerryMQ ended frames with a bare NUL, several MESSAGE frames in one read made it
eat the first byte of the next frame and stop receiving.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ferrymq.testing import BrokerThread, wait_until_blocking
from tests.interop.conftest import Clients

SCRIPTS = Path(__file__).parent / "php"


def run_php(script: str, *args: object) -> dict[str, list[object]]:
    php = shutil.which("php")
    if php is None:
        pytest.fail("php is not installed: `make system-deps` installs php-cli and php-stomp")
    done = subprocess.run(
        [php, str(SCRIPTS / script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, list[object]] = json.loads(done.stdout)
    return result


def test_php_receives_a_burst_of_messages_and_acks_them(
    broker_thread: BrokerThread, clients: Clients
) -> None:
    count = 50
    result = run_php("round_trip.php", broker_thread.port, "/queue/php", count, count)
    assert result["bodies"] == [f"m{i}" for i in range(count)]
    colours = [h["colour"] for h in result["headers"]]  # type: ignore[index]
    assert colours == [f"c{i}" for i in range(count)]
    # The acks were sent before the script disconnected; the broker settles them in its time.
    wait_until_blocking(lambda: clients.depth("php") == 0, 10, "the queue emptied by PHP's acks")


def test_php_reads_what_another_client_sent(broker_thread: BrokerThread, clients: Clients) -> None:
    conn, _ = clients.connect()
    for i in range(10):
        conn.send("/queue/php-mixed", f"m{i}", headers={"persistent": "true", "colour": f"c{i}"})
    result = run_php("round_trip.php", broker_thread.port, "/queue/php-mixed", 0, 10)
    assert result["bodies"] == [f"m{i}" for i in range(10)]
    wait_until_blocking(
        lambda: clients.depth("php-mixed") == 0, 10, "the queue emptied by PHP's acks"
    )
