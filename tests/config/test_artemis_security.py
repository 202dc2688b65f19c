"""broker.xml's security (issue 18, item 1): Artemis's etc/ layout (login.config,
artemis-users.properties, artemis-roles.properties, bootstrap.xml's JAAS domain) read as the
JAAS login an activemq.xml would give, `<security-settings>` as FerryMQ's authorization map with
Artemis's most-specific-match rule, the warnings and file:line errors, and brokers started
from a secured broker.xml serving AMQP and STOMP clients."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from proton import ConnectionException, Message
from proton.utils import LinkDetached

from ferrymq.config import BrokerConfig, ConfigError, load_config
from ferrymq.config.jaas import PROPERTIES_MODULE
from ferrymq.config.model import AdminConfig
from ferrymq.config.security import AuthorizationConfig, JaasAuthenticationConfig
from ferrymq.core.destination import Destination
from ferrymq.security.api import Credentials, Operation, Subject
from ferrymq.security.authorization import AuthorizationMap
from ferrymq.security.build import security_for
from ferrymq.testing import BrokerThread, running_broker, wait_until
from ferrymq.testing.brokers import amqp_port
from tests.amqp.proton_support import attach, blocking, message_from
from tests.connections.mirror_support import WAIT_S, depth, send, source, wait_depth
from tests.fuzz.wire import RawConnection, connect_frame, frame

HEAD = '<configuration xmlns="urn:activemq">\n<core xmlns="urn:activemq:core">\n'
TAIL = "</core>\n</configuration>\n"
ARTEMIS_LOGIN = """activemq {
   org.apache.activemq.artemis.spi.core.security.jaas.PropertiesLoginModule required
       reload=false
       org.apache.activemq.jaas.properties.user="artemis-users.properties"
       org.apache.activemq.jaas.properties.role="artemis-roles.properties";
};
"""
ALL = (
    "createNonDurableQueue", "deleteNonDurableQueue", "createDurableQueue",
    "deleteDurableQueue", "createAddress", "deleteAddress", "consume", "browse", "send",
    "manage",
)  # fmt: skip
DEFAULT_SETTINGS = (
    '<security-settings>\n<security-setting match="#">\n'
    + "".join(f'<permission type="{p}" roles="amq"/>\n' for p in ALL)
    + "</security-setting>\n</security-settings>\n"
)
"""What `artemis create` writes in broker.xml: role amq may do everything."""
EUROPE = """<security-settings>
<security-setting match="globalqueues.europe.#">
  <permission type="createDurableQueue" roles="admin"/>
  <permission type="deleteDurableQueue" roles="admin"/>
  <permission type="createNonDurableQueue" roles="admin, guest, europe-users"/>
  <permission type="deleteNonDurableQueue" roles="admin, guest, europe-users"/>
  <permission type="send" roles="admin, europe-users"/>
  <permission type="consume" roles="admin, europe-users"/>
</security-setting>
<security-setting match="globalqueues.europe.orders.#">
  <permission type="send" roles="europe-users"/>
  <permission type="consume" roles="europe-users"/>
</security-setting>
</security-settings>
"""
"""The ActiveMQ Artemis documentation's "Role based security for addresses" example, with its
more specific setting for orders."""


def write_etc(
    folder: Path,
    body: str,
    *,
    users: str | None = "admin=secret\n",
    roles: str | None = "amq=admin\n",
    login: str | None = None,
) -> Path:
    """broker.xml (`body` inside `<core>`, its first line is line 3) and its etc/ files."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (
        ("artemis-users.properties", users),
        ("artemis-roles.properties", roles),
        ("login.config", login),
    ):
        if text is not None:
            (folder / name).write_text(text, encoding="utf-8")
    path = folder / "broker.xml"
    path.write_text(HEAD + body + TAIL, encoding="utf-8")
    return path


