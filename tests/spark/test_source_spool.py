"""The source's durable spool without Spark or a broker: segments and the committed offset
survive a reload, discarding keeps what is still awaited, what a crash half-wrote is cleaned
up, a damaged file is reported by name, and a pyarrow filesystem URI works like a local path."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from ferrymq.spark.rows import message_batch
from ferrymq.spark.spool import (
    COMMITTED,
    ArrowStorage,
    LocalStorage,
    Spool,
    SpoolError,
    SpoolStorage,
    storage_for,
)


def batch(first: int, count: int) -> pa.RecordBatch:
    return message_batch(
        [
            (
                "/queue/Q",
                f"ID:b-1:{n}",
                {"timestamp": "1700000000000", "k": str(n)},
                f"m{n}".encode(),
            )
            for n in range(first, first + count)
        ],
        first,
    )


def names(storage: SpoolStorage) -> list[str]:
    return sorted(storage.names())


@pytest.fixture(params=["local", "arrow"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> SpoolStorage:
    if request.param == "local":
        return storage_for(str(tmp_path / "spool"))
    return storage_for("mock:///spool")


def test_segments_and_the_committed_offset_survive_a_reload(storage: SpoolStorage) -> None:
    spool = Spool(storage)
    assert spool.load().committed == 0
    spool.append(batch(1, 3))
    spool.append(batch(4, 2))
    spool.commit(3)
    contents = Spool(storage).load()
    assert contents.committed == 3
    assert [(s.first, s.last) for s in contents.segments] == [(1, 3), (4, 5)]
    assert contents.segments[0].batch.equals(batch(1, 3))
    assert contents.segments[1].batch.column("body").to_pylist() == [b"m4", b"m5"]


def test_discarding_keeps_segments_that_hold_an_awaited_offset(storage: SpoolStorage) -> None:
    spool = Spool(storage)
    for first in (1, 4, 7):
        spool.append(batch(first, 3))
    spool.discard_through(8, keep=[5])
    assert names(storage) == [
        "segment-0000000000000000004-0000000000000000006.arrow",
        "segment-0000000000000000007-0000000000000000009.arrow",
    ]
    spool.discard_through(9)
    assert names(storage) == []
    reloaded = Spool(storage)
    assert reloaded.load().segments == []


def test_a_reloaded_spool_can_discard_what_it_loaded(storage: SpoolStorage) -> None:
    Spool(storage).append(batch(1, 2))
    spool = Spool(storage)
    spool.load()
    spool.discard_through(2)
    assert names(storage) == []


def test_what_a_crash_half_wrote_is_deleted_at_load(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    Spool(storage).append(batch(1, 1))
    (tmp_path / ".tmp-0123").write_bytes(b"half a segm")
    assert len(Spool(storage).load().segments) == 1
    assert os.listdir(tmp_path) == ["segment-0000000000000000001-0000000000000000001.arrow"]


def test_a_damaged_file_is_reported_by_name(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    segment = Spool(storage).append(batch(1, 2))
    (tmp_path / segment.name).write_bytes((tmp_path / segment.name).read_bytes()[:-20])
    with pytest.raises(SpoolError, match=segment.name):
        Spool(storage).load()
    (tmp_path / segment.name).unlink()
    Spool(storage).append(batch(5, 2))
    os.rename(
        tmp_path / "segment-0000000000000000005-0000000000000000006.arrow",
        tmp_path / "segment-0000000000000000001-0000000000000000002.arrow",
    )
    with pytest.raises(SpoolError, match="does not hold the offsets its name says"):
        Spool(storage).load()
    (tmp_path / "segment-0000000000000000001-0000000000000000002.arrow").unlink()
    (tmp_path / COMMITTED).write_text("twelve")
    with pytest.raises(SpoolError, match=COMMITTED):
        Spool(storage).load()


def test_locations_pick_their_storage(tmp_path: Path) -> None:
    assert isinstance(storage_for(str(tmp_path / "a")), LocalStorage)
    local = storage_for(f"file://{tmp_path}/b")
    assert isinstance(local, LocalStorage)
    assert local.location == str(tmp_path / "b")
    assert isinstance(storage_for("mock:///c"), ArrowStorage)
