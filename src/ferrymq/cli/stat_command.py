"""``ferrymq stat``: a running broker's role, network bridges, AMQP broker connections and
destinations, read from its admin API."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ferrymq.cli.admin_client import (
    DEFAULT_ADMIN,
    FORMS,
    AdminAddressError,
    AdminCallError,
    AdminCredentials,
    AdminCredentialsError,
    add_credential_options,
    admin_base_url,
    admin_request,
    credentials_from,
)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "stat",
        help="show destinations and connections of a running broker",
        description="Show a running broker's role, destinations and client connections (STOMP "
        "and AMQP, with AMQP's links), read from its admin HTTP API.",
    )
    parser.add_argument(
        "--admin",
        default=DEFAULT_ADMIN,
        help=f"the broker's admin API: {FORMS} (default {DEFAULT_ADMIN})",
    )
    add_credential_options(parser)
    parser.add_argument("--type", choices=["queue", "topic", "temp-queue", "temp-topic"])
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(run=run)


def fetch(admin: str, path: str, credentials: AdminCredentials | None = None) -> Any:
    return admin_request(admin.rstrip("/"), "GET", path, credentials=credentials)


def describe_role(broker: dict[str, Any]) -> str:
    """One line: the broker's name, its master/slave role and the lock or link behind it."""
    role = broker.get("role", "standalone")
    line = f"broker {broker.get('name')}: {role}"
    if broker.get("failure"):
        line += f" ({broker['failure']})"
    lock = broker.get("lock")
    if lock:
        held = (
            "held by this broker"
            if lock.get("held")
            else f"held by {lock.get('current_holder') or 'another broker'}"
        )
        line += f"; {lock.get('locker')} {lock.get('resource')} ({held})"
    replication = broker.get("replication")
    if replication and role == "replicating":  # a slave that took over is a master now
        state = "attached" if replication.get("attached") else "connecting"
        line += f"; replicating from {replication.get('master')} ({state})"
    slave = broker.get("slave")
    if slave:
        line += f"; slave {slave.get('name')} {'in sync' if slave.get('in_sync') else 'syncing'}"
    return line


def describe_bridges(bridges: list[dict[str, Any]]) -> list[str]:
    """The network bridges of the admin API's broker document, one line each, then one line per
    direction and one per demand subscription of that direction."""
    lines: list[str] = []
    for bridge in bridges:
        local, remote = bridge.get("local_broker") or {}, bridge.get("remote_broker") or {}
        arrow = "<->" if bridge.get("duplex") else "->"
        remote_text = (
            _broker(remote) if remote.get("id") else f"{bridge.get('uri')} (not yet known)"
        )
        duplex = ", duplex" if bridge.get("duplex") else ""
        if bridge.get("initiated_by") == "remote":
            duplex += f" opened by {remote.get('name') or 'the remote broker'}"
        lines.append(
            f"network bridge {bridge.get('connector')}: {_broker(local)} {arrow} {remote_text}"
            f"{duplex}, {bridge.get('state')}"
        )
        for direction in bridge.get("directions") or ():
            demands = direction.get("demand_subscriptions") or []
            lines.append(
                f"  {direction.get('direction')} {direction.get('from')} -> {direction.get('to')}: "
                f"{direction.get('forwarded', 0)} forwarded, "
                f"{len(demands)} demand subscription(s)"
            )
            for demand in demands:
                destination = demand.get("destination") or {}
                selector = f", selector {demand['selector']}" if demand.get("selector") else ""
                lines.append(
                    f"    {destination.get('type')} {destination.get('name')}: "
                    f"{demand.get('consumers', 0)} consumer(s), priority {demand.get('priority')}"
                    f"{selector}, {demand.get('forwarded', 0)} forwarded"
                )
    return lines