def error_of(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return caught.value


def authorization(config: BrokerConfig) -> AuthorizationConfig:
    assert config.security is not None
    assert config.security.authorization is not None
    return config.security.authorization


# -- users and roles ---------------------------------------------------------------------------


def test_artemis_login_config_is_read_as_activemqs_jaas_plugin(tmp_path: Path) -> None:
    """The same users, through Artemis's login.config, give the `JaasAuthenticationConfig` of
    an activemq.xml with `<jaasAuthenticationPlugin>` and ActiveMQ's login module."""
    artemis = load_config(write_etc(tmp_path / "artemis", DEFAULT_SETTINGS, login=ARTEMIS_LOGIN))
    activemq_dir = tmp_path / "activemq"
    write_etc(activemq_dir, "", login=ARTEMIS_LOGIN.replace(
        "org.apache.activemq.artemis.spi.core.security.jaas.", "org.apache.activemq.jaas."
    ).replace("properties.role", "properties.group"))  # fmt: skip
    (activemq_dir / "activemq.xml").write_text(
        '<broker xmlns="http://activemq.apache.org/schema/core" persistent="false">'
        '<plugins><jaasAuthenticationPlugin configuration="activemq"/></plugins></broker>'
    )
    activemq = load_config(activemq_dir / "activemq.xml")
    assert artemis.security is not None
    assert activemq.security is not None
    ours, theirs = artemis.security.authentication, activemq.security.authentication
    assert isinstance(ours, JaasAuthenticationConfig)
    assert isinstance(theirs, JaasAuthenticationConfig)
    assert ours.login.modules == theirs.login.modules
    assert ours.login.modules[0].class_name == PROPERTIES_MODULE
    authenticator, _ = security_for(artemis)
    assert authenticator is not None
    subject = authenticator.authenticate(Credentials("admin", "secret"))
    assert subject == Subject("admin", frozenset({"amq"}))


def test_without_login_config_the_two_properties_files_are_read(tmp_path: Path) -> None:
    config = load_config(write_etc(tmp_path, DEFAULT_SETTINGS))
    assert config.security is not None
    login = config.security.authentication
    assert isinstance(login, JaasAuthenticationConfig)
    assert login.configuration == "activemq"
    (module,) = login.login.modules
    assert module.option("org.apache.activemq.jaas.properties.user") == ("artemis-users.properties")
    assert module.option("org.apache.activemq.jaas.properties.group") == (
        "artemis-roles.properties"
    )
    authenticator, _ = security_for(config)
    assert authenticator is not None
    assert authenticator.authenticate(Credentials("admin", "secret")).groups == {"amq"}
    # The one warning: Artemis's manage permission, which FerryMQ's admin API stands for.
    assert [w.element for w in config.ignored] == ['<security-setting match="#"> manage']


def test_bootstrap_xml_names_the_jaas_domain(tmp_path: Path) -> None:
    login = ARTEMIS_LOGIN.replace("activemq {", "mydomain {")
    path = write_etc(tmp_path, "", login=login)
    (tmp_path / "bootstrap.xml").write_text(
        '<broker xmlns="http://activemq.apache.org/schema">\n'
        '   <jaas-security domain="mydomain"/>\n</broker>\n'
    )
    config = load_config(path)
    assert config.security is not None
    login_config = config.security.authentication
    assert isinstance(login_config, JaasAuthenticationConfig)
    assert login_config.configuration == "mydomain"


def test_an_artemis_enc_password_is_refused_naming_user_and_line(tmp_path: Path) -> None:
    users = "# users\nadmin=secret\nbob=ENC(1024:3B8C2E:9A7F0D21)\n"
    error = error_of(write_etc(tmp_path, DEFAULT_SETTINGS, users=users))
    assert (error.source, error.line) == (str(tmp_path / "artemis-users.properties"), 3)
    assert "user 'bob'" in str(error)
    assert "ferrymq hash-password" in str(error)
    assert "1024" not in str(error)


def test_a_ferrymq_hashed_password_is_accepted(tmp_path: Path) -> None:
    from ferrymq.security.passwords import hash_password

    users = f"admin={hash_password('secret', iterations=1000)}\n"
    config = load_config(write_etc(tmp_path, DEFAULT_SETTINGS, users=users))
    authenticator, _ = security_for(config)
    assert authenticator is not None
    assert authenticator.authenticate(Credentials("admin", "secret")).user == "admin"


def test_an_ldap_login_module_is_refused(tmp_path: Path) -> None:
    login = "activemq {\n org.apache.activemq.artemis.spi.core.security.jaas.LDAPLoginModule required;\n};\n"  # noqa: E501
    error = error_of(write_etc(tmp_path, DEFAULT_SETTINGS, login=login))
    assert error.line == 2
    assert "no LDAP or Kerberos" in str(error)


def test_security_asked_for_without_users_runs_open_with_one_warning(tmp_path: Path) -> None:
    path = write_etc(tmp_path, DEFAULT_SETTINGS, users=None, roles=None)
    config = load_config(path)
    assert config.security is None
    (warning,) = [w for w in config.ignored if "would require a login" in w.reason]
    assert str(warning.location) == f"{path}:3"
    assert "artemis-users.properties" in warning.reason
    assert "<security-enabled>false</security-enabled>" in warning.reason
    explicit = load_config(
        write_etc(tmp_path / "b", "<security-enabled>true</security-enabled>\n", users=None)
    )
    assert [w.element for w in explicit.ignored] == ["<security-enabled>"]


def test_a_broker_xml_without_security_elements_or_users_says_nothing(tmp_path: Path) -> None:
    config = load_config(write_etc(tmp_path, "<name>b</name>\n", users=None, roles=None))
    assert (config.security, config.ignored) == (None, ())


def test_security_enabled_false_ignores_settings_and_users(tmp_path: Path) -> None:
    body = "<security-enabled>false</security-enabled>\n" + EUROPE
    config = load_config(write_etc(tmp_path, body))
    assert config.security is None
    (warning,) = config.ignored
    assert warning.element == "<security-settings>"
    assert "security-enabled is false" in warning.reason


def test_users_without_security_settings_allow_nothing(tmp_path: Path) -> None:
    """As in Artemis: an address no setting matches is refused to every role."""
    config = load_config(write_etc(tmp_path, "<name>b</name>\n"))
    _, authorizer = security_for(config)
    assert authorizer is not None
    admin = Subject("admin", frozenset({"amq"}))
    assert not authorizer.allowed(admin, Operation.WRITE, Destination.queue("q"))


# -- security-settings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "line", "expected"),
    [
        ('<security-setting match="a"><permission type="sendd" roles="r"/></security-setting>',
         3, "unknown permission type 'sendd' in <permission>; did you mean send?"),
        ('<security-setting match="a">\n<permission type="send" roles=" , "/></security-setting>',
         4, "roles is empty"),
        ('<security-setting match="a">\n<permission type="send"/></security-setting>',
         4, "roles"),
        ('<security-setting match="a"><permission type="send" roles="r"/>\n'
         '<permission type="send" roles="s"/></security-setting>', 4, "send given twice"),
        ('<security-setting match="a"/>\n<security-setting match="a"/>',
         4, 'match="a" given twice (first on line 3)'),
        ('<security-setting match="a.#.b"/>', 3, "# is supported as the last word only"),
        ('<security-setting match="$ACTIVEMQ_ARTEMIS_MIRROR_#"/>', 3, "whole words"),
        ('<security-setting match="a"><permision type="send" roles="r"/></security-setting>',
         3, "did you mean permission?"),
        ('<security-setting-plugin class-name="x"/>', 3, "not supported yet: LDAP"),
    ],
)  # fmt: skip
def test_security_settings_errors_name_file_and_line(
    tmp_path: Path, body: str, line: int, expected: str
) -> None:
    path = write_etc(tmp_path, f"<security-settings>{body}</security-settings>\n")
    error = error_of(path)
    assert (error.source, error.line) == (str(path), line)
    assert expected in str(error)


