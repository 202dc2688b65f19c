"""``ferrymq purge``, ``delete``, ``move``, ``retry``, ``connections`` and ``broker-connections``:
the admin API's write operations from the shell, as ``rabbitmqctl purge_queue``/``delete_queue``/
``close_connection``, ActiveMQ's web console and Artemis's ``startBrokerConnection``/
``stopBrokerConnection`` offer them.

Each verb is one HTTP request to the broker's admin API (``--admin``, read by
``admin_client``, the same spellings as ``ferrymq stat``) and prints one line of what was done.
A refusal (no such queue, a slave, a durable subscription still in use) prints the broker's
own message on one line and exits 1; an ``--admin`` that names no address exits 2.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.parse
from typing import Any

from ferrymq.cli.admin_client import (
    DEFAULT_ADMIN,
    FORMS,
    AdminAddressError,
    AdminCallError,
    AdminCredentialsError,
    AdminTimeoutError,
    add_credential_options,
    admin_base_url,
    admin_request,
    credentials_from,
)

TIMEOUT_S = 120.0
"""A move or a purge of a deep queue is one request: allow it time (reads take far less)."""
_UNFINISHED = (
    "the broker may still be working on it, and a move, copy or retry may have completed in "
    "part (each page of messages is committed on its own): check with `ferrymq stat` before "
    "running it again"
)


class UsageError(Exception):
    """Arguments that argparse cannot check alone (exit 2, as argparse's own)."""


def call(
    args: argparse.Namespace, method: str, path: str, document: dict[str, Any] | None = None
) -> Any:
    return admin_request(
        args.admin_url,
        method,
        path,
        document,
        timeout_s=args.timeout,
        credentials=args.credentials,
    )


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _verb(commands: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=description
    )
    parser.add_argument(
        "--admin",
        default=DEFAULT_ADMIN,
        help=f"the broker's admin API: {FORMS} (default {DEFAULT_ADMIN})",
    )
    add_credential_options(parser)
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for the broker's answer (default {TIMEOUT_S:g})",
    )
    parser.set_defaults(run=run, verb=name)
    return parser


def _selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--selector", help="a JMS selector: only the messages it selects")
    parser.add_argument("--max", type=_positive, metavar="N", help="at most N messages")


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return number


def add_parser(commands: Any) -> None:
    purge = _verb(
        commands, "purge", "remove every message of a queue", "Remove every message of a queue."
    )
    purge.add_argument("queue")
    delete = _verb(
        commands,
        "delete",
        "delete a queue, a topic or a durable subscription",
        "Delete a queue or a topic (its consumers are closed, its messages dropped), or an "
        "inactive durable subscription (with --client-id).",
    )
    delete.add_argument("kind", choices=["queue", "topic", "durable"])
    delete.add_argument("name", help="the destination's name, or the subscription's name")
    delete.add_argument("--client-id", help="the durable subscription's client id")
    move = _verb(
        commands,
        "move",
        "move (or copy) messages from one queue to another",
        "Move the messages of queue SOURCE to queue TARGET, each once, durably.",
    )
    move.add_argument("source")
    move.add_argument("target")
    _selection(move)
    move.add_argument("--copy", action="store_true", help="copy: leave them in SOURCE too")
    retry = _verb(
        commands,
        "retry",
        "send dead letters back to where they were first sent",
        "Send the messages of a dead-letter queue back to their original destinations.",
    )
    retry.add_argument("queue", help="the dead-letter queue (e.g. ActiveMQ.DLQ)")
    _selection(retry)
    connections = _verb(
        commands,
        "connections",
        "list client connections, or close one",
        "List the broker's client connections, or close one with --close ID.",
    )
    connections.add_argument("--close", metavar="ID", help="close the connection with this id")
    broker_connections = _verb(
        commands,
        "broker-connections",
        "list AMQP broker connections, or start or stop one",
        "List the broker's AMQP broker connections (<broker-connections>) with their state, "
        "or start or stop one by name (an auto-start=false connection waits for start).",
    )
    broker_connections.add_argument("action", nargs="?", choices=["start", "stop"])
    broker_connections.add_argument("name", nargs="?", help="the <amqp-connection>'s name")


