"""Fixtures shipped with FerryMQ: start brokers on 127.0.0.1 for your own tests."""

from ferrymq.testing.brokers import (
    BrokerProcess,
    BrokerThread,
    broker_config,
    free_port,
    running_broker,
)

__all__ = ["BrokerProcess", "BrokerThread", "broker_config", "free_port", "running_broker"]
