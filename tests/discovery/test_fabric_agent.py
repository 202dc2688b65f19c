"""The fabric agent on a real PostgreSQL registry (the session's server, a schema per test):
brokers register and clients list the group, a clean stop is heard at once (LISTEN/NOTIFY, with
polling made too slow to explain it), a SIGKILLed registrant expires with its lease, groups
partition one table, an agent never announces itself, ``service_failed`` holds a service back,
an outage of the registry empties no one's list and ends in re-registration, and a registry
that cannot be used at start is a clear error without the password.
"""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from ferrymq.discovery.fabric import FabricDiscoveryAgent
from ferrymq.discovery.fabric_options import PASSWORD_ENV, REGISTRY_ENV
from ferrymq.testing import free_port, wait_until
from ferrymq.testing.scripted import ScriptedStompServer
from tests.discovery.agents import WAIT_S, Recorder, advertising_process
from tests.discovery.fabric_registry import RegistrySchema, registry_schema, running_agent
from tests.postgres import PostgresDatabase

log = logging.getLogger(__name__)
SLOW_POLL = "60000"
"""A poll interval no test waits for: what arrives in time came by notification."""
A, B, C = "stomp://127.0.0.1:1001", "stomp://127.0.0.1:1002", "stomp://127.0.0.1:1003"


