"""Adding up what the workers measured, and showing it: table, JSON, comparison page."""

from __future__ import annotations

import json

from ferrymq.bench.comparison import Run, render_page
from ferrymq.bench.machine import Machine
from ferrymq.bench.report import from_json, render_table, to_json
from ferrymq.bench.results import BenchReport, ConsumerResult, ProducerResult, ScenarioResult
from ferrymq.bench.scenarios import BY_NAME
from ferrymq.bench.summary import summarise

SECOND = 1_000_000_000


def producer(sent: int = 1100, warmup: int = 100, **changes: object) -> ProducerResult:
    values: dict[str, object] = {
        "sent": sent,
        "warmup": warmup,
        "t_start_ns": 10 * SECOND,
        "t_written_ns": 10 * SECOND + SECOND // 4,
        "t_done_ns": 10 * SECOND + SECOND // 2,
        "requested": 1,
        "receipts": 1,
        "cpu_s": 0.1,
    }
    values.update(changes)
    return ProducerResult(**values)  # type: ignore[arg-type]


def consumer(index: int = 0, unique: int = 1100, **changes: object) -> ConsumerResult:
    values: dict[str, object] = {
        "index": index,
        "received": unique,
        "unique": unique,
        "dups": 0,
        "unexpected": 0,
        "missing": 0,
        "missing_examples": (),
        "reordered": 0,
        "t_first_ns": 10 * SECOND + 1000,
        "t_last_ns": 11 * SECOND,
        "cpu_s": 0.2,
    }
    values.update(changes)
    return ConsumerResult(**values)  # type: ignore[arg-type]


def test_a_clean_queue_run_is_end_to_end() -> None:
    result = summarise(
        BY_NAME["queue"],
        ack="auto",
        producer=producer(),
        consumers=[consumer()],
        expected=1000,
        errors={},
    )
    assert result.ok
    assert result.messages == 1000
    assert result.received == 1000
    assert result.seconds == 1.0
    assert result.msg_per_s == 1000.0
    assert result.sent_msg_per_s == 2000.0
    assert result.metric == "end-to-end msg/s"


def test_loss_and_duplicates_are_problems_not_lower_numbers() -> None:
    result = summarise(
        BY_NAME["queue"],
        ack="auto",
        producer=producer(),
        consumers=[consumer(unique=1097, missing=3, missing_examples=(5, 6, 7), dups=2)],
        expected=1000,
        errors={},
    )
    assert not result.ok
    assert result.lost == 3
    assert result.duplicated == 2
    assert result.msg_per_s == 0.0
    assert any("LOST 3 messages (sequence numbers 5, 6, 7" in p for p in result.problems)
    assert any("DUPLICATED 2" in p for p in result.problems)


def test_persistent_needs_every_receipt() -> None:
    scenario = BY_NAME["queue-persistent"]
    good = summarise(
        scenario,
        ack="auto",
        producer=producer(requested=1100, receipts=1100),
        consumers=[consumer()],
        expected=1000,
        errors={},
    )
    assert good.ok
    assert good.metric == "receipted msg/s"
    assert good.msg_per_s == 2000.0
    bad = summarise(
        scenario,
        ack="auto",
        producer=producer(requested=1100, receipts=1090, receipt_dups=1),
        consumers=[consumer()],
        expected=1000,
        errors={},
    )
    assert "10 receipts never arrived" in bad.problems
    assert "1 duplicate receipts" in bad.problems


def test_topic_sums_subscribers_and_names_the_one_that_lost() -> None:
    subscribers = [consumer(i) for i in range(3)] + [
        consumer(3, unique=1099, missing=1, missing_examples=(42,), t_last_ns=0)
    ]
    result = summarise(
        BY_NAME["topic"],
        ack="auto",
        producer=producer(),
        consumers=subscribers,
        expected=1000,
        errors={},
    )
    assert result.received == 3999
    assert [s.msg_per_s for s in result.subscribers] == [1000.0, 1000.0, 1000.0, 0.0]
    assert any(p.startswith("consumer-3: LOST 1") for p in result.problems)


def test_worker_errors_and_silence_are_reported() -> None:
    result = summarise(
        BY_NAME["queue"],
        ack="auto",
        producer=None,
        consumers=[None],
        expected=1000,
        errors={"producer": "BrokerError: ERROR from the broker: nope\ntraceback..."},
    )
    assert result.problems == [
        "producer: BrokerError: ERROR from the broker: nope",
        "consumer-0 reported nothing",
    ]


