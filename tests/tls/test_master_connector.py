"""Pure master/slave over TLS: the slave's ``masterConnector remoteURI="ssl://..."``."""

from __future__ import annotations

from pathlib import Path

from ferrymq.testing import BrokerProcess, free_port
from ferrymq.testing.certificates import PASSWORD, Certificates


def test_the_slave_replicates_over_ssl(tmp_path: Path, certificates: Certificates) -> None:
    port = free_port()
    master_xml = f"""<broker xmlns="http://activemq.apache.org/schema/core" brokerName="master"
  waitForSlave="true" shutdownOnSlaveFailure="false">
  <sslContext>
    <sslContext keyStore="{certificates.server.p12}" keyStorePassword="{PASSWORD}"/>
  </sslContext>
  <transportConnectors>
    <transportConnector name="ssl" uri="ssl://127.0.0.1:{port}"/>
  </transportConnectors>
</broker>"""
    remote = f"ssl://127.0.0.1:{port}?trustStore={certificates.ca_pem}"
    slave_xml = f"""<broker xmlns="http://activemq.apache.org/schema/core" brokerName="slave">
  <services><masterConnector remoteURI="{remote}"/></services>
</broker>"""
    master = BrokerProcess(
        tmp_path / "m", name="master", port=port, config_xml=master_xml, listen=False
    ).start(wait=False)
    slave = BrokerProcess(tmp_path / "s", name="slave", config_xml=slave_xml)
    try:
        slave.start(as_slave=True)
        # waitForSlave: the master serves only once its slave has attached, over TLS.
        assert master.wait_for_state("master", timeout_s=30), "".join(master.output[-20:])
        assert slave.state == "slave"
        assert "Traceback" not in "".join(master.output + slave.output)
    finally:
        master.kill()
        slave.kill()
