"""The message trace: one JSON line per message event, read by ``ferrymq audit`` (issue 7).

``MessageTrace`` turns what the core reports in ``effects.trace`` into JSON lines on the event
loop (stamped with the wall clock in microseconds and a sequence number per broker run; built
with f-strings, about 1 µs a record, where ``json.dumps`` of a dict took 5-7) and hands them,
one list per ``process`` pass, to a ``TraceWriter``, whose own thread appends them to files it
rotates by size.  The loop never waits for the disk: records wait in a bounded buffer, and
when that is full the loop drops them rather than block, and the writer later writes a ``gap``
record with the count, so an audit knows the trace has a hole.

Durability: records reach the OS (``flush``) within about ``LINGER_S`` (10 ms) of being
recorded; a file is fsynced when it is rotated and at a clean stop, which first writes
everything queued.  Under SIGKILL the records still in the buffer (the last 10 ms or so) are
lost and the last line may be cut short (``ferrymq audit`` skips a line that does not
parse); an OS crash loses what the OS had not written out yet.  Each broker run writes files of
its own, never appending to an earlier run's, so several brokers can share one directory.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring_ascii as _quote
from pathlib import Path
from typing import IO

from ferrymq.config.model import MessageTraceConfig
from ferrymq.core.destination import Destination
from ferrymq.core.effects import TraceEvent, TraceKind
from ferrymq.core.message import Message

__all__ = ["FIELDS", "KINDS", "MessageTrace", "TraceWriter"]

log = logging.getLogger(__name__)

FIELDS = (
    "ts_us",
    "seq",
    "kind",
    "broker_id",
    "broker_name",
    "message_id",
    "producer_message_id",
    "destination",
    "container",
    "persistent",
    "broker_path",
    "connection_id",
    "consumer_id",
    "network",
    "remote_broker_id",
    "redelivery_count",
    "cause",
    "dead_letter_queue",
    "dropped",
)
"""Every field a record may have; a record leaves out a field that does not apply to it."""

FORWARDED = "forwarded"
REDELIVERED = "redelivered"
STARTED = "started"
STOPPING = "stopping"
GAP = "gap"
KINDS = (
    *(kind.value for kind in TraceKind),
    FORWARDED,
    REDELIVERED,
    STARTED,
    STOPPING,
    GAP,
)

DESTINATIONS_REMEMBERED = 1024
MESSAGES_REMEMBERED = 8192
LINGER_S = 0.01
"""How long the writer lets records gather before writing them: waking it for each ``process``
pass (one message, under a light load) cost more than encoding the records."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_instances = itertools.count(1)


