"""The durable spool: messages the source has numbered but whose micro-batch Spark has not yet
committed, kept where a restarted driver finds them (docs/spark.md "The spool").

A queue is not replayable: a message received and not acknowledged comes back after a crash,
but as a redelivery, possibly to someone else, and a broker has no idea of Spark's offsets.
Spark, however, replays a planned micro-batch after a crash by asking for the same offsets
again, and expects the same rows. So before ``latestOffset`` returns an offset, the rows up to
it are written here and made durable; a replay reads them back; and once Spark has committed a
batch, its messages are acknowledged and its files deleted (reference spark.md §1.9, design
A+, as Bahir's HDFS-backed MQTT source keeps its messages).

Layout, one directory per query (never shared):

* ``segment-<first>-<last>.arrow``: the rows with offsets ``first..last`` (Arrow IPC file, the
  full row schema of ``rows``), written once;
* ``committed``: the highest offset of a batch Spark has committed (decimal text).

Every file is written whole under a temporary name and then moved into place (after an fsync,
on a local filesystem), so a crash leaves either the old state or the new one, and a leftover
temporary file is deleted at the next load. The directory may be local (or a mounted shared
filesystem) or any URI ``pyarrow.fs`` opens (``hdfs://``, ``s3://``, ``gs://``, ``abfs://``):
on a cluster it must survive the driver, like the checkpoint it belongs next to.
"""

from __future__ import annotations

import bisect
import os
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol
from urllib.parse import urlparse

import pyarrow as pa

from ferrymq.spark.rows import FULL_ARROW_SCHEMA, offsets_of

COMMITTED: Final = "committed"
TEMPORARY_PREFIX: Final = ".tmp-"
_SEGMENT = re.compile(r"segment-(\d{19})-(\d{19})\.arrow")


class SpoolError(Exception):
    """The spool cannot be read or written; the message names the file."""


class SpoolStorage(Protocol):
    """A flat directory of small files, each written atomically and durably."""

    location: str

    def names(self) -> list[str]: ...

    def write(self, name: str, data: bytes) -> None:
        """Create or replace ``name`` with ``data``: durable and whole once this returns."""

    def read(self, name: str) -> bytes: ...

    def delete(self, name: str) -> None:
        """Remove ``name`` if it is there."""