def test_a_time_cap_is_a_note() -> None:
    result = summarise(
        BY_NAME["queue"],
        ack="auto",
        producer=producer(capped=True),
        consumers=[consumer()],
        expected=5000,
        errors={},
    )
    assert result.ok
    assert result.notes == ["time cap reached after 1000 of 5000 messages"]


def latency_result() -> ScenarioResult:
    return summarise(
        BY_NAME["latency"],
        ack="auto",
        producer=producer(),
        consumers=[consumer(latencies_ns=tuple(n * 100_000 for n in range(1, 1001)))],
        expected=1000,
        errors={},
        broker_cpu_s=0.25,
    )


def sample_report() -> BenchReport:
    report = BenchReport("tcp://127.0.0.1:1", "ferrymq", "FerryMQ/0.1.0", "activemq", "1.2", 256)
    report.scenarios.append(
        summarise(
            BY_NAME["queue"],
            ack="auto",
            producer=producer(),
            consumers=[consumer(unique=1099, missing=1, missing_examples=(9,), t_last_ns=0)],
            expected=1000,
            errors={},
        )
    )
    report.scenarios.append(latency_result())
    return report


def test_table_shows_each_scenario_and_every_problem() -> None:
    text = render_table(sample_report())
    lines = text.splitlines()
    assert lines[0].startswith("ferrymq bench: ferrymq at tcp://127.0.0.1:1")
    header = next(line for line in lines if line.startswith("scenario"))
    assert "msg/s" in header
    assert "lost" in header
    queue_row = next(line for line in lines if line.startswith("queue "))
    assert queue_row.split()[-1] == "FAIL"
    assert "latency: p50 50.000 ms, p90 90.000 ms, p99 99.000 ms" in text
    assert "latency: CPU s broker 0.25" in text
    assert "PROBLEMS (these numbers are not to be trusted):" in text
    assert "  queue: consumer: LOST 1 messages (sequence numbers 9...)" in text


def test_json_round_trip() -> None:
    report = sample_report()
    data = json.loads(json.dumps(to_json(report)))
    assert data["ok"] is False
    assert [s["ok"] for s in data["scenarios"]] == [False, True]
    assert data["scenarios"][1]["latency"]["p99_ms"] == 99.0
    back = from_json(data)
    assert back == report


MACHINE = Machine("Test CPU", 2, 4.0, "Linux 6", "CPython 3.11", "0.23", "openjdk 17", "25")


def run(name: str, queue: float, p99: float) -> Run:
    report = BenchReport("tcp://127.0.0.1:1", name, f"{name}/1", "activemq", "1.2", 256)
    for scenario in ("queue", "latency"):
        result = summarise(
            BY_NAME[scenario],
            ack="auto",
            producer=producer(),
            consumers=[
                consumer(
                    t_last_ns=int(10 * SECOND + 1000 / queue * SECOND),
                    latencies_ns=(int(p99 * 1_000_000),) if scenario == "latency" else (),
                )
            ],
            expected=1000,
            errors={},
        )
        report.scenarios.append(result)
    return Run(name, report, [f"{name} --start"])


def test_comparison_page_sets_brokers_side_by_side() -> None:
    runs = [
        run("ferrymq", 30_000, 2.0),
        run("activemq", 20_000, 1.0),
        Run("rabbitmq", failure="apt-get install rabbitmq-server failed"),
    ]
    page = render_page(runs, MACHINE, "--count 1000", None, "2026-01-01")
    assert "| CPU | Test CPU |" in page
    assert "| cores | 2 |" in page
    assert "ferrymq --start" in page
    assert "- RabbitMQ: apt-get install rabbitmq-server failed" in page
    assert "| FerryMQ | 30,000 |" in page
    assert "| ActiveMQ | 20,000 |" in page
    assert "FerryMQ / ActiveMQ: **1.50**" in page
    assert "| queue | at least 2x ActiveMQ, ahead of coilmq | 30,000 msg/s | **no** |" in page
    assert "- queue: FerryMQ 30,000 msg/s; ActiveMQ 20,000 msg/s" in page
    assert "- latency: FerryMQ 2.000 ms p99; ActiveMQ 1.000 ms p99" in page
    assert "**TODO (lead):**" in page


def test_comparison_page_includes_the_written_analysis() -> None:
    runs = [run("ferrymq", 50_000, 0.5), run("activemq", 20_000, 1.0)]
    page = render_page(runs, MACHINE, "", "Because of X.", "2026-01-01")
    assert "| queue | at least 2x ActiveMQ, ahead of coilmq | 50,000 msg/s | yes |" in page
    assert "| latency | p99 no worse than the best of the others | 0.500 ms p99 | yes |" in page
    assert "Because of X." in page
    assert "TODO" not in page
