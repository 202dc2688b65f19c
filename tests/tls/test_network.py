"""A network connector and a failover client's cluster over ``ssl://``."""

from __future__ import annotations

from pathlib import Path

from ferrymq.client import connect
from ferrymq.embedded import running_broker
from ferrymq.testing import broker_config
from ferrymq.testing.certificates import Certificates
from tests.tls.conftest import tls_config


def _network_xml(port: int, certificates: Certificates) -> str:
    member = f"ssl://127.0.0.1:{port}?trustStore={certificates.ca_pem}"
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="B" persistent="false">
  <networkConnectors>
    <networkConnector name="toA" uri="static:({member})"/>
  </networkConnectors>
</broker>
</beans>"""


async def test_network_connector_forwards_over_ssl(
    tmp_path: Path, certificates: Certificates
) -> None:
    config_a = tls_config(tmp_path / "A", certificates, "ssl://127.0.0.1:0", name="A")
    async with running_broker(config_a) as a:
        port_a = a.stomp_ports[0]
        config_b = broker_config(
            tmp_path / "B", name="B", persistent=False, xml=_network_xml(port_a, certificates)
        )
        async with running_broker(config_b) as b:
            trust = f"trustStore={certificates.ca_pem}"
            async with (
                connect(f"ssl://localhost:{port_a}?{trust}") as on_a,
                connect(f"tcp://127.0.0.1:{b.stomp_ports[0]}") as on_b,
            ):
                subscription = await on_a.subscribe("/queue/across")
                # Demand reaches B through the bridge's advisories; send until it has.
                message = None
                for attempt in range(100):
                    await on_b.send("/queue/across", f"m{attempt}", receipt=True)
                    try:
                        message = await subscription.get(timeout=0.2)
                        break
                    except TimeoutError:
                        continue
    assert message is not None
    assert message.text.startswith("m")
