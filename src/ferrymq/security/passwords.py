"""Stored passwords: plaintext (ActiveMQ's default, still accepted) or hashed.

The hashed form, written by `ferrymq hash-password`, is

    {PBKDF2-SHA256}<iterations>$<salt, base64>$<hash, base64>

(PBKDF2 with HMAC-SHA-256, RFC 8018; a 16-byte random salt; a 32-byte hash). It goes wherever
a password goes: `<authenticationUser password>`, a users.properties value, a `${...}` value.
Every comparison takes constant time (`hmac.compare_digest`), so timing does not tell how much
of a guess was right. Deriving a hash is deliberately slow; so that only a client's first login
pays for it, a verified password is remembered as an HMAC under a key made when the process
starts (never the password itself), and a later login with the same password costs one HMAC.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import threading
from collections.abc import Iterable

from ferrymq.util.text import is_decimal

__all__ = [
    "DEFAULT_ITERATIONS",
    "PREFIX",
    "PasswordFormatError",
    "PasswordVerifier",
    "check_stored",
    "dummy_for",
    "hash_password",
    "is_hashed",
]

PREFIX = "{PBKDF2-SHA256}"
DEFAULT_ITERATIONS = 200_000
_SALT_BYTES = 16
_MIN_ITERATIONS = 1000
MAX_ITERATIONS = 10_000_000
"""More would let one stored value (a typo, a hostile file) stall logins for seconds each."""
_CACHE_LIMIT = 4096


class PasswordFormatError(ValueError):
    """A stored value that starts like a hash but is not one (the text never shows it)."""


def is_hashed(stored: str) -> bool:
    return stored.startswith(PREFIX)


def hash_password(
    password: str, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> str:
    if not _MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"between {_MIN_ITERATIONS} and {MAX_ITERATIONS} iterations")
    salt = os.urandom(_SALT_BYTES) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations)
    encode = base64.b64encode
    return f"{PREFIX}{iterations}${encode(salt).decode()}${encode(digest).decode()}"


def _parse(stored: str) -> tuple[int, bytes, bytes]:
    parts = stored[len(PREFIX) :].split("$")
    message = f"a hashed password must read {PREFIX}<iterations>$<salt>$<hash> (base64)"
    if len(parts) != 3 or not is_decimal(parts[0]):
        raise PasswordFormatError(message)
    try:
        salt = base64.b64decode(parts[1], validate=True)
        digest = base64.b64decode(parts[2], validate=True)
    except (binascii.Error, ValueError):
        raise PasswordFormatError(message) from None
    iterations = int(parts[0])
    if iterations > MAX_ITERATIONS:
        raise PasswordFormatError(
            f"a hashed password has {iterations} iterations, more than the {MAX_ITERATIONS} "
            "FerryMQ accepts: hash it again with `ferrymq hash-password`"
        )
    if iterations < _MIN_ITERATIONS or not salt or len(digest) != 32:
        raise PasswordFormatError(message)
    return iterations, salt, digest


def check_stored(stored: str) -> None:
    """Raise `PasswordFormatError` for a malformed hash (when the users are loaded)."""
    if is_hashed(stored):
        _parse(stored)


_DUMMIES: dict[int, str] = {}


def dummy_for(stored: Iterable[str]) -> str:
    """A stored value no password matches that costs as much to check as the costliest of
    ``stored``: what an unknown user's password is checked against, so that the time a refusal
    takes does not tell whether the user exists.  Made once per iteration count (random salt
    and digest: nothing is derived)."""
    iterations = 0
    for value in stored:
        if is_hashed(value):
            try:
                iterations = max(iterations, _parse(value)[0])
            except PasswordFormatError:
                continue
    if not iterations:
        return "\0"  # only plaintext passwords: a plaintext comparison, as for a known user
    dummy = _DUMMIES.get(iterations)
    if dummy is None:
        salt, digest = (base64.b64encode(os.urandom(n)).decode() for n in (_SALT_BYTES, 32))
        dummy = _DUMMIES.setdefault(iterations, f"{PREFIX}{iterations}${salt}${digest}")
    return dummy


class PasswordVerifier:
    """Compares what a client presented with what is stored; thread-safe."""

    def __init__(self) -> None:
        self._key = os.urandom(32)
        self._verified: dict[tuple[str, bytes], None] = {}
        self._lock = threading.Lock()

    def verify(self, stored: str, presented: str) -> bool:
        given = presented.encode("utf-8")
        if not is_hashed(stored):
            return hmac.compare_digest(stored.encode("utf-8"), given)
        token = hmac.new(self._key, given, hashlib.sha256).digest()
        with self._lock:
            if (stored, token) in self._verified:
                return True
        try:
            iterations, salt, digest = _parse(stored)
        except PasswordFormatError:
            return False
        derived = hashlib.pbkdf2_hmac("sha256", given, salt, iterations)
        if not hmac.compare_digest(derived, digest):
            return False
        with self._lock:
            if len(self._verified) >= _CACHE_LIMIT:
                self._verified.clear()
            self._verified[(stored, token)] = None
        return True
