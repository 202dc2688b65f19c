"""The source's options and schema checks without Spark: defaults, names in any case, and an
error naming the option (or column) for each kind of mistake."""

from __future__ import annotations

import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from ferrymq.spark.options import OptionError
from ferrymq.spark.rows import MESSAGE_SCHEMA, SchemaError, check_schema
from ferrymq.spark.source import read_source_options

BASE = {"url": "tcp://127.0.0.1:61613", "destination": "/queue/ORDERS"}


def test_defaults_and_names_in_any_case() -> None:
    options = read_source_options(BASE)
    assert options.connection.url == BASE["url"]
    assert options.max_messages_per_trigger is None
    assert (options.prefetch, options.num_partitions, options.fail_on_data_loss) == (1000, 1, True)
    assert options.spool_location is None
    lowered = read_source_options(
        {
            **BASE,
            "maxmessagespertrigger": "7",
            "SPOOLLOCATION": "/tmp/spool",
            "failOnDataLoss": "False",
            "selector": "region = 'EU'",
        }
    )
    assert lowered.max_messages_per_trigger == 7
    assert lowered.spool_location == "/tmp/spool"
    assert lowered.fail_on_data_loss is False
    assert lowered.selector == "region = 'EU'"


def test_the_prefetch_covers_a_larger_trigger_limit() -> None:
    options = read_source_options({**BASE, "maxMessagesPerTrigger": "5000"})
    assert options.prefetch == 5000
    assert read_source_options({**BASE, "prefetch": "10"}).prefetch == 10


@pytest.mark.parametrize(
    ("options", "option", "message"),
    [
        ({"destination": "/queue/A"}, "url", "is required"),
        ({"url": "tcp://h:1"}, "destination", "is required"),
        ({**BASE, "url": "bogus://h:1"}, "url", "unknown transport scheme"),
        ({**BASE, "url": "failover:(tcp://h:1"}, "url", "parenthesis"),
        ({**BASE, "destination": "ORDERS"}, "destination", "/queue/NAME or /topic/NAME"),
        ({**BASE, "maxMessagesPerTrigger": "0"}, "maxMessagesPerTrigger", "at least 1"),
        ({**BASE, "prefetch": "many"}, "prefetch", "must be an integer"),
        ({**BASE, "failOnDataLoss": "yes"}, "failOnDataLoss", "true or false"),
        ({**BASE, "subscriptionName": "s"}, "subscriptionName", "/topic/"),
        (
            {**BASE, "destination": "/topic/PRICES", "subscriptionName": "s"},
            "clientId",
            "required with subscriptionName",
        ),
        ({**BASE, "maxMessagePerTrigger": "5"}, "maxmessagepertrigger", "maxMessagesPerTrigger"),
    ],
)
def test_a_bad_option_is_named(options: dict[str, str], option: str, message: str) -> None:
    with pytest.raises(OptionError, match=message) as raised:
        read_source_options(options)
    assert raised.value.option == option


def test_a_schema_may_select_columns_but_not_invent_or_retype_them() -> None:
    chosen = StructType([StructField("offset", LongType()), StructField("body_text", StringType())])
    with pytest.raises(SchemaError, match="body_text"):
        check_schema(chosen)
    with pytest.raises(SchemaError, match="must be bigint"):
        check_schema(StructType([StructField("offset", StringType())]))
    subset = StructType([MESSAGE_SCHEMA["offset"], MESSAGE_SCHEMA["body"]])
    assert check_schema(subset) is subset
