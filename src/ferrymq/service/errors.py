"""Why a broker cannot start, said as ``ferrymq broker`` prints it: what, then how to fix it."""

from __future__ import annotations

import errno
import os
import socket


class BrokerStartError(Exception):
    """The broker cannot start: ``what`` names the resource and the problem, ``fix`` (if known)
    says what the user can do; ``str`` is the one line ``what (fix)``."""

    def __init__(self, what: str, fix: str | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.what} ({self.fix})" if self.fix else self.what


class BrokerStoreBusyError(BrokerStartError):
    """The store is held by another process (a paused or deposed master): a broker that holds
    the group's lock may retry the start later, unlike after any other start failure."""


_BIND_FIXES = {
    errno.EADDRINUSE: "another process listens there, perhaps another broker: stop it or {move}",
    errno.EADDRNOTAVAIL: "the host is not an address of this machine: {move}",
    errno.EACCES: "ports below 1024 need root or CAP_NET_BIND_SERVICE: {move}",
}


def bind_error(what: str, host: str, port: int, exc: OSError, move: str) -> BrokerStartError:
    """A listener that could not bind ``host:port``: the system's reason in plain words, and
    ``move`` (how to choose another address, e.g. "choose another port with --listen")."""
    if isinstance(exc, socket.gaierror) or (exc.errno or 0) < 0:
        # A resolver failure: its errno is a negative EAI_* code, which os.strerror does not
        # know (uvloop raises it as a plain OSError).
        reason = "the host name does not resolve"
        fix = f"use an address or a host name of this machine: {move.replace('port', 'address')}"
        return BrokerStartError(f"{what} cannot listen on {host}:{port}: {reason}", fix)
    reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
    fix = _BIND_FIXES.get(exc.errno or 0, "{move}").format(move=move)
    return BrokerStartError(f"{what} cannot listen on {host}:{port}: {reason}", fix)
