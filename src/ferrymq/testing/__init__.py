"""Fixtures shipped with FerryMQ: start brokers on 127.0.0.1 for your own tests, wait for what
they do with a bound, and drive time-taking code with a fake clock."""

from ferrymq.embedded import running_broker
from ferrymq.testing.brokers import (
    BrokerProcess,
    BrokerThread,
    broker_config,
    listening,
    without_admin,
)
from ferrymq.testing.clock import FakeClock, FakeTimer
from ferrymq.testing.groups import broker_group, start_group, wait_for_master
from ferrymq.testing.ports import free_port
from ferrymq.testing.waiting import WaitTimeoutError, wait_until, wait_until_blocking

__all__ = [
    "BrokerProcess",
    "BrokerThread",
    "FakeClock",
    "FakeTimer",
    "WaitTimeoutError",
    "broker_config",
    "broker_group",
    "free_port",
    "listening",
    "running_broker",
    "start_group",
    "wait_for_master",
    "wait_until",
    "wait_until_blocking",
    "without_admin",
]
