"""``LocalSide``: this broker as the elements of its broker connections see it.

An element reaches its own broker as a client (``vm://``), as a network bridge does, and reads
the broker through the few values here. The node id is Artemis's server id: what the mirror's
origin tagging compares and what a peer sees in ``broker-connection-info``. A persistent broker
keeps it in ``<broker directory>/node-id``, written once, so a restart is the same node (a
mirror target then recognises the events it already applied); a broker without persistence
makes a new one at each start.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["NODE_ID_FILE", "BrokerLocalSide", "NodeIdError", "node_id_for"]

log = logging.getLogger(__name__)

NODE_ID_FILE = "node-id"


class NodeIdError(Exception):
    """The node id file cannot be read or written; the text is the one line to show."""


@dataclass(slots=True)
class BrokerLocalSide:
    """``connections.api.LocalSide`` from the values the composition root hands over."""

    broker_id: str
    broker_name: str
    node_id: str
    vm_url: str
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    list_queues: Callable[[], Sequence[str]] = field(default=lambda: (), repr=False)
    addresses: Mapping[str, str] = field(default_factory=dict)
    """Queue -> its broker.xml ``<address name>``, where that is not the queue's own name."""
    depth_of: Callable[[str], int | None] = field(default=lambda name: None, repr=False)
    learn_peer: Callable[[str, str], None] = field(default=lambda mirror, node: None, repr=False)

    def queues(self) -> Sequence[str]:
        return list(self.list_queues())

    def queue_depth(self, name: str) -> int | None:
        """Messages in local queue ``name`` (None: no such queue): a mirror's backlog."""
        return self.depth_of(name)

    def learn_mirror_peer(self, mirror: str, node_id: str) -> None:
        """The mirror ``mirror`` reaches ``node_id``: the core's tap queues nothing of that
        node's own for it."""
        self.learn_peer(mirror, node_id)

    def address_of(self, queue: str) -> str:
        return self.addresses.get(queue, queue)


def node_id_for(directory: Path | None) -> str:
    """The node id kept in ``directory`` (created on first use); a fresh one without."""
    if directory is None:
        return str(uuid.uuid4())
    path = directory / NODE_ID_FILE
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise NodeIdError(f"cannot read the broker's node id from {path}: {exc}") from None
    if text:
        return text
    node_id = str(uuid.uuid4())
    try:
        directory.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        with temporary.open("w", encoding="ascii") as out:
            out.write(node_id + "\n")
            out.flush()
            os.fsync(out.fileno())
        temporary.replace(path)
    except OSError as exc:
        raise NodeIdError(
            f"cannot write the broker's node id to {path}: {exc} (check the data directory)"
        ) from None
    log.info("new node id %s kept in %s", node_id, path)
    return node_id
