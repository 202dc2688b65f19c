"""Which web pages may open a WebSocket to a listener: the ``Origin`` check.

A browser sends the ``Origin`` of the page that opens a WebSocket, and lets any page open one
to any address, with the user's client certificate and from the user's network position (RFC
6455, section 10.2, "Origin Considerations"). A server that trusts either must therefore check
the origin; a non-browser client sends no ``Origin`` and is not concerned. The policy is the
``allowedOrigins`` option of a ``ws://``/``wss://`` connector: comma-separated origins
(``https://app.example.com``, ``http://localhost:8080``), ``*`` for any page, or the literal
``null`` (a sandboxed frame, a ``file:`` page: any such page, so list it only knowingly).
Origins compare as RFC 6454 defines them: scheme, host and port, with the scheme and host in
lower case and a default port (80 for http, 443 for https) left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

ALLOWED_ORIGINS_OPTION: Final = "allowedOrigins"
ANY: Final = "*"
OPAQUE: Final = "null"
"""What a browser sends for a page with no origin of its own (sandboxed, ``file:``, ``data:``)."""
_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """The browser pages a WebSocket listener serves; a request without ``Origin`` always."""

    allowed: frozenset[str] = frozenset()
    """Normalized origins (``normalize_origin``)."""
    any_origin: bool = False

    @classmethod
    def parse(cls, text: str) -> OriginPolicy:
        """``allowedOrigins``'s value; ``ValueError`` saying which entry is wrong and why.
        An empty value allows no browser page."""
        entries = [entry.strip() for entry in text.split(",") if entry.strip()]
        if ANY in entries:
            return ANY_ORIGIN
        return cls(frozenset(normalize_origin(entry) for entry in entries))

    def allows(self, origin: str | None) -> bool:
        if origin is None or self.any_origin:
            return True
        try:
            return normalize_origin(origin) in self.allowed
        except ValueError:
            return False


ANY_ORIGIN: Final = OriginPolicy(any_origin=True)
NO_BROWSER_PAGE: Final = OriginPolicy()


def normalize_origin(text: str) -> str:
    """``scheme://host[:port]`` as compared; ``ValueError`` for anything that is not an origin."""
    value = text.strip()
    if value.lower() == OPAQUE:
        return OPAQUE
    parts = urlsplit(value)
    host = parts.hostname
    scheme = parts.scheme.lower()
    if not scheme or not host:
        raise ValueError(f"{text!r} is not an origin: use scheme://host[:port], e.g. {_EXAMPLE}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(f"{text!r} is not an origin: it has more than scheme://host[:port]")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{text!r} is not an origin: its port is not 0 to 65535") from None
    shown_host = f"[{host}]" if ":" in host else host
    shown_port = "" if port is None or port == _DEFAULT_PORTS.get(scheme) else f":{port}"
    return f"{scheme}://{shown_host}{shown_port}"


_EXAMPLE: Final = "https://app.example.com"
