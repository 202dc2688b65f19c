"""The ``ferrymq`` format of Spark's Python Data Source API: one ``DataSource`` whose stream
reader is the queue/topic source (``source``) and whose writers are the sink (``sink``).

Spark pickles this class into every Python worker it starts (the planner, the driver-side
streaming runner, executors), so it is importable from the installed package and its
constructor does nothing but keep the options (reference spark.md §1.2, §1.4). The reader and
writer modules are imported when Spark asks for them, so the audit job, which needs neither,
does not pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FORMAT = "ferrymq"
"""The name given to ``spark.readStream.format(...)`` and ``df.writeStream.format(...)``."""


class FerryMQDataSource(DataSource):
    """``format("ferrymq")``: read messages of a FerryMQ destination as a stream, write rows to
    one as messages."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType | str:
        from ferrymq.spark.source import MESSAGE_SCHEMA

        return MESSAGE_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        from ferrymq.spark.source import FerryMQStreamReader

        return FerryMQStreamReader(dict(self.options), schema)

    def streamWriter(  # noqa: N802
        self, schema: StructType, overwrite: bool
    ) -> DataSourceStreamWriter:
        from ferrymq.spark.sink import FerryMQStreamWriter

        return FerryMQStreamWriter(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from ferrymq.spark.options import OptionError
        from ferrymq.spark.sink import FerryMQBatchWriter

        if overwrite:
            # Kafka's sink refuses it too: sending cannot replace what a destination holds.
            raise OptionError("mode", "overwrite cannot take back sent messages; use append")

        return FerryMQBatchWriter(dict(self.options), schema)


def register(spark: SparkSession) -> None:
    """Make ``format("ferrymq")`` available in ``spark`` (once per session)."""
    spark.dataSource.register(FerryMQDataSource)
