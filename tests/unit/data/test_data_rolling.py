"""Row groups encoded on a thread pool: each partition's jobs in order, the rows in flight bounded, a failed
job raised (typed) with every file of the write deleted, and many partitions written at once into files that
hold exactly their rows."""

from __future__ import annotations

import gc
import sys
import threading
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.data.files import DataFileWriter, WriteTarget, write_files
from deltalog.data.rolling import Encoder, FileSpec, PartitionFiles
from deltalog.data.target import parquet_options
from deltalog.errors import StorageError
from deltalog.storage.local import LocalLogStore


def lane(store: LocalLogStore, name: str) -> PartitionFiles:
    spec = FileSpec(store, pa.schema([("id", pa.int64())]), parquet_options({}), set(), [], 1 << 30, str, float)
    return PartitionFiles(spec, (name,))


def test_each_lanes_jobs_run_in_submission_order_across_workers(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    lanes = [lane(store, f"p{i}") for i in range(3)]
    seen: dict[int, list[int]] = {i: [] for i in range(3)}
    encoder = Encoder(max_in_flight_bytes=1 << 20, workers=4)
    try:
        for step in range(60):
            for i, files in enumerate(lanes):
                encoder.submit(files, lambda i=i, step=step: seen[i].append(step), 1)
        encoder.drain()
    finally:
        encoder.stop()
    assert seen == {i: list(range(60)) for i in range(3)}


def test_rows_in_flight_are_bounded(tmp_path: Path) -> None:
    """Job k is released only once the producer has started submitting job k+1: with 60-byte jobs and a
    100-byte bound, that submit must wait for job k, so no more than 100 bytes are ever outstanding."""
    store = LocalLogStore(str(tmp_path))
    n = 6
    files = [lane(store, f"p{i}") for i in range(n)]
    release = [threading.Event() for _ in range(n)]
    calling = [threading.Event() for _ in range(n + 1)]
    finished: list[int] = []
    outstanding: list[int] = []
    encoder = Encoder(max_in_flight_bytes=100, workers=4)

    def job(k: int) -> None:
        assert release[k].wait(60)
        finished.append(k)

    def releaser() -> None:
        for k in range(n):
            calling[k + 1].wait(60)
            release[k].set()

    helper = threading.Thread(target=releaser)
    helper.start()
    try:
        for k in range(n):
            calling[k].set()
            encoder.submit(files[k], lambda k=k: job(k), 60)
            outstanding.append(60 * (k + 1 - len(finished)))
        calling[n].set()
        encoder.drain()
    finally:
        calling[n].set()
        helper.join()
        encoder.stop()
    assert max(outstanding) <= 100 and sorted(finished) == list(range(n))


class BreakingStore(LocalLogStore):
    """A real local store whose third streamed file fails on its first write."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.opened = 0
        self.lock = threading.Lock()

    def open_write(self, path: str) -> BinaryIO:
        handle = super().open_write(path)
        with self.lock:
            self.opened += 1
            broken = self.opened == 3
        if broken:

            def fail(data: bytes) -> int:
                raise OSError(28, "No space left on device (injected)")

            handle.write = fail  # type: ignore[method-assign]
        return handle


def test_a_failed_row_group_fails_the_write_typed_and_deletes_every_file(tmp_path: Path) -> None:
    store = BreakingStore(str(tmp_path))
    target = WriteTarget(
        {"type": "struct", "fields": [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in "ip"]},
        ("p",),
    )
    data = pa.table({"i": list(range(40_000)), "p": [i % 8 for i in range(40_000)]})
    with pytest.raises(StorageError) as info:
        write_files(store, data, target, target_file_size=1)
    assert "No space left" in str(info.value) and info.value.path
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_many_partitions_at_once_hold_exactly_their_rows(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    target = WriteTarget(
        {"type": "struct", "fields": [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in "ip"]},
        ("p",),
    )
    writer = DataFileWriter(store, target, encoders=3, max_open_files=4, target_file_size=20_000)
    for start in range(0, 200_000, 10_000):
        ids = pa.array(range(start, start + 10_000), pa.int64())
        writer.write(pa.record_batch({"i": ids, "p": pa.compute.bit_wise_and(ids, 15)}))
    adds = writer.close()
    by_partition: dict[str, list[int]] = {}
    for add in adds:
        rows = pq.read_table(tmp_path / unquote(add.path)).column("i").to_pylist()
        assert rows == sorted(rows)  # a partition's row groups land in the order they were buffered
        by_partition.setdefault(str(add.partition_values["p"]), []).extend(rows)
    assert {p: sorted(r) for p, r in by_partition.items()} == {str(p): list(range(p, 200_000, 16)) for p in range(16)}


def test_columns_whose_dictionary_cannot_fit_are_written_plain_and_the_rest_keep_theirs(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    fields = [("id", "long"), ("value", "double"), ("city", "string"), ("code", "integer"), ("flag", "boolean")]
    target = WriteTarget(
        {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields]}
    )
    n = 200_000
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),  # unique: a dictionary of 1.6 MB, over the 256 KiB page
            "value": pa.array([(i * 7919 % n) / n for i in range(n)], pa.float64()),
            "city": pa.array([["Oslo", "Lima", "Kyoto"][i % 3] for i in range(n)]),
            "code": pa.array([i % 50 for i in range(n)], pa.int32()),
            "flag": pa.array([i % 2 == 0 for i in range(n)]),
        }
    )
    (add,) = write_files(store, data, target)
    meta = pq.ParquetFile(tmp_path / unquote(add.path)).metadata
    group = meta.row_group(0)
    dictionary = {group.column(i).path_in_schema: group.column(i).has_dictionary_page for i in range(group.num_columns)}
    assert dictionary == {"id": False, "value": False, "city": True, "code": True, "flag": False}
    assert pq.read_table(tmp_path / unquote(add.path)).equals(data)


def test_a_discarded_open_file_leaves_no_parquet_writer_to_fail_at_garbage_collection(tmp_path: Path) -> None:
    """A write that fails while a file is open discards it: the file is deleted, and the ParquetWriter over its
    closed stream must be closed too, or its ``__del__`` fails later ("operation on closed Python file") as an
    unraisable exception wherever the garbage collector happens to run."""
    store = LocalLogStore(str(tmp_path))
    files = lane(store, "x")
    files.write(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))  # a file is open, not finished
    assert files.written and (tmp_path / files.written[0]).exists()
    unraisable: list[object] = []
    hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        assert files.discard() == []
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert unraisable == [] and not any(tmp_path.rglob("*.parquet"))