@pytest.mark.parametrize(
    ("permission", "queue", "topic"),
    [
        ("send", {"write": {"r"}}, {"write": {"r"}}),
        ("consume", {"read": {"r"}}, {}),
        ("browse", {}, {}),
        ("createAddress", {}, {"admin": {"r"}}),
        ("createDurableQueue", {}, {}),
        ("createNonDurableQueue", {}, {}),
        ("deleteDurableQueue", {}, {}),
        ("deleteNonDurableQueue", {}, {}),
        ("deleteAddress", {}, {}),
        ("manage", {}, {}),
    ],
)
def test_each_permission_alone(
    tmp_path: Path, permission: str, queue: dict[str, set[str]], topic: dict[str, set[str]]
) -> None:
    """The mapping table of docs/artemis-config.md, one Artemis permission at a time."""
    body = (
        '<security-settings><security-setting match="a.#">'
        f'<permission type="{permission}" roles="r"/></security-setting></security-settings>\n'
    )
    queue_entry, topic_entry = authorization(load_config(write_etc(tmp_path, body))).entries
    for entry, expected in ((queue_entry, queue), (topic_entry, topic)):
        assert entry.pattern == "a.>"
        granted = {k: set(getattr(entry, k)) for k in ("read", "write", "admin")}
        assert granted == {k: expected.get(k, set()) for k in ("read", "write", "admin")}


