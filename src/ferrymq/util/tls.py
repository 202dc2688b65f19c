"""Key material and ``ssl.SSLContext`` building shared by the broker, its admin API and clients.

ActiveMQ reads Java keystores; FerryMQ reads the two formats OpenSSL tools and Java's
``keytool`` both write: PKCS#12 (``.p12``/``.pfx``, Java's default keystore type since 9) and
PEM (a certificate chain and its private key in one file; a CA bundle for trust). The format
is told from the file's first bytes, not its name or ``keyStoreType`` (a Java ``jks`` keystore
type reads PKCS#12 files too). A JKS or JCEKS keystore is refused with the ``keytool`` command
that converts it.

Python's ``ssl`` loads a certificate and key only from files, so a PKCS#12 keystore's key goes
through a file in a private temporary directory (mode 0700, file 0600), encrypted with a
one-time password, and removed as soon as OpenSSL has read it. Trusted certificates are given
in memory (``cadata``).

Every failure is a ``TlsError`` whose text is one line: which file, what is wrong, how to fix.
"""

from __future__ import annotations

import functools
import secrets
import shutil
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from ferrymq.util.tls_ciphers import OPENSSL_NAMES, TLS13_SUITES

__all__ = [
    "CLIENT_OPTIONS",
    "CLIENT_SCHEMES",
    "LISTENER_OPTIONS",
    "LISTENER_SCHEMES",
    "KeyStore",
    "TlsError",
    "TlsOptions",
    "cached_client_context",
    "certificate_subject",
    "cipher_settings",
    "client_context",
    "client_options",
    "listener_options",
    "load_key_store",
    "load_trust_store",
    "new_server_context",
    "protocol_range",
]

_JKS_MAGIC = (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce")
PROTOCOLS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
"""``enabledProtocols`` names (JSSE's) and the versions they are."""
_OLDEST = "TLSv1.2"
"""TLS 1.0 and 1.1 are named only to be refused clearly (RFC 8996 deprecates them)."""


class TlsError(Exception):
    """Key material or a TLS setting that cannot be used; the text is the one line to show."""


@dataclass(frozen=True, slots=True)
class KeyStore:
    """A keystore: where it is and the password that opens it (``None``: not encrypted)."""

    path: Path
    password: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    """ActiveMQ's ``keyStoreKeyPassword``: the private key's own password, when it differs."""


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """Everything a TLS context is made of, whichever side it is for."""

    key_store: KeyStore | None = None
    trust_store: KeyStore | None = None
    verify_host_name: bool = True
    """Client side: the broker's certificate must name the host dialled (ActiveMQ's
    ``verifyHostName``)."""
    need_client_auth: bool = False
    want_client_auth: bool = False
    protocols: str | None = None
    """``transport.enabledProtocols``: comma separated JSSE names (``TLSv1.2,TLSv1.3``)."""
    cipher_suites: str | None = None
    """``transport.enabledCipherSuites``: comma separated JSSE (IANA) names."""


def _read(store: KeyStore, role: str) -> bytes:
    try:
        data = store.path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise TlsError(f"cannot read the {role} {store.path}: {reason}") from None
    if data[:4] in _JKS_MAGIC:
        target = store.path.with_suffix(".p12")
        raise TlsError(
            f"the {role} {store.path} is a Java JKS/JCEKS keystore, which FerryMQ does not "
            f"read: convert it to PKCS#12 with `keytool -importkeystore -srckeystore "
            f"{store.path} -destkeystore {target} -deststoretype PKCS12` and name {target}"
        )
    return data


def _is_pem(data: bytes) -> bool:
    return b"-----BEGIN " in data[:4096]


def _password(text: str | None) -> bytes | None:
    return None if text is None or text == "" else text.encode()


def load_key_store(store: KeyStore) -> tuple[bytes, bytes, str]:
    """The certificate chain as PEM (own certificate first), the private key as PEM encrypted
    with a fresh one-time password, and that password: the clear key never leaves memory."""
    data = _read(store, "keystore")
    password = _password(store.key_password or store.password)
    try:
        if _is_pem(data):
            key: PrivateKeyTypes | None = serialization.load_pem_private_key(data, password)
            chain = x509.load_pem_x509_certificates(data)
        else:
            key, certificate, extra = pkcs12.load_key_and_certificates(
                data, _password(store.password)
            )
            chain = [] if certificate is None else [certificate, *extra]
        if key is None or not chain:
            raise ValueError("it holds no private key with its certificate")
    except (ValueError, TypeError) as exc:
        raise TlsError(
            f"cannot open the keystore {store.path}: {_reason(exc)} (check keyStorePassword, "
            "and that it is a PKCS#12 or PEM file with a private key)"
        ) from None
    one_time = secrets.token_urlsafe(24)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_time.encode()),
    )
    chain_pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    return chain_pem, pem, one_time


