"""The activemq.xml loader: what it accepts, and errors that name file, line and attribute."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.config import (
    AdminConfig,
    ConfigError,
    IndividualDeadLetterStrategy,
    JdbcPersistenceConfig,
    KahaDBConfig,
    LeaseDatabaseLockerConfig,
    SharedDeadLetterStrategy,
    load_config,
    parse_config,
    pending_features,
)

DATA = Path(__file__).parent / "data"


def broker(body: str, attributes: str = "") -> str:
    return (
        f'<broker xmlns="http://activemq.apache.org/schema/core" {attributes}>\n{body}\n</broker>'
    )


def error_of(text: str, properties: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "activemq.xml", properties)
    return caught.value


def test_a_bare_broker_with_defaults() -> None:
    config = parse_config("<broker/>")
    assert config.broker_name == "localhost"
    assert config.broker_id is None
    assert config.persistent
    assert config.persistence == KahaDBConfig()
    assert config.store_directory == Path("data/localhost")
    assert config.transport_connectors == ()
    assert config.admin == AdminConfig(True, "127.0.0.1", 8161)
    assert config.duplicate_window == 65536
    assert config.system_usage.memory_limit == 512 << 20
    assert config.system_usage.store_limit == 100 << 30


def test_the_sample_shaped_file_loads() -> None:
    config = load_config(DATA / "activemq.xml", {"activemq.data": "/var/lib/ferrymq"})
    assert config.source == str(DATA / "activemq.xml")
    assert config.data_directory == Path("/var/lib/ferrymq")
    assert config.persistence == KahaDBConfig(directory=Path("/var/lib/ferrymq/kahadb"))
    openwire, stomp = config.transport_connectors
    assert (openwire.name, openwire.scheme, openwire.host, openwire.port) == (
        "openwire",
        "tcp",
        "0.0.0.0",
        61616,
    )
    assert openwire.maximum_connections == 1000
    assert openwire.stomp.max_frame_size == 104857600
    assert (
        stomp.uri
        == "stomp://0.0.0.0:61613?maximumConnections=1000&wireFormat.maxFrameSize=104857600"
    )
    assert config.system_usage.memory_percent_of_ram == 70
    assert config.system_usage.effective_memory_limit(1000) == 700
    assert config.management_context is not None
    assert not config.management_context.create_connector


def test_the_sample_reports_what_it_ignores() -> None:
    config = load_config(DATA / "activemq.xml")
    lines = pending_features(config)
    source = str(DATA / "activemq.xml")
    assert lines[0].startswith(f"{source}:8: <bean class=")
    assert "PropertyPlaceholderConfigurer" in lines[0]
    assert any("<managementContext>: JMX is not supported" in line for line in lines)
    assert any("SpringContextHook" in line for line in lines)
    assert any('<import resource="jetty.xml">' in line for line in lines)
    assert any("percentOfJvmHeap" in line for line in lines)
    assert any("conditionalNetworkBridgeFilterFactory" in line for line in lines)
    line_numbers = [int(line.split(":")[1]) for line in lines]
    assert line_numbers == sorted(line_numbers)


def test_placeholders_default_to_the_files_directory() -> None:
    config = load_config(DATA / "activemq.xml")
    assert config.data_directory == Path("data")
    assert config.persistence == KahaDBConfig(directory=Path("data/kahadb"))
    text = broker("", 'brokerName="${activemq.conf}"')
    assert parse_config(text, properties={"activemq.conf": "/etc/x"}).broker_name == "/etc/x"


def test_destination_policies() -> None:
    config = load_config(DATA / "activemq.xml")
    orders = config.policy_for(False, "ORDERS.NEW")
    assert not orders.producer_flow_control
    assert orders.memory_limit == 64 << 20
    assert orders.queue_prefetch == 10
    assert orders.dead_letter_strategy == IndividualDeadLetterStrategy(
        queue_prefix="DLQ.", process_non_persistent=True
    )
    assert orders.network_bridge_filter is not None
    assert orders.network_bridge_filter.replay_delay_ms == 1000
    assert config.policy_for(True, "ANY.TOPIC").pending_message_limit == 1000
    fallback = config.policy_for(False, "OTHER")
    assert fallback.expire_messages_period_ms == 60000
    assert fallback.dead_letter_strategy == SharedDeadLetterStrategy(
        process_expired=False, dead_letter_queue="FERRY.DLQ"
    )


def test_jdbc_store_with_postgresql_data_source() -> None:
    config = load_config(DATA / "jdbc-postgresql.xml", {"db.password": "s3cret"})
    store = config.persistence
    assert isinstance(store, JdbcPersistenceConfig)
    assert store.data_source.url == "jdbc:postgresql://localhost:5432/activemq"
    assert store.data_source.is_postgresql
    assert (store.data_source.username, store.data_source.password) == ("activemq", "s3cret")
    assert store.lock_keep_alive_period_ms == 5000
    assert not store.create_tables_on_startup
    assert store.table_prefix == "FERRY_"
    assert store.locker == LeaseDatabaseLockerConfig(10000, False, "pgA-1", 0)
    assert config.store_directory is None
    assert config.admin == AdminConfig(True, "0.0.0.0", 8162)


def test_redelivery_plugin() -> None:
    config = load_config(DATA / "jdbc-postgresql.xml", {"db.password": "x"})
    plugin = config.redelivery_policies
    assert plugin is not None
    special = plugin.policy_for(False, "SpecialQueue")
    assert special is not None
    assert (special.maximum_redeliveries, special.redelivery_delay_ms) == (4, 10000)
    other = plugin.policy_for(False, "Other")
    assert other is not None
    assert other.maximum_redeliveries == 3
    assert other.use_exponential_back_off
    assert other.back_off_multiplier == 2.0
    assert other.collision_avoidance_factor == pytest.approx(0.2)


def test_stomp_limits_from_listener_options() -> None:
    config = load_config(DATA / "jdbc-postgresql.xml", {"db.password": "x"})
    (listener,) = config.transport_connectors
    assert listener.scheme == "stomp+nio"
    assert listener.port == 0
    assert listener.stomp.hb_grace_period_multiplier == 1.5
    assert listener.stomp.default_heart_beat == (0, 10000)
    assert listener.stomp.max_data_length == 1048576


def test_unknown_placeholder_names_file_line_and_attribute() -> None:
    error = error_of(broker("", '\n  brokerName="${broker.name}"'))
    assert (error.source, error.line, error.attribute) == ("activemq.xml", 1, "brokerName")
    assert "unknown placeholder ${broker.name}" in str(error)
    assert parse_config(broker("", 'brokerName="${broker.name:b1}"')).broker_name == "b1"


def test_bad_uri_error_reads_like_the_brief() -> None:
    text = broker(
        '<transportConnectors>\n<transportConnector uri="tcp//x"/>\n</transportConnectors>'
    )
    error = error_of(text)
    assert str(error).startswith(
        'activemq.xml:3: <transportConnector uri="tcp//x">: attribute uri: '
        "not a URI (expected scheme://host:port)"
    )
    assert (error.line, error.attribute) == (3, "uri")


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("amqpp://0.0.0.0:5672", "scheme amqpp:// is not supported"),
        ("tcp://0.0.0.0", "expected scheme://host:port"),
        ("failover:(tcp://a:1)", "not a composite"),
        ("tcp://h:1?transport.closeAsinc=false", "did you mean transport.closeAsync?"),
        ("tcp://h:1?frobnicate=5", "unknown URI option 'frobnicate' (accepted: max"),
        ("tcp://h:1?maximumConnections=0", "maximumConnections: must be at least 1"),
        ("tcp://h:1?transport.defaultHeartBeat=10", "cx,cy"),
    ],
)
def test_listener_uri_errors(uri: str, message: str) -> None:
    text = broker(f'<transportConnectors><transportConnector uri="{uri}"/></transportConnectors>')
    error = error_of(text)
    assert error.attribute == "uri"
    assert message in str(error)


def test_unknown_attribute_suggests_the_right_spelling() -> None:
    text = broker(
        '<networkConnectors><networkConnector uri="static:(tcp://a:1)" networkTtl="3"/>'
        "</networkConnectors>"
    )
    error = error_of(text)
    assert error.attribute == "networkTtl"
    assert "did you mean networkTTL?" in str(error)


def test_unknown_element_is_an_error() -> None:
    error = error_of(broker("<transportConnectors/>\n<destinationInterceptor/>"))
    assert error.line == 3
    assert error.element == "<destinationInterceptor>"
    message = "unknown element <destinationInterceptor> in <broker>; did you mean"
    assert message in str(error)
    assert str(error).endswith("destinationInterceptors?")


def test_a_valid_activemq_element_ferrymq_ignores_is_a_warning() -> None:
    config = parse_config(broker("<transportConnectors/>\n<destinationInterceptors/>"), "a.xml")
    (ignored,) = config.ignored
    assert str(ignored) == (
        "a.xml:3: <broker> <destinationInterceptors>: "
        "virtual and composite destinations are not supported yet"
    )


@pytest.mark.parametrize(
    ("attributes", "attribute", "message"),
    [
        ('persistent="yes"', "persistent", "expected true or false"),
        ('useJmx="1"', "useJmx", "expected true or false"),
        ('brokerName=""', "brokerName", "must not be empty"),
    ],
)
def test_wrong_values_name_the_attribute(attributes: str, attribute: str, message: str) -> None:
    error = error_of(broker("", attributes))
    assert error.attribute == attribute
    assert message in str(error)


def test_wrong_size_and_integer_values() -> None:
    usage = broker(
        '<systemUsage><systemUsage><storeUsage><storeUsage limit="70 %"/></storeUsage>'
        "</systemUsage></systemUsage>"
    )
    assert "expected a size" in str(error_of(usage))
    network = broker(
        '<networkConnectors><networkConnector uri="static:(tcp://a:1)" prefetchSize="0"/>'
        "</networkConnectors>"
    )
    error = error_of(network)
    assert (error.attribute, "must be at least 1" in str(error)) == ("prefetchSize", True)


def test_sizes_with_units() -> None:
    text = broker(
        '<systemUsage><systemUsage sendFailIfNoSpace="true">'
        '<memoryUsage><memoryUsage limit="64 mb"/></memoryUsage>'
        '<tempUsage><tempUsage limit="1024"/></tempUsage></systemUsage></systemUsage>'
    )
    usage = parse_config(text).system_usage
    assert (usage.memory_limit, usage.temp_limit, usage.store_limit) == (64 << 20, 1024, 100 << 30)
    assert usage.send_fail_if_no_space


def test_persistent_false_means_memory_and_reports_the_unused_store() -> None:
    text = broker(
        '<persistenceAdapter><kahaDB directory="x"/></persistenceAdapter>', 'persistent="false"'
    )
    config = parse_config(text, "a.xml")
    assert config.persistence is None
    assert config.store_directory is None
    assert any("<persistenceAdapter>: persistent=" in line for line in pending_features(config))
    memory = broker("<persistenceAdapter><memoryPersistenceAdapter/></persistenceAdapter>")
    assert parse_config(memory).persistence is None


def test_locker_must_suit_the_store() -> None:
    text = broker(
        "<persistenceAdapter><kahaDB><locker><database-locker/></locker></kahaDB>"
        "</persistenceAdapter>"
    )
    assert "needs <jdbcPersistenceAdapter>" in str(error_of(text))


def test_jdbc_without_a_data_source_is_the_embedded_store() -> None:
    # ActiveMQ's default is an embedded Derby database; FerryMQ's embedded store stands for it.
    text = broker("<persistenceAdapter><jdbcPersistenceAdapter/></persistenceAdapter>")
    config = parse_config(text, "a.xml")
    assert config.persistence == KahaDBConfig()
    assert "embedded Derby" in str(config.ignored[0])


def test_jdbc_data_source_reference_must_resolve() -> None:
    dangling = broker(
        '<persistenceAdapter><jdbcPersistenceAdapter dataSource="#nope"/></persistenceAdapter>'
    )
    assert "no <bean id='nope'>" in str(error_of(dangling))


def test_beans_root_needs_exactly_one_broker() -> None:
    assert "no <broker>" in str(error_of("<beans><bean class='x.Y'/></beans>"))
    assert "a second <broker>" in str(error_of("<beans><broker/><broker/></beans>"))
    assert "document root" in str(error_of("<config/>"))


def test_namespace_prefixes_are_ignored() -> None:
    text = (
        '<beans xmlns="http://www.springframework.org/schema/beans" '
        'xmlns:amq="http://activemq.apache.org/schema/core">'
        '<amq:broker brokerName="prefixed"><amq:transportConnectors>'
        '<amq:transportConnector uri="stomp://127.0.0.1:0"/></amq:transportConnectors>'
        "</amq:broker></beans>"
    )
    config = parse_config(text)
    assert config.broker_name == "prefixed"
    assert config.transport_connectors[0].scheme == "stomp"


def test_an_unreferenced_bean_is_not_created_and_says_so() -> None:
    text = f'<beans>{broker("")}\n<bean id="x" class="com.example.Thing"/></beans>'
    (ignored,) = parse_config(text, "a.xml").ignored
    assert ignored.element == '<bean class="com.example.Thing">'
    assert ignored.location.line == 4
    assert "does not create this bean" in ignored.reason


def test_data_source_pool_settings_are_warned_about() -> None:
    bean = (
        '<bean id="pg" class="org.apache.commons.dbcp2.BasicDataSource">'
        '<property name="url" value="jdbc:postgresql://h/db"/>'
        '<property name="maxTotal" value="200"/></bean>'
    )
    used = broker(
        '<persistenceAdapter><jdbcPersistenceAdapter dataSource="#pg"/></persistenceAdapter>'
    )
    (pool,) = parse_config(f"<beans>{used}{bean}</beans>").ignored
    assert pool.element == '<property name="maxTotal">'
    assert "pool settings have no effect" in pool.reason
    (unused,) = parse_config(f"<beans>{broker('')}{bean}</beans>").ignored
    assert "not used" in unused.reason


def test_other_imports_are_warned_about() -> None:
    text = f'<beans>{broker("")}<import resource="camel.xml"/><import resource="x.xml"/></beans>'
    camel, other = parse_config(text, "a.xml").ignored
    assert "does not run Camel routes" in camel.reason
    assert camel.element == '<import resource="camel.xml">'
    assert "imported files are not read" in other.reason


def test_duplicate_network_connector_names() -> None:
    text = broker(
        "<networkConnectors>\n"
        '<networkConnector uri="static:(tcp://a:1)"/>\n'
        '<networkConnector uri="static:(tcp://b:1)"/>\n'
        "</networkConnectors>"
    )
    error = error_of(text)
    assert error.line == 4
    assert "name 'NC' is used twice (first on line 3)" in str(error)


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("tcp://a:1", "needs a discovery agent URI"),
        ("masterslave:(tcp://a:1)", "at least two"),
        ("static:", "lists no members"),
        ("static:(tcp://a:1", "unbalanced parenthesis"),
    ],
)
def test_network_connector_uri_errors(uri: str, message: str) -> None:
    text = broker(f'<networkConnectors><networkConnector uri="{uri}"/></networkConnectors>')
    error = error_of(text)
    assert error.attribute == "uri"
    assert message in str(error)


def test_network_ttl_sets_both_ttls_unless_given() -> None:
    text = broker(
        '<networkConnectors><networkConnector uri="static:(tcp://a:1)" networkTTL="4" '
        'consumerTTL="1"/></networkConnectors>'
    )
    (connector,) = parse_config(text).network_connectors
    assert (connector.network_ttl, connector.message_ttl, connector.consumer_ttl) == (4, 4, 1)
    assert connector.always_sync_send
    assert not connector.decrease_network_consumer_priority


def test_pending_features_name_file_line_and_element() -> None:
    text = broker(
        '<networkConnectors>\n<networkConnector name="linkToCluster" '
        'uri="multicast://default" useCompression="true"/>\n</networkConnectors>\n'
        '<transportConnectors>\n<transportConnector name="openwire" uri="tcp://0.0.0.0:61617"/>\n'
        "</transportConnectors>",
        'schedulerSupport="true" schedulerDirectory="/var/scheduler"',
    )
    lines = pending_features(parse_config(text, "activemq.xml"))
    assert lines == [
        'activemq.xml:1: <broker brokerName="localhost">: schedulerDirectory is ignored: '
        "scheduled messages live in the message store, so a master/slave group shares them",
        'activemq.xml:3: <networkConnector name="linkToCluster"> useCompression: has no effect '
        "in FerryMQ (docs/networks.md says why)",
        'activemq.xml:6: <transportConnector name="openwire" uri="tcp://0.0.0.0:61617">: FerryMQ '
        "serves STOMP on this listener until OpenWire exists; Java OpenWire clients (ActiveMQ's "
        "JMS client) cannot connect to it",
    ]


def test_activemq_listeners_ferrymq_does_not_serve_are_left_closed() -> None:
    text = broker(
        "<transportConnectors>\n"
        '<transportConnector name="ws" uri="amqp+ws://localhost:61614/"/>\n'
        '<transportConnector name="mqtt" uri="mqtt+nio://0.0.0.0:1883?transport.x=y"/>\n'
        '<transportConnector name="stomp" uri="stomp://0.0.0.0:1?transport.closeAsync=false"/>\n'
        "</transportConnectors>"
    )
    config = parse_config(text, "a.xml")
    assert [c.name for c in config.transport_connectors] == ["stomp"]
    assert [str(i) for i in config.ignored] == [
        'a.xml:3: <transportConnector uri="amqp+ws://localhost:61614/">: AMQP over WebSocket is '
        "not served yet (amqp:// and amqp+ssl:// are); this listener is not opened",
        'a.xml:4: <transportConnector uri="mqtt+nio://0.0.0.0:1883?transport.x=y">: MQTT is not '
        "served by FerryMQ; this listener is not opened",
        "a.xml:5: <transportConnector uri> option transport.closeAsync: an ActiveMQ transport "
        "option with no meaning for FerryMQ's listener",
    ]


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.xml")


def test_a_tcp_connector_named_openwire_is_warned_about() -> None:
    """Issue 15, item 6: ActiveMQ serves OpenWire there; FerryMQ serves STOMP and says so."""
    text = broker(
        "<transportConnectors>\n"
        '<transportConnector name="openwire" uri="tcp://0.0.0.0:61616"/>\n'
        '<transportConnector name="OpenWire" uri="auto+nio://0.0.0.0:61617"/>\n'
        '<transportConnector name="stomp" uri="tcp://0.0.0.0:61613"/>\n'
        "</transportConnectors>"
    )
    lines = pending_features(parse_config(text, "activemq.xml"))
    assert lines == [
        'activemq.xml:3: <transportConnector name="openwire" uri="tcp://0.0.0.0:61616">: FerryMQ '
        "serves STOMP on this listener until OpenWire exists; Java OpenWire clients (ActiveMQ's "
        "JMS client) cannot connect to it",
        'activemq.xml:4: <transportConnector name="OpenWire" uri="auto+nio://0.0.0.0:61617">: '
        "FerryMQ serves STOMP on this listener until OpenWire exists; Java OpenWire clients "
        "(ActiveMQ's JMS client) cannot connect to it",
    ]


def test_a_refused_plugin_names_itself() -> None:
    error = error_of(broker("<plugins>\n<jaasDualAuthenticationPlugin/>\n</plugins>"))
    assert error.line == 3
    assert str(error).startswith("activemq.xml:3: <jaasDualAuthenticationPlugin>: not supported")


def test_an_unknown_attribute_valid_in_activemq_is_a_warning_once() -> None:
    text = broker(
        '<persistenceAdapter><kahaDB directory="d" enableIndexWriteAsync="true"/>'
        "</persistenceAdapter>"
    )
    (ignored,) = parse_config(text, "a.xml").ignored
    assert str(ignored) == (
        "a.xml:2: <kahaDB enableIndexWriteAsync>: KahaDB tuning: FerryMQ's embedded store is "
        "SQLite, which keeps its own journal and index"
    )
    typo = broker('<persistenceAdapter><kahaDB enableIndexWriteAsinc="true"/></persistenceAdapter>')
    assert "did you mean enableIndexWriteAsync?" in str(error_of(typo))
