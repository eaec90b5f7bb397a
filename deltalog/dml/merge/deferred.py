"""Updates waiting for their source rows when the source is spilled: a partitioned (grace) join on the source
row, so that the source and the target are each read once, in bounded memory.

The second pass reads target files in order, but the source rows their updates need lie anywhere in the
source. Fetching them batch by batch would read the whole spill file again for every batch of target rows.
Instead, each target row an update applies to is appended (with its clause, its source row and its row id)
to the bucket of the source partition holding its source row: at most :data:`MAX_BUCKETS` Arrow IPC files in
the source's temporary directory. Then each partition of the source is read once, and its bucket's target
rows are paired with it in memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from deltalog.dml.merge.source import MergeSource

#: the most bucket files open at once (partitions of the source are widened beyond)
MAX_BUCKETS = 256
CLAUSE = "__deltalog_clause"
SOURCE_ROW = "__deltalog_source_row"
ROW_ID = "__deltalog_row_id"


class Deferred:
    """Target rows waiting for their source rows, bucketed by source partition."""

    def __init__(self, source: MergeSource, directory: Path) -> None:
        self.source = source
        self.directory = directory
        offsets = list(source.offsets)
        step = max(1, -(-len(offsets) // MAX_BUCKETS))
        #: first source row of each partition (whole spilled batches, ``step`` at a time)
        self.starts = np.asarray(offsets[::step] or [0], dtype=np.int64)
        self._writers: dict[int, ipc.RecordBatchFileWriter] = {}
        self._paths: dict[int, Path] = {}

    def add(self, clause: int, rows: pa.RecordBatch, ids: pa.Array | None, sources: np.ndarray) -> None:
        """Hold ``rows`` (target rows ``clause`` updates, with their row ids) until their source rows are read."""
        n = rows.num_rows
        full = (
            rows.append_column(CLAUSE, pa.array(np.full(n, clause, dtype=np.int32)))
            .append_column(SOURCE_ROW, pa.array(sources, pa.int64()))
            .append_column(ROW_ID, ids.cast(pa.int64()) if ids is not None else pa.nulls(n, pa.int64()))
        )
        bucket = np.searchsorted(self.starts, sources, side="right") - 1
        for b in np.unique(bucket):
            part = full.filter(pa.array(bucket == b))
            writer = self._writers.get(int(b))
            if writer is None:
                path = self.directory / f"updates-{int(b):05d}.arrow"
                writer = self._writers[int(b)] = ipc.new_file(str(path), part.schema)
                self._paths[int(b)] = path
            writer.write_batch(part)

    def replay(self, columns: Sequence[str]) -> Iterator[tuple[int, pa.RecordBatch, pa.Array, pa.RecordBatch]]:
        """(clause, target rows, their row ids, their source rows with ``columns``), partition by partition."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        ends = [*self.starts[1:].tolist(), self.source.num_rows]
        for b in sorted(self._paths):
            start, stop = int(self.starts[b]), int(ends[b])
            part = self.source.take(np.arange(start, stop, dtype=np.int64), columns)
            reader = ipc.open_file(pa.OSFile(str(self._paths[b]), "rb"))
            for i in range(reader.num_record_batches):
                batch = reader.get_batch(i)
                clauses = np.asarray(batch.column(CLAUSE).to_numpy(), dtype=np.int32)
                for c in np.unique(clauses):
                    rows = batch.filter(pa.array(clauses == c))
                    local = np.asarray(rows.column(SOURCE_ROW).to_numpy(), dtype=np.int64) - start
                    ids = rows.column(ROW_ID)
                    target = rows.drop_columns([CLAUSE, SOURCE_ROW, ROW_ID])
                    yield int(c), target, ids, part.take(pa.array(local))
            self._paths[b].unlink(missing_ok=True)
        self._paths.clear()

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        for path in self._paths.values():
            path.unlink(missing_ok=True)
        self._writers.clear()
        self._paths.clear()


__all__ = ["MAX_BUCKETS", "Deferred"]
