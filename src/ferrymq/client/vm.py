"""``vm://NAME``: a connection to a broker running in this process (``ferrymq.util.vm``).

It is a ``TcpTransport`` over one end of a socket pair that the broker hands out, so framing,
heart-beats and flow control are exactly those of a TCP connection; only the connect differs.

The URL takes the options of ActiveMQ's VM transport (ActiveMQ documentation, "VM Transport
Reference"), with one difference: ActiveMQ creates a broker when none of that name exists
(``create=true``, its default), FerryMQ never does. A broker started by a connection URL is the
trap ActiveMQ's own FAQ warns about ("The vm transport starts a broker before my configured
broker starts"); here the application starts its broker (``ferrymq.embedded``, docs/embedding.md)
and a missing one is an error that says so.

- ``create``: ``false`` says the broker must exist (as in ActiveMQ); ``true`` is accepted, and
  only changes the error's explanation when the broker is missing.
- ``waitForStart=MS``: wait up to MS milliseconds for the broker to register (-1 or 0: don't).
- ``marshal``, ``async``, ``wireFormat``, ``wireFormat.*``: how ActiveMQ passes commands
  between two objects of one JVM; a FerryMQ vm connection always carries STOMP frames over its
  socket pair, so they have nothing to change. Accepted and logged at DEBUG.
- ``broker.*``, ``brokerConfig``: how ActiveMQ configures the broker it creates. FerryMQ creates
  none, and ActiveMQ ignores them too when the broker exists. Accepted and logged at DEBUG.
- Anything else is an error naming it, with a suggestion. That includes ``jms.*`` (ActiveMQ's
  connection factory settings: prefetch, async sends, redelivery): they would change what the
  client does, so ignoring them silently would be worse than refusing them, as ``tcp://`` does.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
from dataclasses import dataclass

from ferrymq.client.commands import ConnectionInfo
from ferrymq.client.errors import BrokerURLError, ConnectFailedError
from ferrymq.client.tcp import TcpTransport
from ferrymq.client.tcp_options import TcpOptions
from ferrymq.util import vm
from ferrymq.util.uri import URI

log = logging.getLogger(__name__)

NO_EFFECT = ("marshal", "async", "wireFormat")
"""ActiveMQ VM transport options with no meaning over a socket pair that carries STOMP."""
NO_EFFECT_PREFIXES = ("wireFormat.", "broker.")
CREATION = ("brokerConfig",)
"""Options of the broker ActiveMQ creates on demand; FerryMQ creates none."""
OPTION_NAMES = ("create", "waitForStart", *NO_EFFECT, *CREATION)


@dataclass(frozen=True, slots=True)
class VmOptions:
    """The options a ``vm://`` URL may carry, by their ActiveMQ names."""

    create: bool = True
    """``create``: false says the broker must already run in this process."""
    wait_for_start_ms: int = -1
    """``waitForStart``: how long to wait for the broker to register (-1 or 0: not at all)."""


def vm_options(uri: URI) -> VmOptions:
    """Check a ``vm://NAME`` URL and read its options; anything unknown is an error naming it."""
    raw = uri.raw or str(uri)
    if not uri.host:
        raise BrokerURLError("a broker name is required (vm://NAME)", url=raw, part=raw)
    if uri.path not in ("", "/"):
        raise BrokerURLError("a vm:// URL has no path (vm://NAME)", url=raw, part=uri.path)
    options = VmOptions()
    for name, value in uri.query.items():
        if name == "create":
            options = VmOptions(_boolean(name, value, raw), options.wait_for_start_ms)
        elif name == "waitForStart":
            options = VmOptions(options.create, _milliseconds(name, value, raw))
        elif name in NO_EFFECT or name.startswith(NO_EFFECT_PREFIXES) or name in CREATION:
            log.debug(
                "%s: option %s=%s has no effect in FerryMQ (docs/embedding.md)", raw, name, value
            )
        else:
            close = difflib.get_close_matches(name, OPTION_NAMES, n=1)
            hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(OPTION_NAMES)}"
            raise BrokerURLError(f"unknown option {name!r} for vm: ({hint})", url=raw, part=name)
    return options


def _boolean(name: str, value: str, raw: str) -> bool:
    if value.lower() not in ("true", "false"):
        message = f"option {name} must be true or false, got {value!r}"
        raise BrokerURLError(message, url=raw, part=name)
    return value.lower() == "true"


def _milliseconds(name: str, value: str, raw: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -2
    if number < -1:
        message = f"option {name} must be milliseconds (-1: don't wait), got {value!r}"
        raise BrokerURLError(message, url=raw, part=name)
    return number


class VmTransport(TcpTransport):
    def __init__(self, uri: URI, info: ConnectionInfo) -> None:
        self._vm_options = vm_options(uri)
        super().__init__(uri, info, TcpOptions(connection_timeout_s=None))
        self._name = uri.host or ""
        self._url = f"vm://{self._name}"

    @property
    def vm_options(self) -> VmOptions:
        return self._vm_options

    async def _connect_socket(self) -> None:
        wait_ms = self._vm_options.wait_for_start_ms
        if wait_ms > 0:
            await vm.wait_registered(self._name, wait_ms / 1000)
        sock = await vm.open_socket(self._name)
        if sock is None:
            raise ConnectFailedError(self._missing(wait_ms), url=self._url)
        self._reader, self._writer = await asyncio.open_connection(sock=sock)

    def _missing(self, wait_ms: int) -> str:
        """Why there is no connection: no broker of that name, and what to do about it."""
        what = f"no broker named {self._name!r} runs in this process"
        if wait_ms > 0:
            what += f" (waited waitForStart={wait_ms} ms)"
        if not self._vm_options.create:
            return f"{what}; start it before connecting, or wait for it with waitForStart=MS"
        return (
            f"{what}; FerryMQ does not create a broker on demand as ActiveMQ's vm:// does: "
            "start one first (ferrymq.embedded, docs/embedding.md)"
        )

    def _configure_socket(self) -> None:
        """A socket pair has no TCP options."""
