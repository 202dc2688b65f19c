"""Comparing X.500 distinguished names as written by people and by TLS stacks.

ActiveMQ's TextFileCertificateLoginModule compares the certificate's subject, as Java prints
it (`CN=client, OU=activemq.org, O=activemq.org, L=Unknown, ST=Unknown, C=Unknown`), with the
text of its users file. FerryMQ's TLS transport gives the subject in RFC 4514 form
(`CN=client,OU=activemq.org,...`: no spaces, same order, most specific first). So a DN is
compared by its parts: split into RDNs at unescaped `,` (or `;`) and into attributes at
unescaped `+`; attribute types in upper case (with the common OIDs named, `2.5.4.3` = CN,
`EMAILADDRESS` = `E`); values unescaped (`\\,` and `\\2C` alike), trimmed, inner white space
collapsed, and compared without case, as LDAP's caseIgnoreMatch does for these attributes.
The order of RDNs counts: a users file written in reverse (`C=...,CN=...`) does not match.
"""

from __future__ import annotations

import re

__all__ = ["java_style_dn", "normalize_dn"]

_OIDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
    "1.2.840.113549.1.9.1": "E",
    "EMAILADDRESS": "E",
    "S": "ST",
}
_HEX_PAIR = re.compile(r"\\([0-9A-Fa-f]{2})")


def _split(text: str, separators: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    escaped = quoted = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == '"':
            quoted = not quoted
            current.append(char)
        elif char in separators and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _value(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    raw = _HEX_PAIR.sub(lambda m: "\\" + chr(int(m.group(1), 16)), text)
    raw = re.sub(r"\\(.)", r"\1", raw)
    return " ".join(raw.split()).casefold()


def _attribute(text: str) -> str:
    kind, sep, value = text.partition("=")
    name = kind.strip().upper()
    name = _OIDS.get(name.removeprefix("OID."), name)
    return f"{name}={_value(value)}" if sep else _value(text)


def normalize_dn(dn: str) -> str:
    """A canonical text for `dn`: equal for two spellings of the same name."""
    rdns = []
    for rdn in _split(dn, ",;"):
        if not rdn.strip():
            continue
        rdns.append("+".join(sorted(_attribute(a) for a in _split(rdn, "+"))))
    return ",".join(rdns)


def java_style_dn(dn: str) -> str:
    """``dn`` as Java prints a certificate's subject (``CN=a, OU=b``): what ActiveMQ users
    files' regular expressions are written against.  Split at unescaped commas only, so an
    escaped one inside a value stays as it is."""
    return ", ".join(part.strip() for part in _split(dn, ","))
