"""CONNECT frames with hostile credentials, for a broker that checks them (issue 16, "Fuzz").

Every family is the first thing the broker reads on a connection: a login that is wrong, huge,
binary, not UTF-8 or cut by a NUL.  None may connect; each gets an ERROR and the close (ActiveMQ's
answer to a failed login, reference/activemq.md "STOMP"), and a credential the client sent
never comes back in that ERROR.
"""

from __future__ import annotations

from hypothesis import strategies as st

from .cases import VERSIONS, Case, Outcome
from .wire import frame

USER = "fuzzer"
PASSWORD = "fuzz-password-7"
"""The one good login of the fuzzed broker (the canary's)."""
INVALID = "password is invalid"
"""What ActiveMQ's failed-login ERROR says, whichever part was wrong."""


def java_trim(value: str) -> str:
    """What ActiveMQ makes of a STOMP 1.0 header value (Java's ``String.trim()``)."""
    start, end = 0, len(value)
    while start < end and value[start] <= " ":
        start += 1
    while end > start and value[end - 1] <= " ":
        end -= 1
    return value[start:end]


def connect_with(version: str | None, *headers: tuple[str, str]) -> bytes:
    head = [("host", "fuzz"), *headers]
    if version is not None:
        head.insert(0, ("accept-version", version))
    return frame("CONNECT", *head)


def raw_connect(version: str | None, login: bytes, passcode: bytes) -> bytes:
    accept = b"" if version is None else f"accept-version:{version}\n".encode()
    return b"CONNECT\n" + accept + b"login:" + login + b"\npasscode:" + passcode + b"\n\n\0"


# CONNECT's header values are taken as written, never unescaped (ActiveMQ's converter): a
# value is any text without the bytes that end a line or the frame.
_TEXT = st.text(st.characters(blacklist_characters="\0\r\n"), max_size=64)


def _is_the_password(passcode: str) -> bool:
    """CONNECT is read before the version is agreed, so as STOMP 1.0: its values are trimmed
    whatever version the client offers (so is ActiveMQ's), and padding is no near miss."""
    return java_trim(passcode) == PASSWORD


@st.composite
def wrong_text_credentials(draw: st.DrawFn) -> Case:
    """Any text as login and passcode: a plain failed login."""
    version = draw(st.sampled_from((None, *VERSIONS)))
    login = draw(st.one_of(st.just(USER), _TEXT))
    passcode = draw(_TEXT.filter(lambda p: not _is_the_password(p)))
    headers = draw(st.permutations([("login", login), ("passcode", passcode)]))
    data = connect_with(version, *headers[: draw(st.integers(0, 2))])
    return Case("wrong credentials", data, Outcome.FATAL, version=None, mentions=INVALID)


@st.composite
def binary_credentials(draw: st.DrawFn) -> Case:
    """Bytes that are not UTF-8 (or are, by chance), without the bytes that end a line."""
    framing = {0, 10, 13}
    blob = st.binary(max_size=64).map(lambda b: bytes(c for c in b if c not in framing))
    invalid = st.sampled_from((b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"))
    login = draw(st.one_of(blob, st.tuples(blob, invalid).map(b"".join)))
    passcode = draw(st.one_of(blob, st.tuples(invalid, blob).map(b"".join)))
    data = raw_connect(draw(st.sampled_from((None, *VERSIONS))), login, passcode)
    return Case("binary credentials", data, Outcome.FATAL)


@st.composite
def huge_credentials(draw: st.DrawFn) -> Case:
    """A login or passcode near, at or far past the header-line limit (10 KiB)."""
    size = draw(st.sampled_from((4096, 10_000, 10_240, 10_241, 65_536, 300_000)))
    filler = draw(st.sampled_from(("x", "é", "\U0001f600")))
    value = (filler * size)[:size]
    if draw(st.booleans()):
        headers = (("login", value), ("passcode", "p"))
    else:
        headers = (("login", USER), ("passcode", value))
    data = connect_with(draw(st.sampled_from(VERSIONS)), *headers)
    return Case("huge credentials", data, Outcome.FATAL)


@st.composite
def nul_in_credentials(draw: st.DrawFn) -> Case:
    """A NUL inside a credential ends the frame early: whatever follows is a broken frame."""
    where = draw(st.sampled_from(("login", "passcode")))
    cut = draw(st.integers(0, len(PASSWORD)))
    value = PASSWORD[:cut] + "\0" + PASSWORD[cut:]
    other = "passcode" if where == "login" else "login"
    data = connect_with(draw(st.sampled_from(VERSIONS)), (where, value), (other, USER))
    return Case("NUL in credentials", data, Outcome.ANY)


@st.composite
def near_miss(draw: st.DrawFn) -> Case:
    """The good login, almost: case, a character short, empty, missing, a repeated header."""
    variants = [
        (("login", USER), ("passcode", PASSWORD.upper())),
        (("login", USER.upper()), ("passcode", PASSWORD)),
        (("login", USER), ("passcode", PASSWORD[:-1])),
        (("login", USER), ("passcode", "")),
        (("login", ""), ("passcode", PASSWORD)),
        (("login", USER),),
        (("passcode", PASSWORD),),
        # STOMP 1.2 "Repeated Header Entries": the first one counts.
        (("login", USER), ("passcode", "wrong"), ("passcode", PASSWORD)),
    ]
    data = connect_with(draw(st.sampled_from(VERSIONS)), *draw(st.sampled_from(variants)))
    return Case("near miss", data, Outcome.FATAL, mentions=INVALID)


FAMILIES = (
    wrong_text_credentials(),
    binary_credentials(),
    huge_credentials(),
    nul_in_credentials(),
    near_miss(),
)
