"""Durable storage for the broker: the ``MessageStore`` protocol and its backends.

The backends are imported on first use (PEP 562): ``core`` imports ``ferrymq.store.base`` for the
records and must not pull in asyncio or threading through this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ferrymq.store.base import (
    DEFAULT_PRODUCER_ID_WINDOW,
    AddDestination,
    AddDurableSubscription,
    AddMessage,
    ContainerState,
    DurableSubscriptionRecord,
    LockLostError,
    MarkDelivered,
    MessageStore,
    PurgeContainer,
    Recovery,
    RemoveDestination,
    RemoveDurableSubscription,
    RemoveMessage,
    StoreBusyError,
    StoredMessage,
    StoreError,
    StoreOp,
    StoreStatistics,
)

if TYPE_CHECKING:
    from ferrymq.store.lockfile import LockFile
    from ferrymq.store.memory import MemoryStorage, MemoryStore
    from ferrymq.store.postgres import PostgresStore
    from ferrymq.store.sqlite import SqliteStore

_LAZY = {
    "LockFile": "ferrymq.store.lockfile",
    "MemoryStorage": "ferrymq.store.memory",
    "MemoryStore": "ferrymq.store.memory",
    "PostgresStore": "ferrymq.store.postgres",
    "SqliteStore": "ferrymq.store.sqlite",
}

__all__ = [
    "DEFAULT_PRODUCER_ID_WINDOW",
    "AddDestination",
    "AddDurableSubscription",
    "AddMessage",
    "ContainerState",
    "DurableSubscriptionRecord",
    "LockFile",
    "LockLostError",
    "MarkDelivered",
    "MemoryStorage",
    "MemoryStore",
    "MessageStore",
    "PostgresStore",
    "PurgeContainer",
    "Recovery",
    "RemoveDestination",
    "RemoveDurableSubscription",
    "RemoveMessage",
    "SqliteStore",
    "StoreBusyError",
    "StoreError",
    "StoreOp",
    "StoreStatistics",
    "StoredMessage",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
