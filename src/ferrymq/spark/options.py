"""The options of ``format("ferrymq")``, read strictly, and the connection options that the
source and the sink share.

Spark hands a data source its options as strings under case-insensitive names (``dict`` of
them has the names lower-cased), so names are matched without regard to case and every error
names the option as the documentation spells it. An option the reader or writer does not know
is an error too, as ActiveMQ refuses a URL option it has no setter for: a misspelt
``maxMessagePerTrigger`` would otherwise pass silently.

Only parsing happens here: Spark builds readers and writers in several processes (reference
spark.md §1.4), so nothing in this module connects.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from ferrymq.client import ClientError
from ferrymq.client import connect as client_connect
from ferrymq.client.blocking import BlockingConnection, connect

URL: Final = "url"
DESTINATION: Final = "destination"
LOGIN: Final = "login"
PASSCODE: Final = "passcode"
CLIENT_ID: Final = "clientId"
CONNECT_TIMEOUT_MS: Final = "connectTimeoutMs"
CONNECTION_OPTIONS: Final = (URL, DESTINATION, LOGIN, PASSCODE, CLIENT_ID, CONNECT_TIMEOUT_MS)
"""The options ``read_connection_options`` consumes."""

DEFAULT_CONNECT_TIMEOUT_MS: Final = 30_000
DESTINATION_PREFIXES: Final = ("/queue/", "/topic/")


@dataclass(eq=False)
class OptionError(ValueError):
    """An option of ``format("ferrymq")`` that is missing, malformed or unknown."""

    option: str
    message: str

    def __str__(self) -> str:
        return f"ferrymq option {self.option!r}: {self.message}"


class OptionReader:
    """The options Spark passed, looked up by their documented names (any case).

    Each read marks the option as used; ``refuse_unknown`` then reports whatever is left.
    """

    def __init__(self, options: Mapping[str, str]) -> None:
        self._values = {name.lower(): value for name, value in options.items()}
        self._used: set[str] = set()

    def text(self, name: str, *, required: bool = False) -> str | None:
        """The option's value; an empty value counts as absent."""
        self._used.add(name.lower())
        value = self._values.get(name.lower())
        if value is None or value == "":
            if required:
                raise OptionError(name, "is required")
            return None
        return value

    def required(self, name: str) -> str:
        value = self.text(name, required=True)
        assert value is not None
        return value

    def integer(self, name: str, default: int, *, minimum: int = 1) -> int:
        number = self.optional_integer(name, minimum=minimum)
        return default if number is None else number

    def optional_integer(self, name: str, *, minimum: int = 1) -> int | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            number = int(value.strip())
        except ValueError:
            raise OptionError(name, f"must be an integer, got {value!r}") from None
        if number < minimum:
            raise OptionError(name, f"must be at least {minimum}, got {number}")
        return number

    def boolean(self, name: str, default: bool) -> bool:
        value = self.text(name)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise OptionError(name, f"must be true or false, got {value!r}")
        return lowered == "true"

    def refuse_unknown(self, known: Iterable[str]) -> None:
        """Raise for the first option that was never read; ``known`` (every documented name)
        supplies the suggestion."""
        for name in sorted(set(self._values) - self._used):
            spellings = {option.lower(): option for option in known}
            close = difflib.get_close_matches(name, list(spellings), n=1)
            hint = f" (did you mean {spellings[close[0]]!r}?)" if close else ""
            raise OptionError(name, f"unknown option{hint}")


@dataclass(frozen=True, slots=True)
class ConnectionOptions:
    """Where the broker is and who we are: the options the source and the sink share."""

    url: str
    """A client URL: ``tcp://h:61613``, ``failover:(tcp://a:61613,tcp://b:61613)``, ..."""
    destination: str
    """``/queue/NAME`` or ``/topic/NAME``."""
    login: str | None = None
    passcode: str | None = None
    client_id: str | None = None
    """The connection's ``client-id`` (needed by a durable topic subscription)."""
    connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS

    @property
    def is_topic(self) -> bool:
        return self.destination.startswith("/topic/")

    def connect(self) -> BlockingConnection:
        """A blocking connection (it owns a client loop thread until disconnected)."""
        return connect(
            self.url,
            login=self.login,
            passcode=self.passcode,
            client_id=self.client_id,
            connect_timeout=self.connect_timeout_ms / 1000,
        )


def read_connection_options(
    reader: OptionReader, *, destination_required: bool = True
) -> ConnectionOptions:
    """The connection options; without ``destination_required`` a missing ``destination``
    reads as ``""`` (a sink whose rows name their own)."""
    url = reader.required(URL)
    try:
        client_connect(url)  # the client's own check (scheme, URL options); opens nothing
    except ClientError as exc:
        raise OptionError(URL, str(exc)) from None
    destination = reader.text(DESTINATION, required=destination_required) or ""
    if destination and (
        not destination.startswith(DESTINATION_PREFIXES) or destination in DESTINATION_PREFIXES
    ):
        raise OptionError(DESTINATION, f"must be /queue/NAME or /topic/NAME, got {destination!r}")
    return ConnectionOptions(
        url=url,
        destination=destination,
        login=reader.text(LOGIN),
        passcode=reader.text(PASSCODE),
        client_id=reader.text(CLIENT_ID),
        connect_timeout_ms=reader.integer(CONNECT_TIMEOUT_MS, DEFAULT_CONNECT_TIMEOUT_MS),
    )
