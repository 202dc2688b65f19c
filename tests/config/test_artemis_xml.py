"""ActiveMQ Artemis's broker.xml (issue 18, item 1): errors with file and line, the mapping onto
FerryMQ's listeners, destinations and policies, `<broker-connections>` as a FerryMQ extension of
activemq.xml, `ferrymq check-config broker.xml`, and a broker started from a broker.xml that
serves STOMP and AMQP clients on queues its `<addresses>` created."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from proton import Message

from ferrymq.cli.main import main
from ferrymq.config import BrokerConfig, ConfigError, load_config, parse_config
from ferrymq.config.broker_connections import SenderConfig
from ferrymq.config.model import AdminConfig, StartupDestination
from ferrymq.config.pending import pending_features
from ferrymq.config.persistence import KahaDBConfig
from ferrymq.config.policy import DiscardingDeadLetterStrategy, SharedDeadLetterStrategy
from ferrymq.core.destination import Destination
from ferrymq.testing import BrokerProcess, BrokerThread, free_port
from tests.amqp.proton_support import blocking, region_of
from tests.fuzz.wire import RawConnection, frame

SETTING = '<address-setting match="a">{}</address-setting>'
FEDERATION = "<federation>{}</federation>"
HEAD = '<configuration xmlns="urn:activemq">\n<core xmlns="urn:activemq:core">\n'
TAIL = "</core>\n</configuration>\n"


def core(body: str) -> BrokerConfig:
    """`body` inside `<core>`: line 3 of the document is its first line."""
    return parse_config(HEAD + body + TAIL, "broker.xml")


def error_of(body: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        core(body)
    return caught.value


def connection(body: str, attributes: str = 'name="c" uri="tcp://h:5672"') -> str:
    return f"<broker-connections><amqp-connection {attributes}>\n{body}\n</amqp-connection></broker-connections>\n"  # noqa: E501


# -- the root ---------------------------------------------------------------------------------


def test_core_settings_map_onto_the_broker() -> None:
    config = core(
        "<name>broker1</name>\n<persistence-enabled>true</persistence-enabled>\n"
        "<journal-directory>/var/lib/artemis/journal</journal-directory>\n"
        "<paging-directory>/var/lib/artemis/paging</paging-directory>\n"
    )
    assert config.broker_name == "broker1"
    assert config.persistent
    assert isinstance(config.persistence, KahaDBConfig)
    assert config.store_directory == Path("/var/lib/artemis/journal")
    (paging,) = config.ignored
    assert str(paging.location) == "broker.xml:6"
    assert "SQLite store in the journal-directory" in paging.reason


def test_defaults_and_persistence_disabled() -> None:
    config = core("")
    assert config.broker_name == "localhost"
    assert config.store_directory == Path("data/journal")  # Artemis's default
    moved = parse_config(HEAD + TAIL, "broker.xml", {"activemq.data": "/srv/d"})  # --data
    assert moved.store_directory == Path("/srv/d/journal")
    assert core("<persistence-enabled>false</persistence-enabled>").store_directory is None


def test_configuration_without_core_and_placeholders() -> None:
    text = '<configuration xmlns="urn:activemq"><name>${who}</name></configuration>'
    assert parse_config(text, "broker.xml", {"who": "b7"}).broker_name == "b7"


def test_load_config_reads_a_broker_xml_file(tmp_path: Path) -> None:
    path = tmp_path / "broker.xml"
    path.write_text(HEAD + "<name>from-file</name>\n" + TAIL, encoding="utf-8")
    assert load_config(path).broker_name == "from-file"


@pytest.mark.parametrize(
    ("body", "line", "expected"),
    [
        ("<nmae>b</nmae>\n", 3, "unknown element <nmae> in <core>; did you mean name?"),
        (
            "<journal-directry>x</journal-directry>\n",
            3,
            "did you mean journal-directory?",
        ),
        ("<name>a</name>\n<name>b</name>\n", 4, "<name> given twice (first on line 3)"),
        ("<persistence-enabled>maybe</persistence-enabled>\n", 3, "<persistence-enabled>"),
        ("<name></name>\n", 3, "<name> is empty"),
        ("<ha-policy><replication/></ha-policy>\n", 3, "not supported yet: Artemis HA"),
        ("<security-enabled>maybe</security-enabled>\n", 3, "<security-enabled>"),
    ],
)
def test_core_errors_name_file_and_line(body: str, line: int, expected: str) -> None:
    error = error_of(body)
    assert (error.source, error.line) == ("broker.xml", line)
    assert expected in str(error)


def test_tuning_is_ignored_with_one_warning_each() -> None:
    config = core(
        "<journal-type>ASYNCIO</journal-type>\n<jmx-management-enabled>true"
        "</jmx-management-enabled>\n<security-enabled>false</security-enabled>\n"
    )
    assert [(str(i.location), i.element) for i in config.ignored] == [
        ("broker.xml:3", "<core> <journal-type>"),
        ("broker.xml:4", "<core> <jmx-management-enabled>"),
    ]


# -- acceptors --------------------------------------------------------------------------------


def test_acceptors_become_listeners_of_their_protocol() -> None:
    config = core(
        "<acceptors>\n"
        '<acceptor name="amqp">tcp://0.0.0.0:5672?tcpSendBufferSize=1048576;protocols=AMQP;'
        "connectionsAllowed=50</acceptor>\n"
        '<acceptor name="stomp">tcp://0.0.0.0:61613?protocols=STOMP</acceptor>\n'
        "</acceptors>\n"
    )
    amqp, stomp = config.transport_connectors
    assert (amqp.name, amqp.scheme, amqp.port, amqp.maximum_connections) == (
        "amqp",
        "amqp",
        5672,
        50,
    )
    assert (stomp.name, stomp.scheme, stomp.port) == ("stomp", "stomp", 61613)
    assert str(amqp.location) == "broker.xml:4"
    (tuning,) = config.ignored
    assert tuning.element == '<acceptor name="amqp"> option tcpSendBufferSize'


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("tcp://0.0.0.0:61616?protocols=CORE,AMQP",
         "protocol CORE is not served by FerryMQ; it serves AMQP or STOMP"),
        ("tcp://0.0.0.0:61616?protocols=OPENWIRE,MQTT", "OPENWIRE, MQTT are not served"),
        ("tcp://0.0.0.0:61616?protocols=AMQP,STOMP", "one protocol per listener"),
        ("tcp://0.0.0.0:61616", "without protocols= accepts every protocol"),
        ("tcp://0.0.0.0:61616?protocol=AMQP", "did you mean protocols?"),
        ("tcp://0.0.0.0:61616?protocols=AMQP;sslEnabled=true", "TLS on a broker.xml acceptor"),
        ("udp://0.0.0.0:61616?protocols=AMQP", "expected tcp://host:port"),
        ("tcp://0.0.0.0?protocols=AMQP", "not a URI"),
    ],
)  # fmt: skip
def test_acceptor_errors(uri: str, expected: str) -> None:
    error = error_of(f'<acceptors>\n<acceptor name="a">{uri}</acceptor>\n</acceptors>\n')
    assert error.line == 4
    assert expected in str(error)


def test_duplicate_acceptor_names() -> None:
    body = (
        '<acceptors>\n<acceptor name="a">tcp://h:1?protocols=AMQP</acceptor>\n'
        '<acceptor name="a">tcp://h:2?protocols=STOMP</acceptor>\n</acceptors>\n'
    )
    error = error_of(body)
    assert error.line == 5
    assert "used twice (line 4)" in str(error)


# -- addresses and address-settings ----------------------------------------------------------


def test_anycast_queues_and_multicast_subscriptions() -> None:
    config = core(
        '<addresses>\n<address name="orders"><anycast><queue name="orders"/></anycast></address>\n'
        '<address name="prices"><multicast><queue name="app1.audit"/></multicast></address>\n'
        '<address name="news"><multicast/></address>\n</addresses>\n'
    )
    assert config.startup_destinations == (
        StartupDestination("queue", "orders", "orders"),
        StartupDestination("topic", "prices", None, (("app1", "audit"),)),
        StartupDestination("topic", "news"),
    )


@pytest.mark.parametrize(
    ("body", "line", "expected"),
    [
        ('<address name="p"><multicast><queue name="audit"/></multicast></address>', 4,
         "clientId.subscriptionName"),
        ('<address name="a"/>\n<address name="a"/>', 5, "address 'a' is declared twice"),
        ('<address name="a"><anycast><queue name="q"><filter string="x=1"/></queue></anycast>'
         "</address>", 4, "queue filters"),
        ('<address name="a"><anycast><queue nme="q"/></anycast></address>', 4,
         "required attribute"),
        ('<address name="a"><anycst/></address>', 4, "did you mean anycast?"),
    ],
)  # fmt: skip
def test_address_errors(body: str, line: int, expected: str) -> None:
    error = error_of(f"<addresses>\n{body}\n</addresses>\n")
    assert error.line == line
    assert expected in str(error)


def test_address_settings_become_policies_with_inherited_values() -> None:
    config = core(
        "<address-settings>\n"
        '<address-setting match="#">\n<dead-letter-address>DLQ</dead-letter-address>\n'
        "<expiry-address>DLQ</expiry-address>\n<max-delivery-attempts>10</max-delivery-attempts>\n"
        "<redelivery-delay>0</redelivery-delay>\n</address-setting>\n"
        '<address-setting match="orders.#">\n<max-delivery-attempts>3</max-delivery-attempts>\n'
        "<redelivery-delay>500</redelivery-delay>\n</address-setting>\n"
        '<address-setting match="logs.*">\n<max-delivery-attempts>-1</max-delivery-attempts>\n'
        "</address-setting>\n</address-settings>\n"
    )
    for topic in (False, True):
        orders = config.policy_for(topic, "orders.eu")
        assert orders.dead_letter_strategy == SharedDeadLetterStrategy(
            dead_letter_queue="DLQ", process_expired=True, process_non_persistent=True
        )
        assert config.policy_for(topic, "orders").queue == (None if topic else "orders.>")
        plugin = config.redelivery_policies
        assert plugin is not None
        redelivery = plugin.policy_for(topic, "orders.eu")
        assert redelivery is not None
        assert (redelivery.maximum_redeliveries, redelivery.redelivery_delay_ms) == (2, 500)
        other = plugin.policy_for(topic, "billing")
        assert other is not None
        assert other.maximum_redeliveries == 9
        logs = plugin.policy_for(topic, "logs.app")
        assert logs is not None
        assert logs.maximum_redeliveries == -1
    assert config.ignored == ()


def test_address_settings_without_addresses_drop_as_artemis_does() -> None:
    config = core(
        '<address-settings><address-setting match="#">\n<max-delivery-attempts>5'
        "</max-delivery-attempts>\n</address-setting></address-settings>\n"
    )
    assert config.policy_for(False, "q").dead_letter_strategy == DiscardingDeadLetterStrategy()


def test_a_distinct_expiry_address_is_warned_about() -> None:
    config = core(
        '<address-settings><address-setting match="#">\n<dead-letter-address>DLQ'
        "</dead-letter-address>\n<expiry-address>ExpiryQueue</expiry-address>\n"
        "<max-size-bytes>-1</max-size-bytes>\n</address-setting></address-settings>\n"
    )
    expiry, size = config.ignored
    assert "expired messages go to the dead-letter address 'DLQ'" in expiry.reason
    assert (str(size.location), "systemUsage") == ("broker.xml:6", "systemUsage")
    assert "<systemUsage>" in size.reason


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ('<address-setting match="a.#.b"/>', "may only end a pattern"),
        (SETTING.format("<max-delivery-attempts>0</max-delivery-attempts>"), "must be -1"),
        (SETTING.format("<max-delivery-attempts>x</max-delivery-attempts>"),
         "max-delivery-attempts"),
        (SETTING.format("<dead-letter-adress>D</dead-letter-adress>"),
         "did you mean dead-letter-address?"),
    ],
)  # fmt: skip
def test_address_setting_errors(setting: str, expected: str) -> None:
    error = error_of(f"<address-settings>\n{setting}\n</address-settings>\n")
    assert error.line == 4
    assert expected in str(error)


# -- broker connections -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attributes", "body", "line", "expected"),
    [
        ('name="c" uri="tcp://h:5672" retry-interval="0"', "", 3, "attribute retry-interval"),
        ('name="c" uri="tcp://h:5672" reconnect-attempts="-2"', "", 3, "reconnect-attempts"),
        ('uri="tcp://h:5672"', "", 3, "attribute name: required"),
        ('name="c"', "", 3, "attribute uri: required"),
        ('name="c" uri="tcp://h"', "", 3, "not scheme://host:port"),
        ('name="c" uri="http://h:80"', "", 3, "scheme http:// is not supported"),
        ('name="c" uri="tcp://h:1#b:x"', "", 3, "alternate 'b:x'"),
        ('name="c" uri="tcp://h:1" auto-start="sometimes"', "", 3, "auto-start"),
        ('name="c" uri="tcp://h:1" usr="u"', "", 3, "did you mean user?"),
        ('name="c" uri="tcp://h:1"', "<mirorr/>", 4, "did you mean mirror?"),
        ('name="c" uri="tcp://h:1"', '<mirror adress-filter="x"/>', 4,
         "did you mean address-filter?"),
        ('name="c" uri="tcp://h:1"', "<mirror/><mirror/>", 4, "one <mirror>"),
        ('name="c" uri="tcp://h:1"', '<sender address-match="a" queue-name="b"/>', 4,
         "exactly one of"),
        ('name="c" uri="tcp://h:1"', "<receiver/>", 4, "exactly one of"),
        ('name="c" uri="tcp://h:1"', '<peer address-match=""/>', 4, "must not be empty"),
        ('name="c" uri="tcp://h:1"', '<bridge bridge-from-address="x"/>', 4, "not supported yet"),
        ('name="c" uri="tcp://h:1"',
         FEDERATION.format('<local-queue-policy name="p"><include address-match="#"/>'
                           "</local-queue-policy>"), 4, "queue-match"),
        ('name="c" uri="tcp://h:1"',
         FEDERATION.format('<local-address-policy name="p"/><remote-queue-policy name="p"/>'),
         4, "policy name 'p' is used twice"),
        ('name="c" uri="tcp://h:1"',
         FEDERATION.format('<local-address-policy name="p" max-hops="-1"/>'), 4, "max-hops"),
    ],
)  # fmt: skip
def test_broker_connection_errors(attributes: str, body: str, line: int, expected: str) -> None:
    error = error_of(connection(body, attributes))
    assert (error.source, error.line) == ("broker.xml", line)
    assert expected in str(error)


def test_duplicate_connection_names() -> None:
    body = (
        "<broker-connections>\n"
        '<amqp-connection name="dc" uri="tcp://a:5672"/>\n'
        '<amqp-connection name="dc" uri="tcp://b:5672"/>\n'
        "</broker-connections>\n"
    )
    error = error_of(body)
    assert error.line == 5
    assert "'dc' is used twice (line 4)" in str(error)


def test_connection_attributes_carried_through() -> None:
    config = core(connection(
        '<mirror sync="true" durable="false" queue-removal="false" address-filter="eu,!eu.uk"/>',
        'name="dr" uri="amqps://a:5671?verifyHost=false#tcp://b:5672" user="u" password="p" '
        'auto-start="false" retry-interval="250" reconnect-attempts="3"',
    ))  # fmt: skip
    (dr,) = config.broker_connections
    assert (dr.user, dr.password, dr.auto_start) == ("u", "p", False)
    assert (dr.retry_interval_ms, dr.reconnect_attempts) == (250, 3)
    assert dr.uri == "amqps://a:5671?verifyHost=false#tcp://b:5672"
    mirror = dr.mirror
    assert mirror is not None
    assert (mirror.sync, mirror.durable, mirror.queue_removal) == (True, False, False)
    assert mirror.address_filter.matches("eu.de")
    assert not mirror.address_filter.matches("eu.uk.x")


@pytest.mark.parametrize(
    ("links", "addresses"),
    [
        ('<sender address-match="queues.#"/>\n<receiver address-match="queues.#"/>', ""),
        ('<sender address-match="queues.#"/>\n<receiver address-match="queues.a.*"/>', ""),
        ('<sender address-match="#"/>\n<receiver address-match="anything"/>', ""),
        ('<sender queue-name="q1"/>\n<receiver queue-name="q1"/>', ""),
        (
            '<sender queue-name="localQ"/>\n<receiver address-match="remote.#"/>',
            '<addresses><address name="remote.a"><anycast><queue name="localQ"/></anycast>'
            "</address></addresses>",
        ),
    ],
)
def test_a_sender_and_a_receiver_on_one_destination_is_refused(links: str, addresses: str) -> None:
    error = error_of(connection(links) + addresses)
    assert (error.source, error.line) == ("broker.xml", 5)  # the receiver
    assert "messages would loop between the two brokers for ever" in str(error)
    assert "(line 4)" in str(error)


@pytest.mark.parametrize(
    "links",
    [
        '<sender address-match="queues.#"/>\n<receiver address-match="remotequeues.#"/>',
        '<sender address-match="a.*"/>\n<receiver address-match="a.b.c"/>',
        '<sender queue-name="q1"/>\n<receiver queue-name="q2"/>',
        '<peer address-match="queues.#"/>\n<receiver address-match="queues.#"/>',
    ],
)
def test_disjoint_senders_and_receivers_load(links: str) -> None:
    assert len(core(connection(links)).broker_connections[0].elements) == 2


def test_a_loop_on_another_connection_is_not_one() -> None:
    body = (
        "<broker-connections>\n"
        '<amqp-connection name="a" uri="tcp://a:1"><sender address-match="x"/></amqp-connection>\n'
        '<amqp-connection name="b" uri="tcp://b:1">\n'
        '<receiver address-match="x"/></amqp-connection>\n'
        "</broker-connections>\n"
    )
    assert len(core(body).broker_connections) == 2


# -- the activemq.xml extension ---------------------------------------------------------------

ACTIVEMQ = """\
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="b1">
    <broker-connections>
      <amqp-connection uri="tcp://dc2:5672" name="DC2">
        <mirror/>
        <sender address-match="orders.#"/>
        {extra}
      </amqp-connection>
    </broker-connections>
  </broker>