@pytest.fixture
def registry(
    postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> RegistrySchema:
    return registry_schema(postgres_database, monkeypatch)


async def test_a_listener_started_later_knows_the_registered_brokers_before_start_returns(
    registry: RegistrySchema,
) -> None:
    uri = registry.agent_uri("nwBrokers")
    async with running_agent(uri, A), running_agent(uri, B):
        listener = Recorder()
        async with running_agent(uri, listener=listener) as agent:
            assert listener.services == {A, B}
            assert agent.statistics().services == (A, B)
            assert agent.statistics().connected
    assert registry.rows("nwBrokers") == []  # both deregistered on stop


async def test_registration_and_clean_stop_are_heard_by_notification(
    registry: RegistrySchema,
) -> None:
    uri = registry.agent_uri("g", pollInterval=SLOW_POLL)
    listener = Recorder()
    loop = asyncio.get_running_loop()
    async with running_agent(uri, listener=listener) as agent:
        starting = loop.time()
        async with running_agent(uri, A):
            started = loop.time()
            await listener.wait_for(lambda: listener.services == {A}, "A's registration")
            stopping = loop.time()
        stopped = loop.time()
        await listener.wait_for(lambda: listener.services == set(), "A's deregistration")
        added, removed = listener.last("add", A), listener.last("remove", A)
        log.info(
            "registrant's start took %.1f ms, heard %.1f ms after it began; stop took %.1f ms, "
            "heard %.1f ms after it began",
            (started - starting) * 1000,
            (added - starting) * 1000,
            (stopped - stopping) * 1000,
            (removed - stopping) * 1000,
        )
        assert agent.statistics().polls == 1  # the one at start: the rest were notifications
        assert agent.statistics().notifications == 2
    assert added - starting < 5  # no poll for a minute: a notification
    assert removed - stopping < 5
    assert [what for what, _, _ in listener.events] == ["add", "remove"]


async def test_an_agent_never_announces_its_own_services(registry: RegistrySchema) -> None:
    uri = registry.agent_uri("g")
    first, second = Recorder(), Recorder()
    async with (
        running_agent(uri, A, listener=first) as one,
        running_agent(uri, B, listener=second),
    ):
        await first.wait_for(lambda: first.services == {B}, "the first to find B")
        await second.wait_for(lambda: second.services == {A}, "the second to find A")
        await wait_until(lambda: one.statistics().polls >= 5, WAIT_S, "a few polls")
        assert one.statistics().registered == (A,)
    assert A not in {uri for _, uri, _ in first.events}
    assert B not in {uri for _, uri, _ in second.events}


async def test_groups_partition_one_registry(registry: RegistrySchema) -> None:
    east, west = Recorder(), Recorder()
    async with (
        running_agent(registry.agent_uri("east"), A),
        running_agent(registry.agent_uri("west"), B, C),
        running_agent(registry.agent_uri("east"), listener=east),
        running_agent(registry.agent_uri("west"), listener=west),
    ):
        assert (east.services, west.services) == ({A}, {B, C})
        async with running_agent(registry.agent_uri("east"), C):
            await east.wait_for(lambda: east.services == {A, C}, "C in east too")
        await east.wait_for(lambda: east.services == {A}, "C to leave east")
        assert west.services == {B, C}  # west's C is another registration
    assert [what for what, _, _ in west.events] == ["add", "add"]


async def test_a_registrant_killed_with_sigkill_expires_with_its_lease(
    registry: RegistrySchema,
) -> None:
    uri = registry.agent_uri("g")
    listener = Recorder()
    async with running_agent(uri, listener=listener):
        async with advertising_process(uri, A) as process:
            await listener.wait_for(lambda: listener.services == {A}, "the other process")
            process.kill()
        killed = asyncio.get_running_loop().time()
        await listener.wait_for(lambda: not listener.services, "the killed process to expire")
    expired_s = listener.last("remove", A) - killed
    log.info("a SIGKILLed registrant was dropped %.3f s after the kill", expired_s)
    # Its last renewal came at most one keepAliveInterval (0.1 s) before the kill; the lease
    # is 1 s; a poll follows within 0.1 s.
    assert 0.85 < expired_s < 1.0 + 0.1 + 1.0
    (row,) = registry.rows("g")
    assert row[0] == A
    assert not row[2]  # expired, still in the table until swept


async def test_a_failed_service_is_held_back_then_announced_again(
    registry: RegistrySchema,
) -> None:
    uri = registry.agent_uri("g", initialReconnectDelay="300")
    listener = Recorder()
    async with running_agent(uri, listener=listener) as agent, running_agent(uri, A):
        await listener.wait_for(lambda: listener.services == {A}, "A")
        agent.service_failed(A)
        failed_at = asyncio.get_running_loop().time()
        assert listener.services == set()  # removed at once
        assert agent.statistics().services == ()
        agent.service_failed(A)  # already held: nothing more
        agent.service_failed(B)  # never listed: nothing
        await listener.wait_for(lambda: listener.services == {A}, "A's recovery")
        assert listener.last("add", A) - failed_at >= 0.3
        assert [what for what, _, _ in listener.events] == ["add", "remove", "add"]


async def test_a_failed_service_is_given_up_after_max_reconnect_attempts(
    registry: RegistrySchema,
) -> None:
    uri = registry.agent_uri("g", initialReconnectDelay="50", maxReconnectAttempts="1")
    listener = Recorder()
    async with running_agent(uri, listener=listener) as agent:
        async with running_agent(uri, A):
            await listener.wait_for(lambda: listener.services == {A}, "A")
            agent.service_failed(A)
            await listener.wait_for(lambda: listener.services == {A}, "A's one recovery")
            agent.service_failed(A)  # the second failure: given up while A stays registered
            polls = agent.statistics().polls
            await wait_until(lambda: agent.statistics().polls >= polls + 5, WAIT_S, "polls")
            assert listener.services == set()
        async with running_agent(uri, A):  # gone, and back: a new service
            await listener.wait_for(lambda: listener.services == {A}, "A's return")


async def test_brokers_starting_together_create_the_table_once(registry: RegistrySchema) -> None:
    uri = registry.agent_uri("g")
    agents = [registry.agent_uri("g") for _ in range(6)]
    listener = Recorder()
    async with running_agent(uri, listener=listener):  # one creator is enough to race
        pass
    with registry.database.connect() as db:
        db.execute("DROP TABLE ferrymq_fabric_services")
    running = [
        running_agent(agent_uri, f"stomp://127.0.0.1:{2000 + n}")
        for n, agent_uri in enumerate(agents)
    ]
    started = await asyncio.gather(*(r.__aenter__() for r in running), return_exceptions=True)
    try:
        assert all(isinstance(agent, FabricDiscoveryAgent) for agent in started), started
        assert len(registry.rows("g")) == 6
    finally:
        for r, agent in zip(running, started, strict=True):
            if isinstance(agent, FabricDiscoveryAgent):
                await r.__aexit__(None, None, None)


async def test_an_outage_of_the_registry_empties_no_list_and_ends_in_re_registration(
    registry: RegistrySchema, caplog: pytest.LogCaptureFixture
) -> None:
    with ScriptedStompServer(registry.database.server.port, []) as proxy:
        uri = registry.agent_uri("g", port=proxy.port)
        listener = Recorder()
        async with (
            running_agent(uri, listener=listener) as client,
            running_agent(uri, A) as broker,
        ):
            stays_dead = FabricDiscoveryAgent(broker.options)
            stays_dead.register_service(B)
            await stays_dead.start(None)
            await listener.wait_for(lambda: listener.services == {A, B}, "A and B")
            caplog.set_level(logging.INFO, "ferrymq.discovery.fabric")
            proxy.drop(refuse=True)  # every connection dropped, and new ones refused
            await stays_dead.stop()  # cannot deregister: its lease lapses instead
            # A's lease lapses as well (its renewals cannot reach the registry).
            await wait_until(lambda: registry.alive("g") == [], WAIT_S, "both leases to lapse")
            assert listener.services == {A, B}  # nobody removed while the registry is away
            assert not client.statistics().connected
            proxy.follow([])  # the registry is back, on the same address
            back = asyncio.get_running_loop().time()
            await wait_until(
                lambda: [(r[0], r[2]) for r in registry.rows("g")] == [(A, True), (B, False)],
                WAIT_S,
                "A to register again",
            )
            # B never came back: removed once the view settled (a lease after reconnecting).
            await listener.wait_for(lambda: listener.services == {A}, "B's lapsed lease")
            assert listener.last("remove", B) - back >= 0.9
            assert (client.statistics().outages, broker.statistics().outages) == (1, 1)
    assert [e[:2] for e in listener.events][:3] == [("add", A), ("add", B), ("remove", B)]
    assert "the registry postgresql://postgres@127.0.0.1" in caplog.text
    assert "is back after" in caplog.text
    assert "cannot deregister stomp://127.0.0.1:1002" in caplog.text
    assert registry.database.server.password not in caplog.text


async def test_a_silent_registry_does_not_hold_up_stop(
    registry: RegistrySchema, caplog: pytest.LogCaptureFixture
) -> None:
    with ScriptedStompServer(registry.database.server.port, []) as proxy:
        async with running_agent(registry.agent_uri("g", port=proxy.port), A):
            proxy.freeze("down")  # the registry's answers are lost: no error, no answer
            await asyncio.sleep(1.5)  # a renewal is stuck, past its timeout (a lease)
            stopping = time.monotonic()
        took_s = time.monotonic() - stopping
    log.info("stop took %.2f s", took_s)
    assert took_s < 3.0  # deregistering gives up after a lease, on a new connection
    assert "cannot deregister stomp://127.0.0.1:1001 (no answer in time)" in caplog.text


async def test_an_unreachable_registry_at_start_is_a_clear_error(
    registry: RegistrySchema,
) -> None:
    port = free_port()  # nothing listens there
    uri = registry.agent_uri("nwBrokers", port=port)
    with pytest.raises(
        OSError, match=rf"fabric://nwBrokers.*registry postgresql://postgres@127\.0\.0\.1:{port}/"
    ):
        async with running_agent(uri):
            pass


async def test_a_wrong_password_is_a_clear_error_without_the_password(
    registry: RegistrySchema, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "not-the-password")
    with pytest.raises(OSError, match="password authentication failed") as caught:
        async with running_agent(registry.agent_uri("g")):
            pass
    assert "not-the-password" not in str(caught.value)
    assert registry.database.server.password not in str(caught.value)


async def test_the_environment_names_the_registry_password_included(
    registry: RegistrySchema, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PASSWORD_ENV)
    monkeypatch.setenv(REGISTRY_ENV, registry.url(password=True))
    listener = Recorder()
    async with (
        running_agent("fabric://nwBrokers", A),
        running_agent("fabric://nwBrokers", listener=listener) as agent,
    ):
        assert listener.services == {A}
        assert registry.database.server.password not in agent.statistics().registry


async def test_a_table_dropped_under_running_agents_is_created_again(
    registry: RegistrySchema, caplog: pytest.LogCaptureFixture
) -> None:
    uri = registry.agent_uri("g")
    listener = Recorder()
    async with running_agent(uri, A) as broker, running_agent(uri, listener=listener):
        assert listener.services == {A}
        with registry.database.connect() as db:
            db.execute("DROP TABLE ferrymq_fabric_services")
        await wait_until(lambda: registry.alive("g") == [A], WAIT_S, "A to register again")
        assert broker.statistics().outages == 1
        assert listener.services == {A}  # never removed: the listener's view had not settled
    assert caplog.text.count('ferrymq_fabric_services" does not exist') == 2  # once an agent
