"""``/metrics``: the families FerryMQ exposes, checked with two readers of the text format.

``tests/admin/exposition.py`` is strict (it rejects anything the 0.0.4 grammar does not allow);
prometheus_client's own parser (``text_string_to_metric_families``) is what a Python scraper
uses.  Prometheus' ``promtool check metrics`` would be a third, but Debian ships it only inside
the ``prometheus`` server package (96 MB installed, and it starts a server), so the tests do
without it.
"""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from ferrymq.admin.metrics import BROKER_METRICS, DESTINATION_METRICS, render_metrics
from ferrymq.config.cli import config_from_flags
from ferrymq.core.destination import DestinationType
from ferrymq.testing import running_broker
from tests.admin.exposition import ExpositionError, parse_exposition
from tests.admin.fake_broker import broker_statistics, connection, destination, destinations

REQUIRED = {
    "ferrymq_destination_depth": "gauge",
    "ferrymq_destination_pending": "gauge",
    "ferrymq_destination_paged_out": "gauge",
    "ferrymq_destination_enqueued_total": "counter",
    "ferrymq_destination_dequeued_total": "counter",
    "ferrymq_destination_dispatched_total": "counter",
    "ferrymq_destination_expired_total": "counter",
    "ferrymq_destination_consumers": "gauge",
    "ferrymq_destination_in_flight": "gauge",
    "ferrymq_connections": "gauge",
    "ferrymq_memory_used_bytes": "gauge",
    "ferrymq_memory_limit_bytes": "gauge",
    "ferrymq_store_used_bytes": "gauge",
    "ferrymq_store_commits_total": "counter",
    "ferrymq_store_commit_seconds_total": "counter",
    "ferrymq_store_last_commit_seconds": "gauge",
    "ferrymq_duplicates_suppressed_total": "counter",
    "ferrymq_uptime_seconds": "gauge",
    "ferrymq_master_terms_total": "counter",
    "ferrymq_role": "gauge",
    "ferrymq_serving": "gauge",
    "ferrymq_listener_connections": "gauge",
    "ferrymq_network_bridge_state": "gauge",
    "ferrymq_network_bridge_forwarded_total": "counter",
    "ferrymq_network_bridge_demand_subscriptions": "gauge",
    "ferrymq_network_bridge_lag_messages": "gauge",
    "process_cpu_seconds_total": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_open_fds": "gauge",
    "python_info": "gauge",
}


def _bridge(state: str = "started", **direction: Any) -> dict[str, Any]:
    """A ``NetworkBridge.statistics()`` record, as the broker passes it through."""
    outbound = {
        "direction": "outbound",
        "from": "host-1-42-18f",
        "to": "remote-id",
        "forwarded": 11,
        "demandSubscriptions": [{"destination": "queue://orders.>", "consumers": 1}],
        **direction,
    }
    return {"name": "east-west", "uri": "tcp://10.0.0.2:61613", "state": state,
            "directions": [outbound]}  # fmt: skip


