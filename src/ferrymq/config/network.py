"""The network slice: `<networkConnectors><networkConnector>` and its destination filters.

Defaults are ActiveMQ 5.17.2's code defaults (reference section 4.1), which differ from the
documents' tables in three places, noted on the fields: `name`, `always_sync_send` and
`decrease_network_consumer_priority`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ferrymq.config.errors import Location
from ferrymq.util.uri import AnyURI

__all__ = ["DestinationRef", "NetworkConnectorConfig"]


@dataclass(frozen=True)
class DestinationRef:
    """`<queue physicalName="..."/>` or `<topic physicalName="..."/>`; wildcards `.` `*` `>`."""

    kind: Literal["queue", "topic"]
    physical_name: str

    @property
    def is_topic(self) -> bool:
        return self.kind == "topic"


@dataclass(frozen=True)
class NetworkConnectorConfig:
    """One `<networkConnector>`: a bridge (or several, one per discovered broker) to peers."""

    uri: str = field(repr=False)  # may hold a password; repr shows `parsed_uri`, redacted
    """`uri` as written: a discovery agent URI such as `static:(tcp://host:61616)`,
    `masterslave:(tcp://a:61616,tcp://b:61616)` or `multicast://default`. Required."""
    parsed_uri: AnyURI
    """`uri` parsed (whitespace from line wrapping removed)."""
    name: str = "NC"
    """`name`: unique per broker; part of the bridge's client and durable subscription ids.
    Default "NC" (ActiveMQ's code; the documents' tables say "bridge")."""
    network_ttl: int = 1
    """`networkTTL`: hops a message or subscription may travel; sets both TTLs below unless they
    are given. -1 is unlimited. Default 1."""
    message_ttl: int = 1
    """`messageTTL`: forward a message only if its broker path is shorter. Default networkTTL."""
    consumer_ttl: int = 1
    """`consumerTTL`: ignore a remote consumer whose broker path is this long.
    Default networkTTL."""
    conduit_subscriptions: bool = True
    """`conduitSubscriptions`: collapse remote consumers on one destination into one demand
    subscription, without selectors. Default true."""
    conduit_network_queue_subscriptions: bool = False
    """`conduitNetworkQueueSubscriptions`: conduit queue subscriptions that are themselves network
    subscriptions too. Default false."""
    dynamic_only: bool = False
    """`dynamicOnly`: do not re-activate durable network subscriptions at start. Default false."""
    decrease_network_consumer_priority: bool = False
    """`decreaseNetworkConsumerPriority`: demand subscriptions get priority consumer_priority_base,
    lowered per hop, so local consumers win. Default false (true since ActiveMQ 5.18)."""
    consumer_priority_base: int = -5
    """`consumerPriorityBase`. Default -5."""
    suppress_duplicate_queue_subscriptions: bool = False
    """`suppressDuplicateQueueSubscriptions`: one route per remote queue consumer. Default false."""
    suppress_duplicate_topic_subscriptions: bool = True
    """`suppressDuplicateTopicSubscriptions`. Default true."""
    bridge_temp_destinations: bool = True
    """`bridgeTempDestinations`: mirror temporary destinations so replies cross. Default true."""
    duplex: bool = False
    """`duplex`: one connection carries both directions. Default false."""
    prefetch_size: int = 1000
    """`prefetchSize` of the bridge's demand consumers (> 0). Default 1000."""
    advisory_prefetch_size: int = 0
    """`advisoryPrefetchSize`; 0 uses prefetch_size. Default 0."""
    advisory_ack_percentage: int = 75
    """`advisoryAckPercentage`: batch advisory acks at this percent of prefetch. Default 75."""
    always_sync_send: bool = True
    """`alwaysSyncSend`: forward non-persistent messages with a receipt too. Default true (code;
    the documents say false)."""
    static_bridge: bool = False
    """`staticBridge`: ignore consumer advisories; forward only statically included
    destinations. Default false."""
    destination_filter: str | None = None
    """`destinationFilter`: advisory topic filter; None derives it from the included
    destinations (`ActiveMQ.Advisory.Consumer.>` when there are none)."""
    use_virtual_dest_subs: bool = False
    """`useVirtualDestSubs`. Default false."""
    sync_durable_subs: bool = False
    """`syncDurableSubs`: reconcile durable network subscriptions on connect. Default false."""
    dispatch_async: bool = True
    """`dispatchAsync` of the local demand consumers. Default true."""
    advisory_for_failed_forward: bool = False
    """`advisoryForFailedForward`. Default false."""
    check_duplicate_messages_on_duplex: bool = False
    """`checkDuplicateMessagesOnDuplex`. Default false."""
    use_compression: bool = False
    """`useCompression`. Default false."""
    use_broker_names_as_id_seed: bool = True
    """`useBrokerNamesAsIdSeed` (setter spelled `useBrokerNameAsIdSees`). Default true."""
    gc_destination_views: bool = True
    """`gcDestinationViews` (JMX only; kept for completeness). Default true."""
    gc_sweep_time_ms: int = 60000
    """`gcSweepTime` (JMX only). Default 60000."""
    user_name: str | None = None
    """`userName` for the connection to the remote broker."""
    password: str | None = field(default=None, repr=False)
    """`password` for the connection to the remote broker."""
    remote_user_name: str | None = None
    """`remoteUserName` (since 5.17): credentials for the remote side of a duplex bridge."""
    remote_password: str | None = field(default=None, repr=False)
    """`remotePassword` (since 5.17)."""
    client_id_token: str = "_"
    """`clientIdToken`: separator in bridge client ids. Default "_"."""
    broker_name: str | None = None
    """`brokerName`: overrides the local broker name the bridge announces."""
    broker_url: str | None = None
    """`brokerURL`: the local URL the bridge announces."""
    dynamically_included_destinations: tuple[DestinationRef, ...] = ()
    """`<dynamicallyIncludedDestinations>`: forward only these (wildcards allowed) on demand."""
    excluded_destinations: tuple[DestinationRef, ...] = ()
    """`<excludedDestinations>`: never forward these on demand; checked first."""
    statically_included_destinations: tuple[DestinationRef, ...] = ()
    """`<staticallyIncludedDestinations>`: always forward these, with or without consumers."""
    durable_destinations: tuple[DestinationRef, ...] = ()
    """`<durableDestinations>`: topics whose durable network subscriptions are kept at start."""
    location: Location | None = field(default=None, compare=False)