class LocalStorage:
    """A directory on a filesystem of this machine (or mounted on every driver host)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.location = str(directory)
        directory.mkdir(parents=True, exist_ok=True)

    def names(self) -> list[str]:
        return os.listdir(self.directory)

    def write(self, name: str, data: bytes) -> None:
        temporary = self.directory / f"{TEMPORARY_PREFIX}{uuid.uuid4().hex}"
        with temporary.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.directory / name)
        self._sync_directory()

    def read(self, name: str) -> bytes:
        return (self.directory / name).read_bytes()

    def delete(self, name: str) -> None:
        (self.directory / name).unlink(missing_ok=True)

    def _sync_directory(self) -> None:
        """Make the rename itself durable (POSIX: fsync the directory)."""
        descriptor = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


class ArrowStorage:
    """A directory on any filesystem ``pyarrow.fs`` can open (HDFS, S3, GCS, Azure...):
    closing an output stream is what makes a file durable there."""

    def __init__(self, filesystem: Any, directory: str, location: str) -> None:
        self.filesystem = filesystem
        self.directory = directory.rstrip("/")
        self.location = location
        filesystem.create_dir(self.directory, recursive=True)

    def _path(self, name: str) -> str:
        return f"{self.directory}/{name}"

    def names(self) -> list[str]:
        from pyarrow import fs

        selector = fs.FileSelector(self.directory, allow_not_found=True)
        return [info.base_name for info in self.filesystem.get_file_info(selector)]

    def write(self, name: str, data: bytes) -> None:
        temporary = self._path(f"{TEMPORARY_PREFIX}{uuid.uuid4().hex}")
        with self.filesystem.open_output_stream(temporary) as stream:
            stream.write(data)
        self.filesystem.move(temporary, self._path(name))

    def read(self, name: str) -> bytes:
        with self.filesystem.open_input_stream(self._path(name)) as stream:
            data: bytes = stream.readall()
        return data

    def delete(self, name: str) -> None:
        from pyarrow import fs

        info = self.filesystem.get_file_info(self._path(name))
        if info.type != fs.FileType.NotFound:
            self.filesystem.delete_file(self._path(name))


def storage_for(location: str) -> SpoolStorage:
    """A local path or ``file:`` URI -> ``LocalStorage``; any other URI -> ``ArrowStorage``."""
    scheme = urlparse(location).scheme
    if scheme in ("", "file"):
        path = urlparse(location).path if scheme == "file" else location
        return LocalStorage(Path(path))
    from pyarrow import fs

    filesystem, directory = fs.FileSystem.from_uri(location)
    return ArrowStorage(filesystem, directory, location)


@dataclass(frozen=True, slots=True)
class Segment:
    """Rows with consecutive offsets ``first..last``, in the full row schema."""

    first: int
    last: int
    batch: pa.RecordBatch

    @classmethod
    def of(cls, batch: pa.RecordBatch) -> Segment:
        first, last = offsets_of(batch)
        return cls(first, last, batch)

    @property
    def name(self) -> str:
        return f"segment-{self.first:019d}-{self.last:019d}.arrow"


@dataclass(frozen=True, slots=True)
class SpoolContents:
    committed: int
    """The highest offset of a committed batch (0: none yet)."""
    segments: list[Segment]
    """Every segment still kept, by first offset."""


class Spool:
    """The spool of one query in ``storage``."""

    def __init__(self, storage: SpoolStorage) -> None:
        self.storage = storage
        self._kept: dict[str, tuple[int, int]] = {}
        """Segment files by name: their first and last offsets."""

    def load(self) -> SpoolContents:
        """Read everything back, deleting what a crash left half-written."""
        committed = 0
        segments = []
        for name in sorted(self.storage.names()):
            if name.startswith(TEMPORARY_PREFIX):
                self.storage.delete(name)
            elif name == COMMITTED:
                committed = self._read_committed()
            elif _SEGMENT.fullmatch(name):
                segment = self._read_segment(name)
                self._kept[name] = (segment.first, segment.last)
                segments.append(segment)
        segments.sort(key=lambda segment: segment.first)
        return SpoolContents(committed, segments)

    def append(self, batch: pa.RecordBatch) -> Segment:
        """Write rows durably (before their offsets are given to Spark)."""
        segment = Segment.of(batch)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, FULL_ARROW_SCHEMA) as writer:
            writer.write_batch(batch)
        self._write(segment.name, sink.getvalue().to_pybytes())
        self._kept[segment.name] = (segment.first, segment.last)
        return segment

    def commit(self, offset: int) -> None:
        """Record that Spark committed every batch up to ``offset``."""
        self._write(COMMITTED, str(offset).encode())

    def discard_through(self, offset: int, keep: Iterable[int] = ()) -> None:
        """Delete the segments whose rows all have offsets up to ``offset``, except those
        holding an offset of ``keep``."""
        kept = sorted(keep)
        for name, (first, last) in list(self._kept.items()):
            index = bisect.bisect_left(kept, first)
            if last > offset or (index < len(kept) and kept[index] <= last):
                continue
            try:
                self.storage.delete(name)
            except OSError as exc:
                raise SpoolError(f"cannot delete {self._where(name)}: {exc}") from exc
            del self._kept[name]

    def _write(self, name: str, data: bytes) -> None:
        try:
            self.storage.write(name, data)
        except OSError as exc:
            raise SpoolError(f"cannot write {self._where(name)}: {exc}") from exc

    def _read_committed(self) -> int:
        try:
            return int(self.storage.read(COMMITTED).decode().strip())
        except (OSError, ValueError) as exc:
            raise SpoolError(f"cannot read {self._where(COMMITTED)}: {exc}") from exc

    def _read_segment(self, name: str) -> Segment:
        try:
            reader = pa.ipc.open_file(pa.py_buffer(self.storage.read(name)))
            table = reader.read_all()
        except (OSError, pa.ArrowInvalid) as exc:
            raise SpoolError(f"cannot read {self._where(name)}: {exc}") from exc
        if not table.schema.equals(FULL_ARROW_SCHEMA) or table.num_rows == 0:
            raise SpoolError(f"{self._where(name)} is not a segment of this FerryMQ version")
        batch = table.combine_chunks().to_batches()[0]
        segment = Segment.of(batch)
        if segment.name != name or segment.last - segment.first + 1 != batch.num_rows:
            raise SpoolError(f"{self._where(name)} does not hold the offsets its name says")
        return segment

    def _where(self, name: str) -> str:
        return f"{self.storage.location.rstrip('/')}/{name}"
