"""A `BrokerConfig` from command-line flags, with or without an activemq.xml file.

`ferrymq broker --name b1 --data-dir /var/lib/ferrymq --listen stomp://0.0.0.0:61613` needs no
file. With `--config`, the file is loaded first; then `--name` and `--data-dir` override it and
each `--listen` adds a listener. The data directory is also passed to the file as
`${activemq.data}`, so a `<kahaDB directory="${activemq.data}/kahadb"/>` follows the flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ferrymq.config.activemq_xml import load_config
from ferrymq.config.errors import ConfigError
from ferrymq.config.model import (
    AdminConfig,
    BrokerConfig,
    MessageTraceConfig,
    TransportConnectorConfig,
)
from ferrymq.config.persistence import KahaDBConfig
from ferrymq.config.xml_document import Element, LoadContext
from ferrymq.config.xml_transport import transport_connector
from ferrymq.util.text import is_decimal

__all__ = ["DEFAULT_LISTENER", "config_from_flags", "parse_admin"]

DEFAULT_LISTENER = "stomp://127.0.0.1:61613"
"""The listener of a broker started without a file or `--listen` (STOMP's usual port)."""

_SOURCE = "command line"


def config_from_flags(
    name: str | None = None,
    data_dir: Path | str | None = None,
    listen: Sequence[str] = (),
    admin: str | None = None,
    persistent: bool | None = None,
    *,
    broker_id: str | None = None,
    config_path: Path | None = None,
    properties: Mapping[str, str] | None = None,
    trace: Path | str | None = None,
    admin_group: str | None = None,
    admin_metrics_open: bool = False,
) -> BrokerConfig:
    """Build the configuration for `ferrymq broker`.

    `admin` is `host:port`, `:port`, or `off`; None keeps the file's (or the default
    127.0.0.1:8161). `persistent` None keeps the file's (or true). `properties` are the
    `-D name=value` placeholder values for the file. `trace` switches the message trace on
    into that directory (keeping the file's `<messageTracePlugin>` sizes, if any).
    """
    values = dict(properties or {})
    if data_dir is not None:
        values.setdefault("activemq.data", str(data_dir))
    if config_path is not None:
        base = load_config(config_path, values)
    else:
        base = BrokerConfig(source=None)
    listeners = tuple(_listener(text, index) for index, text in enumerate(listen, start=1))
    if config_path is None and not listeners:
        listeners = (_listener(DEFAULT_LISTENER, 0),)
    config = replace(base, transport_connectors=base.transport_connectors + listeners)
    if name is not None:
        if not name.strip():
            raise ConfigError(_SOURCE, None, "--name", None, "the broker name must not be empty")
        config = replace(config, broker_name=name)
    if broker_id is not None:
        config = replace(config, broker_id=broker_id)
    if data_dir is not None:
        config = replace(config, data_directory=Path(data_dir))
    if admin is not None:
        config = replace(config, admin=parse_admin(admin))
    config = _admin_access(config, admin_group, admin_metrics_open)
    if trace is not None:
        traced = config.message_trace
        config = replace(
            config,
            message_trace=MessageTraceConfig(Path(trace))
            if traced is None
            else replace(traced, directory=Path(trace)),
        )
    if persistent is False:
        config = replace(config, persistent=False, persistence=None)
    elif persistent and config.persistence is None:
        config = replace(config, persistent=True, persistence=KahaDBConfig())
    return config


def _admin_access(config: BrokerConfig, group: str | None, metrics_open: bool) -> BrokerConfig:
    """`--admin-group NAME` and `--admin-open-metrics` (docs/security.md, "Admin API")."""
    if group is not None and not group.strip():
        raise ConfigError(_SOURCE, None, "--admin-group", None, "the group name must not be empty")
    admin = config.admin
    if group is not None:
        admin = replace(admin, admin_group=group.strip())
    if metrics_open:
        admin = replace(admin, metrics_open=True)
    return replace(config, admin=admin)


def parse_admin(text: str) -> AdminConfig:
    """`host:port`, `:port` (loopback), `port`, or `off`; `https://` before any of them
    serves HTTPS with the broker's `<sslContext>` key."""
    if text.strip().lower() in ("off", "none", "no", "false"):
        return AdminConfig(enabled=False)
    scheme, _, address = text.strip().rpartition("://")
    if scheme.lower() not in ("", "http", "https"):
        message = f"expected host:port, https://host:port or off, got {text!r}"
        raise ConfigError(_SOURCE, None, "--admin", None, message)
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not is_decimal(port) or int(port) > 65535:
        message = f"expected host:port, :port or off, got {text!r}"
        raise ConfigError(_SOURCE, None, "--admin", None, message)
    return AdminConfig(enabled=True, host=host, port=int(port), tls=scheme.lower() == "https")


def _listener(text: str, index: int) -> TransportConnectorConfig:
    """A `--listen` URI, checked exactly like a `<transportConnector uri>`."""
    context = LoadContext(_SOURCE, {})
    element = Element("transportConnector", {"uri": text}, index)
    try:
        return replace(transport_connector(context.reader(element)), location=None)
    except ConfigError as error:
        raise ConfigError(_SOURCE, None, f"--listen {text}", None, error.message) from None
