"""`<sslContext><sslContext .../></sslContext>` of activemq.xml (`config.tls`)."""

from __future__ import annotations

from pathlib import Path

from ferrymq.config.tls import SslContextConfig
from ferrymq.config.xml_document import Element, ElementReader, LoadContext

__all__ = ["read_ssl_context"]


def read_ssl_context(context: LoadContext, element: Element) -> SslContextConfig:
    outer = context.reader(element)
    inner = outer.children({"sslContext"})
    outer.finish()
    if len(inner) != 1:
        raise context.error(element, "expected one <sslContext> inside <sslContext>")
    reader = context.reader(inner[0])
    config = SslContextConfig(
        key_store=_resource(reader, "keyStore"),
        key_store_password=reader.optional("keyStorePassword"),
        key_store_key_password=reader.optional("keyStoreKeyPassword"),
        key_store_type=reader.optional("keyStoreType"),
        trust_store=_resource(reader, "trustStore"),
        trust_store_password=reader.optional("trustStorePassword"),
        trust_store_type=reader.optional("trustStoreType"),
        location=reader.location(),
    )
    reader.children(())
    reader.finish()
    return config


def _resource(reader: ElementReader, name: str) -> Path | None:
    """A Spring resource naming a file: a path, or `file:` and a path."""
    text = reader.optional(name)
    if text is None:
        return None
    text = text.strip()
    if text.startswith("classpath:"):
        raise reader.error("a classpath: resource has no meaning here; give a file path", name)
    text = text.removeprefix("file://").removeprefix("file:")
    if not text:
        raise reader.error("empty path", name)
    return Path(text)
