"""The policy of a mirror's store-and-forward queue (``core.mirror``), whatever the
configuration's ``<destinationPolicy>`` says of other queues."""

from __future__ import annotations

from dataclasses import replace

from ferrymq.core.destination import Destination
from ferrymq.core.policy import DestinationPolicy, PolicyLookup, RedeliveryPolicy

_NEVER_DEAD = RedeliveryPolicy(maximum_redeliveries=-1, nack_redelivers=True)


def sparing_mirror_queues(policies: PolicyLookup, prefix: str) -> PolicyLookup:
    """A mirror queue (a queue named ``prefix...``) never dead-letters, expires or counts
    redeliveries against a limit (as Artemis's, ARTEMIS-5090): its events go back in order
    every time the target goes away with some in flight, and one lost would desynchronise the
    target for good."""

    def lookup(destination: Destination) -> DestinationPolicy:
        policy = policies(destination)
        if not (destination.is_queue and destination.name.startswith(prefix)):
            return policy
        return replace(policy, redelivery=_NEVER_DEAD, expire_messages_period_ms=0)

    return lookup