def run(args: argparse.Namespace) -> int:
    verb = args.verb
    try:
        admin = admin_base_url(args.admin)
        args.credentials = credentials_from(args)
    except (AdminAddressError, AdminCredentialsError) as exc:
        print(f"ferrymq {verb}: {exc}", file=sys.stderr)
        return 2
    args.admin_url = admin
    try:
        line = VERBS[verb](args)
    except AdminTimeoutError as exc:
        print(f"ferrymq {verb}: {exc}; {_UNFINISHED}", file=sys.stderr)
        return 1
    except AdminCallError as exc:
        print(f"ferrymq {verb}: {exc}", file=sys.stderr)
        return 1
    except UsageError as exc:
        print(f"ferrymq {verb}: {exc}", file=sys.stderr)
        return 2
    print(line)
    return 0


def _purge(args: argparse.Namespace) -> str:
    answer = call(args, "POST", f"/api/v1/queues/{_quote(args.queue)}/purge")
    return f"purged {answer['purged']} messages from queue {args.queue}"


def _delete(args: argparse.Namespace) -> str:
    if args.kind == "durable":
        if not args.client_id:
            raise UsageError("delete durable needs --client-id (the subscription's client id)")
        path = f"/api/v1/durable-subscriptions/{_quote(args.client_id)}/{_quote(args.name)}"
        answer = call(args, "DELETE", path)
        return (
            f"deleted durable subscription {args.name} of client {args.client_id} "
            f"({answer['messages']} messages)"
        )
    if args.client_id:
        raise UsageError("--client-id goes with delete durable only")
    answer = call(args, "DELETE", f"/api/v1/destinations/{args.kind}/{_quote(args.name)}")
    return f"deleted {args.kind} {args.name} ({answer['messages']} messages)"


def _move(args: argparse.Namespace) -> str:
    document = {"to": args.target, "selector": args.selector, "max": args.max, "copy": args.copy}
    answer = call(args, "POST", f"/api/v1/queues/{_quote(args.source)}/move", document)
    done = "copied" if args.copy else "moved"
    return f"{done} {answer[done]} messages from queue {args.source} to queue {args.target}"


def _retry(args: argparse.Namespace) -> str:
    document = {"selector": args.selector, "max": args.max}
    answer = call(args, "POST", f"/api/v1/queues/{_quote(args.queue)}/retry", document)
    return f"retried {answer['retried']} messages from queue {args.queue}"


def _connections(args: argparse.Namespace) -> str:
    if args.close is not None:
        answer = call(args, "DELETE", f"/api/v1/connections/{_quote(args.close)}")
        return f"closed connection {answer['closed']}"
    listed = call(args, "GET", "/api/v1/connections")["connections"]
    rows = [("ID", "REMOTE ADDRESS", "USER", "GROUPS", "PROTOCOL", "SINCE")]
    rows += [
        (
            c["id"],
            c.get("remote_address") or "-",
            c.get("user") or "-",
            ",".join(c.get("groups") or ()) or "-",
            f"{c.get('protocol', 'STOMP')} {c.get('version') or c['stomp_version']}"
            if c.get("version") or c.get("stomp_version")
            else "-",
            _since(c.get("connected_at_ms")),
        )
        for c in listed
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _broker_connections(args: argparse.Namespace) -> str:
    if args.action is not None:
        if not args.name:
            raise UsageError(f"broker-connections {args.action} needs the connection's name")
        path = f"/api/v1/broker-connections/{_quote(args.name)}/{args.action}"
        answer = call(args, "POST", path)
        done = "started" if args.action == "start" else "stopped"
        return f"{done} broker connection {args.name}: {answer.get('state')}"
    listed = call(args, "GET", "/api/v1/broker-connections")["broker_connections"]
    rows = [("NAME", "STATE", "HOST", "ATTEMPTS", "LAST ERROR")]
    rows += [
        (
            str(c.get("name")),
            str(c.get("state")),
            c.get("url") or "-",
            str(c.get("attempts", 0)),
            c.get("last_error") or "-",
        )
        for c in listed
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _since(epoch_ms: int | None) -> str:
    if not epoch_ms:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch_ms / 1000))


VERBS = {
    "purge": _purge,
    "delete": _delete,
    "move": _move,
    "retry": _retry,
    "connections": _connections,
    "broker-connections": _broker_connections,
}