def test_permissions_that_grant_together(tmp_path: Path) -> None:
    """A queue is created with createAddress and createDurableQueue; a topic is read with
    consume and a subscription queue (createNonDurableQueue or createDurableQueue)."""
    body = (
        '<security-settings><security-setting match="a">'
        '<permission type="createAddress" roles="both,address"/>'
        '<permission type="createDurableQueue" roles="both,queue"/>'
        '<permission type="consume" roles="both,address,sub"/>'
        '<permission type="createNonDurableQueue" roles="sub"/>'
        "</security-setting></security-settings>\n"
    )
    queue, topic = authorization(load_config(write_etc(tmp_path, body))).entries
    assert (queue.kind, topic.kind) == ("queue", "topic")
    assert (set(queue.admin), set(queue.read)) == ({"both"}, {"both", "address", "sub"})
    assert (set(topic.admin), set(topic.read)) == ({"both", "address"}, {"both", "sub"})


def test_manage_and_browse_only_roles_are_warned_about(tmp_path: Path) -> None:
    body = (
        '<security-settings>\n<security-setting match="#">'
        '<permission type="manage" roles="amq"/><permission type="browse" roles="viewer"/>'
        "</security-setting></security-settings>\n"
    )
    config = load_config(write_etc(tmp_path, body))
    reasons = {w.element: w.reason for w in config.ignored}
    assert "--admin-group" in reasons['<security-setting match="#"> manage']
    assert "viewer" in reasons['<security-setting match="#"> browse']


def _allowed(config: BrokerConfig, roles: set[str], operation: Operation, queue: str) -> bool:
    _, authorizer = security_for(config)
    assert authorizer is not None
    return authorizer.allowed(Subject("u", frozenset(roles)), operation, Destination.queue(queue))


def test_the_artemis_default_broker_xml_gives_amq_everything(tmp_path: Path) -> None:
    config = load_config(write_etc(tmp_path, DEFAULT_SETTINGS))
    for operation in Operation:
        assert _allowed(config, {"amq"}, operation, "any.name")
        assert not _allowed(config, {"other"}, operation, "any.name")
    temp = authorization(config).temp_destination
    assert temp is not None
    assert temp.admin == {"amq"}


def test_the_most_specific_setting_alone_decides_as_in_artemis(tmp_path: Path) -> None:
    """The manual's example: on globalqueues.europe.orders.* only europe-users may send or
    consume; admin, who may elsewhere under globalqueues.europe, may not (settings are not
    merged). FerryMQ's ActiveMQ map would join both entries and let admin in."""
    config = load_config(write_etc(tmp_path, EUROPE))
    write, read = Operation.WRITE, Operation.READ
    assert _allowed(config, {"admin"}, write, "globalqueues.europe.paris")
    assert _allowed(config, {"europe-users"}, read, "globalqueues.europe.paris")
    assert not _allowed(config, {"guest"}, write, "globalqueues.europe.paris")
    assert _allowed(config, {"europe-users"}, write, "globalqueues.europe.orders.1")
    assert not _allowed(config, {"admin"}, write, "globalqueues.europe.orders.1")
    assert not _allowed(config, {"admin"}, read, "globalqueues.europe.orders.1")
    assert not _allowed(config, {"admin"}, write, "globalqueues.asia.x")
    # Without createAddress nobody creates a destination there, in Artemis as here.
    assert not _allowed(config, {"admin"}, Operation.ADMIN, "globalqueues.europe.paris")
    joined = replace(authorization(config), most_specific=False)
    subject = Subject("u", frozenset({"admin"}))
    destination = Destination.queue("globalqueues.europe.orders.1")
    assert AuthorizationMap(joined).allowed(subject, write, destination)  # the test can fail


