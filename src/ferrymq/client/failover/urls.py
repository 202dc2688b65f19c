"""``failover:`` and ``masterslave:`` URLs to transports, checked completely before connecting.

Members are plain ``tcp://`` or ``stomp://`` URIs, or the same over TLS (``ssl://``,
``stomp+ssl://``), or all of them AMQP 1.0 (``amqp://``, ``amqps://``, ``amqp+ssl://``): one list
speaks one protocol, since a broker's cluster updates name its STOMP listeners; each is
checked with the ``nested.*`` options applied, so a bad nested option fails at ``connect()``
naming the member.
``masterslave:(A,B,...)`` needs at least two members and takes no options: it is a failover
that walks the list in order, once, and does not reconnect after a drop (reference §3.3,
``failover:(A,B,...)?randomize=false&maxReconnectAttempts=0``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ferrymq.client.amqp_transport import AMQP_SCHEMES, amqp_options
from ferrymq.client.commands import ConnectionInfo
from ferrymq.client.errors import BrokerURLError
from ferrymq.client.failover.options import FailoverOptions, failover_options, inject
from ferrymq.client.failover.transport import FailoverTransport
from ferrymq.client.tcp_options import tcp_options
from ferrymq.util.uri import URI, AnyURI, CompositeURI

STOMP_SCHEMES = frozenset({"tcp", "stomp", "ssl", "stomp+ssl"})
MEMBER_SCHEMES = STOMP_SCHEMES | AMQP_SCHEMES


def check_members(
    uri: CompositeURI, options: Mapping[str, str], *, url: str, what: str
) -> list[URI]:
    """The members as plain broker URIs, each valid with ``options`` injected."""
    members: list[URI] = []
    for member in uri.components:
        text = member.raw or str(member)
        if not isinstance(member, URI):
            raise BrokerURLError(
                f"{what} lists brokers (tcp://HOST:PORT), not a nested {member.scheme}: list",
                url=url,
                part=text,
            )
        if member.scheme.lower() not in MEMBER_SCHEMES:
            raise BrokerURLError(
                f"{what} member {text!r}: the {member.scheme}: transport is not supported "
                "here (tcp:, stomp:, ssl:, stomp+ssl:, amqp:, amqps:, amqp+ssl:)",
                url=url,
                part=member.scheme,
            )
        check_options(member, options, url=url)
        members.append(member)
    _one_protocol(members, url=url, what=what)
    return members


def _one_protocol(members: Sequence[URI], *, url: str, what: str) -> None:
    """STOMP and AMQP members may not be mixed: a failover replays one connection's state on
    the next broker, and the broker list it learns (``ferrymq.cluster-brokers``) names STOMP
    listeners only."""
    amqp = [m for m in members if m.scheme.lower() in AMQP_SCHEMES]
    if amqp and len(amqp) != len(members):
        stomp = next(m for m in members if m.scheme.lower() not in AMQP_SCHEMES)
        raise BrokerURLError(
            f"{what} mixes AMQP ({amqp[0].raw or amqp[0]}) and STOMP "
            f"({stomp.raw or stomp}) brokers: list brokers of one protocol",
            url=url,
            part=stomp.raw or str(stomp),
        )


def check_options(member: URI, options: Mapping[str, str], *, url: str) -> None:
    """``member``'s options, with ``options`` injected, as its transport will read them."""
    target = inject(member, options)
    try:
        if target.scheme.lower() in AMQP_SCHEMES:
            amqp_options(target)
        else:
            tcp_options(target)
    except BrokerURLError as exc:
        raise BrokerURLError(f"{target}: {exc.message}", url=url, part=exc.part) from None


def _composite(uri: AnyURI, url: str) -> CompositeURI:
    if isinstance(uri, CompositeURI):
        return uri
    # `failover:tcp://a:1?x=y` parses as a plain URI whose path holds the member.
    raise BrokerURLError(
        f"{uri.scheme}: needs a list of brokers: {uri.scheme}:(tcp://HOST:PORT,...)",
        url=url,
        part=uri.scheme,
    )


def failover_transport(uri: AnyURI, info: ConnectionInfo) -> FailoverTransport:
    url = uri.raw or str(uri)
    composite = _composite(uri, url)
    options = failover_options(composite.options, url=url)
    members = check_members(composite, options.nested, url=url, what="failover:")
    for priority in options.priority_uris:
        check_options(priority, options.nested, url=url)
    if not members and options.update_uris_url is None:
        raise BrokerURLError(
            "failover: lists no brokers (and has no updateURIsURL to read them from)",
            url=url,
            part=composite.scheme,
        )
    return FailoverTransport(members, options, info, url=url)


def masterslave_transport(uri: AnyURI, info: ConnectionInfo) -> FailoverTransport:
    url = uri.raw or str(uri)
    composite = _composite(uri, url)
    if composite.options:
        name = next(iter(composite.options))
        raise BrokerURLError(
            "masterslave: takes no options (use failover:(...)?randomize=false&"
            "maxReconnectAttempts=0&... to tune it)",
            url=url,
            part=name,
        )
    members: Sequence[URI] = check_members(composite, {}, url=url, what="masterslave:")
    if len(members) < 2:
        raise BrokerURLError(
            "masterslave: expects at least 2 brokers (master first)", url=url, part="masterslave"
        )
    options = FailoverOptions(randomize=False, max_reconnect_attempts=0)
    return FailoverTransport(members, options, info, url=url)
