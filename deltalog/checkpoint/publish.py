"""A checkpoint's rows as parquet files on the store, whatever the layout (classic, multi-part, V2, sidecars).

Every file is encoded from Arrow tables (no Python object per row) and published with ``put_if_absent``, so it
appears whole or not at all. A file already under the name is what a racing writer of the same version left:
it is kept when it is a readable parquet file with as many rows as ours, and replaced when it is torn (a crashed
writer on a store without atomic puts), since otherwise every later run would report success over a file
readers skip.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import cast

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.checkpoint import schema as S
from deltalog.checkpoint.rows import null_table
from deltalog.checkpoint.scan import BATCH_ROWS
from deltalog.errors import FileAlreadyExistsError
from deltalog.storage.base import LogStore

log = logging.getLogger(__name__)

#: a progress callback: (stage, rows done, rows in all)
Progress = Callable[[str, int, int], None]


@dataclass
class Sections:
    """The checkpoint's rows, by kind, as Arrow arrays in checkpoint types (with the file keys when parts are
    assigned by them)."""

    non_file: pa.Table
    adds: pa.Array
    removes: pa.Array
    add_keys: pa.Array | None
    remove_keys: pa.Array | None

    @property
    def num_rows(self) -> int:
        return int(self.non_file.num_rows) + len(self.adds) + len(self.removes)


class CheckpointFiles:
    """Encodes tables of checkpoint rows as parquet and publishes them on ``store``."""

    def __init__(self, store: LogStore, compression: str, progress: Progress | None = None) -> None:
        self.store = store
        self.compression = compression
        self.progress = progress

    def encode(self, schema: pa.Schema, tables: Iterator[pa.Table], total: int, stage: str) -> bytes:
        """The parquet file of ``tables``; bytes, or a zero-copy view of Arrow's buffer for a local store."""
        sink = pa.BufferOutputStream()
        options = S.encoding_options(schema)
        with pq.ParquetWriter(
            sink,
            schema,
            compression=self.compression,
            use_compliant_nested_type=True,
            write_page_checksum=True,  # readers that verify (deltalog, parquet-mr) catch a damaged page
            **options,
        ) as writer:
            done = 0
            for t in tables:
                if t.num_rows:
                    writer.write_table(t, row_group_size=BATCH_ROWS)
                    done += t.num_rows
                    if self.progress is not None:
                        self.progress(stage, done, total)
        buf = sink.getvalue()
        if self.store.capabilities.local:
            return memoryview(buf)  # type: ignore[return-value]  # written with os.write: no copy of the file
        return cast(bytes, buf.to_pybytes())

    def publish(self, path: str, data: bytes) -> bool:
        """True if we wrote it; False if an equivalent file was already there (a racing writer)."""
        try:
            self.store.put_if_absent(path, data)
            return True
        except FileAlreadyExistsError:
            pass
        if _same_rows(self.store, path, pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows):
            log.info("%s already exists: another writer checkpointed this version", path)
            return False
        log.warning("%s exists but is unreadable or incomplete; replacing it", path)
        self.store.put(path, data)
        return True


def file_rows(
    schema: pa.Schema, sec: Sections, add_idx: pa.Array | None, rm_idx: pa.Array | None
) -> Iterator[pa.Table]:
    """The add rows, then the remove rows (those at ``add_idx``/``rm_idx``; all without), in batches."""
    yield from batches(schema, "add", sec.adds if add_idx is None else sec.adds.take(add_idx))
    yield from batches(schema, "remove", sec.removes if rm_idx is None else sec.removes.take(rm_idx))


def batches(schema: pa.Schema, kind: str, rows: pa.Array) -> Iterator[pa.Table]:
    """``rows`` of one action ``kind`` as checkpoint tables (every other column null), a batch at a time."""
    for start in range(0, len(rows), BATCH_ROWS):
        yield null_table(schema, kind, rows.slice(start, BATCH_ROWS))


def chain(first: list[pa.Table], rest: Iterator[pa.Table]) -> Iterator[pa.Table]:
    yield from first
    yield from rest


def _same_rows(store: LogStore, path: str, rows: int) -> bool:
    try:
        existing = pq.ParquetFile(io.BytesIO(store.read(path)))
    except (OSError, pa.ArrowInvalid):
        return False
    return bool(existing.metadata.num_rows == rows)


__all__ = ["CheckpointFiles", "Progress", "Sections", "batches", "chain", "file_rows"]
