"""``ferrymq bench``: a load generator for any STOMP broker, and the report it writes."""

from ferrymq.bench.dialect import ACTIVEMQ, COILMQ, DIALECTS, RABBITMQ, Dialect, detect
from ferrymq.bench.options import BenchOptionError, BenchOptions, Endpoint, parse_url
from ferrymq.bench.report import from_json, render_table, to_json
from ferrymq.bench.results import BenchReport, ScenarioResult
from ferrymq.bench.runner import run_bench
from ferrymq.bench.scenarios import NAMES, SCENARIOS, Scenario
from ferrymq.bench.stats import LatencySummary, percentile
from ferrymq.bench.wire import BrokerError

__all__ = [
    "ACTIVEMQ",
    "COILMQ",
    "DIALECTS",
    "NAMES",
    "RABBITMQ",
    "SCENARIOS",
    "BenchOptionError",
    "BenchOptions",
    "BenchReport",
    "BrokerError",
    "Dialect",
    "Endpoint",
    "LatencySummary",
    "Scenario",
    "ScenarioResult",
    "detect",
    "from_json",
    "parse_url",
    "percentile",
    "render_table",
    "run_bench",
    "to_json",
]
