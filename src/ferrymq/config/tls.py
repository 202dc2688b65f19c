"""`<sslContext>`: the broker's key material for its TLS listeners and admin API.

ActiveMQ's `<sslContext><sslContext keyStore keyStorePassword trustStore trustStorePassword/>`
(ActiveMQ documentation, "How do I use SSL"). The keystore holds the broker's certificate and
key, the truststore the CAs whose client certificates a listener with `needClientAuth` or
`wantClientAuth` accepts. Both may be PKCS#12 or PEM (`ferrymq.util.tls` reads them); a JKS
keystore is refused when the broker starts, with the `keytool` command that converts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ferrymq.config.errors import Location

__all__ = ["SslContextConfig"]


@dataclass(frozen=True)
class SslContextConfig:
    """The inner `<sslContext>` element's attributes FerryMQ uses."""

    key_store: Path | None = None
    """`keyStore`: PKCS#12 (`.p12`, `.pfx`) or PEM (certificate chain and key in one file).
    A Spring `file:` prefix is accepted."""
    key_store_password: str | None = field(default=None, repr=False)
    """`keyStorePassword`: opens the keystore (and its key, unless `keyStoreKeyPassword`)."""
    key_store_key_password: str | None = field(default=None, repr=False)
    """`keyStoreKeyPassword`: the private key's own password, when it differs."""
    key_store_type: str | None = None
    """`keyStoreType`: informational; the format is read from the file itself."""
    trust_store: Path | None = None
    """`trustStore`: the CAs client certificates are checked against. Default None: the
    system's CAs (OpenSSL's default paths)."""
    trust_store_password: str | None = field(default=None, repr=False)
    """`trustStorePassword`."""
    trust_store_type: str | None = None
    """`trustStoreType`: informational, as `keyStoreType`."""
    location: Location | None = field(default=None, compare=False)
