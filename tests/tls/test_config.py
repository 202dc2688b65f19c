"""``<sslContext>`` and TLS listener options as activemq.xml gives them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.config import parse_config
from ferrymq.config.errors import ConfigError


def _broker(inner: str) -> str:
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="b">
{inner}
</broker>
</beans>"""


SSL_CONTEXT = """<sslContext>
  <sslContext keyStore="file:${activemq.conf}/broker.p12" keyStorePassword="secret"
      trustStore="ca.pem" trustStorePassword="other" keyStoreType="PKCS12"/>
</sslContext>"""


def test_ssl_context_loads_without_showing_passwords() -> None:
    config = parse_config(_broker(SSL_CONTEXT), "activemq.xml", {"activemq.conf": "/etc/amq"})
    ssl_context = config.ssl_context
    assert ssl_context is not None
    assert ssl_context.key_store == Path("/etc/amq/broker.p12")
    assert ssl_context.trust_store == Path("ca.pem")
    assert (ssl_context.key_store_password, ssl_context.trust_store_password) == ("secret", "other")
    assert "secret" not in repr(ssl_context)
    assert not config.ignored


@pytest.mark.parametrize(
    "uri",
    [
        "ssl://0.0.0.0:61617?needClientAuth=true&transport.enabledProtocols=TLSv1.2,TLSv1.3",
        "stomp+ssl://0.0.0.0:61612?transport.wantClientAuth=true",
        "stomp+nio+ssl://0.0.0.0:61613?transport.enabledCipherSuites="
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "auto+ssl://0.0.0.0:61614?maximumConnections=10",
    ],
)
def test_tls_listeners_load(uri: str) -> None:
    escaped = uri.replace("&", "&amp;")
    xml = f'<transportConnectors><transportConnector uri="{escaped}"/></transportConnectors>'
    (connector,) = parse_config(_broker(SSL_CONTEXT + xml)).transport_connectors
    assert connector.uri == uri


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("transport.enabledProtocols=TLSv9", "unknown protocol TLSv9"),
        ("transport.enabledProtocols=TLSv1.1,TLSv1.3", "TLSv1.1 is older than TLS 1.2"),
        ("transport.enabledProtocols=TLSv1", "TLSv1 is older than TLS 1.2 and refused"),
        ("transport.enabledCipherSuites=TLS_NOPE", "unknown or unsupported cipher suite TLS_NOPE"),
        ("needClientAuth=yes", "needClientAuth must be true or false"),
    ],
)
def test_bad_tls_options_are_errors_naming_them(option: str, words: str) -> None:
    xml = (
        "<transportConnectors>"
        f'<transportConnector uri="ssl://0.0.0.0:61617?{option}"/>'
        "</transportConnectors>"
    )
    with pytest.raises(ConfigError, match=words):
        parse_config(_broker(xml))


def test_classpath_keystore_is_refused() -> None:
    xml = '<sslContext><sslContext keyStore="classpath:broker.ks"/></sslContext>'
    with pytest.raises(ConfigError, match="classpath: resource"):
        parse_config(_broker(xml))
