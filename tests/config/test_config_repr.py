"""A loaded configuration's repr shows no password (issue 16, review finding 17): a repr ends up
in logs, tracebacks and debugger output, so every password field, every URL that may carry one
and the TLS key material say nothing of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.config import parse_config
from ferrymq.config.errors import ConfigError
from ferrymq.util.tls import KeyStore, TlsOptions, client_options
from ferrymq.util.uri import parse_uri

SECRETS = [f"SECRET{n}" for n in range(9)]

XML = f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="secrets">
  <plugins><simpleAuthenticationPlugin><users>
    <authenticationUser username="admin" password="{SECRETS[0]}" groups="admins"/>
  </users></simpleAuthenticationPlugin></plugins>
  <sslContext>
    <sslContext keyStore="broker.p12" keyStorePassword="{SECRETS[1]}"
                keyStoreKeyPassword="{SECRETS[2]}" trustStore="ca.p12"
                trustStorePassword="{SECRETS[3]}"/>
  </sslContext>
  <networkConnectors>
    <networkConnector name="west" userName="bridge" password="{SECRETS[4]}"
        uri="static:(ssl://west:61617?keyStore=c.p12&amp;keyStorePassword={SECRETS[5]})"/>
  </networkConnectors>
  <persistenceAdapter><jdbcPersistenceAdapter dataSource="#pg"/></persistenceAdapter>
  <transportConnectors>
    <transportConnector uri="stomp://admin:{SECRETS[6]}@127.0.0.1:0"/>
  </transportConnectors>
</broker>
<bean id="pg" class="org.postgresql.ds.PGSimpleDataSource">
  <property name="url" value="jdbc:postgresql://db/amq?password={SECRETS[7]}"/>
  <property name="password" value="{SECRETS[8]}"/>
</bean>
</beans>"""

SLAVE = """<broker xmlns="http://activemq.apache.org/schema/core" brokerName="slave">
  <services><masterConnector userName="slave" password="MASTER-PW"
    remoteURI="ssl://master:61617?keyStore=c.p12&amp;keyStorePassword=MASTER-KS"/></services>
</broker>"""


def test_a_loaded_configuration_shows_no_password() -> None:
    config = parse_config(XML)
    assert config.network_connectors
    assert config.ssl_context is not None
    shown = repr(config)
    assert "west" in shown  # the repr still says what is configured
    leaked = [secret for secret in SECRETS if secret in shown]
    assert leaked == []


def test_a_master_connector_shows_no_password() -> None:
    shown = repr(parse_config(SLAVE))
    assert "master" in shown
    assert "MASTER-PW" not in shown
    assert "MASTER-KS" not in shown


def test_an_error_naming_an_element_shows_no_password() -> None:
    unbalanced = XML.replace(f"keyStorePassword={SECRETS[5]})", f"keyStorePassword={SECRETS[5]}")
    with pytest.raises(ConfigError) as error:
        parse_config(unbalanced)
    assert "networkConnector" in str(error.value)
    assert SECRETS[5] not in str(error.value)


def test_key_material_and_uris_show_no_password() -> None:
    store = KeyStore(Path("k.p12"), "KS-PW", "KEY-PW")
    options = client_options(parse_uri("ssl://h:1?keyStore=k.p12&keyStorePassword=URL-PW").query)
    for shown in (repr(store), repr(TlsOptions(key_store=store, trust_store=store)), repr(options)):
        assert "k.p12" in shown
        assert not any(p in shown for p in ("KS-PW", "KEY-PW", "URL-PW"))
    uri = repr(parse_uri("failover:(ssl://h:1?keyStorePassword=URL-PW)?randomize=false"))
    assert "URL-PW" not in uri
    assert "keyStorePassword=***" in uri
