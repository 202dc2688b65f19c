"""Jasypt's `ENC(...)` values, as ActiveMQ's "Encrypted passwords" page uses them.

ActiveMQ's activemq-security.xml example reads credentials-enc.properties through Jasypt's
`EncryptablePropertyPlaceholderConfigurer`, and a JAAS `PropertiesLoginModule` with
`decrypt=true` reads users.properties the same way. The values are Jasypt's
`StandardPBEStringEncryptor` output with its defaults: PBEWithMD5AndDES (PKCS #5 PBKDF1 with
MD5, 1000 iterations, an 8-byte random salt in front of the DES-CBC ciphertext), base64. The
password comes from the environment (`ACTIVEMQ_ENCRYPTION_PASSWORD` in ActiveMQ's files), as
`activemq encrypt` made it. Only that algorithm is read: it is what ActiveMQ's tools write.

This obscures a password in a file; it does not protect it from anyone who can read the
environment. docs/security.md recommends hashed passwords instead.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

__all__ = [
    "ALGORITHM",
    "DEFAULT_PASSWORD_ENV",
    "JasyptError",
    "decrypt",
    "encrypt",
    "is_encrypted",
]

ALGORITHM = "PBEWithMD5AndDES"
DEFAULT_PASSWORD_ENV = "ACTIVEMQ_ENCRYPTION_PASSWORD"
_ITERATIONS = 1000
_SALT_BYTES = 8


class JasyptError(ValueError):
    """A value that cannot be decrypted; the text never holds the value or the password."""


def is_encrypted(value: str) -> bool:
    stripped = value.strip()
    return stripped.startswith("ENC(") and stripped.endswith(")")


def _key_iv(password: str, salt: bytes) -> tuple[bytes, bytes]:
    digest = password.encode("utf-8") + salt
    for _ in range(_ITERATIONS):
        digest = hashlib.md5(digest, usedforsecurity=False).digest()
    return digest[:8], digest[8:16]


def _cipher(password: str, salt: bytes) -> Cipher[modes.CBC]:
    # Imported here: only files that hold ENC(...) values need it. DES is 3DES with one key
    # repeated three times.
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    key, iv = _key_iv(password, salt)
    return Cipher(TripleDES(key * 3), modes.CBC(iv))


def decrypt(value: str, password: str) -> str:
    """The plaintext of `ENC(base64)` (or of the bare base64)."""
    text = value.strip()
    if is_encrypted(text):
        text = text[4:-1]
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise JasyptError("an ENC(...) value is not base64") from None
    if len(raw) < _SALT_BYTES + 8 or (len(raw) - _SALT_BYTES) % 8:
        raise JasyptError("an ENC(...) value is too short or not whole DES blocks")
    decryptor = _cipher(password, raw[:_SALT_BYTES]).decryptor()
    padded: bytes = decryptor.update(raw[_SALT_BYTES:]) + decryptor.finalize()
    pad = padded[-1]
    if not 1 <= pad <= 8 or padded[-pad:] != bytes([pad]) * pad:
        raise JasyptError(
            f"an ENC(...) value does not decrypt with this password ({ALGORITHM}): "
            "check the encryption password"
        )
    try:
        return padded[:-pad].decode("utf-8")
    except UnicodeDecodeError:
        raise JasyptError("an ENC(...) value does not decrypt with this password") from None


def encrypt(plaintext: str, password: str, salt: bytes | None = None) -> str:
    """`ENC(...)` as Jasypt writes it (tests use it to make ActiveMQ-style files)."""
    salt = os.urandom(_SALT_BYTES) if salt is None else salt
    data = plaintext.encode("utf-8")
    pad = 8 - len(data) % 8
    encryptor = _cipher(password, salt).encryptor()
    body: bytes = encryptor.update(data + bytes([pad]) * pad) + encryptor.finalize()
    return f"ENC({base64.b64encode(salt + body).decode('ascii')})"
