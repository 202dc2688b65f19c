"""What one ``ferrymq bench`` run is asked to do, as picklable records for the worker processes."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

DEFAULT_PORT = 61613
AMQP_PORT = 5672
AMQP_SCHEMES = ("amqp", "amqps", "amqp+ssl")
URL_SCHEMES = ("tcp", "stomp", "ssl", "stomp+ssl", *AMQP_SCHEMES)
TLS_SCHEMES = ("ssl", "stomp+ssl", "amqps", "amqp+ssl")
STOMP = "stomp"
AMQP = "amqp"


class BenchOptionError(ValueError):
    """An option that cannot work; the message names it."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the broker listens and how to log in."""

    host: str
    port: int
    login: str | None = None
    passcode: str | None = None
    tls: str | None = None
    """An ``ssl://`` URL's query: its TLS options (``trustStore=...``, ``ferrymq.client.tls``);
    None for plain TCP."""
    protocol: str = STOMP
    """``stomp`` or ``amqp`` (AMQP 1.0, from an ``amqp://`` or ``amqps://`` URL)."""

    @property
    def url(self) -> str:
        if self.protocol == AMQP:
            return f"{'amqp' if self.tls is None else 'amqps'}://{self.host}:{self.port}"
        return f"{'tcp' if self.tls is None else 'ssl'}://{self.host}:{self.port}"


def tls_query(text: str) -> str | None:
    """The TLS options of an ``ssl://`` (``stomp+ssl://``) URL, None for a plain one."""
    parts = urlsplit(text.strip())
    return parts.query if parts.scheme.lower() in TLS_SCHEMES else None


def protocol_of(text: str) -> str:
    """``amqp`` for an ``amqp://``/``amqps://`` URL, else ``stomp``."""
    scheme = text.strip().split("://", 1)[0].lower() if "://" in text else ""
    return AMQP if scheme in AMQP_SCHEMES else STOMP


def parse_url(text: str) -> tuple[str, int]:
    """``tcp://host:port``, ``stomp://host:port`` or ``host:port`` (port defaults to 61613);
    ``ssl://host:port?trustStore=...`` over TLS; ``amqp://host:port`` (port defaults to 5672)
    and ``amqps://`` for AMQP 1.0."""
    raw = text.strip()
    if "://" not in raw:
        raw = f"tcp://{raw}"
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise BenchOptionError(f"bad broker URL {text!r}: {exc}") from None
    if parts.scheme not in URL_SCHEMES:
        raise BenchOptionError(
            f"bad broker URL {text!r}: the scheme must be one of {', '.join(URL_SCHEMES)}"
        )
    if not parts.hostname:
        raise BenchOptionError(f"bad broker URL {text!r}: no host")
    default = AMQP_PORT if parts.scheme in AMQP_SCHEMES else DEFAULT_PORT
    return parts.hostname, default if port is None else port


@dataclass(frozen=True, slots=True)
class BenchOptions:
    """Every knob of a run. Counts are per scenario; latency has its own."""

    endpoint: Endpoint
    scenarios: tuple[str, ...]
    dialect: str = "auto"
    """``auto`` (from CONNECTED's ``server`` header), ``activemq``, ``rabbitmq`` or ``coilmq``."""
    count: int = 100_000
    """Measured messages per throughput scenario (ignored when ``duration_s`` is set)."""
    warmup: int = 10_000
    """Messages sent and received before the clock starts."""
    duration_s: float | None = None
    """Send for this long instead of a fixed count."""
    max_seconds: float | None = None
    """Stop a throughput scenario's producer after this long even if the count is not reached
    (so one slow broker cannot make a comparison run for hours)."""
    size: int = 256
    """Body bytes per message."""
    window: int = 1000
    """Outstanding receipts the persistent producer allows."""
    subscribers: int = 4
    """Topic subscribers, each in its own process."""
    prefetch: int | None = None
    """Consumer prefetch; None keeps each broker's default (RabbitMQ client acks get 1000)."""
    latency_samples: int = 2000
    latency_warmup: int = 200
    latency_rate: float = 500.0
    """Messages per second in the latency scenario."""
    idle_timeout_s: float = 30.0
    """A consumer that receives nothing for this long gives up and reports what is missing."""
    linger_s: float = 0.2
    """How long a consumer keeps listening after the last expected message, to catch duplicates."""
    name_prefix: str = "ferrymq.bench"
    broker_pids: tuple[int, ...] = ()
    """Read these processes' CPU time around each scenario (Linux /proc)."""
    consumer_endpoint: Endpoint | None = None
    """Where the consumers connect; None: ``endpoint``. Another broker measures the path
    through a network bridge."""
    label: str | None = None
    """How the report names the broker (default: its ``server`` header)."""
    admin_url: str | None = None
    """FerryMQ's admin API (``http://host:port``), through which the run removes the
    destinations it created; None: the default admin port on the broker's host, if the broker
    is FerryMQ."""
    admin_headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """Sent with each admin API request (a secured broker's basic auth)."""
    cleanup: bool = True
    """Remove the run's destinations at the end (see ``ferrymq.bench.cleanup``)."""

    def check(self) -> None:
        """Raise ``BenchOptionError`` for values no run can use."""
        positive = {
            "--count": self.count,
            "--size": self.size,
            "--window": self.window,
            "--subscribers": self.subscribers,
            "--latency-samples": self.latency_samples,
        }
        for flag, value in positive.items():
            if value < 1:
                raise BenchOptionError(f"{flag} must be at least 1, got {value}")
        if self.size < BODY_SEQ_BYTES:
            raise BenchOptionError(f"--size must be at least {BODY_SEQ_BYTES} bytes")
        for flag, number in (("--warmup", self.warmup), ("--latency-warmup", self.latency_warmup)):
            if number < 0:
                raise BenchOptionError(f"{flag} must not be negative, got {number}")
        if self.latency_rate <= 0:
            raise BenchOptionError("--latency-rate must be positive")
        if self.duration_s is not None and self.duration_s <= 0:
            raise BenchOptionError("--duration must be positive")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise BenchOptionError("--max-seconds must be positive")
        if self.prefetch is not None and self.prefetch < 1:
            raise BenchOptionError("--prefetch must be at least 1")
        if self.idle_timeout_s <= 0:
            raise BenchOptionError("--timeout must be positive")


BODY_SEQ_BYTES = 12
"""Every body starts with its sequence number as 12 ASCII digits, so any broker carries it."""