def test_an_exact_address_beats_star_which_beats_hash(tmp_path: Path) -> None:
    body = (
        "<security-settings>\n"
        '<security-setting match="#"><permission type="send" roles="hash"/></security-setting>\n'
        '<security-setting match="a.b"><permission type="send" roles="exact"/></security-setting>\n'
        '<security-setting match="a.*"><permission type="send" roles="star"/></security-setting>\n'
        "</security-settings>\n"
    )
    config = load_config(write_etc(tmp_path, body))
    write = Operation.WRITE
    assert _allowed(config, {"exact"}, write, "a.b")
    assert not _allowed(config, {"star"}, write, "a.b")
    assert _allowed(config, {"star"}, write, "a.c")
    assert not _allowed(config, {"hash"}, write, "a.c")
    assert _allowed(config, {"hash"}, write, "b")


def test_a_star_setting_beats_a_hash_setting_with_more_literal_words(tmp_path: Path) -> None:
    body = (
        "<security-settings>\n"
        '<security-setting match="a.b.#"><permission type="send" roles="hash"/></security-setting>'
        '<security-setting match="*.*.c"><permission type="send" roles="star"/></security-setting>'
        "\n</security-settings>\n"
    )
    config = load_config(write_etc(tmp_path, body))
    assert _allowed(config, {"star"}, Operation.WRITE, "a.b.c")
    assert not _allowed(config, {"hash"}, Operation.WRITE, "a.b.c")
    assert _allowed(config, {"hash"}, Operation.WRITE, "a.b.d")


# -- a broker started from a secured broker.xml ------------------------------------------------

SERVED = """<name>secured</name>
<persistence-enabled>false</persistence-enabled>
<acceptors>
  <acceptor name="amqp">tcp://127.0.0.1:0?protocols=AMQP</acceptor>
  <acceptor name="stomp">tcp://127.0.0.1:0?protocols=STOMP</acceptor>
</acceptors>
<security-settings>
  <security-setting match="orders.#">
    <permission type="send" roles="senders"/>
    <permission type="consume" roles="receivers"/>
    <permission type="createAddress" roles="senders,receivers"/>
    <permission type="createDurableQueue" roles="senders,receivers"/>
  </security-setting>
</security-settings>
"""
USERS = "producer=p-secret\nconsumer=c-secret\n"
ROLES = "senders=producer\nreceivers=consumer\n"
PLAIN = {"allowed_mechs": "PLAIN", "allow_insecure_mechs": True}


def _served(tmp_path: Path) -> BrokerThread:
    path = write_etc(tmp_path, SERVED, users=USERS, roles=ROLES)
    return BrokerThread(replace(load_config(path), admin=AdminConfig(enabled=False)))


def _port(thread: BrokerThread, scheme: str) -> int:
    broker = thread.broker
    assert broker is not None
    return next(lis.port for c, lis in broker.service.served if c.scheme == scheme)


