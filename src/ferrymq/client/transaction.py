"""A STOMP transaction (BEGIN ... COMMIT or ABORT) as an async context manager."""

from __future__ import annotations

import contextlib
from enum import Enum
from typing import TYPE_CHECKING, Protocol, Self

from ferrymq.client.errors import ClientError, TransactionRolledBack, UsageError

if TYPE_CHECKING:
    from ferrymq.client.requests import ConnectionView


class TransactionState(Enum):
    NEW = "new"
    ACTIVE = "active"
    COMMITTED = "committed"
    ABORTED = "aborted"


class TransactionOwner(Protocol):
    """What a transaction asks of its connection (the connection's ``Consumers``, which audit
    the acknowledgements made in it once it commits)."""

    async def begin_transaction(self, transaction_id: str) -> None: ...

    async def end_transaction(self, transaction_id: str, *, commit: bool) -> None:
        """COMMIT (or ABORT) and wait for the broker's receipt."""


class Transaction:
    """Sends and acks that name this transaction take effect together at ``commit``.

    ``async with conn.transaction() as tx:`` begins on entry, commits on a normal exit and
    aborts when the block raises. As in ActiveMQ, ABORT does not redeliver what was acked in the
    transaction: those messages are unacknowledged again and can be acked anew.
    """

    def __init__(self, connection: ConnectionView, owner: TransactionOwner, id: str) -> None:
        self.connection = connection
        self._owner = owner
        self.id = id
        self.state = TransactionState.NEW

    async def begin(self) -> Self:
        if self.state is not TransactionState.NEW:
            raise UsageError(f"transaction {self.id} was already begun")
        await self._owner.begin_transaction(self.id)
        self.state = TransactionState.ACTIVE
        return self

    async def commit(self) -> None:
        """COMMIT, and wait for the broker's receipt (everything in it is then durable).

        Raises ``TransactionRolledBack`` when a failover rolled the transaction back (it had
        acknowledged messages, or its commit was in doubt): the transaction is then aborted,
        and the application may run it again.
        """
        self._check_active()
        self.state = TransactionState.COMMITTED
        try:
            await self._owner.end_transaction(self.id, commit=True)
        except TransactionRolledBack:
            self.state = TransactionState.ABORTED
            raise

    async def abort(self) -> None:
        self._check_active()
        self.state = TransactionState.ABORTED
        await self._owner.end_transaction(self.id, commit=False)

    def _check_active(self) -> None:
        if self.state is not TransactionState.ACTIVE:
            raise UsageError(f"transaction {self.id} is {self.state.value}, not active")

    async def __aenter__(self) -> Self:
        if self.state is TransactionState.NEW:
            await self.begin()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if self.state is not TransactionState.ACTIVE:
            return
        if exc_type is None:
            await self.commit()
            return
        # The error propagating says more; a transaction left open dies with its connection.
        # (With no broker, a failover connection answers the ABORT at once.)
        with contextlib.suppress(ClientError):
            await self.abort()

    def __repr__(self) -> str:
        return f"Transaction(id={self.id!r}, state={self.state.value})"