def _scrape(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample through prometheus_client's parser, by name and sorted labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_every_required_family_has_help_and_type() -> None:
    families = parse_exposition(render_metrics(broker_statistics(), destinations()))
    for name, type_ in REQUIRED.items():
        assert families[name].type == type_, name
        assert families[name].help, name


def test_prometheus_client_reads_every_family_once() -> None:
    statistics = {**broker_statistics(), "role": "master", "network_bridges": [_bridge()]}
    text = render_metrics(statistics, destinations(), [connection()])
    parsed = list(text_string_to_metric_families(text))
    names = [family.name for family in parsed]
    assert len(names) == len(set(names))
    by_name = {family.name: family for family in parsed}
    for name, type_ in REQUIRED.items():
        family = by_name[name.removesuffix("_total")]
        assert family.type == type_, name
        assert family.documentation, name


def test_counters_end_in_total_and_names_are_unique() -> None:
    names = [m.name for m in DESTINATION_METRICS] + [m.name for m in BROKER_METRICS]
    assert len(names) == len(set(names))
    for metric in (*DESTINATION_METRICS, *BROKER_METRICS):
        assert (metric.type == "counter") == metric.name.endswith("_total"), metric.name


def test_destination_samples_carry_type_and_name() -> None:
    families = parse_exposition(render_metrics(broker_statistics(), destinations()))
    orders = {"type": "queue", "name": "orders.in"}
    assert families["ferrymq_destination_depth"].value(**orders) == 5
    assert families["ferrymq_destination_pending"].value(**orders) == 3
    assert families["ferrymq_destination_paged_out"].value(**orders) == 3
    assert families["ferrymq_destination_enqueued_total"].value(**orders) == 9
    assert families["ferrymq_destination_dequeued_total"].value(**orders) == 4
    assert families["ferrymq_destination_dispatched_total"].value(**orders) == 6
    assert families["ferrymq_destination_expired_total"].value(**orders) == 1
    assert families["ferrymq_destination_in_flight"].value(**orders) == 2
    assert families["ferrymq_destination_consumers"].value(**orders) == 1
    topic = {"type": "topic", "name": "orders.events"}
    assert families["ferrymq_destination_consumers"].value(**topic) == 2
    temp = {"type": "temp-queue", "name": "ID:host-1-42-18f-1:1"}
    assert families["ferrymq_destination_depth"].value(**temp) == 0
    assert len(families["ferrymq_destination_depth"].samples) == 4


def test_broker_samples_convert_milliseconds_to_seconds() -> None:
    families = parse_exposition(render_metrics(broker_statistics(), []))
    assert families["ferrymq_connections"].value() == 1
    assert families["ferrymq_memory_used_bytes"].value() == 2048
    assert families["ferrymq_memory_limit_bytes"].value() == 134217728
    assert families["ferrymq_store_used_bytes"].value() == 4096
    assert families["ferrymq_store_commits_total"].value() == 7
    assert families["ferrymq_store_commit_seconds_total"].value() == pytest.approx(0.25)
    assert families["ferrymq_store_last_commit_seconds"].value() == pytest.approx(0.00125)
    assert families["ferrymq_duplicates_suppressed_total"].value() == 3
    assert families["ferrymq_uptime_seconds"].value() == 12.5
    assert families["ferrymq_destination_depth"].samples == []


def test_a_figure_missing_from_the_statistics_omits_only_its_sample() -> None:
    statistics = broker_statistics()
    del statistics["store"]
    statistics["duplicates_suppressed"] = None
    families = parse_exposition(render_metrics(statistics, []))
    assert families["ferrymq_store_commits_total"].samples == []
    assert families["ferrymq_store_commits_total"].type == "counter"
    assert families["ferrymq_duplicates_suppressed_total"].samples == []
    assert families["ferrymq_master_terms_total"].samples == []
    assert families["ferrymq_network_bridge_state"].samples == []
    assert families["ferrymq_connections"].value() == 1


def test_the_role_is_one_labelled_gauge_and_serving_follows_health() -> None:
    statistics = {**broker_statistics(), "role": "waiting for lock", "master_terms": 2}
    families = parse_exposition(render_metrics(statistics, []))
    role = families["ferrymq_role"]
    assert role.value(role="waiting for lock") == 1
    assert role.value(role="master") == 0
    assert role.value(role="standalone") == 0
    assert sum(value for _, value in role.samples) == 1
    assert families["ferrymq_serving"].value() == 0
    assert families["ferrymq_master_terms_total"].value() == 2
    statistics["role"] = "master"
    families = parse_exposition(render_metrics(statistics, []))
    assert families["ferrymq_role"].value(role="master") == 1
    assert families["ferrymq_serving"].value() == 1


def test_an_unknown_role_gets_a_sample_of_its_own_and_does_not_serve() -> None:
    statistics = {**broker_statistics(), "role": "pondering"}
    families = parse_exposition(render_metrics(statistics, []))
    assert families["ferrymq_role"].value(role="pondering") == 1
    assert families["ferrymq_serving"].value() == 0


def test_connections_are_counted_per_listener_including_idle_listeners() -> None:
    statistics = broker_statistics()
    statistics["listeners"] = [
        {"name": "stomp", "address": "tcp://127.0.0.1:61613"},
        {"name": "stomp+ssl", "address": "ssl://127.0.0.1:61612"},
    ]
    two = [connection(), connection()]
    families = parse_exposition(render_metrics(statistics, [], two))
    listeners = families["ferrymq_listener_connections"]
    assert listeners.value(listener="stomp") == 2
    assert listeners.value(listener="stomp+ssl") == 0


def test_network_bridges_show_state_forwarded_and_lag() -> None:
    statistics = {**broker_statistics(), "network_bridges": [_bridge()]}
    families = parse_exposition(render_metrics(statistics, destinations()))
    bridge = {"connector": "east-west", "uri": "tcp://10.0.0.2:61613"}
    state = families["ferrymq_network_bridge_state"]
    assert state.value(**bridge, state="started") == 1
    assert state.value(**bridge, state="connecting") == 0
    assert state.value(**bridge, state="stopped") == 0
    forwarded = families["ferrymq_network_bridge_forwarded_total"]
    assert forwarded.value(**bridge, direction="outbound") == 11
    demand = families["ferrymq_network_bridge_demand_subscriptions"]
    assert demand.value(**bridge, direction="outbound") == 1
    # queue://orders.> matches the queue orders.in (depth 5), not the topic orders.events.
    assert families["ferrymq_network_bridge_lag_messages"].value(**bridge) == 5


def test_label_values_are_escaped() -> None:
    text = render_metrics({}, [destination(DestinationType.QUEUE, 'we"ird\\na\nme', 1)])
    assert 'ferrymq_destination_depth{name="we\\"ird\\\\na\\nme",type="queue"} 1.0\n' in text
    families = parse_exposition(text)
    assert families["ferrymq_destination_depth"].value(type="queue", name='we"ird\\na\nme') == 1
    scraped = _scrape(text)
    key = ("ferrymq_destination_depth", (("name", 'we"ird\\na\nme'), ("type", "queue")))
    assert scraped[key] == 1


def test_the_reader_rejects_what_the_format_forbids() -> None:
    with pytest.raises(ExpositionError):
        parse_exposition('m{name="a"b"} 1\n')
    with pytest.raises(ExpositionError):
        parse_exposition("m 1\nn 1\nm 2\n")
    with pytest.raises(ExpositionError):
        parse_exposition("m 1")


names = st.text(st.characters(codec="utf-8"), min_size=1)


@given(st.lists(st.tuples(st.sampled_from(DestinationType), names), unique=True, max_size=6))
def test_any_destination_name_survives_the_round_trip(
    pairs: list[tuple[DestinationType, str]],
) -> None:
    stats = [destination(t, n, depth=i) for i, (t, n) in enumerate(pairs)]
    families = parse_exposition(render_metrics(broker_statistics(), stats, process=False))
    depth = families["ferrymq_destination_depth"]
    assert len(depth.samples) == len(pairs)
    for i, (type_, name) in enumerate(pairs):
        assert depth.value(type=type_.value, name=name) == i


# -- a real broker -----------------------------------------------------------------------------


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
        return body.decode()


async def _metrics(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = await asyncio.to_thread(_get, base + "/metrics")
    parse_exposition(text)  # and the strict reader accepts all of it
    return _scrape(text)


async def _read_until(reader: asyncio.StreamReader, *wanted: bytes, count: int = 1) -> bytes:
    received = b""
    while any(received.count(w) < count for w in wanted):
        received += await asyncio.wait_for(reader.read(65536), 5)
    return received


async def test_live_metrics_follow_the_traffic(tmp_path: Path) -> None:
    """Send 5 messages: 5 pending; a consumer with prefetch 2 takes 2 of them in flight; each
    connection is counted on the listener that accepted it."""
    config = config_from_flags("live", tmp_path / "data", ["stomp://127.0.0.1:0"], "127.0.0.1:0")
    async with running_broker(config) as broker:
        assert broker.admin is not None
        base = broker.admin.url
        listener = broker.service.statistics()["listeners"][0]["name"]
        queue = (("name", "lagging"), ("type", "queue"))
        per_listener = ("ferrymq_listener_connections", (("listener", listener),))
        before = await _metrics(base)
        assert before[per_listener] == 0
        assert before[("ferrymq_serving", ())] == 1
        assert before[("ferrymq_role", (("role", broker.role.value),))] == 1
        assert before[("process_open_fds", ())] > 0

        producer_in, producer = await asyncio.open_connection("127.0.0.1", broker.stomp_ports[0])
        sends = b"".join(
            b"SEND\ndestination:/queue/lagging\npersistent:true\nreceipt:r%d\n\nm\x00" % i
            for i in range(5)
        )
        producer.write(b"CONNECT\naccept-version:1.2\nhost:x\n\n\x00" + sends)
        await _read_until(producer_in, b"RECEIPT", count=5)
        sent = await _metrics(base)
        assert sent[("ferrymq_destination_pending", queue)] == 5
        assert sent[("ferrymq_destination_depth", queue)] == 5
        assert sent[("ferrymq_destination_enqueued_total", queue)] == 5
        assert sent[("ferrymq_destination_consumers", queue)] == 0
        assert sent[per_listener] == 1

        consumer_in, consumer = await asyncio.open_connection("127.0.0.1", broker.stomp_ports[0])
        consumer.write(
            b"CONNECT\naccept-version:1.2\nhost:x\n\n\x00"
            b"SUBSCRIBE\nid:1\ndestination:/queue/lagging\nack:client-individual\n"
            b"activemq.prefetchSize:2\n\n\x00"
        )
        await _read_until(consumer_in, b"MESSAGE", count=2)
        consuming = await _metrics(base)
        assert consuming[("ferrymq_destination_consumers", queue)] == 1
        assert consuming[("ferrymq_destination_in_flight", queue)] == 2
        assert consuming[("ferrymq_destination_pending", queue)] == 3
        assert consuming[("ferrymq_destination_depth", queue)] == 5
        assert consuming[per_listener] == 2
        assert consuming[("ferrymq_connections", ())] == 2
        for writer in (producer, consumer):
            writer.close()
            await writer.wait_closed()
