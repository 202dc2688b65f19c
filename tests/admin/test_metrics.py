from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.admin.metrics import (
    BROKER_METRICS,
    DESTINATION_METRICS,
    escape_help,
    escape_label_value,
    format_value,
    render_metrics,
)
from ferrymq.core.destination import DestinationType
from tests.admin.exposition import ExpositionError, parse_exposition
from tests.admin.fake_broker import broker_statistics, destination, destinations

REQUIRED = {
    "ferrymq_destination_depth": "gauge",
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
}


def test_every_required_family_has_help_and_type() -> None:
    families = parse_exposition(render_metrics(broker_statistics(), destinations()))
    for name, type_ in REQUIRED.items():
        assert families[name].type == type_, name
        assert families[name].help, name


def test_counters_end_in_total_and_names_are_unique() -> None:
    names = [m.name for m in DESTINATION_METRICS] + [m.name for m in BROKER_METRICS]
    assert len(names) == len(set(names))
    for metric in (*DESTINATION_METRICS, *BROKER_METRICS):
        assert (metric.type == "counter") == metric.name.endswith("_total"), metric.name


def test_destination_samples_carry_type_and_name() -> None:
    families = parse_exposition(render_metrics(broker_statistics(), destinations()))
    orders = {"type": "queue", "name": "orders.in"}
    assert families["ferrymq_destination_depth"].value(**orders) == 5
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
    assert families["ferrymq_connections"].value() == 1


def test_label_values_are_escaped() -> None:
    assert escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert escape_help("x\\y\nz") == "x\\\\y\\nz"
    text = render_metrics({}, [destination(DestinationType.QUEUE, 'we"ird\\na\nme', 1)])
    assert 'ferrymq_destination_depth{type="queue",name="we\\"ird\\\\na\\nme"} 1\n' in text
    families = parse_exposition(text)
    assert families["ferrymq_destination_depth"].value(type="queue", name='we"ird\\na\nme') == 1


def test_values_are_go_float_literals() -> None:
    assert format_value(3) == "3"
    assert format_value(0.25) == "0.25"
    assert format_value(1e-05) == "1e-05"
    assert format_value(math.inf) == "+Inf"
    assert format_value(-math.inf) == "-Inf"
    assert format_value(math.nan) == "NaN"


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
    families = parse_exposition(render_metrics(broker_statistics(), stats))
    depth = families["ferrymq_destination_depth"]
    assert len(depth.samples) == len(pairs)
    for i, (type_, name) in enumerate(pairs):
        assert depth.value(type=type_.value, name=name) == i
