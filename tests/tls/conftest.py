"""Fixtures of the TLS tests: a test CA and its certificates, and brokers with TLS listeners."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.config.cli import config_from_flags
from ferrymq.config.model import BrokerConfig
from ferrymq.config.tls import SslContextConfig
from ferrymq.testing.certificates import PASSWORD, Certificates, make_certificates


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certificates"))


def tls_config(
    data_dir: Path,
    certificates: Certificates,
    *listen: str,
    trust: bool = True,
    key_store: Path | None = None,
    password: str | None = PASSWORD,
    name: str = "localhost",
) -> BrokerConfig:
    """A memory broker listening on ``listen`` (TLS URIs) with the test server keystore."""
    config = config_from_flags(name, data_dir, list(listen), "off", False)
    ssl_context = SslContextConfig(
        key_store=key_store or certificates.server.p12,
        key_store_password=password,
        trust_store=certificates.ca_p12 if trust else None,
        trust_store_password=PASSWORD if trust else None,
    )
    return replace(config, ssl_context=ssl_context)
