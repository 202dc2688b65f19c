"""TLS for the broker's listeners: the server context of one listener, and who the peer is.

A TLS listener is a plain one whose sockets asyncio wraps in TLS before the protocol sees a
byte: the protocol adapter that serves ``stomp://`` serves ``stomp+ssl://`` unchanged. The key
material is the broker's ``<sslContext>``; the listener's URI options choose whether clients
must present a certificate and which versions and suites are offered (ActiveMQ documentation,
"SSL Transport Reference"). Key material and contexts are built in ``ferrymq.util.tls``, which
the client and the admin API share.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from ferrymq.util.tls import (
    LISTENER_SCHEMES,
    KeyStore,
    TlsError,
    certificate_subject,
    listener_options,
    new_server_context,
)

__all__ = ["LISTENER_SCHEMES", "SslSettings", "TlsError", "peer_subject", "server_context"]


class SslSettings(Protocol):
    """The broker's ``<sslContext>`` as this layer reads it (``config.tls.SslContextConfig``)."""

    @property
    def key_store(self) -> Path | None: ...
    @property
    def key_store_password(self) -> str | None: ...
    @property
    def key_store_key_password(self) -> str | None: ...
    @property
    def trust_store(self) -> Path | None: ...
    @property
    def trust_store_password(self) -> str | None: ...


def key_stores(settings: SslSettings) -> tuple[KeyStore | None, KeyStore | None]:
    """The keystore and truststore ``settings`` name."""
    key = (
        None
        if settings.key_store is None
        else KeyStore(
            settings.key_store, settings.key_store_password, settings.key_store_key_password
        )
    )
    trust = (
        None
        if settings.trust_store is None
        else KeyStore(settings.trust_store, settings.trust_store_password)
    )
    return key, trust


def server_context(
    ssl_config: SslSettings | None, uri_options: Mapping[str, str]
) -> ssl.SSLContext:
    """The context of one TLS listener; ``TlsError`` (one line) when it cannot be made."""
    if ssl_config is None or ssl_config.key_store is None:
        raise TlsError(
            "a TLS listener needs the broker's key: add <sslContext><sslContext "
            'keyStore="broker.p12" keyStorePassword="..."/></sslContext> to <broker>'
        )
    key, trust = key_stores(ssl_config)
    options = replace(listener_options(uri_options), key_store=key, trust_store=trust)
    return new_server_context(options)


def peer_subject(ssl_object: object) -> str | None:
    """The subject DN (RFC 4514) of the certificate the peer presented and TLS verified."""
    if not isinstance(ssl_object, ssl.SSLObject | ssl.SSLSocket):
        return None
    return certificate_subject(ssl_object.getpeercert(binary_form=True))
