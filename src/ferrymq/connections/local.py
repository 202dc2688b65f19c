"""``LocalSide``: this broker as the elements of its broker connections see it.

An element reaches its own broker as a client (``vm://``), as a network bridge does, and reads
the broker through the few values here; a mirror's forwarder reads its queue in process
(``consume_raw``, with the reader the composition root hands over). The node id is Artemis's
server id: what the mirror's origin tagging compares and what a peer sees in
``broker-connection-info``. A persistent broker keeps it in ``<broker directory>/node-id``,
written once, so a restart is the same node (a mirror target then recognises the events it
already applied); a broker without persistence makes a new one at each start. Next to it,
``mirror-peers.json`` keeps each mirror's target node id once learnt, so a restarted broker's
tap skips the target's own events before the link is up again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ferrymq.connections.api import LocalQueueReader

__all__ = [
    "MIRROR_PEERS_FILE",
    "NODE_ID_FILE",
    "BrokerLocalSide",
    "NodeIdError",
    "keep_node_id",
    "mirror_peers_in",
    "node_id_for",
]

log = logging.getLogger(__name__)

NODE_ID_FILE = "node-id"
MIRROR_PEERS_FILE = "mirror-peers.json"
"""Mirror name -> the node id its target gave, kept next to the node id."""


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
    directory: Path | None = None
    """Where the mirror peers are kept (the broker directory; None: not persistent)."""
    mirror_peers: dict[str, str] = field(default_factory=dict)
    """The peers known (read at start): shared by the copies ``replace`` makes per connection."""
    open_reader: Callable[[str, int, str | None], LocalQueueReader] | None = field(
        default=None, repr=False
    )
    """``(queue, window, user)`` -> an in-process reader (``service.local_consumer``, which
    the composition root hands over: this layer does not reach the service)."""

    def queues(self) -> Sequence[str]:
        return list(self.list_queues())

    def queue_depth(self, name: str) -> int | None:
        """Messages in local queue ``name`` (None: no such queue): a mirror's backlog."""
        return self.depth_of(name)

    def learn_mirror_peer(self, mirror: str, node_id: str) -> None:
        """The mirror ``mirror`` reaches ``node_id``: the core's tap queues nothing of that
        node's own for it. A new peer is written down at once (this happens once per target,
        not per connection), so after a restart the tap knows it before the link is up."""
        self.learn_peer(mirror, node_id)
        if self.mirror_peers.get(mirror) == node_id:
            return
        self.mirror_peers[mirror] = node_id
        if self.directory is not None:
            _write_mirror_peers(self.directory, self.mirror_peers)

    def address_of(self, queue: str) -> str:
        return self.addresses.get(queue, queue)

    def consume_raw(self, queue: str, window: int) -> LocalQueueReader:
        if self.open_reader is None:
            raise ConnectionError(f"broker {self.broker_name} reads no queue in process")
        return self.open_reader(queue, window, self.user)


def node_id_for(directory: Path | None, *, keep: bool = True) -> str:
    """The node id kept in ``directory`` (created on first use); a fresh one without. With
    ``keep`` false a new one is not written yet: ``keep_node_id`` does, once the broker's
    configuration proved usable (a broker that never started leaves no node id behind)."""
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
    if keep:
        keep_node_id(directory, node_id)
    return node_id


def keep_node_id(directory: Path, node_id: str) -> None:
    """Write ``node_id`` into ``directory`` unless it is there already."""
    path = directory / NODE_ID_FILE
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if path.read_text(encoding="ascii").strip() == node_id:
            return
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


def mirror_peers_in(directory: Path | None) -> dict[str, str]:
    """The mirror peers kept in ``directory`` (none without, or when the file is unusable: they
    are learnt again when each link comes up, so this only warns)."""
    if directory is None:
        return {}
    path = directory / MIRROR_PEERS_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s (%s): mirror peers are learnt again as they connect", path, exc)
        return {}
    if not isinstance(document, dict):
        log.warning("ignoring %s: not a JSON object", path)
        return {}
    return {str(k): v for k, v in document.items() if isinstance(v, str) and v}


def _write_mirror_peers(directory: Path, peers: Mapping[str, str]) -> None:
    path = directory / MIRROR_PEERS_FILE
    temporary = path.with_suffix(".tmp")
    try:
        with temporary.open("w", encoding="utf-8") as out:
            json.dump(dict(sorted(peers.items())), out, indent=2)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        temporary.replace(path)
    except OSError as exc:
        log.warning("cannot keep the mirror peers in %s: %s", path, exc)