def _reason(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "password" in text.lower() or "mac" in text.lower() or "decrypt" in text.lower():
        return "wrong password or damaged file"
    return text.rstrip(".")


def load_trust_store(store: KeyStore) -> str:
    """The trusted certificates as one PEM text (``cadata``)."""
    data = _read(store, "truststore")
    try:
        if _is_pem(data):
            certificates = x509.load_pem_x509_certificates(data)
        else:
            _, certificate, extra = pkcs12.load_key_and_certificates(
                data, _password(store.password)
            )
            certificates = ([certificate] if certificate is not None else []) + list(extra)
    except (ValueError, TypeError) as exc:
        raise TlsError(
            f"cannot open the truststore {store.path}: {_reason(exc)} (check "
            "trustStorePassword, and that it is a PKCS#12 or PEM file of certificates)"
        ) from None
    if not certificates:
        raise TlsError(f"the truststore {store.path} holds no certificate")
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in certificates)


def _load_key_into(context: ssl.SSLContext, store: KeyStore) -> None:
    chain_pem, key_pem, one_time = load_key_store(store)
    directory = tempfile.mkdtemp(prefix="ferrymq-tls-")  # mode 0700
    try:
        certificate_file = Path(directory) / "chain.pem"
        key_file = Path(directory) / "key.pem"
        for path, content in (
            (certificate_file, chain_pem),
            (key_file, key_pem),
        ):
            path.touch(mode=0o600)
            path.write_bytes(content)
        try:
            context.load_cert_chain(certificate_file, key_file, password=one_time)
        except ssl.SSLError as exc:
            raise TlsError(f"cannot use the keystore {store.path}: {exc.reason}") from None
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def protocol_range(text: str) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """``enabledProtocols`` as the lowest and highest version; none older than TLS 1.2."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PROTOCOLS]
    if unknown or not names:
        known = ", ".join(PROTOCOLS)
        raise TlsError(
            f"transport.enabledProtocols: unknown protocol {', '.join(unknown) or '(none)'} "
            f"(known: {known})"
        )
    order = list(PROTOCOLS)
    old = [name for name in names if order.index(name) < order.index(_OLDEST)]
    if old:
        raise TlsError(
            f"transport.enabledProtocols: {', '.join(old)} is older than TLS 1.2 and refused "
            "(RFC 8996 deprecates TLS 1.0 and 1.1); list TLSv1.2 and/or TLSv1.3"
        )
    positions = sorted(order.index(name) for name in set(names))  # no gap is left to leave
    return PROTOCOLS[order[positions[0]]], PROTOCOLS[order[positions[-1]]]


def cipher_settings(text: str) -> tuple[str | None, bool]:
    """``enabledCipherSuites`` as an OpenSSL cipher string for TLS 1.2 and below (None when
    only TLS 1.3 suites are listed) and whether TLS 1.3 suites are listed."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    tls13 = {name for name in names if name in TLS13_SUITES}
    if tls13 and tls13 != TLS13_SUITES:
        raise TlsError(
            "transport.enabledCipherSuites: FerryMQ cannot offer only some TLS 1.3 suites; "
            f"list all of {', '.join(sorted(TLS13_SUITES))} or none of them"
        )
    openssl: list[str] = []
    for name in names:
        if name in TLS13_SUITES:
            continue
        mapped = OPENSSL_NAMES.get("TLS_" + name[4:] if name.startswith("SSL_") else name)
        if mapped is None:
            raise TlsError(
                f"transport.enabledCipherSuites: unknown or unsupported cipher suite {name} "
                "(use IANA/JSSE names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)"
            )
        openssl.append(mapped)
    if not names:
        raise TlsError("transport.enabledCipherSuites: no cipher suite listed")
    return (":".join(openssl) if openssl else None), bool(tls13)


def _restrict(context: ssl.SSLContext, options: TlsOptions) -> None:
    context.minimum_version = PROTOCOLS[_OLDEST]  # whatever the system's OpenSSL allows
    if options.protocols is not None:
        lowest, highest = protocol_range(options.protocols)
        context.minimum_version, context.maximum_version = lowest, highest
    if options.cipher_suites is not None:
        ciphers, tls13 = cipher_settings(options.cipher_suites)
        if ciphers is None:
            context.minimum_version = ssl.TLSVersion.TLSv1_3
        else:
            try:
                context.set_ciphers(ciphers)
            except ssl.SSLError:
                raise TlsError(
                    f"transport.enabledCipherSuites: none of {options.cipher_suites} is "
                    "available in this OpenSSL"
                ) from None
        if not tls13:
            context.maximum_version = ssl.TLSVersion.TLSv1_2
        if context.minimum_version > context.maximum_version:
            raise TlsError(
                "transport.enabledCipherSuites lists no suite of the enabledProtocols versions"
            )


_NO_CLIENT_TRUST = (
    "needClientAuth/wantClientAuth without a trustStore would trust client certificates from "
    'every public CA: give <sslContext trustStore="ca.pem"> the CA that issues your clients\' '
    "certificates"
)