def describe_broker_connections(records: list[dict[str, Any]]) -> list[str]:
    """The AMQP broker connections, one line each (state, host, attempts, last error), then
    one line per element with its numbers."""
    lines: list[str] = []
    for record in records:
        error = f", last error: {record['last_error']}" if record.get("last_error") else ""
        lines.append(
            f"broker connection {record.get('name')}: {record.get('state')}, "
            f"{record.get('url') or '-'}, {record.get('attempts', 0)} attempt(s){error}"
        )
        for element in record.get("elements") or ():
            numbers = ", ".join(
                f"{key} {value}"
                for key, value in element.items()
                if key not in ("name", "type") and isinstance(value, int | float | str)
            )
            lines.append(f"  {element.get('type')} {element.get('name')}: {numbers}".rstrip())
    return lines


def describe_mirror_target(broker: dict[str, Any]) -> list[str]:
    """One line of what other brokers' mirrors applied here; nothing if none ever did."""
    numbers = broker.get("mirror_target") or {}
    if not any(numbers.values()):
        return []
    return [
        f"mirror target: {numbers.get('sends', 0)} send(s), "
        f"{numbers.get('duplicates', 0)} duplicate(s), {numbers.get('events', 0)} event(s), "
        f"{numbers.get('acks', 0)} ack(s) ({numbers.get('acks_retried', 0)} retried, "
        f"{numbers.get('acks_given_up', 0)} given up)"
    ]


def describe_connections(connections: list[dict[str, Any]]) -> list[str]:
    """A count by protocol, one line per client connection, and under an AMQP connection
    one line per link (the broker's role, its name and address, credit, unsettled)."""
    counts: dict[str, int] = {}
    for connection in connections:
        protocol = str(connection.get("protocol") or "STOMP")
        counts[protocol] = counts.get(protocol, 0) + 1
    by_protocol = ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
    lines = [f"connections: {len(connections)}" + (f" ({by_protocol})" if by_protocol else "")]
    for connection in connections:
        version = connection.get("version") or connection.get("stomp_version") or ""
        client = f", client id {connection['client_id']}" if connection.get("client_id") else ""
        user = f", user {connection['user']}" if connection.get("user") else ""
        links = connection.get("links") or []
        lines.append(
            f"  {connection.get('id')} {connection.get('protocol') or 'STOMP'} {version}".rstrip()
            + f" from {connection.get('remote_address') or '-'}{client}{user}: "
            f"{len(connection.get('subscriptions') or [])} subscription(s), {len(links)} link(s)"
        )
        for link in links:
            lines.append(
                f"    {link.get('role')} {link.get('name')} {link.get('address') or '-'}: "
                f"credit {link.get('credit')}, {link.get('unsettled')} unsettled"
            )
    return lines


def _broker(broker: dict[str, Any]) -> str:
    name, id_ = broker.get("name"), broker.get("id")
    return f"{name} (id {id_})" if name and name != id_ else str(id_ or name)


def run(args: argparse.Namespace) -> int:
    query = f"?type={args.type}" if args.type else ""
    try:
        admin = admin_base_url(args.admin)
        credentials = credentials_from(args)
    except (AdminAddressError, AdminCredentialsError) as exc:
        print(f"ferrymq stat: {exc}", file=sys.stderr)
        return 2
    try:
        broker = fetch(admin, "/api/v1/broker", credentials)
        data = fetch(admin, "/api/v1/destinations" + query, credentials)
        connections = fetch(admin, "/api/v1/connections", credentials)["connections"]
    except AdminCallError as exc:
        print(f"ferrymq stat: {exc}", file=sys.stderr)
        return 1
    rows = data["destinations"]
    if args.format == "json":
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(describe_role(broker))
    for line in describe_bridges(broker.get("network_bridges") or []):
        print(line)
    for line in describe_broker_connections(broker.get("broker_connections") or []):
        print(line)
    for line in describe_mirror_target(broker):
        print(line)
    header = ("TYPE", "NAME", "DEPTH", "ENQUEUED", "DEQUEUED", "CONSUMERS")
    table = [header] + [
        (
            r["type"],
            r["name"],
            str(r["depth"]),
            str(r["enqueued"]),
            str(r["dequeued"]),
            str(r["consumers"]),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    for line in describe_connections(connections):
        print(line)
    return 0
