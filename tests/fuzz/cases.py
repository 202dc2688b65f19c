"""A malformed-input case and the answer the broker owes it; the families that generate cases
live in frame_faults.py (framing) and session_faults.py (what frames ask).

Every ``Case`` is played on its own connection (see ``play`` in the test).  ``version`` None
means the bytes are the first thing the broker sees; otherwise the connection first completes a
CONNECT for that version, or, with ``pipelined``, sends the CONNECT in the same write.

Outcomes (issue 2, item 8; DESIGN.md "Testing"):

* FATAL: an ERROR frame with a non-empty ``message`` and then the broker closes the connection.
  FerryMQ makes every protocol violation fatal except the two ActiveMQ keeps open.
* KEPT_OPEN: an ERROR frame, and the connection still works ("Already connected.", and NACK on
  a 1.0 connection: reference/activemq.md 6.1 and 6.8).
* INCOMPLETE: a frame that is merely unfinished gets no answer at all.
* ANY: random or randomly damaged input: whatever comes back is well-formed, every ERROR has a
  message, and the broker closes when the client does.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
from dataclasses import dataclass

from hypothesis import strategies as st

from .wire import frame

VERSIONS = ("1.0", "1.1", "1.2")
BODY_LIMIT = 65536
"""``wireFormat.maxDataLength`` of the fuzzed broker's listener."""
CLIENT_COMMANDS = (
    "SEND",
    "SUBSCRIBE",
    "UNSUBSCRIBE",
    "ACK",
    "NACK",
    "BEGIN",
    "COMMIT",
    "ABORT",
    "DISCONNECT",
)
KNOWN_COMMANDS = frozenset({*CLIENT_COMMANDS, "CONNECT", "STOMP"})


class Outcome(enum.Enum):
    FATAL = "fatal"
    KEPT_OPEN = "kept open"
    INCOMPLETE = "incomplete"
    ANY = "any"


@dataclass(frozen=True)
class Case:
    family: str
    data: bytes
    outcome: Outcome
    version: str | None = None
    pipelined: bool = False
    receipt: str | None = None
    """When set, the ERROR must carry ``receipt-id`` with this value (reference 6.10)."""
    mentions: str | None = None
    """A word the ERROR's message must contain (case-insensitive)."""
    receipts_first: tuple[str, ...] = ()
    """RECEIPTs owed, in this order, for the valid frames ahead of the fault."""
    splits: tuple[int, ...] = ()
    """Offsets at which ``data`` is cut into separate writes (the parser's incremental paths)."""

    def __repr__(self) -> str:
        data = self.data if len(self.data) < 300 else self.data[:300] + b"..."
        return (
            f"Case({self.family}, version={self.version}, pipelined={self.pipelined}, "
            f"outcome={self.outcome.value}, splits={self.splits}, data={data!r})"
        )

    def chunks(self) -> list[bytes]:
        bounds = [0, *self.splits, len(self.data)]
        return [self.data[a:b] for a, b in itertools.pairwise(bounds)]


def valid_frames(version: str) -> list[bytes]:
    """Frames that are fine on their own (destinations only the fuzz uses)."""
    frames = [
        frame("SEND", ("destination", "/queue/fuzz.valid"), ("receipt", "r1"), body=b"hello"),
        frame(
            "SEND",
            ("destination", "/topic/fuzz.valid"),
            ("content-length", "5"),
            ("persistent", "true"),
            body=b"a\0b\nc",
        ),
        frame("SUBSCRIBE", ("id", "s1"), ("destination", "/queue/fuzz.sub"), ("ack", "client")),
        frame("BEGIN", ("transaction", "tx1"), ("receipt", "r2")),
        frame("UNSUBSCRIBE", ("id", "s9"), ("receipt", "r3")),
    ]
    if version == "1.2":
        frames.append(frame("SEND", ("destination", "/queue/fuzz\\cvalid"), body=b"escaped"))
    return frames


@st.composite
def session(draw: st.DrawFn) -> tuple[str, bool]:
    return draw(st.sampled_from(VERSIONS)), draw(st.booleans())


def drawn_case(
    draw: st.DrawFn,
    family: str,
    data: bytes,
    outcome: Outcome,
    *,
    receipt: str | None = None,
    mentions: str | None = None,
    versions: tuple[str, ...] = VERSIONS,
) -> Case:
    version = draw(st.sampled_from(versions))
    return Case(family, data, outcome, version, draw(st.booleans()), receipt, mentions)


@st.composite
def chunked(draw: st.DrawFn, case: st.SearchStrategy[Case]) -> Case:
    """Half the cases arrive in pieces: a parser must give the same answer however bytes come."""
    drawn = draw(case)
    if len(drawn.data) < 2 or not draw(st.booleans()):
        return drawn
    cuts = draw(st.lists(st.integers(1, len(drawn.data) - 1), max_size=4, unique=True))
    return dataclasses.replace(drawn, splits=tuple(sorted(cuts)))