def test_amqp_clients_of_a_secured_broker_xml(tmp_path: Path) -> None:
    with _served(tmp_path) as thread:
        base = f"127.0.0.1:{thread.amqp_port}"
        with blocking(f"amqp://producer:p-secret@{base}", **PLAIN) as producer:
            producer.create_sender("queue://orders.eu").send(Message(body="o1", durable=True))
            with pytest.raises(LinkDetached) as refused:
                attach(producer, "receiver", "queue://orders.eu")
            assert "amqp:unauthorized-access" in str(refused.value)
            with pytest.raises(LinkDetached):
                attach(producer, "sender", "queue://payments")
        with blocking(f"amqp://consumer:c-secret@{base}", **PLAIN) as consumer:
            assert message_from(consumer, "queue://orders.eu").body == "o1"
        with (
            pytest.raises(ConnectionException),
            blocking(f"amqp://consumer:wrong@{base}", **PLAIN),
        ):
            pass


def test_stomp_clients_of_a_secured_broker_xml(tmp_path: Path) -> None:
    with _served(tmp_path) as thread:
        port = _port(thread, "stomp")
        with RawConnection(port) as stomp:
            stomp.send(connect_frame("1.2", ("login", "producer"), ("passcode", "wrong")))
            assert "password is invalid" in stomp.expect("ERROR").headers["message"]
        with RawConnection(port) as producer:
            producer.send(connect_frame("1.2", ("login", "producer"), ("passcode", "p-secret")))
            producer.expect("CONNECTED")
            producer.send(frame(
                "SEND", ("destination", "/queue/orders.us"), ("receipt", "r1"), body=b"s1",
            ))  # fmt: skip
            producer.expect("RECEIPT")
            producer.send(frame(
                "SEND", ("destination", "/queue/payments"), ("receipt", "r2"), body=b"no",
            ))  # fmt: skip
            refusal = producer.expect("ERROR")
            message = refusal.headers["message"]  # as sent, STOMP 1.2 escapes its colons
            assert "User producer is not authorized to write to" in message
            assert "payments" in message
        with RawConnection(port) as consumer:
            consumer.send(connect_frame("1.2", ("login", "consumer"), ("passcode", "c-secret")))
            consumer.expect("CONNECTED")
            consumer.send(frame("SUBSCRIBE", ("id", "1"), ("destination", "/queue/orders.us")))
            assert consumer.expect("MESSAGE").body == b"s1"


MIRROR_TARGET = """<name>target</name>
<journal-directory>{journal}</journal-directory>
<acceptors><acceptor name="amqp">tcp://127.0.0.1:0?protocols=AMQP</acceptor></acceptors>
<security-settings>
  <security-setting match="$ACTIVEMQ_ARTEMIS_MIRROR_dr">
    <permission type="send" roles="mirroring"/>
  </security-setting>
</security-settings>
"""
"""A secured mirror target: the mirror's user needs `send` on the mirror address alone (the
target applies the events it carries as the broker itself)."""


@pytest.mark.parametrize(
    ("login", "refusal"),
    [
        (("mirror", "m-secret"), ""),
        (("mirror", "wrong"), "Authentication failed"),
        (("other", "o-secret"), "User other is not authorized to write to"),
    ],
    ids=["allowed", "bad-password", "no-send-permission"],
)
async def test_a_mirror_logs_in_to_a_secured_broker_xml_target(
    tmp_path: Path, login: tuple[str, str], refusal: str
) -> None:
    body = MIRROR_TARGET.format(journal=tmp_path / "target-journal")
    users = "mirror=m-secret\nother=o-secret\n"
    path = write_etc(tmp_path / "etc", body, users=users, roles="mirroring=mirror\n")
    config = replace(load_config(path), admin=AdminConfig(enabled=False))
    async with running_broker(config) as target:
        uri = f"tcp://127.0.0.1:{amqp_port(target)}"
        options = f'user="{login[0]}" password="{login[1]}"'
        async with source(tmp_path, [("dr", uri, "")], options=options) as origin:
            await send(origin, "/queue/orders", 3)
            connection = origin.broker_connections.get("dr")
            assert connection is not None
            if not refusal:
                await wait_depth(target, "orders", 3, "mirrored to the secured target")
                return
            await wait_until(lambda: connection.connects >= 3, WAIT_S, "the refused mirror retried")
            assert depth(target, "orders") is None
            assert str(connection.state) != "connected"
            assert refusal in (connection.last_error or "")
