"""Errors the core reports to whoever called it; the service turns them into ERROR frames."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BrokerError(Exception):
    """A request the broker refuses.  ``message`` is shown to the client as is."""

    message: str
    fatal: bool = True
    """The connection is closed after the ERROR (protocol misuse), or kept (a refused send)."""

    def __str__(self) -> str:
        return self.message
