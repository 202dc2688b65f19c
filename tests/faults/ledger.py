"""Counting by message: what was sent, receipted and delivered, and what the contract forbids.

DESIGN.md "Durability contract": nothing receipted is lost; a message delivered again is flagged
``redelivered:true``; a receipted ack removes the message for good.  Nothing is delivered that
no producer sent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .peers import Delivery

SHOWN = 8
"""Offending messages quoted in a failure (the counts say how many there are in all)."""


@dataclass(frozen=True)
class Tally:
    sent: int
    send_frames: int
    receipted: int
    delivered: int
    distinct: int
    redelivered: int
    duplicates: int
    missing: tuple[int, ...]
    """Receipted seqs never delivered."""
    unflagged: tuple[tuple[Delivery, ...], ...]
    """All copies of each message delivered again without ``redelivered:true``."""
    unknown: tuple[Delivery, ...]
    """Deliveries of something never sent (or with a body that is not the one sent)."""
    resurrected: tuple[Delivery, ...]
    """Deliveries of a message after the broker receipted its ack."""
    renamed: tuple[tuple[Delivery, ...], ...]
    """Copies of one message under different message-ids (a second stored copy)."""
    shared_ids: tuple[tuple[Delivery, ...], ...]
    """One message-id on different messages (DESIGN.md: message-ids are unique)."""

    def counts(self) -> str:
        return (
            f"sent={self.sent} (SEND frames {self.send_frames}) receipted={self.receipted} "
            f"delivered={self.delivered} (distinct {self.distinct}) "
            f"redelivered={self.redelivered} duplicates={self.duplicates}"
        )

    def problems(self) -> list[str]:
        found = []
        if self.missing:
            found.append(
                f"{len(self.missing)} receipted messages were never delivered, "
                f"seqs {list(self.missing[:SHOWN])}..."
            )
        for copies in self.unflagged[:SHOWN]:
            shown = ", ".join(_show(d) for d in copies)
            found.append(f"delivered again without redelivered:true: {shown}")
        if len(self.unflagged) > SHOWN:
            found.append(f"... {len(self.unflagged)} unflagged duplicates in all")
        if self.unknown:
            shown = ", ".join(_show(d) for d in self.unknown[:SHOWN])
            found.append(f"{len(self.unknown)} deliveries of messages never sent: {shown}")
        if self.resurrected:
            shown = ", ".join(_show(d) for d in self.resurrected[:SHOWN])
            found.append(f"{len(self.resurrected)} deliveries after the ack was receipted: {shown}")
        for label, groups in (
            ("one message under several message-ids", self.renamed),
            ("one message-id on several messages", self.shared_ids),
        ):
            for group in groups[:SHOWN]:
                found.append(f"{label}: " + ", ".join(_show(d) for d in group))
        return found


def _show(delivery: Delivery) -> str:
    what = f"seq {delivery.seq}" if delivery.sentinel is None else f"sentinel {delivery.sentinel}"
    flag = " redelivered" if delivery.redelivered else ""
    return (
        f"[#{delivery.ordinal} {what} {delivery.message_id}{flag} connection {delivery.generation}]"
    )


def tally(
    sent: set[int],
    send_frames: int,
    receipted: set[int],
    deliveries: Iterable[Delivery],
    ack_confirmed: Mapping[int, int],
) -> Tally:
    copies: dict[object, list[Delivery]] = defaultdict(list)
    unknown: list[Delivery] = []
    resurrected: list[Delivery] = []
    delivered = 0
    for delivery in deliveries:
        delivered += 1
        if delivery.sentinel is not None:
            copies[("sentinel", delivery.sentinel)].append(delivery)
            continue
        seq = delivery.seq
        if seq is None or seq not in sent or delivery.body != f"message {seq}":
            unknown.append(delivery)
            continue
        copies[seq].append(delivery)
        confirmed_at = ack_confirmed.get(seq)
        if confirmed_at is not None and delivery.ordinal >= confirmed_at:
            resurrected.append(delivery)
    unflagged = tuple(
        tuple(group) for group in copies.values() if not all(d.redelivered for d in group[1:])
    )
    named: dict[str, list[Delivery]] = defaultdict(list)
    for group in copies.values():
        for delivery in group:
            named[delivery.message_id].append(delivery)
    renamed = tuple(
        tuple(group) for group in copies.values() if len({d.message_id for d in group}) > 1
    )
    shared_ids = tuple(
        tuple(group) for group in named.values() if len({(d.seq, d.sentinel) for d in group}) > 1
    )
    delivered_seqs = {key for key in copies if isinstance(key, int)}
    return Tally(
        sent=len(sent),
        send_frames=send_frames,
        receipted=len(receipted),
        delivered=delivered,
        distinct=len(delivered_seqs),
        redelivered=sum(d.redelivered for group in copies.values() for d in group),
        duplicates=sum(len(group) - 1 for group in copies.values()),
        missing=tuple(sorted(receipted - delivered_seqs)),
        unflagged=unflagged,
        unknown=tuple(unknown),
        resurrected=tuple(resurrected),
        renamed=renamed,
        shared_ids=shared_ids,
    )
