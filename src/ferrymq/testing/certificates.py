"""Certificates for tests: a private CA and what it signs, written as PKCS#12 and PEM files.

``make_certificates(tmp_path)`` gives every file a TLS test needs (docs/security.md shows the
``openssl`` commands that make the same set by hand): the CA (PEM, and a PKCS#12 truststore),
a server certificate for ``localhost`` and ``127.0.0.1``, a client certificate
(``CN=client,O=Test``), an expired server certificate, a server certificate for another host,
and a certificate signed by a CA nobody trusts. Keys are EC P-256: quick to make.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["PASSWORD", "CertificateFiles", "Certificates", "make_certificates"]

PASSWORD = "changeit"
"""The password of every keystore made here (Java's default truststore password)."""


@dataclass(frozen=True)
class CertificateFiles:
    """One certificate with its key, in each format FerryMQ reads."""

    p12: Path
    """PKCS#12 keystore (key, certificate, CA), encrypted with ``PASSWORD``."""
    pem: Path
    """PEM: the certificate, the CA, then the unencrypted key, in one file."""
    subject: str
    """The subject DN, RFC 4514."""


@dataclass(frozen=True)
class Certificates:
    directory: Path
    ca_pem: Path
    ca_p12: Path
    """The CA certificate as a PKCS#12 truststore (no key), encrypted with ``PASSWORD``."""
    server: CertificateFiles
    client: CertificateFiles
    expired: CertificateFiles
    wrong_host: CertificateFiles
    """A server certificate for ``other.example``, not this machine."""
    untrusted: CertificateFiles
    """A server certificate for this machine signed by a CA no test trusts."""


@dataclass(frozen=True)
class _Authority:
    name: x509.Name
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Test"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _authority(common_name: str) -> _Authority:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _Authority(name, key, certificate)


def _issue(
    authority: _Authority,
    common_name: str,
    hosts: tuple[str, ...],
    *,
    expired: bool = False,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)
    if expired:
        start, end = now - datetime.timedelta(days=30), now - datetime.timedelta(days=1)
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(authority.name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.key.public_key()),
            critical=False,
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(authority.key, hashes.SHA256())


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def _write(
    directory: Path,
    stem: str,
    authority: _Authority,
    common_name: str,
    hosts: tuple[str, ...],
    *,
    expired: bool = False,
    password: str = PASSWORD,
) -> CertificateFiles:
    key, certificate = _issue(authority, common_name, hosts, expired=expired)
    p12 = directory / f"{stem}.p12"
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            stem.encode(),
            key,
            certificate,
            [authority.certificate],
            serialization.BestAvailableEncryption(password.encode()),
        )
    )
    pem = directory / f"{stem}.pem"
    clear_key = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    pem.write_bytes(_pem(certificate) + _pem(authority.certificate) + clear_key)
    return CertificateFiles(p12, pem, certificate.subject.rfc4514_string())


def make_certificates(directory: Path, password: str = PASSWORD) -> Certificates:
    """Write a test CA and the certificates it signs into ``directory`` (created if needed);
    ``password`` encrypts every PKCS#12 file."""
    directory.mkdir(parents=True, exist_ok=True)
    authority = _authority("Test CA")
    ca_pem = directory / "ca.pem"
    ca_pem.write_bytes(_pem(authority.certificate))
    ca_p12 = directory / "ca.p12"
    ca_p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            None,
            None,
            None,
            [authority.certificate],
            serialization.BestAvailableEncryption(password.encode()),
        )
    )
    local = ("localhost", "127.0.0.1")
    other = ("other.example",)
    return Certificates(
        directory=directory,
        ca_pem=ca_pem,
        ca_p12=ca_p12,
        server=_write(directory, "server", authority, "localhost", local, password=password),
        client=_write(directory, "client", authority, "client", (), password=password),
        expired=_write(
            directory, "expired", authority, "localhost", local, expired=True, password=password
        ),
        wrong_host=_write(
            directory, "wrong-host", authority, "other.example", other, password=password
        ),
        untrusted=_write(
            directory, "untrusted", _authority("Other CA"), "localhost", local, password=password
        ),
    )
