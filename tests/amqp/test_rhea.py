"""rhea, the JavaScript AMQP 1.0 client (npm, tests/amqp/node, ``npm ci`` from the committed
package-lock.json), under Debian's Node against FerryMQ's AMQP listener: settlement modes,
durability, a selector, a durable subscription across a restart of the script, a temporary
queue as reply-to, a 10 MB message and heart-beats.

rhea has no transaction coordinator API (no declare/discharge helper; a user would have to
encode the coordinator's messages by hand), so transactions are checked with proton's
Container (test_proton_container.py), not here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from proton import Message

from ferrymq.testing import BrokerThread
from tests.amqp.proton_support import amqp_broker, blocking, region_of, url
from tests.npm import npm_ci

NODE_DIR = Path(__file__).resolve().parent / "node"
RHEA = NODE_DIR / "node_modules" / "rhea" / "package.json"
SCRIPT_TIMEOUT_S = 60


@pytest.fixture(scope="session")
def rhea() -> Path:
    """The directory holding rhea under node_modules."""
    return npm_ci(NODE_DIR, [RHEA])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[BrokerThread]:
    with amqp_broker(tmp_path, "wireFormat.idleTimeout=1000") as thread:
        yield thread


def run(rhea: Path, served: BrokerThread, scenario: str, arg: str = "") -> Any:
    node = shutil.which("node")
    assert node is not None, "node is missing: install Debian's nodejs (make system-deps)"
    command = [node, str(rhea / "scenarios.cjs"), scenario, str(served.amqp_port)]
    result = subprocess.run(
        [*command, *([arg] if arg else [])],
        cwd=rhea,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_rhea_sends_and_receives_in_each_settlement_mode(rhea: Path, served: BrokerThread) -> None:
    report = run(rhea, served, "settlement")
    bodies = [f"m{n}" for n in range(10)]
    for mode, outcomes in (("at-most-once", 0), ("at-least-once", 10)):
        for durable in (True, False):
            case = report[f"{mode}/{str(durable).lower()}"]
            assert case == {"outcomes": outcomes, "bodies": bodies, "durable": [durable] * 10}


def test_rhea_selector(rhea: Path, served: BrokerThread) -> None:
    assert run(rhea, served, "selector") == {"bodies": ["red-0", "red-2"], "extra": 0}


def test_rhea_durable_subscription_across_a_restart_of_the_script(
    rhea: Path, served: BrokerThread
) -> None:
    assert run(rhea, served, "durable", "subscribe") == {"bodies": []}
    with blocking(url(served)) as publisher:
        sender = publisher.create_sender("topic://rhea.prices")
        for n in range(3):
            sender.send(Message(body=f"missed {n}", durable=True))
    resumed = run(rhea, served, "durable", "3")
    assert resumed == {"bodies": ["missed 0", "missed 1", "missed 2"]}
    region = region_of(served)
    gone = served.call(lambda: region.subscriptions.durable("rhea-durable-client", "rhea-sub"))
    assert gone is None  # the script closed its link: unsubscribed


def test_rhea_request_and_reply_through_a_temporary_queue(rhea: Path, served: BrokerThread) -> None:
    report = run(rhea, served, "rpc")
    assert report["reply_to"].startswith("temp-queue://")
    assert (report["body"], report["correlation_id"]) == ("re: ping", "req-1")


def test_rhea_10_mb_message(rhea: Path, served: BrokerThread) -> None:
    report = run(rhea, served, "large")
    assert report["size"] == 10 * 1024 * 1024
    assert report["same"] is True
    assert report["max_frame"] < report["size"]


def test_rhea_heart_beats_keep_an_idle_connection(rhea: Path, served: BrokerThread) -> None:
    report = run(rhea, served, "heartbeat", "3000")  # three times the broker's idle timeout
    # The broker advertises half its idle timeout (proton's engine does, as the spec advises).
    assert 0 < report["broker_idle_time_out"] <= 1000
    assert report["body"] == "still here"
