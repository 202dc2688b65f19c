"""The admin API over HTTPS (``--admin https://HOST:PORT``) with the broker's ``<sslContext>``."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from ferrymq.cli.main import main
from ferrymq.testing import BrokerProcess, free_port
from ferrymq.testing.certificates import PASSWORD, Certificates


def _xml(certificates: Certificates) -> str:
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="secure" persistent="false">
  <sslContext>
    <sslContext keyStore="{certificates.server.p12}" keyStorePassword="{PASSWORD}"/>
  </sslContext>
</broker>
</beans>"""


def test_admin_api_over_https(
    tmp_path: Path,
    certificates: Certificates,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = free_port()
    address = f"https://127.0.0.1:{port}"
    process = BrokerProcess(
        tmp_path / "data", config_xml=_xml(certificates), extra_args=["--admin", address]
    )
    with process:
        context = ssl.create_default_context(cafile=str(certificates.ca_pem))
        with urllib.request.urlopen(f"{address}/health", timeout=10, context=context) as answer:
            assert answer.status == 200
            assert isinstance(json.load(answer), dict)
        # The CLI: without the CA the certificate is refused, one line; with it, it works.
        monkeypatch.delenv("FERRYMQ_ADMIN_CA", raising=False)
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        assert main(["stat", "--admin", address]) == 1
        err = capsys.readouterr().err
        assert "CERTIFICATE_VERIFY_FAILED" in err
        assert err.count("\n") == 1
        monkeypatch.setenv("FERRYMQ_ADMIN_CA", str(certificates.ca_pem))
        assert main(["stat", "--admin", address]) == 0, capsys.readouterr().err
        assert capsys.readouterr().out.startswith("broker localhost: ")
        assert main(["health", "--admin", address]) == 0
    assert "Traceback" not in "".join(process.output)


def test_https_admin_without_an_ssl_context_cannot_start(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "ferrymq.cli.main", "broker", "--data", str(tmp_path)]
    command += ["--non-persistent", "--admin", f"https://127.0.0.1:{free_port()}"]
    command += ["--listen", "stomp://127.0.0.1:0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert "cannot start: the admin API over HTTPS needs the broker's key" in result.stderr
    assert "Traceback" not in result.stderr
