"""One AMQP connection as its link handlers (``senders``, ``receivers``) use it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

import proton

from ferrymq.adapters.amqp.dynamic import DynamicNodes
from ferrymq.adapters.stomp.dialect import TemporaryNames
from ferrymq.amqp.engine import Engine
from ferrymq.config.model import AmqpOptionsConfig
from ferrymq.core.errors import BrokerError
from ferrymq.core.region import RegionBroker
from ferrymq.security.api import Subject
from ferrymq.service.connection import BrokerConnection

if TYPE_CHECKING:
    from ferrymq.service.broker import BrokerService


class AmqpSide(Protocol):
    """What ``converter.AmqpConverter`` gives the link handlers."""

    @property
    def service(self) -> BrokerService: ...

    @property
    def connection(self) -> BrokerConnection: ...

    @property
    def region(self) -> RegionBroker: ...

    @property
    def connection_id(self) -> str: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def names(self) -> TemporaryNames: ...

    @property
    def dynamic(self) -> DynamicNodes:
        """The connection's dynamic nodes (temporary destinations a link asked for)."""

    @property
    def options(self) -> AmqpOptionsConfig: ...

    @property
    def client_id(self) -> str | None:
        """The connection's container-id, its JMS client id (None until open)."""

    @property
    def max_message_size(self) -> int:
        """The largest message a producer may send (the listener's wireFormat limits)."""

    @property
    def subject(self) -> Subject | None:
        """Who the connection logged in as (None without authentication)."""

    def flush(self, *, needs_commit: bool = False) -> None:
        """Queue what proton has to write (after the group commit when ``needs_commit``)."""

    def log_refusal(self, error: BrokerError) -> None: ...


def remote_data(delivery: proton.Delivery) -> list[object]:
    """The fields of the client's delivery state (a transactional state's txn-id and
    outcome): proton types them as ints, they are any AMQP value."""
    return cast(list[object], delivery.remote.data or [])


def set_local_state(delivery: proton.Delivery, state: int, data: list[object]) -> None:
    """Answer with a delivery state proton has no class for (declared, transactional)."""
    delivery.local.data = cast(list[int], data)
    delivery.update(state)


def data_object(data: proton.Data | None) -> object:
    """The value a terminus field holds (a filter set, capabilities): read from its start."""
    if data is None:
        return None
    data.rewind()
    if data.next() is None:
        return None
    return data.get_object()


def capabilities_of(value: object) -> set[str]:
    """A terminus's capabilities as names: one symbol, an array of them, or none."""
    if value is None:
        return set()
    if isinstance(value, str):
        return {value}
    try:
        return {str(item) for item in value}  # type: ignore[attr-defined]
    except TypeError:
        return set()
