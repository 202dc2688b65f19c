"""Who is connected: ActiveMQ's ``addConnection``/``removeConnection``.

A connection joins with its JMS client id (unique across the broker: a second holder is refused,
ActiveMQ's InvalidClientIDException), the user it authenticated as and the guard that authorizes
its commands (``core.authorization``); it leaves with its transactions aborted, its consumers
closed and its temporary destinations deleted. Both are advised on
``ActiveMQ.Advisory.Connection``.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping

from ferrymq.core import advisory
from ferrymq.core.authorization import guard_for
from ferrymq.core.connection import ConnectionState
from ferrymq.core.consumers import Consumers
from ferrymq.core.context import CoreContext
from ferrymq.core.destinations import Destinations
from ferrymq.core.errors import BrokerError
from ferrymq.core.ledger import Ledger
from ferrymq.security.api import Authorizer, Subject


class Clients:
    def __init__(
        self,
        context: CoreContext,
        broker_name: str,
        *,
        connections: MutableMapping[str, ConnectionState],
        client_ids: MutableMapping[str, str],
        parts: tuple[Ledger, Consumers, Destinations],
        advise: Callable[..., None],
    ) -> None:
        """``connections`` and ``client_ids`` are the broker's registries, which this part
        fills; ``parts`` settle what a leaving connection held."""
        self._context = context
        self._broker_name = broker_name
        self._connections = connections
        self._client_ids = client_ids
        self._ledger, self._consumers, self._destinations = parts
        self._advise = advise
        self.authorizer: Authorizer | None = None
        """The authorization map's decisions (None: every command is allowed)."""

    def add(
        self,
        connection_id: str,
        client_id: str | None,
        subject: Subject | None,
        user: str | None,
        address: str | None,
    ) -> None:
        if client_id is not None:
            if client_id in self._client_ids:
                raise BrokerError(
                    f"Broker: {self._broker_name} - Client: {client_id} already connected"
                )
            self._client_ids[client_id] = connection_id
        if subject is not None:
            user = subject.user
        state = ConnectionState(
            connection_id,
            client_id or connection_id,
            client_id is not None,
            user=user,
            remote_address=address,
            connected_at=self._context.now_ms,
            subject=subject,
            guard=guard_for(self.authorizer, subject or (Subject(user) if user else None)),
        )
        self._connections[connection_id] = state
        self._advise(
            advisory.CONNECTION_TOPIC,
            lambda: advisory.connection_info(connection_id, state.client_id, user, address),
        )

    def remove(self, connection_id: str) -> None:
        """Abort its transactions, close its consumers, delete its temporary destinations."""
        state = self._connections.get(connection_id)
        if state is None:
            return
        for transaction_id in list(state.transactions):
            self._ledger.abort(state, transaction_id)
        for subscription_id in list(state.consumers):
            self._consumers.remove(state, subscription_id)
        for destination in list(state.temporary_destinations):
            self._destinations.remove(destination)
        del self._connections[connection_id]
        if state.explicit_client_id and self._client_ids.get(state.client_id) == connection_id:
            del self._client_ids[state.client_id]
        self._advise(advisory.CONNECTION_TOPIC, lambda: advisory.connection_removed(connection_id))
