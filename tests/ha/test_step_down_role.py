"""A master that lost its lock says it is stopping while it closes (issue 15 review): until its
listeners and store are closed its role was still "master", so ``GET /health`` answered 200 and
a load balancer kept sending clients to a broker about to close."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ferrymq.broker import Broker, Role
from ferrymq.testing import broker_config

WAIT_S = 30.0

KEEP_ALIVE = """\
<beans><broker xmlns="http://activemq.apache.org/schema/core" brokerName="m">
  <persistenceAdapter>
    <kahaDB directory="${activemq.data}/shared" lockKeepAlivePeriod="100"/>
  </persistenceAdapter>
</broker></beans>
"""


async def test_a_master_stepping_down_is_stopping_then_a_slave(tmp_path: Path) -> None:
    broker = Broker(broker_config(tmp_path, name="m", xml=KEEP_ALIVE))
    await broker.start()
    try:
        assert broker.role is Role.MASTER
        roles: list[Role] = []

        async def record() -> None:
            while True:
                role = await broker.next_role_change()
                roles.append(role)
                if role is Role.WAITING:
                    return

        recorder = asyncio.create_task(record())
        await asyncio.sleep(0)  # the recorder waits for the first change
        (tmp_path / "shared" / "lock").unlink()
        await asyncio.wait_for(recorder, WAIT_S)
    finally:
        await broker.stop()
    assert roles[0] is Role.STOPPING
    assert not Role.STOPPING.serving
    assert roles[-1] is Role.WAITING
