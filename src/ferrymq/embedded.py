"""A broker inside an application: started in the application's event loop, reached over ``vm://``.

ActiveMQ applications embed a broker (ActiveMQ documentation, "How do I embed a Broker inside a
Connection", and "VM Transport Reference") and talk to it without a socket. FerryMQ's
equivalent is ``embedded_broker``, an async context manager around ``ferrymq.broker.Broker``
(the same broker ``ferrymq broker`` runs) that takes an activemq.xml file or text, or nothing
at all, and stops the broker on exit::

    async with embedded_broker(xml=CONFIG) as broker:
        async with ferrymq.client.connect("vm://local?create=false") as conn:
            ...

Every broker of the process is reachable as ``vm://<brokerName>`` (and ``vm://<brokerId>``); a
``<transportConnector uri="vm://NAME"/>`` adds NAME. Its TCP listeners, if the file has any,
serve other processes at the same time. docs/embedding.md is the user's guide.

It differs from ``ferrymq broker`` in what an application expects of a library: no admin HTTP
listener unless asked for (``admin="127.0.0.1:8161"``), no default TCP listener, no signal
handlers, and two brokers of one process may not share a name (each must be its
``vm://<brokerName>``). ``<broker start="false">`` is not honoured: entering the context is the
start that the flag leaves to the application in ActiveMQ.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from pathlib import Path

from ferrymq.broker import Broker
from ferrymq.config.activemq_xml import load_config, parse_config
from ferrymq.config.cli import parse_admin
from ferrymq.config.errors import ConfigError
from ferrymq.config.model import BrokerConfig
from ferrymq.config.persistence import KahaDBConfig
from ferrymq.service.errors import BrokerStartError
from ferrymq.util import vm

__all__ = [
    "Broker",
    "BrokerStartError",
    "ConfigError",
    "embedded_broker",
    "embedded_config",
    "running_broker",
]

SOURCE = "embedded configuration"
"""How errors name a configuration given as text."""


def embedded_config(
    config_file: str | os.PathLike[str] | None = None,
    *,
    xml: str | None = None,
    name: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    persistent: bool | None = None,
    admin: str = "off",
    properties: Mapping[str, str] | None = None,
) -> BrokerConfig:
    """The configuration ``embedded_broker`` starts, from an activemq.xml file or text (not
    both), or the defaults; the keywords override it as ``ferrymq broker``'s flags do.

    ``data_dir`` is also ``${activemq.data}`` for the file; ``persistent`` None keeps the
    file's (default true: SQLite under ``data_dir``); ``admin`` is ``host:port`` or ``off``;
    ``properties`` are ``${name}`` placeholder values. Raises ``ConfigError``.
    """
    if config_file is not None and xml is not None:
        raise ValueError("give a configuration file or xml text, not both")
    values = dict(properties or {})
    if data_dir is not None:
        values.setdefault("activemq.data", os.fspath(data_dir))
    if xml is not None:
        config = parse_config(xml, SOURCE, values)
    elif config_file is not None:
        config = load_config(Path(config_file), values)
    else:
        config = BrokerConfig(source=None)
    if name is not None:
        config = replace(config, broker_name=name)
    if data_dir is not None:
        config = replace(config, data_directory=Path(data_dir))
    if persistent is False:
        config = replace(config, persistent=False, persistence=None)
    elif persistent and config.persistence is None:
        config = replace(config, persistent=True, persistence=KahaDBConfig())
    return replace(config, admin=parse_admin(admin))


@contextlib.asynccontextmanager
async def embedded_broker(
    config_file: str | os.PathLike[str] | None = None,
    *,
    xml: str | None = None,
    name: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    persistent: bool | None = None,
    admin: str = "off",
    properties: Mapping[str, str] | None = None,
) -> AsyncIterator[Broker]:
    """Start a broker in the running event loop (arguments as ``embedded_config``); stop it
    on exit. It serves when entered, unless it is the slave of a master/slave group: then
    ``broker.became_master`` is set when it takes over. Raises ``ConfigError`` for a bad
    configuration and ``BrokerStartError`` when it cannot start."""
    config = embedded_config(
        config_file,
        xml=xml,
        name=name,
        data_dir=data_dir,
        persistent=persistent,
        admin=admin,
        properties=properties,
    )
    if vm.lookup(config.broker_name) is not None:
        raise BrokerStartError(
            f"a broker named {config.broker_name!r} already runs in this process, and "
            f"vm://{config.broker_name} would not reach this one (give each its own brokerName)"
        )
    async with running_broker(config) as broker:
        yield broker


@contextlib.asynccontextmanager
async def running_broker(config: BrokerConfig) -> AsyncIterator[Broker]:
    """A broker started from a ready configuration in the running loop, stopped on exit."""
    broker = Broker(config)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop()