def new_server_context(options: TlsOptions) -> ssl.SSLContext:
    """A listener's context: its keystore, the clients it verifies, its versions and suites."""
    if options.key_store is None:
        raise TlsError("a TLS listener needs a keystore (<sslContext keyStore=...>)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _load_key_into(context, options.key_store)
    if options.need_client_auth or options.want_client_auth:
        # The system's CAs would let anyone with a publicly issued certificate whose DN
        # matches a certificate login's users file in (ActiveMQ trusts the JVM's cacerts).
        if options.trust_store is None:
            raise TlsError(_NO_CLIENT_TRUST)
        context.verify_mode = ssl.CERT_REQUIRED if options.need_client_auth else ssl.CERT_OPTIONAL
        context.load_verify_locations(cadata=load_trust_store(options.trust_store))
    _restrict(context, options)
    return context


def client_context(options: TlsOptions) -> ssl.SSLContext:
    """A client's context: the broker is verified against the trust store, else the system's
    (OpenSSL's defaults, which honour ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if options.trust_store is not None:
        context.load_verify_locations(cadata=load_trust_store(options.trust_store))
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    context.check_hostname = options.verify_host_name
    if options.key_store is not None:
        _load_key_into(context, options.key_store)
    _restrict(context, options)
    return context


def certificate_subject(der: bytes | None) -> str | None:
    """A certificate's subject DN as RFC 4514 text ("CN=client,O=Test"), the form ActiveMQ's
    certificate login modules compare."""
    if der is None:
        return None
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


LISTENER_SCHEMES: dict[str, str] = {
    "ssl": "tcp",
    "nio+ssl": "nio",
    "stomp+ssl": "stomp",
    "stomp+nio+ssl": "stomp+nio",
    "auto+ssl": "auto",
    "auto+nio+ssl": "auto+nio",
    "amqp+ssl": "amqp",
    "amqp+nio+ssl": "amqp+nio",
}
"""ActiveMQ's TLS listener schemes and the plain scheme whose protocol each speaks."""
LISTENER_OPTIONS = (
    "needClientAuth",
    "wantClientAuth",
    "transport.needClientAuth",
    "transport.wantClientAuth",
    "transport.enabledProtocols",
    "transport.enabledCipherSuites",
)
"""URI options of a TLS listener (ActiveMQ documentation, "SSL Transport Reference")."""


def _flag(options: Mapping[str, str], name: str) -> bool:
    value = options.get(name, options.get(f"transport.{name}", "false"))
    if value.lower() not in ("true", "false"):
        raise TlsError(f"URI option {name} must be true or false, got {value!r}")
    return value.lower() == "true"


def listener_options(options: Mapping[str, str]) -> TlsOptions:
    """A TLS listener's URI options, checked (key material comes from ``<sslContext>``)."""
    settings = TlsOptions(
        need_client_auth=_flag(options, "needClientAuth"),
        want_client_auth=_flag(options, "wantClientAuth"),
        protocols=options.get("transport.enabledProtocols"),
        cipher_suites=options.get("transport.enabledCipherSuites"),
    )
    if settings.protocols is not None:
        protocol_range(settings.protocols)
    if settings.cipher_suites is not None:
        cipher_settings(settings.cipher_suites)
    return settings


CLIENT_SCHEMES = frozenset({"ssl", "stomp+ssl"})
"""Client URL schemes that mean TLS: ``tcp://`` and ``stomp://`` over TLS."""
CLIENT_OPTIONS = (
    "trustStore",
    "trustStorePassword",
    "keyStore",
    "keyStorePassword",
    "verifyHostName",
    "socket.verifyHostName",
    "transport.enabledProtocols",
    "transport.enabledCipherSuites",
)
"""The TLS options of a client URL: ActiveMQ's ``ActiveMQSslConnectionFactory`` property names
for the key material, its SSL transport's for the rest."""


def client_options(query: Mapping[str, str]) -> TlsOptions:
    """A TLS client URL's options, checked (files are read by ``cached_client_context``)."""
    verify = query.get("verifyHostName", query.get("socket.verifyHostName", "true"))
    if verify.lower() not in ("true", "false"):
        raise TlsError(f"option verifyHostName must be true or false, got {verify!r}")
    options = TlsOptions(
        key_store=_url_store(query, "keyStore"),
        trust_store=_url_store(query, "trustStore"),
        verify_host_name=verify.lower() == "true",
        protocols=query.get("transport.enabledProtocols"),
        cipher_suites=query.get("transport.enabledCipherSuites"),
    )
    if options.protocols is not None:
        protocol_range(options.protocols)
    if options.cipher_suites is not None:
        cipher_settings(options.cipher_suites)
    return options


def _url_store(query: Mapping[str, str], name: str) -> KeyStore | None:
    path = query.get(name)
    if path is None:
        return None
    return KeyStore(Path(path.removeprefix("file:")), query.get(f"{name}Password"))


@functools.lru_cache(maxsize=32)
def cached_client_context(options: TlsOptions) -> ssl.SSLContext:
    """``client_context``, made once per set of options in a process: every reconnection of
    a failover or network connection would otherwise read and decrypt its files again."""
    return client_context(options)
