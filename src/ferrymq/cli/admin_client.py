"""The one reading of an ``--admin`` address, shared by every command that takes one.

``ferrymq broker --admin`` says where the admin HTTP listener binds; ``stat``, ``bench`` and the
management verbs say where to reach it. Both accept the same spellings, so an address copied
from one command works in the other: ``http://host:port``, ``host:port``, ``:port`` and
``port`` (the host then is loopback), with ``[::1]:port`` for IPv6. ``https://host:port``
reaches (and, for ``ferrymq broker``, serves) the admin API over HTTPS; the client checks the
broker's certificate against ``$FERRYMQ_ADMIN_CA`` (a PEM file) or else the system's CAs
(OpenSSL's defaults, ``SSL_CERT_FILE``).
"""

from __future__ import annotations

import argparse
import base64
import getpass
import json
import os
import ssl
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from ferrymq.util.text import is_decimal

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8161
DEFAULT_ADMIN = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
FORMS = "http://HOST:PORT, https://HOST:PORT, HOST:PORT or :PORT"
CA_VARIABLE: Final = "FERRYMQ_ADMIN_CA"
"""A PEM file of the CAs an ``https://`` admin API's certificate is checked against."""


class AdminAddressError(ValueError):
    """An ``--admin`` value that names no admin listener; the message says what was expected."""


def parse_admin_address(text: str) -> tuple[str, int]:
    """``(host, port)`` of ``http://host:port``, ``host:port``, ``:port`` or ``port``."""
    _, host, port = _admin_address(text)
    return host, port


def _admin_address(text: str) -> tuple[str, str, int]:
    raw = text.strip()
    if not raw:
        raise AdminAddressError(f"--admin: expected {FORMS}, got an empty value")
    if "://" in raw:
        scheme = raw.split("://", 1)[0].lower()
        if scheme not in ("http", "https"):
            raise AdminAddressError(
                f"--admin: the admin API speaks HTTP or HTTPS, got {text!r} (use {FORMS})"
            )
    elif is_decimal(raw):
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
    return parts.scheme.lower(), parts.hostname or DEFAULT_HOST, port


def admin_base_url(text: str) -> str:
    """The admin API's base URL (``http://host:port``, no trailing slash) for an ``--admin``."""
    scheme, host, port = _admin_address(text)
    return f"{scheme}://{format_host(host)}:{port}"


def admin_listen_address(text: str) -> str:
    """``host:port`` as ``ferrymq broker --admin`` binds it (``off`` and friends pass through);
    ``https://host:port`` for HTTPS."""
    if text.strip().lower() in ("off", "none", "no", "false"):
        return text
    scheme, host, port = _admin_address(text)
    address = f"{format_host(host)}:{port}"
    return f"https://{address}" if scheme == "https" else address


def admin_tls_context(url: str) -> ssl.SSLContext | None:
    """How an ``https://`` admin API's certificate is checked (None for ``http://``)."""
    if not url.lower().startswith("https://"):
        return None
    return ssl.create_default_context(cafile=os.environ.get(CA_VARIABLE) or None)


def format_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


PASSWORD_VARIABLE: Final = "FERRYMQ_ADMIN_PASSWORD"
USER_VARIABLE: Final = "FERRYMQ_ADMIN_USER"


@dataclass(frozen=True, slots=True)
class AdminCredentials:
    """A broker user for the admin API's basic auth (docs/security.md, "Admin API")."""

    user: str
    password: str = field(repr=False)

    def header(self) -> str:
        token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode("ascii")
        return f"Basic {token}"


class AdminCredentialsError(ValueError):
    """No password to go with ``--admin-user``; the message says where to give it."""


def add_credential_options(parser: argparse.ArgumentParser) -> None:
    """``--admin-user``; the password never goes on the command line (``ps`` shows it)."""
    parser.add_argument(
        "--admin-user",
        metavar="NAME",
        default=os.environ.get(USER_VARIABLE) or None,
        help=f"a broker user for the admin API (default ${USER_VARIABLE}); the password is "
        f"read from ${PASSWORD_VARIABLE}, else asked for on the terminal",
    )


def credentials_from(args: argparse.Namespace) -> AdminCredentials | None:
    """The ``--admin-user`` and its password: ``$FERRYMQ_ADMIN_PASSWORD`` or, on a terminal,
    a prompt that does not echo; None without ``--admin-user``."""
    user = getattr(args, "admin_user", None)
    if not user:
        return None
    password = os.environ.get(PASSWORD_VARIABLE)
    if password is None:
        if not sys.stdin.isatty():
            raise AdminCredentialsError(
                f"--admin-user {user}: set the password in ${PASSWORD_VARIABLE} "
                "(there is no terminal to ask for it)"
            )
        password = getpass.getpass(f"admin API password for {user}: ")
    return AdminCredentials(user, password)


def auth_headers(credentials: AdminCredentials | None) -> dict[str, str]:
    return {} if credentials is None else {"Authorization": credentials.header()}


def refused_login(base: str, code: int, credentials: AdminCredentials | None) -> str | None:
    """The line for a 401: what to give, or that the login given was refused."""
    if code != 401:
        return None
    if credentials is None:
        return (
            f"the admin API at {base} needs a login: give --admin-user NAME (the password from "
            f"${PASSWORD_VARIABLE} or a prompt) (HTTP 401)"
        )
    return f"the admin API at {base} refused user {credentials.user}: wrong user name or password"


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
    credentials: AdminCredentials | None = None,
) -> Any:
    """One request to the admin API at ``admin`` (a base URL); its JSON answer."""
    data = json.dumps(document or {}).encode() if method == "POST" else None
    headers = {"Content-Type": "application/json"} if data is not None else {}
    headers.update(auth_headers(credentials))
    request = urllib.request.Request(admin + path, data=data, method=method, headers=headers)
    try:
        context = admin_tls_context(admin)
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        with exc:
            login = refused_login(admin, exc.code, credentials)
            raise AdminCallError(login or f"{_refusal(exc)} (HTTP {exc.code})") from None
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