</beans>
"""


def test_broker_connections_inside_activemq_xml() -> None:
    config = parse_config(ACTIVEMQ.format(extra=""), "activemq.xml")
    (dc2,) = config.broker_connections
    assert dc2.name == "DC2"
    assert dc2.mirror is not None
    assert dc2.elements[1] == SenderConfig(address_match="orders.#")
    assert str(dc2.location) == "activemq.xml:4"
    assert config.ignored == ()


def test_activemq_xml_extension_has_the_same_errors() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(ACTIVEMQ.format(extra='<receiver address-match="orders.eu"/>'), "a.xml")
    assert caught.value.line == 7
    assert "loop" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        parse_config(ACTIVEMQ.format(extra='<sendr address-match="x"/>'), "a.xml")
    assert caught.value.line == 7
    assert "did you mean sender?" in str(caught.value)


# -- check-config and a real broker -----------------------------------------------------------

BROKEN = (
    HEAD
    + """\
<acceptors><acceptor name="a">tcp://0.0.0.0:61616?protocols=CORE</acceptor></acceptors>
<addresses><address name="p"><multicast><queue name="audit"/></multicast></address></addresses>
<journal-type>NIO</journal-type>
"""
    + connection('<sender queue-name="q"/><receiver queue-name="q"/>')
    + TAIL
)


def test_check_config_lists_every_problem_of_a_broker_xml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "broker.xml"
    path.write_text(BROKEN, encoding="utf-8")
    code = main(["check-config", str(path)])
    out = capsys.readouterr().out.replace(str(path), "broker.xml")
    assert code == 1
    assert 'broker.xml:3: <acceptor name="a">: protocol CORE is not served' in out
    assert "broker.xml:4: <multicast>: multicast queue 'audit'" in out
    assert 'broker.xml:7: <receiver queue-name="q">' in out
    assert "broker.xml:5: <core> <journal-type>" in out
    assert "Traceback" not in out


def _served_xml(tmp_path: Path) -> Path:
    path = tmp_path / "broker.xml"
    path.write_text(
        HEAD
        + f"""<name>artemis-like</name>
