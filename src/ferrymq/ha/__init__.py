"""Master/slave roles: lock-based (shared file, shared database) and replicated.

The database locker is imported on first use (PEP 562): it needs psycopg, the `postgres` extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ferrymq.ha.locker import Locker, LockerError, LockStatus

if TYPE_CHECKING:
    from ferrymq.ha.lease import LeaseDatabaseLocker

_LAZY = {"LeaseDatabaseLocker": "ferrymq.ha.lease"}

__all__ = ["LeaseDatabaseLocker", "LockStatus", "Locker", "LockerError"]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
