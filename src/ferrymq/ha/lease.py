"""``LeaseDatabaseLocker``: ActiveMQ's `<lease-database-locker>` on PostgreSQL (reference §5.4).

The master holds a lease row in `ACTIVEMQ_LOCK` for `lockAcquireSleepInterval` ms and renews it
every `lockKeepAlivePeriod`; slaves poll for an expired lease.  Where FerryMQ differs:

* Every lease time is the database's clock (``postgres_fence.DB_NOW_MS``), so brokers' clocks
  never matter and `maxAllowableDiffFromDBTime` only makes the locker warn about a skewed host.
* A keep-alive period that cannot renew the lease before it expires (>= the lease, or 0) is what
  ActiveMQ merely warns about, and it lets a slave take over from a live master.  FerryMQ renews
  at half the lease instead (ActiveMQ's recommended 5000/10000) and says so once.
* Each acquisition takes a new epoch; ``fence()`` hands (holder, epoch) to the ``PostgresStore``,
  which checks it in every write transaction, so a master paused past its lease cannot write
  after a successor took over, even one with the same holder id.
* ``keep_alive`` extends only an unexpired lease: a master that was paused past its lease steps
  down even if nobody took over yet, as its store's fence would refuse its writes anyway.  A
  dropped connection is retried once before the lease counts as lost.
* A new master terminates the store sessions of the masters before it, and a slave whose
  acquiring ``UPDATE`` waits on the lock row of an expired lease terminates the session holding
  it (``postgres_fence`` "Fencing out"): a master stopped in mid-transaction cannot hold up the
  takeover, nor block its successor's writes on rows it had locked.
* A slave sleeps until the current lease ends when that comes before the next poll, so takeover
  follows a dead master's lease expiry instead of up to one more interval later.

All database calls use psycopg's async connection on the caller's loop: a handful of small
statements per keep-alive period, none of them on a hot path.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import psycopg

from ferrymq.config.persistence import (
    DatabaseLockerConfig,
    JdbcPersistenceConfig,
    LeaseDatabaseLockerConfig,
)
from ferrymq.ha.locker import LockerError, LockStatus
from ferrymq.store.base import LockLostError
from ferrymq.store.postgres_dsn import conninfo_from_url, describe
from ferrymq.store.postgres_fence import Fence, LockTableSql, TableNames
from ferrymq.store.postgres_schema import SCHEMA_LOCK

_log = logging.getLogger(__name__)

DEFAULT_LOCK_ACQUIRE_SLEEP_INTERVAL_MS = 10000
DEFAULT_LOCK_KEEP_ALIVE_PERIOD_MS = 30000  # JDBCPersistenceAdapter's DEFAULT_LOCK_KEEP_ALIVE_PERIOD
MIN_POLL_MS = 50
"""A slave never polls faster than this, however soon the current lease ends."""


def renewal_period_ms(lease_ms: int, keep_alive_ms: int) -> tuple[int, str | None]:
    """The keep-alive period to use, and why it differs from the configured one (or None)."""
    if 0 < keep_alive_ms < lease_ms:
        return keep_alive_ms, None
    corrected = max(1, lease_ms // 2)
    configured = "0 (never)" if keep_alive_ms <= 0 else f"{keep_alive_ms} ms"
    return corrected, (
        f"lockKeepAlivePeriod {configured} would let the lease of lockAcquireSleepInterval "
        f"{lease_ms} ms expire between renewals (a slave could take over from a live master); "
        f"renewing every {corrected} ms instead"
    )


class LeaseDatabaseLocker:
    """A lease in `<tablePrefix>ACTIVEMQ_LOCK`; implements ``ferrymq.ha.Locker``."""

    def __init__(
        self,
        dsn: str,
        *,
        lease_holder_id: str,
        username: str | None = None,
        password: str | None = None,
        lock_acquire_sleep_interval_ms: int = DEFAULT_LOCK_ACQUIRE_SLEEP_INTERVAL_MS,
        lock_keep_alive_period_ms: int = DEFAULT_LOCK_KEEP_ALIVE_PERIOD_MS,
        max_allowable_diff_from_db_time_ms: int = 0,
        fail_if_locked: bool = False,
        table_prefix: str = "",
        create_tables_on_startup: bool = True,
    ) -> None:
        if lock_acquire_sleep_interval_ms <= 0:
            raise ValueError(
                f"lockAcquireSleepInterval must be > 0 ms, not {lock_acquire_sleep_interval_ms}"
            )
        if not lease_holder_id:
            raise ValueError("leaseHolderId must not be empty")
        self._conninfo = conninfo_from_url(dsn, username=username, password=password)
        self._sql = LockTableSql.for_prefix(table_prefix)
        self._prefix = TableNames(table_prefix).prefix
        self._holder = lease_holder_id
        self._lease_ms = lock_acquire_sleep_interval_ms
        self._keep_alive_ms, correction = renewal_period_ms(
            lock_acquire_sleep_interval_ms, lock_keep_alive_period_ms
        )
        if correction is not None:
            _log.warning("%s: %s", lease_holder_id, correction)
        self._max_diff_ms = max_allowable_diff_from_db_time_ms
        self._fail_if_locked = fail_if_locked
        self._create_tables = create_tables_on_startup
        self._resource = f"{self._sql.table} on {describe(self._conninfo)}"
        self._connection: psycopg.AsyncConnection[tuple[Any, ...]] | None = None
        self._epoch: int | None = None
        self._last_epoch = -1
        self._expires_ms: int | None = None
        self._deadline = 0.0
        """Local monotonic time by which the lease has surely ended (sent before the DB read)."""
        self._current_holder: str | None = None
        self._skew_reported = False
        self._fence_out_refused = False
        self._table_ready = False

    @classmethod
    def from_config(cls, config: JdbcPersistenceConfig, broker_name: str) -> LeaseDatabaseLocker:
        """The locker of a `<jdbcPersistenceAdapter>`; `<database-locker>` (and no locker) map
        here too: a row lock held by an endless transaction cannot fence the store's writes."""
        locker = config.locker
        if not isinstance(locker, LeaseDatabaseLockerConfig | DatabaseLockerConfig | None):
            raise ValueError(f"{type(locker).__name__} is not a database locker")
        lease = locker if isinstance(locker, LeaseDatabaseLockerConfig) else None
        source = config.data_source
        return cls(
            source.url or "",
            lease_holder_id=(lease.lease_holder_id if lease else None) or broker_name,
            username=source.username,
            password=source.password,
            lock_acquire_sleep_interval_ms=(
                locker.lock_acquire_sleep_interval_ms
                if locker
                else DEFAULT_LOCK_ACQUIRE_SLEEP_INTERVAL_MS
            ),
            lock_keep_alive_period_ms=config.lock_keep_alive_period_ms,
            max_allowable_diff_from_db_time_ms=lease.max_allowable_diff_from_db_time_ms
            if lease
            else 0,
            fail_if_locked=locker.fail_if_locked if locker else False,
            table_prefix=config.table_prefix,
            create_tables_on_startup=config.create_tables_on_startup,
        )

    # --- Locker --------------------------------------------------------------------------------

    @property
    def holder_id(self) -> str:
        return self._holder

    @property
    def keep_alive_period_ms(self) -> int:
        return self._keep_alive_ms

    @property
    def lock_acquire_sleep_interval_ms(self) -> int:
        return self._lease_ms

    @property
    def held(self) -> bool:
        """Held, and not expired by the local clock's conservative reckoning."""
        return self._epoch is not None and time.monotonic() < self._deadline

    def fence(self) -> Fence:
        """The lease the ``PostgresStore`` checks in every write transaction; ``LockLostError``
        when there is none (a store may take this method itself and call it as it starts)."""
        if self._epoch is None:
            raise LockLostError(f"{self._holder} does not hold the lease on {self._resource}")
        return Fence(self._holder, self._epoch, self._lease_ms, self._prefix)

    async def acquire(self) -> None:
        waiting_reported = False
        while True:
            delay_ms = self._lease_ms
            try:
                waiting = await self._attempt()
            except psycopg.errors.LockNotAvailable:
                # The lock row is held by a transaction that does not end: a master stopped in
                # the middle of sending one.  Once its lease is over, it is fenced out.
                if await self._fence_out(force=False):
                    continue
            except psycopg.Error as e:
                if self._fail_if_locked:
                    raise LockerError(f"cannot take the lease on {self._resource}: {e}") from e
                _log.warning("%s: lease acquire failure on %s: %s", self._holder, self._resource, e)
            else:
                if waiting is None:
                    await self._fence_out(force=True)
                    return
                holder, remaining_ms = waiting
                if self._fail_if_locked:
                    raise LockerError(
                        f"{self._resource} is locked by {holder} for {remaining_ms} ms more "
                        "and failIfLocked is true"
                    )
                if not waiting_reported:
                    _log.info(
                        "%s: %s is held by %s; waiting as a slave, retrying every %d ms",
                        self._holder,
                        self._resource,
                        holder,
                        self._lease_ms,
                    )
                    waiting_reported = True
                delay_ms = min(self._lease_ms, max(MIN_POLL_MS, remaining_ms + 1))
            await asyncio.sleep(delay_ms / 1000.0)

    async def _attempt(self) -> tuple[str, int] | None:
        """Try once: None when the lease is ours, else who holds it and for how long more."""
        if not self._table_ready:
            await self._ensure_table()
            self._table_ready = True
        sent = time.monotonic()
        params = {
            "holder": self._holder,
            "lease_ms": self._lease_ms,
            "last_epoch": self._last_epoch,
        }
        row = await self._fetch(self._sql.acquire, params)
        if row is None:
            raise LockerError(f"{self._sql.table} has no row with ID 1 ({self._resource})")
        epoch, expires, holder, holder_expires, db_now = row
        self._observe_clock(db_now)
        if epoch is None:
            self._current_holder = holder
            return holder, (holder_expires or 0) - db_now
        self._granted(epoch, expires, db_now, sent)
        _log.info(
            "%s: became master, lease on %s until %d (epoch %d, before: %s)",
            self._holder,
            self._resource,
            expires,
            epoch,
            holder or "nobody",
        )
        return None

    async def _fence_out(self, *, force: bool) -> int:
        """Terminate the store sessions of earlier masters (``postgres_fence`` "Fencing out").

        Best effort: the lease check keeps their writes out regardless, this only keeps a
        stopped master from holding locks its successor needs.
        """
        params = {"wait_ms": min(self._lease_ms, 5000), "force": force}
        try:
            row = await self._fetch(self._sql.fence_out, params)
        except psycopg.errors.InsufficientPrivilege as e:
            if not self._fence_out_refused:
                self._fence_out_refused = True
                _log.warning(
                    "%s: cannot terminate an earlier master's sessions (%s); a master stopped "
                    "mid-transaction delays the takeover until it resumes",
                    self._holder,
                    e,
                )
            return 0
        except psycopg.Error as e:
            _log.warning("%s: failed to fence out earlier masters: %s", self._holder, e)
            return 0
        terminated = int(row[0]) if row else 0
        if terminated:
            _log.warning(
                "%s: terminated %d store session(s) of an earlier master on %s",
                self._holder,
                terminated,
                self._resource,
            )
        return terminated

    async def keep_alive(self) -> bool:
        if self._epoch is None:
            return False
        params = {"holder": self._holder, "epoch": self._epoch, "lease_ms": self._lease_ms}
        row: tuple[Any, ...] | None = None
        for attempt in (1, 2):  # one reconnect: a dropped connection is not a lost lease
            sent = time.monotonic()
            try:
                row = await self._fetch(self._sql.keep_alive, params)
                break
            except psycopg.OperationalError as e:
                if attempt == 2:
                    return self._lost(f"cannot renew it: {e}")
            except psycopg.Error as e:
                return self._lost(f"cannot renew it: {e}")
        if row is None:
            return self._lost(await self._describe_owner())
        expires, db_now = row
        self._observe_clock(db_now)
        self._granted(self._epoch, expires, db_now, sent)
        return True

    async def release(self) -> None:
        try:
            if self._epoch is not None:
                try:
                    await self._fetch(
                        self._sql.release, {"holder": self._holder, "epoch": self._epoch}
                    )
                    _log.info("%s: released the lease on %s", self._holder, self._resource)
                except psycopg.Error as e:  # it expires by itself
                    _log.warning("%s: failed to release the lease: %s", self._holder, e)
        finally:
            self._epoch = None
            self._expires_ms = None
            await self._disconnect()

    def status(self) -> LockStatus:
        return LockStatus(
            locker="lease-database-locker",
            resource=self._resource,
            holder_id=self._holder,
            held=self.held,
            lease_expires_ms=self._expires_ms,
            current_holder=self._current_holder,
            keep_alive_period_ms=self._keep_alive_ms,
            lock_acquire_sleep_interval_ms=self._lease_ms,
        )

    # --- internals -----------------------------------------------------------------------------

    def _granted(self, epoch: int, expires_ms: int, db_now_ms: int, sent: float) -> None:
        self._epoch = self._last_epoch = epoch
        self._expires_ms = expires_ms
        self._deadline = sent + (expires_ms - db_now_ms) / 1000.0
        self._current_holder = self._holder

    def _lost(self, why: str) -> bool:
        _log.warning(
            "%s: no longer able to keep the lease on %s (%s); giving up being a master",
            self._holder,
            self._resource,
            why,
        )
        self._epoch = None
        self._expires_ms = None
        return False

    async def _describe_owner(self) -> str:
        try:
            row = await self._fetch(self._sql.owner, {})
        except psycopg.Error as e:
            return f"and cannot read the lock row: {e}"
        if row is None:
            return "the lock row is gone"
        holder, expires, epoch, db_now = row
        self._current_holder = holder
        if holder == self._holder and epoch == self._epoch:
            return f"it expired {db_now - expires} ms ago"
        return f"now held by {holder or 'nobody'} (epoch {epoch})"

    def _observe_clock(self, db_now_ms: int) -> None:
        if self._max_diff_ms <= 0 or self._skew_reported:
            return
        diff_ms = int(time.time() * 1000) - db_now_ms
        if abs(diff_ms) > self._max_diff_ms:
            self._skew_reported = True
            _log.warning(
                "%s: this host's clock is %d ms off the database's (maxAllowableDiffFromDBTime "
                "%d ms); lease times are the database's, so nothing needs adjusting",
                self._holder,
                diff_ms,
                self._max_diff_ms,
            )

    async def _connect(self) -> psycopg.AsyncConnection[tuple[Any, ...]]:
        if self._connection is not None and not self._connection.closed:
            return self._connection
        connection = await psycopg.AsyncConnection.connect(
            self._conninfo, autocommit=True, application_name=f"ferrymq lease {self._holder}"
        )
        # Nothing waits on the database for long: a lock wait (the lock row held by a stopped
        # master) is answered by fencing it out; any statement gives up after two leases.
        await connection.execute(
            "SELECT set_config('lock_timeout', %s, false), "
            "set_config('statement_timeout', %s, false)",
            (str(max(100, self._lease_ms // 4)), str(2 * self._lease_ms)),
        )
        self._connection = connection
        return connection

    async def _disconnect(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    async def _fetch(self, query: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        connection = await self._connect()
        try:
            cursor = await connection.execute(query, params)
            return await cursor.fetchone() if cursor.description is not None else None
        except psycopg.OperationalError:
            await self._disconnect()
            raise

    async def _ensure_table(self) -> None:
        connection = await self._connect()
        complete = await self._fetch(self._sql.is_complete, {"table": self._sql.table})
        if complete is not None and complete[0]:
            row = await self._fetch(self._sql.has_row, {})
            if row is not None and row[0]:
                return
        if not self._create_tables:
            raise LockerError(
                f"{self._resource} is missing or incomplete and createTablesOnStartup is false"
            )
        async with connection.transaction():
            await connection.execute(SCHEMA_LOCK)
            for statement in self._sql.create:
                await connection.execute(statement)
