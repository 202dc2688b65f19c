"""Store operations as bytes: what a master sends its pure master/slave replica.

A replica applies exactly the batches the master's store applies, so its store ends up holding
the same rows; replaying a batch twice leaves the same state (an add replaces the row, removing
a missing row does nothing), which lets a replica take a snapshot while live batches already
flow.  Format: 4-byte big-endian length of a JSON list describing the operations (blobs by
length), then the blobs, concatenated, in order.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

from ferrymq.store.base import (
    AddDestination,
    AddDurableSubscription,
    AddMessage,
    DurableSubscriptionRecord,
    MarkDelivered,
    PurgeContainer,
    RemoveDestination,
    RemoveDurableSubscription,
    RemoveMessage,
    StoreOp,
)

_LENGTH = struct.Struct(">I")


class OplogError(ValueError):
    """Bytes that are not an operation batch (a damaged or foreign replication stream)."""


def encode_ops(ops: Sequence[StoreOp]) -> bytes:
    described: list[list[Any]] = []
    blobs: list[bytes] = []
    for op in ops:
        match op:
            case AddMessage():
                described.append(
                    [
                        "add",
                        op.container,
                        op.seq,
                        len(op.blob),
                        op.priority,
                        op.expiration,
                        op.persistent,
                        op.producer_message_id,
                        op.delivered,
                    ]
                )
                blobs.append(op.blob)
            case RemoveMessage():
                described.append(["remove", op.container, op.seq])
            case MarkDelivered():
                described.append(["mark", op.container, op.seq])
            case PurgeContainer():
                described.append(["purge", op.container])
            case AddDurableSubscription():
                record = op.record
                described.append(
                    [
                        "sub",
                        record.client_id,
                        record.subscription_name,
                        record.destination,
                        record.selector,
                        record.no_local,
                        record.container,
                    ]
                )
            case RemoveDurableSubscription():
                described.append(["unsub", op.client_id, op.subscription_name])
            case AddDestination():
                described.append(["dest", op.qualified_name])
            case RemoveDestination():
                described.append(["undest", op.qualified_name])
    head = json.dumps(described, separators=(",", ":")).encode()
    return _LENGTH.pack(len(head)) + head + b"".join(blobs)


def decode_ops(data: bytes) -> list[StoreOp]:
    try:
        (length,) = _LENGTH.unpack_from(data)
        described = json.loads(data[4 : 4 + length])
        offset = 4 + length
        ops: list[StoreOp] = []
        for item in described:
            kind = item[0]
            if kind == "add":
                _, container, seq, size, priority, expiration, persistent, pmid, delivered = item
                blob = data[offset : offset + size]
                if len(blob) != size:
                    raise OplogError("a message blob is cut short")
                offset += size
                ops.append(
                    AddMessage(
                        container,
                        seq,
                        bytes(blob),
                        priority,
                        expiration,
                        persistent,
                        pmid,
                        delivered,
                    )
                )
            elif kind == "remove":
                ops.append(RemoveMessage(item[1], item[2]))
            elif kind == "mark":
                ops.append(MarkDelivered(item[1], item[2]))
            elif kind == "purge":
                ops.append(PurgeContainer(item[1]))
            elif kind == "sub":
                ops.append(AddDurableSubscription(DurableSubscriptionRecord(*item[1:7])))
            elif kind == "unsub":
                ops.append(RemoveDurableSubscription(item[1], item[2]))
            elif kind == "dest":
                ops.append(AddDestination(item[1]))
            elif kind == "undest":
                ops.append(RemoveDestination(item[1]))
            else:
                raise OplogError(f"unknown operation {kind!r}")
        if offset != len(data):
            raise OplogError(f"{len(data) - offset} bytes left after the last operation")
        return ops
    except (struct.error, ValueError, TypeError, IndexError) as exc:
        if isinstance(exc, OplogError):
            raise
        raise OplogError(f"not an operation batch: {exc}") from exc
