"""Discovery agents beyond the static one: multicast, zeroconf/rendezvous and the registry
("fabric") agent, found by URI scheme through the ``ferrymq.discovery_agents`` entry points
(``ferrymq.client.discovery.agent_for``), and the advertiser that makes a broker's listeners
discoverable."""

from ferrymq.discovery.advertiser import DiscoveryAdvertiser, DiscoveryAdvertiserError

__all__ = ["DiscoveryAdvertiser", "DiscoveryAdvertiserError"]