class TraceWriter:
    """Appends lines (ASCII, each ending in a newline) to ``<prefix>.<n>.jsonl`` files in
    ``directory``, starting the next file before one would pass ``max_file_size`` bytes; the
    writing is done by a thread."""

    def __init__(
        self,
        directory: Path,
        prefix: str,
        *,
        max_file_size: int,
        max_files: int = 0,
        max_queued_records: int = 262144,
        identity: Mapping[str, str] | None = None,
    ) -> None:
        self.directory = directory
        self.prefix = prefix
        self.max_file_size = max_file_size
        self.max_files = max_files
        self.max_queued_records = max_queued_records
        self._identity = "".join(f",{_quote(k)}:{_quote(v)}" for k, v in (identity or {}).items())
        """Fields of the writer's own ``gap`` records (the broker's id and name)."""
        self._lock = threading.Condition()
        self._pending: list[str] = []
        self._wake_at = max(1, max_queued_records // 2)
        self._unrecorded = 0
        """Records dropped since the last ``gap`` record."""
        self._closing = False
        self._thread: threading.Thread | None = None
        self._file: IO[bytes] | None = None
        self._size = 0
        self._segments = itertools.count(1)
        self._files: deque[Path] = deque()
        self.written = 0
        self.dropped = 0
        self.failure: OSError | None = None

    @property
    def files(self) -> list[Path]:
        """This writer's files that still exist, oldest first."""
        return list(self._files)

    def open(self) -> None:
        """Create the directory and the first file, and start the thread.  Blocking: call it
        off the event loop."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._open_next()
        self._thread = threading.Thread(
            target=self._run, name=f"ferrymq-trace-{self.prefix}", daemon=True
        )
        self._thread.start()

    def append(self, records: Sequence[str]) -> None:
        """Queue lines for the thread; never waits for it (drops what does not fit)."""
        with self._lock:
            room = self.max_queued_records - len(self._pending)
            if self._closing or self.failure is not None:
                room = 0
            if room < len(records):
                lost = len(records) - max(room, 0)
                self._unrecorded += lost
                self.dropped += lost
                records = records[: max(room, 0)]
            waiting = len(self._pending)
            self._pending.extend(records)
            if not waiting or waiting < self._wake_at <= len(self._pending):
                self._lock.notify()

    def close(self) -> None:
        """Write everything queued, fsync and close the file, end the thread.  Blocking."""
        with self._lock:
            self._closing = True
            self._lock.notify()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    # -- the writer thread --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    while not (self._pending or self._unrecorded or self._closing):
                        self._lock.wait()
                    if not self._closing and len(self._pending) < self._wake_at:
                        # Let a batch gather: woken early by close or a half-full buffer.
                        self._lock.wait(LINGER_S)
                    batch, self._pending = self._pending, []
                    unrecorded, self._unrecorded = self._unrecorded, 0
                    closing = self._closing
                if unrecorded:
                    batch.append(self._gap(unrecorded))
                if batch:
                    self._write(batch)
                if closing:
                    return
        except OSError as exc:
            log.error("message trace: writing to %s failed, tracing stops: %s", self.directory, exc)
            with self._lock:
                self.failure = exc
                self.dropped += len(self._pending)
                self._pending = []
        finally:
            self._close_file()

    def _gap(self, count: int) -> str:
        ts_us = time.time_ns() // 1000
        return f'{{"ts_us":{ts_us},"kind":"{GAP}"{self._identity},"dropped":{count}}}\n'

    def _write(self, batch: list[str]) -> None:
        file = self._file
        assert file is not None
        data = "".join(batch).encode("ascii")
        if self._size + len(data) <= self.max_file_size:  # the usual case: no line by line
            file.write(data)
            file.flush()
            self._size += len(data)
            self.written += len(batch)
            return
        chunk: list[str] = []
        size = self._size
        for line in batch:
            if size and size + len(line) > self.max_file_size:
                file.write("".join(chunk).encode("ascii"))
                chunk.clear()
                self._close_file()
                file = self._open_next()
                size = 0
            chunk.append(line)
            size += len(line)
        file.write("".join(chunk).encode("ascii"))
        file.flush()
        self._size = size
        self.written += len(batch)

    def _open_next(self) -> IO[bytes]:
        path = self.directory / f"{self.prefix}.{next(self._segments):05d}.jsonl"
        self._file = path.open("xb")
        self._size = 0
        self._files.append(path)
        while self.max_files and len(self._files) > self.max_files:
            self._files.popleft().unlink(missing_ok=True)
        return self._file

    def _close_file(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            try:
                file.flush()
                os.fsync(file.fileno())
            finally:
                file.close()


class MessageTrace:
    """One broker run's trace: a JSON line for each trace event of the core, and the marks of
    the run's start and clean stop."""

    def __init__(
        self, config: MessageTraceConfig, broker_id: str, broker_name: str, incarnation: str
    ) -> None:
        self.broker_id = broker_id
        self.broker_name = broker_name
        self._seq = itertools.count(1)
        self._stopped = False
        self._destinations: dict[Destination, str] = {}
        self._messages: dict[tuple[str, str], str] = {}
        self._identity = f'"broker_id":{_quote(broker_id)},"broker_name":{_quote(broker_name)}'
        name = _UNSAFE.sub("_", broker_name)
        self.writer = TraceWriter(
            config.directory,
            f"{name}-{incarnation}-{os.getpid()}-{next(_instances)}",
            max_file_size=config.max_file_size,
            max_files=config.max_files,
            max_queued_records=config.max_queued_records,
            identity={"broker_id": broker_id, "broker_name": broker_name},
        )

    async def start(self) -> None:
        """Open the first file (off the loop) and record that the broker started."""
        await asyncio.to_thread(self.writer.open)
        self._mark(STARTED)

    def record(self, events: Sequence[TraceEvent]) -> None:
        """Record what one pass of the core decided; never blocks."""
        if self._stopped:
            return
        ts_us = time.time_ns() // 1000
        self.writer.append([self._line(event, ts_us) for event in events])

    def stopping(self) -> None:
        """The broker begins a clean stop: consumers that leave from now on leave because of it
        (the audit counts them as present at the end of the trace)."""
        self._mark(STOPPING)

    async def stop(self) -> None:
        """Write everything recorded, then close (off the loop)."""
        self._stopped = True
        await asyncio.to_thread(self.writer.close)

    def _mark(self, kind: str) -> None:
        if not self._stopped:
            self.writer.append([self._head(kind, time.time_ns() // 1000) + "}\n"])

    def _head(self, kind: str, ts_us: int) -> str:
        return f'{{"ts_us":{ts_us},"seq":{next(self._seq)},"kind":"{kind}",{self._identity}'

    def _line(self, event: TraceEvent, ts_us: int) -> str:
        kind = event.kind
        name: str = kind
        network = False
        remote: str | None = None
        consumer = event.consumer
        if consumer is not None:
            network = consumer.network
            if network and consumer.network_filter is not None:
                remote = consumer.network_filter.target_broker_id
            if kind is TraceKind.DELIVERED:
                if network:
                    name = FORWARDED
                elif event.redelivery_count:
                    name = REDELIVERED
        destination = self._destination(event.destination)
        line = f"{self._head(name, ts_us)}"
        message = event.message
        if message is not None:
            path = message.broker_path
            line += self._message(message, destination)
            if event.redelivery_count:
                line += f',"redelivery_count":{event.redelivery_count}'
            if kind is TraceKind.SENT:
                if message.origin_connection is not None:
                    line += f',"connection_id":{_quote(message.origin_connection)}'
                if path:  # it came over a network bridge, from the last broker of its path
                    network = True
                    remote = path[-1]
        else:
            line += f',"destination":{destination}'
        container = event.container
        if container is not None and container != event.destination.qualified:
            line += f',"container":{_quote(container)}'
        if consumer is not None:
            connection_id = consumer.connection_id
            line += (
                f',"connection_id":{_quote(connection_id)}'
                f',"consumer_id":{_quote(f"{connection_id}:{consumer.subscription_id}")}'
            )
        if network:
            line += ',"network":true'
        if remote is not None:
            line += f',"remote_broker_id":{_quote(remote)}'
        if kind is TraceKind.DEAD_LETTERED:
            line += f',"cause":{_quote(event.cause or "")}'
            if event.target is not None:
                line += f',"dead_letter_queue":{_quote(event.target.qualified)}'
        return line + "}\n"

    def _message(self, message: Message, destination: str) -> str:
        """What every record of a message says about it, remembered for its next records (a
        message is sent, stored, delivered and acknowledged within moments)."""
        key = (message.message_id, destination)
        part = self._messages.get(key)
        if part is None:
            if len(self._messages) >= MESSAGES_REMEMBERED:
                self._messages.clear()
            producer_id = message.producer_message_id
            part = self._messages[key] = (
                f',"message_id":{_quote(message.message_id)}'
                + ("" if producer_id is None else f',"producer_message_id":{_quote(producer_id)}')
                + f',"destination":{destination}'
                f',"persistent":{"true" if message.persistent else "false"}'
                f',"broker_path":[{",".join(map(_quote, message.broker_path))}]'
            )
        return part

    def _destination(self, destination: Destination) -> str:
        """The destination's name as a JSON string, remembered (a few destinations carry most
        of the traffic)."""
        quoted = self._destinations.get(destination)
        if quoted is None:
            if len(self._destinations) >= DESTINATIONS_REMEMBERED:
                self._destinations.clear()
            quoted = self._destinations[destination] = _quote(destination.qualified)
        return quoted
