"""Where the data plane's rows are allocated (deltalog.data.memory): decoded into the system pool, the process's
default pool left alone, the rows and types exactly those ``pyarrow.parquet.ParquetFile`` reads."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.data.memory import DATA_POOL, parquet_file

ROWS = 50_000


def table() -> pa.Table:
    """Columns of the kinds a Delta table holds, and a UUID (an Arrow extension type a non-Delta writer may leave)."""
    n = ROWS
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": pa.array([f"n{i % 997}" for i in range(n)]),
            "view": pa.array([f"v{i % 13}" for i in range(n)], pa.string_view()),
            "price": pa.array([Decimal(i) / 100 for i in range(n)], pa.decimal128(12, 2)),
            "at": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)] * n, pa.timestamp("us", tz="UTC")),
            "tags": pa.array([[i, None] if i % 3 else None for i in range(n)], pa.list_(pa.int32())),
            "point": pa.array([{"x": i, "y": None} for i in range(n)]),
            "uid": pa.array([uuid.UUID(int=i).bytes for i in range(n)], pa.uuid()),
        }
    )


@pytest.fixture(params=[True, False], ids=["arrow-schema", "parquet-types-only"])
def path(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The file with pyarrow's stored schema (types restored from it) and without (types from parquet's own
    logical types: the UUID read as an extension type only where ``ParquetFile`` enables those)."""
    out = str(tmp_path / "f.parquet")
    pq.write_table(table(), out, row_group_size=20_000, store_schema=request.param)
    return out


def test_the_rows_are_those_parquet_file_reads(path: str) -> None:
    with pa.OSFile(path) as f:
        ours = parquet_file(f, pre_buffer=False, coerce_int96_timestamp_unit="us")
        got = ours.read_row_group(1, columns=["name", "point", "uid"], use_threads=False)
        whole = ours.read(use_threads=False)
        batches = list(ours.iter_batches(batch_size=7_000, row_groups=[2], columns=["id", "tags"]))
        ours.close()
    with pa.OSFile(path) as f:
        theirs = pq.ParquetFile(f, pre_buffer=False, coerce_int96_timestamp_unit="us")
        assert ours.schema_arrow == theirs.schema_arrow
        assert ours.metadata.num_rows == theirs.metadata.num_rows == ROWS
        assert got.equals(theirs.read_row_group(1, columns=["name", "point", "uid"]), check_metadata=True)
        assert whole.equals(theirs.read(), check_metadata=True)
        assert pa.Table.from_batches(batches).equals(theirs.read_row_group(2, columns=["id", "tags"]))
    assert whole.schema.field("uid").type == pa.uuid()


def test_rows_are_decoded_into_the_data_pool_not_the_default(path: str) -> None:
    default = pa.default_memory_pool()
    with pa.OSFile(path) as f:
        ours = parquet_file(f, pre_buffer=False)
        before, before_default = DATA_POOL.bytes_allocated(), default.bytes_allocated()
        rows = ours.read_row_group(0, columns=["id", "name", "price"], use_threads=False)
        grew, grew_default = DATA_POOL.bytes_allocated() - before, default.bytes_allocated() - before_default
    assert rows.num_rows == 20_000
    assert grew >= rows.nbytes  # every buffer of the rows (and the decoder's scratch, freed or not)
    assert grew_default < rows.nbytes // 10
    assert DATA_POOL.backend_name == "system"
