"""Why a broker cannot start."""

from __future__ import annotations


class BrokerStartError(Exception):
    """The broker cannot start; the message says what and where."""


class BrokerStoreBusyError(BrokerStartError):
    """The store is held by another process (a paused or deposed master): a broker that holds
    the group's lock may retry the start later, unlike after any other start failure."""
