"""One AMQP connection's links as the admin API lists them.

Plain records (name, the broker's role, address, credit, unsettled deliveries), so the service
and the admin package, which know no wire protocol, can show them beside STOMP's
subscriptions. The broker's role is AMQP's: ``sender`` for a client's consumer (the broker
sends), ``receiver`` for a producer or the transaction coordinator (its address is None, as is
an anonymous relay's).
"""

from __future__ import annotations

from typing import Protocol

import proton

from ferrymq.adapters.amqp.receivers import Receivers
from ferrymq.adapters.amqp.senders import Senders


class WithLinks(Protocol):
    @property
    def senders(self) -> Senders: ...

    @property
    def receivers(self) -> Receivers: ...


def link_records(converter: WithLinks) -> list[dict[str, object]]:
    records = [
        _record(state.link, "sender", state.link.source.address)
        for state in list(converter.senders.by_subscription.values())
    ]
    for state in list(converter.receivers.links.values()):
        address = None if state.coordinator else state.link.target.address
        records.append(_record(state.link, "receiver", address))
    return records


def _record(link: proton.Link, role: str, address: str | None) -> dict[str, object]:
    return {
        "name": link.name,
        "role": role,
        "address": address,
        "credit": link.credit,
        "unsettled": link.unsettled,
    }
