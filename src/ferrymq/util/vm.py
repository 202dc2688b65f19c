"""The brokers of this process, by name, for ``vm://NAME`` (ActiveMQ's VM transport registry).

A broker registers an opener under its broker id and, when no other broker of the process uses
it, its broker name. The opener returns one end of a connected socket pair whose other end the
broker serves like any accepted connection, so an in-process client (a network bridge's local
side, an embedded application) speaks the same STOMP as a remote one without opening a port.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

VmOpener = Callable[[], Awaitable[socket.socket]]

_openers: dict[str, VmOpener] = {}


def register(names: tuple[str, ...], opener: VmOpener) -> tuple[str, ...]:
    """Register ``opener`` under each free name; returns the names it got."""
    taken: list[str] = []
    for name in names:
        if name and name not in _openers:
            _openers[name] = opener
            taken.append(name)
    return tuple(taken)


def unregister(names: tuple[str, ...], opener: VmOpener) -> None:
    for name in names:
        # ``==``, not ``is``: a bound method (``broker.open_vm_socket``) is a new object at
        # every attribute access, so ``is`` never matched and a stopped broker kept its names.
        if _openers.get(name) == opener:
            del _openers[name]


def lookup(name: str) -> VmOpener | None:
    return _openers.get(name)
