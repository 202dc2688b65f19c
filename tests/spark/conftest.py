"""The one Spark session every Spark test shares (spark.md §2.2 and §4.3): local[2] on loopback,
no UI, few shuffle partitions, UTC.  Starting it costs about 10 s, so there is only one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from ferrymq.spark.session import local_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session("ferrymq-tests", fast_start=True)
    yield session
    session.stop()
