"""``ssl://host:port`` and ``stomp+ssl://host:port``: a broker URL over TLS, and its options.

A TLS URL is a ``tcp://`` URL whose socket is wrapped in TLS, so it is accepted wherever a
``tcp://`` one is: alone, as a ``failover:``, ``masterslave:`` or ``fanout:`` member, from a
discovery agent, in a network connector. The broker's certificate is checked against
``trustStore`` (PKCS#12 or PEM), else the system's CAs (OpenSSL's defaults, which honour
``SSL_CERT_FILE`` and ``SSL_CERT_DIR``), and must name the host dialled unless
``verifyHostName=false``. A ``keyStore`` (with ``keyStorePassword``) gives the client
certificate a listener with ``needClientAuth`` asks for. The names are ActiveMQ's
(``ferrymq.util.tls.CLIENT_OPTIONS``; docs/security.md).

A context is made once per set of options in a process: its files are read when the URL is
first checked, so a missing file or a wrong password fails ``connect()`` at once.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

from ferrymq.client.errors import BrokerURLError
from ferrymq.util.tls import (
    CLIENT_OPTIONS,
    CLIENT_SCHEMES,
    TlsError,
    cached_client_context,
    client_options,
)

__all__ = ["OPTIONS", "handshake_failure", "tls_context"]

OPTIONS = CLIENT_OPTIONS


def tls_context(
    scheme: str, query: Mapping[str, str], *, url: str
) -> tuple[dict[str, str], ssl.SSLContext | None]:
    """The options left for the TCP transport, and the TLS context a TLS ``scheme`` uses."""
    if scheme.lower() not in CLIENT_SCHEMES:
        return dict(query), None
    rest = {name: value for name, value in query.items() if name not in CLIENT_OPTIONS}
    try:
        return rest, cached_client_context(client_options(query))
    except TlsError as exc:
        raise BrokerURLError(str(exc), url=url, part=scheme) from None


def handshake_failure(exc: ssl.SSLError) -> str:
    """One line for a failed TLS handshake, saying what to check."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (
            f"the broker's TLS certificate was refused: {exc.verify_message} (check the "
            "trustStore option, the broker's certificate, or verifyHostName)"
        )
    return f"TLS handshake failed: {exc.reason or exc} (is this a TLS listener?)"
