"""The brokers of this process, by name, for ``vm://NAME`` (ActiveMQ's VM transport registry).

A broker registers an opener under its broker id and, when no other broker of the process uses
it, its broker name; a ``<transportConnector uri="vm://NAME"/>`` registers NAME as well. The
opener returns one end of a connected socket pair whose other end the broker serves like any
accepted connection, so an in-process client (a network bridge's local side, an embedded
application) speaks the same STOMP as a remote one without opening a port.

Each name remembers the event loop its broker runs on. A client on another loop (the blocking
client's thread, an application thread) has the opener run on the broker's loop, so the broker's
side of the pair is only ever touched by the broker's loop; the client keeps its end.
``wait_registered`` is ActiveMQ's ``waitForStart``: a client may ask for a broker that has not
registered yet and wait for it, woken by ``register`` from whichever thread that runs on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

VmOpener = Callable[[], Awaitable[socket.socket]]


@dataclass(frozen=True, slots=True)
class _Entry:
    opener: VmOpener
    loop: asyncio.AbstractEventLoop


_entries: dict[str, _Entry] = {}
_waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}
_lock = threading.Lock()
"""Brokers and clients of one process may run on different threads' loops."""


def register(names: tuple[str, ...], opener: VmOpener) -> tuple[str, ...]:
    """Register ``opener``, served on the running loop, under each free name; returns the names
    it got. Clients waiting for one of them (``waitForStart``) are woken."""
    loop = asyncio.get_running_loop()
    taken: list[str] = []
    woken: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
    with _lock:
        for name in names:
            if name and name not in _entries:
                _entries[name] = _Entry(opener, loop)
                taken.append(name)
                woken.extend(_waiters.pop(name, ()))
    for waiter_loop, future in woken:
        # A waiter's loop that has closed meanwhile has nobody left to wake.
        with contextlib.suppress(RuntimeError):
            waiter_loop.call_soon_threadsafe(_wake, future)
    return tuple(taken)


def unregister(names: tuple[str, ...], opener: VmOpener) -> None:
    with _lock:
        for name in names:
            entry = _entries.get(name)
            # ``==``, not ``is``: a bound method (``broker.open_vm_socket``) is a new object at
            # every attribute access, so ``is`` never matched and a stopped broker kept its names.
            if entry is not None and entry.opener == opener:
                del _entries[name]


def lookup(name: str) -> VmOpener | None:
    with _lock:
        entry = _entries.get(name)
    return None if entry is None else entry.opener


async def wait_registered(name: str, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for a broker to register ``name``; whether one has."""
    loop = asyncio.get_running_loop()
    with _lock:
        if name in _entries:
            return True
        if timeout_s <= 0:
            return False
        future: asyncio.Future[None] = loop.create_future()
        _waiters.setdefault(name, []).append((loop, future))
    try:
        async with asyncio.timeout(timeout_s):
            await future
    except TimeoutError:
        pass
    finally:
        with _lock:
            waiting = _waiters.get(name, [])
            with contextlib.suppress(ValueError):
                waiting.remove((loop, future))
            if not waiting:
                _waiters.pop(name, None)
    with _lock:
        return name in _entries


async def open_socket(name: str) -> socket.socket | None:
    """A new connection to the broker registered as ``name`` (None: there is none): the
    client's end of a socket pair whose other end the broker serves."""
    with _lock:
        entry = _entries.get(name)
    if entry is None or entry.loop.is_closed():
        return None
    if entry.loop is asyncio.get_running_loop():
        return await entry.opener()
    done = asyncio.run_coroutine_threadsafe(_open(entry.opener), entry.loop)
    try:
        return await asyncio.wrap_future(done)
    except asyncio.CancelledError:
        # The broker's loop may have opened the pair already: close our end, not leak it.
        done.add_done_callback(_close_result)
        raise


async def _open(opener: VmOpener) -> socket.socket:
    return await opener()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _close_result(done: concurrent.futures.Future[socket.socket]) -> None:
    if not done.cancelled() and done.exception() is None:
        done.result().close()
