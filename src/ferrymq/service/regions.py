"""The region broker for a configuration (ActiveMQ's ``BrokerService.createRegionBroker``).

The core receives only its slice of the configuration, as plain values and records: policies
per destination (``policies``), memory, store and temp limits, the duplicate-detection window,
whether advisories and the scheduler are on, and the mirrors of the broker connections (whose
events the core queues in the batch that causes them: ``core.mirror``).
"""

from __future__ import annotations

import os

from ferrymq.config.model import BrokerConfig
from ferrymq.core.mirror import MirrorSpec
from ferrymq.core.region import RegionBroker
from ferrymq.core.usage import UsageLimits
from ferrymq.service.policies import PolicyResolver
from ferrymq.service.startup import create_startup_destinations
from ferrymq.store.base import Recovery


def _physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def mirror_specs(config: BrokerConfig) -> list[MirrorSpec]:
    """The `<mirror>` of each broker connection, as the core's tap takes it."""
    specs: list[MirrorSpec] = []
    for connection in config.broker_connections:
        mirror = connection.mirror
        if mirror is not None:
            specs.append(
                MirrorSpec(
                    connection.name,
                    mirror.address_filter.includes,
                    mirror.address_filter.excludes,
                    message_acknowledgements=mirror.message_acknowledgements,
                    queue_creation=mirror.queue_creation,
                    queue_removal=mirror.queue_removal,
                    sync=mirror.sync,
                )
            )
    return specs


def create_region(config: BrokerConfig, broker_id: str, incarnation: str) -> RegionBroker:
    usage = config.system_usage
    region = RegionBroker(
        broker_id,
        config.broker_name,
        incarnation=incarnation,
        policies=PolicyResolver(config),
        usage_limits=UsageLimits(
            memory_bytes=usage.effective_memory_limit(_physical_memory()),
            store_bytes=usage.store_limit,
            temp_bytes=usage.temp_limit,
        ),
        duplicate_window=config.duplicate_window,
        advisory_support=config.advisory_support,
        scheduler_support=config.scheduler_support,
    )
    region.mirror.configure(mirror_specs(config))
    return region


def recover_region(region: RegionBroker, recovery: Recovery, config: BrokerConfig) -> None:
    """What the store recovered, then the destinations the configuration creates at start
    (Artemis's `<addresses>`, ``startup``), which recovery may already hold."""
    region.recover(recovery)
    create_startup_destinations(region, config.startup_destinations)
