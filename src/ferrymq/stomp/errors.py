"""Whose fault it was: the peer's (RemoteProtocolError) or ours (LocalProtocolError)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(eq=False)
class RemoteProtocolError(Exception):
    """The peer broke the protocol.

    The broker answers with an ERROR frame whose ``message`` header is ``message`` (and
    ``receipt-id`` is ``receipt_id`` when the offending frame asked for a receipt); if ``fatal``,
    it then closes the connection.

    ``events`` holds what was decoded from the same call before the fault. They are valid and
    came first on the wire, so handle them before answering the error. After a non-fatal error
    the frames that followed the bad one are kept; call ``receive_data(b"")`` to get them.
    """

    message: str
    receipt_id: str | None = None
    fatal: bool = True
    events: tuple[object, ...] = ()

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


@dataclass(eq=False)
class LocalProtocolError(Exception):
    """We asked for something the protocol cannot express (a bug in the caller)."""

    message: str

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message
