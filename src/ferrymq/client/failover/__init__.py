"""Failover: ``failover:``, ``masterslave:`` and (with ``ferrymq.client.discovery``)
``discovery:`` URLs, as ActiveMQ's FailoverTransport (seed 000 §2.1, reference §1).

``options`` reads the URL strictly, ``policy`` decides (pure), ``tracker`` keeps what to replay
(pure), ``transport`` is the ``Transport`` the connection writes to and owns the supervisor,
whose steps (connect passes, restoring, planned moves) are ``reconnect``'s; ``dialer`` opens
links to the brokers of the list, ``standby`` keeps the ``backup``/``priorityBackup``
connections. The parts below ``transport`` see it through small protocols (``LinkOwner``,
``StandbyOwner``, ``FailoverState``), so none of them imports it.
"""

from ferrymq.client.failover.options import (
    DiscoveryOptions,
    FailoverOptions,
    StaticAgentOptions,
    discovery_options,
    failover_options,
)
from ferrymq.client.failover.policy import ReconnectPolicy, broker_key
from ferrymq.client.failover.tracker import StateTracker
from ferrymq.client.failover.transport import FailoverTransport

__all__ = [
    "DiscoveryOptions",
    "FailoverOptions",
    "FailoverTransport",
    "ReconnectPolicy",
    "StateTracker",
    "StaticAgentOptions",
    "broker_key",
    "discovery_options",
    "failover_options",
]
