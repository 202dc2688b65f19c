"""A bridge whose remote broker stops says so in the user's words (issue 15, item 7): the
WARNING used to be the task group's own text, "unhandled errors in a TaskGroup (1
sub-exception)", which named neither the broker nor what happened."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ferrymq.testing import wait_until
from ferrymq.testing.network import BrokerNetwork

WAIT_S = 15.0


@pytest.mark.parametrize("duplex", ["false", "true"])
async def test_the_warning_names_the_broker_that_closed_the_bridge(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, duplex: str
) -> None:
    caplog.set_level(logging.WARNING, logger="ferrymq.network")
    net = BrokerNetwork(tmp_path)
    net.add("A", f'<networkConnector name="to-B" uri="static:({{B}})" duplex="{duplex}"/>')
    net.add("B")
    async with net:
        await net.wait_for_bridges()
        caplog.clear()  # A may have tried before B listened
        await net.stop("B")
        await wait_until(
            lambda: any("failed" in r.getMessage() for r in caplog.records),
            WAIT_S,
            "a WARNING that the bridge failed",
        )
    failures = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert failures[0].startswith("network connector to-B: bridge to tcp://127.0.0.1:")
    assert failures[0].endswith(" failed: the remote broker B closed the connection")
    assert not any("TaskGroup" in message for message in failures)
