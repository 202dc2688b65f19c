"""A pure master/slave slave authenticates like any client (issue 16, item 2): with the
masterConnector's right credentials it attaches and the master, which waits for its slave,
starts serving; with a wrong password the master refuses it, says so, and keeps waiting."""

from __future__ import annotations

from pathlib import Path

from ferrymq.testing import BrokerProcess, listening, wait_until_blocking
from tests.ha.test_pure_master_slave import slave_config

MASTER = """<broker xmlns="http://activemq.apache.org/schema/core" brokerName="master"
  waitForSlave="true" shutdownOnSlaveFailure="false">
  <plugins><simpleAuthenticationPlugin><users>
    <authenticationUser username="James" password="Cheese" groups="admins"/>
  </users></simpleAuthenticationPlugin></plugins>
</broker>"""


def test_the_slave_with_the_right_password_attaches(tmp_path: Path) -> None:
    master = BrokerProcess(tmp_path / "m", name="master", config_xml=MASTER).start(wait=False)
    slave = BrokerProcess(tmp_path / "s", name="slave", config_xml=slave_config(master.port))
    try:
        slave.start(as_slave=True)
        assert master.wait_for_state("master"), "".join(master.output[-20:])
    finally:
        master.kill()
        slave.kill()


def test_a_slave_with_a_wrong_password_is_refused(tmp_path: Path) -> None:
    master = BrokerProcess(tmp_path / "m", name="master", config_xml=MASTER).start(wait=False)
    wrong = slave_config(master.port).replace('password="Cheese"', 'password="Brie"')
    slave = BrokerProcess(tmp_path / "s", name="slave", config_xml=wrong)
    try:
        slave.start(wait=False)
        wait_until_blocking(
            lambda: any("login refused for user 'James'" in line for line in master.output),
            20,
            "the master refusing the slave's login",
            detail=lambda: "".join(master.output[-20:]),
        )
        assert not any("Brie" in line for line in master.output)
        assert master.state != "master"  # still waiting for a slave it accepts
        assert not listening(slave.port)
    finally:
        master.kill()
        slave.kill()
