"""FerryMQ on Apache Spark: the ``ferrymq`` streaming source and sink (``register(spark)``), and
the delivery audit of a network's message trace (``ferrymq audit``). Installs with the ``spark``
extra; everything here is an ordinary client of the brokers."""

from ferrymq.spark.datasource import FORMAT, FerryMQDataSource, register

__all__ = ["FORMAT", "FerryMQDataSource", "register"]
