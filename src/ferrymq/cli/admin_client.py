"""The one reading of an ``--admin`` address, shared by every command that takes one.

``ferrymq broker --admin`` says where the admin HTTP listener binds; ``stat``, ``bench`` and the
management verbs say where to reach it. Both accept the same spellings, so an address copied
from one command works in the other: ``http://host:port``, ``host:port``, ``:port`` and
``port`` (the host then is loopback), with ``[::1]:port`` for IPv6. ``https://`` is refused:
the admin listener speaks plain HTTP.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8161
DEFAULT_ADMIN = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
FORMS = "http://HOST:PORT, HOST:PORT or :PORT"


class AdminAddressError(ValueError):
    """An ``--admin`` value that names no admin listener; the message says what was expected."""


def parse_admin_address(text: str) -> tuple[str, int]:
    """``(host, port)`` of ``http://host:port``, ``host:port``, ``:port`` or ``port``."""
    raw = text.strip()
    if not raw:
        raise AdminAddressError(f"--admin: expected {FORMS}, got an empty value")
    if "://" in raw:
        scheme = raw.split("://", 1)[0].lower()
        if scheme != "http":
            raise AdminAddressError(
                f"--admin: the admin API speaks plain HTTP, got {text!r} (use {FORMS})"
            )
    elif raw.isdigit():
        raw = f"http://{DEFAULT_HOST}:{raw}"
    else:
        raw = "http://" + (DEFAULT_HOST + raw if raw.startswith(":") else raw)
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        port, parts = None, None
    if parts is None or port is None or parts.path.strip("/") or parts.query:
        raise AdminAddressError(f"--admin: expected {FORMS}, got {text!r}")
    return parts.hostname or DEFAULT_HOST, port


def admin_base_url(text: str) -> str:
    """The admin API's base URL (``http://host:port``, no trailing slash) for an ``--admin``."""
    host, port = parse_admin_address(text)
    return f"http://{format_host(host)}:{port}"


def admin_listen_address(text: str) -> str:
    """``host:port`` as ``ferrymq broker --admin`` binds it (``off`` and friends pass through)."""
    if text.strip().lower() in ("off", "none", "no", "false"):
        return text
    host, port = parse_admin_address(text)
    return f"{format_host(host)}:{port}"


def format_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class AdminCallError(Exception):
    """The admin API refused, did not answer, or is not one; the message is the line to print."""


class AdminTimeoutError(AdminCallError):
    """No answer in time: the request may still be running on the broker."""


def admin_request(
    admin: str,
    method: str,
    path: str,
    document: dict[str, Any] | None = None,
    *,
    timeout_s: float = 10.0,
) -> Any:
    """One request to the admin API at ``admin`` (a base URL); its JSON answer."""
    data = json.dumps(document or {}).encode() if method == "POST" else None
    headers = {"Content-Type": "application/json"} if data is not None else {}
    request = urllib.request.Request(admin + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        with exc:
            raise AdminCallError(f"{_refusal(exc)} (HTTP {exc.code})") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise AdminTimeoutError(
                f"no answer from the admin API at {admin} within {timeout_s:g} s"
            ) from None
        raise AdminCallError(f"cannot reach the admin API at {admin}: {reason}") from None
    except ValueError:  # a 200 that is not JSON: some other HTTP server
        raise AdminCallError(
            f"{admin} answered, but it is not a FerryMQ admin API (check --admin)"
        ) from None


def _refusal(exc: urllib.error.HTTPError) -> str:
    try:
        message = json.load(exc).get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message or exc.reason)
