"""``ferrymq health``: whether a running broker serves clients, as an exit code for probes.

Docker's ``HEALTHCHECK``, a systemd ``ExecStartPost``/watchdog script or any orchestrator runs
it: exit 0 only when the broker serves clients, 1 otherwise (a slave, starting, failed, or no
answer), with one line saying which.  It reads the admin API's ``GET /health``, so what it says
and what an HTTP probe sees are the same answer.  ``--slave-ok`` also passes a healthy slave,
for a check that must restart only a broken broker, never a standing-by one.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any

from ferrymq.cli.admin_client import (
    DEFAULT_ADMIN,
    FORMS,
    AdminAddressError,
    AdminCredentials,
    AdminCredentialsError,
    add_credential_options,
    admin_base_url,
    admin_tls_context,
    auth_headers,
    credentials_from,
    refused_login,
)

DEFAULT_TIMEOUT_S = 5.0
"""A probe that hangs is worse than one that fails; Docker's own default timeout is 30 s."""


class HealthCheckError(Exception):
    """No health answer to report: the message is the one line to print."""


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "health",
        help="exit 0 when a running broker serves clients (for container and systemd probes)",
        description=(
            "Ask a running broker's admin API whether it serves clients: exit 0 if it does, "
            "1 if not (slave, starting, failed, unreachable), with one line saying which."
        ),
    )
    parser.add_argument(
        "--admin",
        default=DEFAULT_ADMIN,
        help=f"the broker's admin API: {FORMS} (default {DEFAULT_ADMIN})",
    )
    add_credential_options(parser)
    parser.add_argument(
        "--slave-ok",
        action="store_true",
        help="exit 0 for a healthy slave too (a liveness check: restart only a failed broker)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for the answer (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        base = admin_base_url(args.admin)
        credentials = credentials_from(args)
    except (AdminAddressError, AdminCredentialsError) as exc:
        print(f"ferrymq health: {exc}", file=sys.stderr)
        return 2
    if not args.timeout > 0:
        print(f"ferrymq health: --timeout must be positive, got {args.timeout:g}", file=sys.stderr)
        return 2
    url = base + "/health" + ("?slave_ok=1" if args.slave_ok else "")
    try:
        status, document = fetch_health(url, base, args.timeout, credentials)
    except HealthCheckError as exc:
        print(f"ferrymq health: {exc}", file=sys.stderr)
        return 1
    print(describe(document))
    return 0 if status == 200 else 1


def fetch_health(
    url: str, base: str, timeout_s: float, credentials: AdminCredentials | None = None
) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of ``GET /health``: 200 and 503 both carry the answer.
    ``/health`` is open to probes; credentials serve a broker that protects it anyway."""
    request = urllib.request.Request(url, headers=auth_headers(credentials))
    try:
        context = admin_tls_context(url)
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
            return response.status, _document(response.read(), base)
    except urllib.error.HTTPError as exc:
        with exc:
            body = exc.read()
        login = refused_login(base, exc.code, credentials)
        if login is not None:
            raise HealthCheckError(login) from None
        if exc.code != 503:
            raise HealthCheckError(
                f"the admin API at {base} answered {exc.code} {exc.reason} to /health "
                "(is it a FerryMQ broker with health checks?)"
            ) from None
        return exc.code, _document(body, base)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise HealthCheckError(
                f"no answer from the admin API at {base} within {timeout_s:g} s"
            ) from None
        raise HealthCheckError(
            f"cannot reach the admin API at {base}: {reason} (is the broker running with its "
            "admin API there? choose the address with --admin)"
        ) from None


def _document(body: bytes, base: str) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if not isinstance(document, dict) or "state" not in document:
        raise HealthCheckError(f"the answer of {base}/health is not a FerryMQ health document")
    return document


def describe(document: dict[str, Any]) -> str:
    """One line: ``broker b2: slave (waiting for lock): waiting for the lock on ...``."""
    state, role = document.get("state"), document.get("role")
    role_text = f" ({role})" if role and role != state else ""
    reason = f": {document['reason']}" if document.get("reason") else ""
    # A broker with users tells a caller without a login its state only (docs/monitoring.md).
    who = f"broker {document['broker']}" if document.get("broker") else "the broker"
    return f"{who}: {state}{role_text}{reason}"
