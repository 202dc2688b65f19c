"""Remove the destinations a bench run created, so that nothing of it survives a restart.

A benchmark's queues are ordinary queues: a persistent broker keeps them (empty) in its store
and shows them again after a restart. STOMP has no frame that deletes a destination, so the
run removes them through the broker's management interface: for FerryMQ its admin API
(``DELETE /api/v1/destinations/{type}/{name}``), found at ``--admin`` or, when the broker says
it is FerryMQ, at the default admin address on the broker's host. Only destinations whose
names carry this run's random id are touched, and the listing must show them first: an admin
API of some other broker on that address has none of them and is left alone.

Other brokers are named in the report with what is left and how to remove it (ActiveMQ: its
web console, or ``gcInactiveDestinations``, which ``benchmarks/compare.sh`` configures).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from urllib.parse import quote

from ferrymq.bench.options import Endpoint

DEFAULT_ADMIN_PORT = 8161
HTTP_TIMEOUT_S = 10.0
FERRYMQ_SERVER = "ferrymq/"


def remove_destinations(
    endpoint: Endpoint,
    server: str | None,
    admin_url: str | None,
    destinations: Sequence[str],
    headers: Mapping[str, str] | None = None,
) -> str:
    """Remove ``destinations`` (``/queue/NAME``, ``/topic/NAME``); a sentence for the report."""
    if not destinations:
        return "none created"
    listed = ", ".join(destinations)
    is_ferrymq = (server or "").lower().startswith(FERRYMQ_SERVER)
    if admin_url is None and not is_ferrymq:
        return (
            f"left on {server or 'the broker'}: {listed} (remove them in its console; ActiveMQ "
            'removes empty ones itself with <policyEntry gcInactiveDestinations="true">)'
        )
    url = admin_url or f"http://{_host(endpoint.host)}:{DEFAULT_ADMIN_PORT}"
    try:
        removed = _remove(url, destinations, dict(headers or {}))
    except urllib.error.HTTPError as exc:
        reason = f"the admin API at {url} answered HTTP {exc.code}; pass --admin" + (
            " and --admin-user (a user of its admin group)" if exc.code in (401, 403) else ""
        )
    except urllib.error.URLError as exc:
        reason = f"no admin API at {url}: {exc.reason}; pass --admin HOST:PORT"
    except (OSError, ValueError) as exc:
        reason = f"cannot remove them through the admin API at {url}: {exc}"
    else:
        if removed:
            return f"removed through the admin API at {url}: {', '.join(removed)}"
        reason = f"the admin API at {url} does not list them; pass --admin"
    return f"left: {listed} ({reason})"


def _remove(url: str, destinations: Sequence[str], headers: dict[str, str]) -> list[str]:
    """DELETE each of ``destinations`` that the admin API lists (a topic nobody subscribes to
    any more may be gone already); the ones removed."""
    removed = []
    for kind, name in _listed(url, destinations, headers):
        _delete(url, kind, name, headers)
        removed.append(f"/{kind}/{name}")
    return removed


def _listed(
    url: str, destinations: Sequence[str], headers: dict[str, str]
) -> list[tuple[str, str]]:
    """The ``(type, name)`` of each of ``destinations`` that the admin API lists."""
    listing = urllib.request.Request(f"{url}/api/v1/destinations", headers=headers)
    with urllib.request.urlopen(listing, timeout=HTTP_TIMEOUT_S) as answer:
        rows = json.load(answer).get("destinations", [])
    wanted = set(destinations)
    return [
        (str(row["type"]), str(row["name"]))
        for row in rows
        if f"/{row.get('type')}/{row.get('name')}" in wanted
    ]


def _delete(url: str, kind: str, name: str, headers: dict[str, str]) -> None:
    request = urllib.request.Request(
        f"{url}/api/v1/destinations/{quote(kind, safe='')}/{quote(name, safe='')}",
        method="DELETE",
        # The admin API takes a write only with this type (a browser's form post cannot).
        headers={**headers, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S):
            pass
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace").strip()[:200]
        raise ValueError(f"DELETE /{kind}/{name}: HTTP {exc.code} {detail}") from None


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
