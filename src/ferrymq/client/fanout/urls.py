"""``fanout:`` URLs to transports, checked completely before connecting.

The URL names one discovery agent: ``fanout:(AGENT)?options``, ``fanout://(AGENT)?options``
(seed 001 Example 8.15) or, without options, ``fanout:AGENT``. With a static agent the listed
brokers are checked now, with the options injected into them, and a ``minAckCount`` larger
than the list is refused: every send would wait for ever.
"""

from __future__ import annotations

from ferrymq.client.commands import ConnectionInfo
from ferrymq.client.discovery import STATIC_AGENT_SCHEMES, agent_for
from ferrymq.client.errors import BrokerURLError
from ferrymq.client.failover.policy import broker_key
from ferrymq.client.failover.urls import check_members
from ferrymq.client.fanout.options import fanout_options
from ferrymq.client.fanout.transport import FanoutTransport
from ferrymq.util.uri import AnyURI, CompositeURI


def fanout_transport(uri: AnyURI, info: ConnectionInfo) -> FanoutTransport:
    """Build the transport for a ``fanout:`` URL, checking all of it first."""
    url = uri.raw or str(uri)
    if not isinstance(uri, CompositeURI) or len(uri.components) != 1:
        raise BrokerURLError(
            "fanout: names one discovery agent: fanout:(static:(tcp://HOST:PORT,...))?options "
            "or fanout:(multicast://default)?options",
            url=url,
            part=uri.scheme,
        )
    options = fanout_options(uri.options, url=url)
    agent_uri = uri.components[0]
    scheme = agent_uri.scheme.lower()
    if scheme in STATIC_AGENT_SCHEMES and isinstance(agent_uri, CompositeURI):
        members = check_members(agent_uri, options.discovered, url=url, what=f"{scheme}:")
        brokers = len({broker_key(member) for member in members})
        if brokers < options.min_ack_count:
            raise BrokerURLError(
                f"option minAckCount: {options.min_ack_count} brokers must be connected before "
                f"anything is sent, and {scheme}: lists {brokers}: every send would wait for ever",
                url=url,
                part="minAckCount",
            )
    return FanoutTransport(agent_for(agent_uri, url=url), options, info, url=url)