<journal-directory>{tmp_path / "journal"}</journal-directory>
<acceptors>
  <acceptor name="amqp">tcp://127.0.0.1:0?protocols=AMQP;amqpCredits=1000</acceptor>
  <acceptor name="stomp">tcp://127.0.0.1:0?protocols=STOMP</acceptor>
</acceptors>
<addresses>
  <address name="orders"><anycast><queue name="orders"/></anycast></address>
  <address name="prices"><multicast><queue name="app1.audit"/></multicast></address>
</addresses>
"""
        + TAIL,
        encoding="utf-8",
    )
    return path


def _stomp_port(thread: BrokerThread) -> int:
    broker = thread.broker
    assert broker is not None
    return next(lis.port for c, lis in broker.service.served if c.scheme == "stomp")


def _broker(path: Path) -> BrokerThread:
    config = load_config(path)
    return BrokerThread(replace(config, admin=AdminConfig(enabled=False)))


def test_check_config_accepts_the_served_broker_xml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-config", str(_served_xml(tmp_path))]) == 0


def test_a_broker_xml_broker_serves_its_pre_created_destinations(tmp_path: Path) -> None:
    path = _served_xml(tmp_path)
    with _broker(path) as thread:
        region = region_of(thread)
        assert thread.call(lambda: region.has_destination(Destination.queue("orders")))
        assert thread.call(lambda: region.subscriptions.durable("app1", "audit")) is not None
        with blocking(f"amqp://127.0.0.1:{thread.amqp_port}") as amqp:
            sender = amqp.create_sender("queue://orders")
            sender.send(Message(body="from amqp", durable=True))
        with RawConnection(_stomp_port(thread)) as stomp:
            stomp.handshake("1.2")
            stomp.send(frame(
                "SEND", ("destination", "/topic/prices"), ("persistent", "true"),
                ("receipt", "r"), body=b"p1",
            ))  # fmt: skip
            stomp.expect("RECEIPT")
            stomp.send(frame("SUBSCRIBE", ("id", "1"), ("destination", "/queue/orders")))
            assert stomp.expect("MESSAGE").body == b"from amqp"
    # Restarted on the same journal: the subscription kept what it collected while offline.
    with _broker(path) as thread, RawConnection(_stomp_port(thread)) as stomp:
        stomp.send(
            frame("CONNECT", ("accept-version", "1.2"), ("host", "h"), ("client-id", "app1"))
        )
        stomp.expect("CONNECTED")
        stomp.send(frame(
            "SUBSCRIBE", ("id", "1"), ("destination", "/topic/prices"),
            ("activemq.subscriptionName", "audit"),
        ))  # fmt: skip
        assert stomp.expect("MESSAGE").body == b"p1"


def test_ferrymq_broker_runs_a_broker_xml_and_keeps_its_queue_across_a_kill(
    tmp_path: Path,
) -> None:
    """`ferrymq broker --config broker.xml --data DIR` as a separate process: the store is in
    DIR/journal (Artemis's data/journal), the queue its `<addresses>` declare survives SIGKILL
    with the persistent message a receipt confirmed."""
    port = free_port()
    xml = (
        HEAD
        + f"""<name>proc</name>
<acceptors><acceptor name="stomp">tcp://127.0.0.1:{port}?protocols=STOMP</acceptor></acceptors>
<addresses><address name="jobs"><anycast><queue name="jobs"/></anycast></address></addresses>
"""
        + TAIL
    )
    process = BrokerProcess(tmp_path / "data", name="proc", port=port, config_xml=xml, listen=False)
    with process:
        with RawConnection(port) as stomp:
            stomp.handshake("1.2")
            stomp.send(frame(
                "SEND", ("destination", "/queue/jobs"), ("persistent", "true"),
                ("receipt", "r"), body=b"job-1",
            ))  # fmt: skip
            stomp.expect("RECEIPT")
        assert (tmp_path / "data" / "journal" / "ferrymq.db").exists()
        process.kill()
        process.start()
        with RawConnection(port) as stomp:
            stomp.handshake("1.2")
            stomp.send(frame("SUBSCRIBE", ("id", "1"), ("destination", "/queue/jobs")))
            assert stomp.expect("MESSAGE").body == b"job-1"


def test_max_delivery_attempts_then_the_dead_letter_address(tmp_path: Path) -> None:
    """`<address-setting match="orders.#">`: a message NACKed on its 3rd delivery
    (max-delivery-attempts 3) goes to the dead-letter address the `#` setting gives."""
    path = tmp_path / "broker.xml"
    path.write_text(
        HEAD
        + f"""<journal-directory>{tmp_path / "journal"}</journal-directory>
<acceptors><acceptor name="stomp">tcp://127.0.0.1:0?protocols=STOMP</acceptor></acceptors>
<address-settings>
  <address-setting match="#"><dead-letter-address>DLA</dead-letter-address></address-setting>
  <address-setting match="orders.#">
    <max-delivery-attempts>3</max-delivery-attempts>
  </address-setting>
</address-settings>
"""
        + TAIL,
        encoding="utf-8",
    )
    with _broker(path) as thread, RawConnection(_stomp_port(thread)) as stomp:
        stomp.handshake("1.2")
        stomp.send(frame("SEND", ("destination", "/queue/orders.eu"), body=b"poison"))
        stomp.send(frame(
            "SUBSCRIBE", ("id", "1"), ("destination", "/queue/orders.eu"),
            ("ack", "client-individual"),
        ))  # fmt: skip
        for attempt in range(3):
            message = stomp.expect("MESSAGE")
            assert message.headers.get("redelivered", "false") == str(attempt > 0).lower()
            stomp.send(frame("NACK", ("id", message.headers["ack"])))
        stomp.send(frame("SUBSCRIBE", ("id", "2"), ("destination", "/queue/DLA")))
        dead = stomp.expect("MESSAGE")
        assert (dead.body, dead.headers["subscription"]) == (b"poison", "2")


def test_address_settings_without_a_redelivery_delay_warn_of_nothing_pending() -> None:
    """Address settings become redelivery policies; only a delay, which FerryMQ does not
    apply yet, is worth a warning (an Artemis user never wrote a `<redeliveryPlugin>`)."""
    plain = core('<address-settings>\n<address-setting match="a">'
                 "<max-delivery-attempts>3</max-delivery-attempts></address-setting>\n"
                 "</address-settings>\n")  # fmt: skip
    delayed = core('<address-settings>\n<address-setting match="a">'
                   "<redelivery-delay>500</redelivery-delay></address-setting>\n"
                   "</address-settings>\n")  # fmt: skip
    assert [f for f in pending_features(plain) if "redelivery" in f] == []
    assert [f for f in pending_features(delayed) if "redelivery" in f] != []
