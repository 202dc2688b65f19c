"""``ferrymq broker``: run a broker until SIGINT or SIGTERM.

Prints one line per listener to standard output (``listening stomp://HOST:PORT``, or
``listening amqp://HOST:PORT`` for an AMQP listener) and one for the admin API, so scripts and
tests can find ports chosen with port 0.

Exit status: 0 after a stop by SIGINT or SIGTERM; 1 when the broker cannot start or ends because
of a failure (its store failed, its role loop failed, shutdownOnSlaveFailure or
shutdownOnMasterFailure), so that a supervisor's ``Restart=on-failure`` restarts it; 2 for a
configuration or command-line error.  Whatever keeps the broker from starting is one line on
standard error, ``ferrymq broker: cannot start: WHAT (HOW TO FIX)``; the traceback behind it is
logged only at ``--log-level DEBUG``.  SIGINT and SIGTERM stop it cleanly at any time, a master
still waiting for its slave (``waitForSlave``) included.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from ferrymq.broker import Broker, Role, wait_first
from ferrymq.cli.admin_client import FORMS, AdminAddressError, admin_listen_address
from ferrymq.cli.properties import add_properties_option
from ferrymq.config.cli import config_from_flags
from ferrymq.config.errors import ConfigError
from ferrymq.service.errors import BrokerStartError
from ferrymq.transport.tls import TlsError

log = logging.getLogger(__name__)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "broker", help="run a broker", description="Run a FerryMQ broker until SIGINT/SIGTERM."
    )
    parser.add_argument(
        "--config", type=Path, help="an activemq.xml (or ActiveMQ Artemis broker.xml) file"
    )
    parser.add_argument("--name", help="broker name (default: the file's, else localhost)")
    parser.add_argument("--broker-id", help="broker id (default: generated at each start)")
    parser.add_argument("--data", type=Path, help="data directory (default: ./data)")
    parser.add_argument(
        "--listen",
        action="append",
        default=[],
        metavar="URI",
        help=(
            "add a listener: STOMP (stomp://127.0.0.1:61613) or AMQP 1.0 (amqp://127.0.0.1:5672);"
            " repeatable; port 0 = any"
        ),
    )
    parser.add_argument(
        "--admin", help=f"admin HTTP listener: {FORMS} or off (default 127.0.0.1:8161)"
    )
    parser.add_argument(
        "--admin-group",
        metavar="NAME",
        help="with authentication configured, the group allowed the admin API's write "
        "operations (default admins; any user may read)",
    )
    parser.add_argument(
        "--admin-open-metrics",
        action="store_true",
        help="serve the admin API's /metrics without a login (for a scraper without credentials)",
    )
    parser.add_argument(
        "--non-persistent",
        action="store_true",
        help='keep messages in memory only (like <broker persistent="false">)',
    )
    parser.add_argument(
        "--trace",
        type=Path,
        metavar="DIR",
        help="write the message trace (JSON lines, read by `ferrymq audit`) into DIR",
    )
    add_properties_option(parser, "a ${NAME} placeholder value for the configuration file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    properties = dict(args.properties)
    try:
        admin = None if args.admin is None else admin_listen_address(args.admin)
    except AdminAddressError as exc:
        print(f"ferrymq broker: {exc}", file=sys.stderr)
        return 2
    try:
        config = config_from_flags(
            args.name,
            args.data,
            args.listen,
            admin,
            False if args.non_persistent else None,
            broker_id=args.broker_id,
            config_path=args.config,
            properties=properties,
            trace=args.trace,
            admin_group=args.admin_group,
            admin_metrics_open=args.admin_open_metrics,
        )
    except ConfigError as exc:
        print(f"ferrymq broker: {exc}", file=sys.stderr)
        return 2
    log.debug(
        "broker %s: configuration %s; store directory %s",
        config.broker_name,
        args.config.resolve() if args.config is not None else "from the command line only",
        config.store_directory.resolve() if config.store_directory is not None else "none",
    )
    try:
        failure = _run_loop(_serve(config))
    except (BrokerStartError, ConfigError, TlsError) as exc:
        log.debug("the broker cannot start", exc_info=True)
        print(f"ferrymq broker: cannot start: {exc}", file=sys.stderr)
        return 1
    if failure is not None:
        print(
            f"ferrymq broker: {config.broker_name} stopped after a failure: {failure}",
            file=sys.stderr,
        )
        return 1
    return 0


def _run_loop(coro: Any) -> str | None:
    try:
        import uvloop
    except ImportError:
        result: str | None = asyncio.run(coro)
    else:
        result = uvloop.run(coro)
    return result


async def _serve(config: Any) -> str | None:
    """Run until signalled or halted; why the broker failed, or None if it was stopped."""
    broker = Broker(config)
    announcer = asyncio.get_running_loop().create_task(_announce(broker, config.broker_name))
    started = False
    try:
        await _run_until_signalled(broker)
        started = True
    except (BrokerStartError, ConfigError, TlsError):
        raise
    except Exception as exc:  # one line for the user; the traceback at DEBUG
        what = f"{type(exc).__name__}: {exc}"
        raise BrokerStartError(what, "unexpected: --log-level DEBUG shows where") from exc
    finally:
        announcer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await announcer
        await broker.stop()
    if started:
        print(f"broker {config.broker_name} stopped", flush=True)
    return broker.failure


async def _run_until_signalled(broker: Broker) -> None:
    """Start, then serve until SIGINT or SIGTERM or a halt; raises what ``start`` raises.

    The handlers are installed before ``start``, so that a broker still starting (a master
    waiting for its slave, a store being recovered) stops cleanly on a signal too: the start is
    cancelled and undone, its store closed, and the process exits 0.
    """
    loop = asyncio.get_running_loop()
    signalled = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, signalled.set)
    try:
        starting = asyncio.ensure_future(broker.start())
        await wait_first(starting, signalled.wait())
        if not starting.done():
            log.info("broker %s: signalled while starting; stopping", broker.config.broker_name)
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
            return
        starting.result()
        await wait_first(signalled.wait(), broker.halted.wait())
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


async def _announce(broker: Broker, name: str) -> None:
    """Print where the broker listens each time it becomes master, and what it waits for
    otherwise (scripts and tests read these lines)."""
    admin_told = False
    while True:
        role = await broker.next_role_change()
        if not admin_told and broker.admin is not None:
            print(f"admin {broker.admin.url}", flush=True)
            admin_told = True
        if role.serving:
            for connector, listener in broker.service.served:
                protocol = "amqp" if connector.scheme.lower().startswith("amqp") else "stomp"
                print(f"listening {protocol}://{listener.host}:{listener.port}", flush=True)
            print(f"broker {name} started", flush=True)
        elif role is Role.WAITING:
            lock = broker.locker.status().resource if broker.locker is not None else "?"
            print(f"broker {name} is a slave, waiting for the lock {lock}", flush=True)
        elif role is Role.REPLICATING and broker.replica is not None:
            master = broker.replica.remote_uri  # without the passwords of its URL
            print(f"broker {name} is a slave, replicating from {master}", flush=True)
        elif role is Role.WAITING_FOR_SLAVE:
            print(
                f"broker {name} is waiting for its slave (waitForSlave): clients are refused "
                "until it is in sync",
                flush=True,
            )
