"""Header value encoding per protocol version (STOMP 1.2 "Value Encoding").

STOMP 1.0 has no escapes: a header value cannot hold an EOL, and ActiveMQ trims 1.0 values of
surrounding whitespace (``testHeaderValuesAreTrimmed1_0``). STOMP 1.1 escapes backslash, LF and
colon; 1.2 adds CR. In 1.1+ values are kept exactly (``testHeaderValuesAreNotWSTrimmed``), and an
undefined escape sequence is a fatal protocol error ("Value Encoding": "MUST treat ... as a fatal
protocol error"). CONNECT, STOMP and CONNECTED frames are never escaped, whatever the version.
"""

from __future__ import annotations

from typing import Final

from ferrymq.stomp.constants import V1_0, V1_1, V1_2

# Decoded character -> escape sequence, per version.
ESCAPES: Final[dict[str, dict[str, str]]] = {
    V1_0: {},
    V1_1: {"\\": "\\\\", "\n": "\\n", ":": "\\c"},
    V1_2: {"\\": "\\\\", "\r": "\\r", "\n": "\\n", ":": "\\c"},
}
# Escape sequence letter -> decoded character, per version.
UNESCAPES: Final[dict[str, dict[str, str]]] = {
    version: {seq[1]: char for char, seq in table.items()} for version, table in ESCAPES.items()
}

# What Java's String.trim() removes: every char up to and including U+0020. ActiveMQ uses it
# on 1.0 header values, so we trim exactly the same set.
JAVA_WHITESPACE: Final = "".join(map(chr, range(0x21)))


def escape(text: str, version: str) -> str:
    """Escape a header name or value for a frame other than CONNECT/STOMP/CONNECTED.

    The characters the version cannot escape are left alone; ``encoder`` rejects the values
    that would then break the framing.
    """
    if version == V1_0:
        return text
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if version == V1_2 and "\r" in text:
        text = text.replace("\r", "\\r")
    if "\n" in text:
        text = text.replace("\n", "\\n")
    if ":" in text:
        text = text.replace(":", "\\c")
    return text


def unescape(text: str, version: str) -> str:
    """Decode a header name or value; raise ValueError naming an undefined escape sequence.

    Splitting at each escaped backslash first leaves pieces in which every remaining backslash
    must start one of the other sequences, so a few ``str.replace`` calls decode it all.
    """
    if "\\" not in text or version == V1_0:
        return text
    if "\\\\" in text:
        return "\\".join([unescape(piece, version) for piece in text.split("\\\\")])
    decoded = text.replace("\\c", ":").replace("\\n", "\n")
    if version == V1_2:
        decoded = decoded.replace("\\r", "\r")
    if "\\" in decoded:
        # Replacements add no backslash, so what follows the first one left is original.
        at = decoded.index("\\")
        raise ValueError(f"undefined escape sequence '{decoded[at : at + 2]}'")
    return decoded
