"""The data-file writer on a real local store: paths, rolling, open-file limits, statistics, column mapping,
constraint failures that leave no files, and the input forms it accepts."""

from __future__ import annotations

import datetime as dt
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.actions import Add
from deltalog.core.files.partitions import serialize_partition_value
from deltalog.data.batches import batches, group_rows
from deltalog.data.files import DataFileWriter, WriteTarget, write_files
from deltalog.data.paths import escape_path_name, log_path, partition_dir
from deltalog.errors import (
    ConstraintViolationError,
    InvalidArgumentError,
    NotNullViolationError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from deltalog.storage.faults import FaultyStore
from deltalog.storage.local import LocalLogStore

UTC = dt.timezone.utc


def field(name: str, t: Any, nullable: bool = True, **meta: Any) -> dict[str, Any]:
    return {"name": name, "type": t, "nullable": nullable, "metadata": meta}


def schema(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def parquet_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.parquet"))


def stats(add: Add) -> dict[str, Any]:
    return orjson.loads(add.stats or "{}")  # type: ignore[no-any-return]


class CountingStore(LocalLogStore):
    """A real local store that records how many streamed files are open at once."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.open_now = 0
        self.most_open = 0
        self.lock = threading.Lock()  # files are closed on the writer's worker threads

    def open_write(self, path: str) -> BinaryIO:
        handle = super().open_write(path)
        with self.lock:
            self.open_now += 1
            self.most_open = max(self.most_open, self.open_now)
        store = self
        close = handle.close

        def closing() -> None:
            with store.lock:
                if not handle.closed:
                    store.open_now -= 1
            close()

        handle.close = closing  # type: ignore[method-assign]
        return handle


# ---------------------------------------------------------------------------------------------- paths


def test_hive_escaping_uses_sparks_set_and_the_log_path_decodes_to_the_key() -> None:
    assert (
        escape_path_name("a/b:c=d%e \"#'*?\\{[]^\x01\x7f") == "a%2Fb%3Ac%3Dd%25e %22%23%27%2A%3F%5C%7B%5B%5D%5E%01%7F"
    )
    assert escape_path_name("é +,;") == "é +,;"  # only Spark's set is escaped
    key = partition_dir(["p", "q"], ["2023-11-05 00:00:00", None]) + "/part-x.parquet"
    assert key == "p=2023-11-05 00%3A00%3A00/q=__HIVE_DEFAULT_PARTITION__/part-x.parquet"
    assert log_path(key) == "p=2023-11-05%2000%253A00%253A00/q=__HIVE_DEFAULT_PARTITION__/part-x.parquet"
    assert unquote(log_path(key)) == key


def test_partition_values_serialise_per_the_protocol() -> None:
    assert serialize_partition_value("") is None
    assert serialize_partition_value(True) == "true"
    assert serialize_partition_value(dt.date(2024, 2, 29)) == "2024-02-29"
    aware = dt.datetime(2024, 1, 1, 13, 0, 0, 5, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert serialize_partition_value(aware) == "2024-01-01T12:00:00.000005Z"
    assert serialize_partition_value(dt.datetime(2024, 1, 1, 12)) == "2024-01-01 12:00:00.000000"
    assert serialize_partition_value(float("nan")) == "NaN" and serialize_partition_value(-1.5) == "-1.5"
    with pytest.raises(InvalidArgumentError):
        serialize_partition_value(b"\x01")


def test_partitioned_files_land_under_escaped_directories(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    target = WriteTarget(schema(field("id", "long"), field("p", "string")), ("p",))
    data = pa.table({"id": [1, 2, 3, 4], "p": ["a/b", None, "", "x:y"]})
    adds = write_files(store, data, target)
    by_value = {a.partition_values["p"]: a for a in adds}
    assert set(by_value) == {"a/b", None, "x:y"}  # the empty string is null, as Spark writes it
    assert stats(by_value[None])["numRecords"] == 2
    assert re.fullmatch(r"p=a%252Fb/part-[0-9a-f-]{36}\.snappy\.parquet", by_value["a/b"].path)
    for add in adds:
        on_disk = tmp_path / unquote(add.path)
        assert on_disk.is_file() and on_disk.stat().st_size == add.size and add.data_change
        assert "p" not in pq.read_schema(on_disk).names  # partition values live in the log only


# ---------------------------------------------------------------------------------------------- rolling


def test_files_roll_at_the_target_size_and_row_limit(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    target = WriteTarget(schema(field("id", "long"), field("s", "string")))
    data = pa.table({"id": range(50_000), "s": [f"value-{i}" * 3 for i in range(50_000)]})
    adds = write_files(store, data.to_batches(max_chunksize=2_000), target, target_file_size=200_000)
    assert len(adds) >= 3
    assert sum(stats(a)["numRecords"] for a in adds) == 50_000
    assert all(a.size >= 200_000 for a in adds[:-1])
    by_rows = write_files(store, data, target, max_rows_per_file=7_000)
    assert [stats(a)["numRecords"] for a in by_rows] == [7_000] * 7 + [1_000]
    ids = sorted(pq.read_table(tmp_path / unquote(a.path)).column("id")[0].as_py() for a in by_rows)
    assert ids == [0, 7_000, 14_000, 21_000, 28_000, 35_000, 42_000, 49_000]


@pytest.mark.parametrize("target_file_size", [1, None])  # a file per row group; everything left for close()
def test_open_files_are_bounded_and_every_row_lands_once(tmp_path: Path, target_file_size: int | None) -> None:
    store = CountingStore(str(tmp_path))
    target = WriteTarget(schema(field("id", "long"), field("p", "integer")), ("p",))
    rounds = [
        pa.record_batch({"id": [r * 10 + p], "p": pa.array([p], pa.int32())}) for r in range(3) for p in range(10)
    ]
    writer = DataFileWriter(store, target, max_open_files=2, target_file_size=target_file_size)
    for batch in rounds:
        writer.write(batch)
    adds = writer.close()
    assert store.most_open <= 2 and store.open_now == 0
    ids = sorted(i for a in adds for i in pq.read_table(tmp_path / unquote(a.path)).column("id").to_pylist())
    assert ids == sorted(r * 10 + p for r in range(3) for p in range(10))
    assert all(str(int(a.partition_values["p"] or -1)) == a.partition_values["p"] for a in adds)
    assert len(adds) == (30 if target_file_size == 1 else 10)


def test_rows_are_grouped_by_every_key_with_nulls_as_one_group() -> None:
    keys = pa.record_batch({"a": [2, None, 1, 2, None, 1], "b": ["x", "y", "x", "x", "y", None]})
    data = pa.record_batch({"id": list(range(6))})
    groups = {tuple(values): rows.column("id").to_pylist() for values, rows in group_rows(keys, data)}
    assert groups == {(1, "x"): [2], (1, None): [5], (2, "x"): [0, 3], (None, "y"): [1, 4]}
    same = pa.record_batch({"a": [7, 7, 7]})
    ((values, rows),) = list(group_rows(same, data.slice(0, 3)))
    assert values == [7] and rows.num_rows == 3


# ---------------------------------------------------------------------------------------------- statistics


def test_stats_cover_the_configured_columns_plus_clustering_columns(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    fields = [field(f"c{i}", "long") for i in range(4)]
    data = pa.table({f"c{i}": [i, i + 10] for i in range(4)})
    limited = WriteTarget(
        schema(*fields), configuration={"delta.dataSkippingNumIndexedCols": "2"}, clustering_columns=(("c3",),)
    )
    (add,) = write_files(store, data, limited)
    assert stats(add)["minValues"] == {"c0": 0, "c1": 1, "c3": 3} and "tightBounds" not in stats(add)
    named = WriteTarget(schema(*fields), configuration={"delta.dataSkippingStatsColumns": "C2, `c0`"})
    (add,) = write_files(store, data, named)
    assert stats(add)["maxValues"] == {"c0": 10, "c2": 12}


def test_timestamps_become_microseconds_and_stats_round_the_max_up(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    target = WriteTarget(schema(field("ts", "timestamp"), field("ntz", "timestamp_ntz")))
    ts = pa.array([1_700_000_000_123_456_000], pa.timestamp("ns", tz="Asia/Tokyo"))
    ntz = pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 1)], pa.timestamp("us"))
    (add,) = write_files(store, pa.table({"ts": ts, "ntz": ntz}), target)
    doc = stats(add)
    assert doc["minValues"] == {"ts": "2023-11-14T22:13:20.123Z", "ntz": "2024-01-01T00:00:00.000"}
    assert doc["maxValues"] == {"ts": "2023-11-14T22:13:20.124Z", "ntz": "2024-01-01T00:00:00.001"}
    file_schema = pq.read_schema(tmp_path / unquote(add.path))
    assert file_schema.field("ts").type == pa.timestamp("us", tz="UTC") and file_schema.field(
        "ntz"
    ).type == pa.timestamp("us")


# ---------------------------------------------------------------------------------------------- column mapping


def mapped_field(name: str, t: Any, i: int) -> dict[str, Any]:
    return field(name, t, **{"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f"col-{i}"})


def test_column_mapped_files_use_physical_names_ids_and_random_prefixes(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    inner = {"type": "struct", "fields": [mapped_field("x", "long", 4)]}
    target = WriteTarget(
        schema(mapped_field("id", "long", 1), mapped_field("part", "string", 2), mapped_field("s", inner, 3)),
        ("part",),
        {
            "delta.columnMapping.mode": "name",
            "delta.columnMapping.maxColumnId": "4",
            "delta.dataSkippingStatsColumns": "s.x",
        },
    )
    (add,) = write_files(store, pa.table({"ID": [1], "part": ["secret/name"], "s": [{"x": 5}]}), target)
    assert add.partition_values == {"col-2": "secret/name"}
    assert re.fullmatch(r"[A-Za-z0-9]{2}/part-[0-9a-f-]{36}\.snappy\.parquet", add.path)  # no logical names on disk
    assert stats(add)["minValues"] == {"col-3": {"col-4": 5}}
    parquet = pq.ParquetFile(tmp_path / add.path)
    arrow = parquet.schema_arrow
    assert arrow.names == ["col-1", "col-3"]
    assert arrow.field("col-1").metadata[b"PARQUET:field_id"] == b"1"
    assert arrow.field("col-3").type.field(0).name == "col-4"
    assert arrow.field("col-3").type.field(0).metadata[b"PARQUET:field_id"] == b"4"
    assert "field_id=4" in str(parquet.schema)
    prefixed = WriteTarget(
        schema(field("id", "long")), (), {"delta.randomizeFilePrefixes": "true", "delta.randomPrefixLength": "5"}
    )
    (plain,) = write_files(store, pa.table({"id": [1]}), prefixed)
    assert re.fullmatch(r"[A-Za-z0-9]{5}/part-.*", plain.path)


# ---------------------------------------------------------------------------------------------- refusals


def test_a_violation_in_a_later_batch_deletes_the_files_already_written(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    target = WriteTarget(schema(field("id", "long", nullable=False), field("p", "long")), ("p",))
    good = pa.record_batch({"id": list(range(1000)), "p": [i % 3 for i in range(1000)]})
    bad = pa.record_batch({"id": [1, None], "p": [0, 1]})
    with pytest.raises(NotNullViolationError, match="column id is non-nullable"):
        write_files(store, [good, bad], target, target_file_size=1)
    assert parquet_files(tmp_path) == []
    checked = WriteTarget(schema(field("id", "long")), configuration={"delta.constraints.small": "id < 100"})
    with pytest.raises(ConstraintViolationError, match="CHECK constraint small"):
        write_files(store, [pa.record_batch({"id": [1]}), pa.record_batch({"id": [100]})], checked, target_file_size=1)
    assert parquet_files(tmp_path) == []


def test_bad_targets_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    with pytest.raises(SchemaMismatchError, match="partition columns"):
        DataFileWriter(store, WriteTarget(schema(field("id", "long")), ("nope",)))
    with pytest.raises(UnsupportedFeatureError, match="cannot be a partition column"):
        DataFileWriter(store, WriteTarget(schema(field("id", "long"), field("b", "binary")), ("b",)))
    with pytest.raises(InvalidArgumentError, match="compression"):
        DataFileWriter(
            store, WriteTarget(schema(field("id", "long")), (), {"delta.parquet.compression.codec": "brotli9"})
        )
    with pytest.raises(InvalidArgumentError, match="target_file_size"):
        DataFileWriter(store, WriteTarget(schema(field("id", "long"))), target_file_size=0)
    with pytest.raises(SchemaMismatchError, match="columns the table does not"):
        write_files(store, pa.table({"id": [1], "other": [2]}), WriteTarget(schema(field("id", "long"))))
    with pytest.raises(InvalidArgumentError, match="cannot write int"):
        write_files(store, 5, WriteTarget(schema(field("id", "long"))))
    assert parquet_files(tmp_path) == []


# ---------------------------------------------------------------------------------------------- plumbing


class StreamOnly:
    """Any producer that only offers the Arrow C stream interface (pandas, polars, duckdb results)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.table.__arrow_c_stream__(requested_schema)


def test_every_input_form_is_read_lazily_as_batches() -> None:
    t = pa.table({"id": [1, 2, 3]})
    forms: list[Any] = [t, t.to_batches()[0], t.to_reader(), [t, t.to_batches()[0]], StreamOnly(t), iter([t])]
    assert [sum(b.num_rows for b in batches(form)) for form in forms] == [3, 3, 3, 6, 3, 3]


def test_codec_property_and_stores_without_streaming(tmp_path: Path) -> None:
    store = FaultyStore(LocalLogStore(str(tmp_path)))  # no open_write: the whole file goes through put
    target = WriteTarget(schema(field("id", "long")), (), {"delta.parquet.compression.codec": "ZSTD"})
    (add,) = write_files(store, pa.table({"id": [1, 2]}), target)
    assert add.path.endswith(".zstd.parquet") and [c.op for c in store.calls] == ["put"]
    meta = pq.ParquetFile(tmp_path / add.path).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD" and meta.num_rows == 2
    assert write_files(store, pa.table({"id": pa.array([], pa.int64())}), target) == []


def test_errors_raised_in_spark_tasks_cross_to_the_driver_typed() -> None:
    from deltalog.spark._files import carried_error, carry_error

    original = NotNullViolationError("NOT NULL constraint violated: column s.x", column="s.x", row={"row": 3})
    spark_text = RuntimeError(f"Job aborted. Traceback ...\n{carry_error(original)}\n\tat org.apache.spark...")
    rebuilt = carried_error(spark_text)
    assert isinstance(rebuilt, NotNullViolationError) and str(rebuilt) == str(original)
    assert (rebuilt.column, rebuilt.constraint, rebuilt.row) == ("s.x", "NOT NULL s.x", {"row": 3})
    assert carried_error(RuntimeError("an executor ran out of memory")) is None


@dataclass(frozen=True)
class SnapshotLike:
    schema_json: dict[str, Any]
    partition_columns: list[str]
    configuration: dict[str, str]
    column_mapping_mode: str


def test_the_snapshots_mapping_mode_wins_over_a_property_the_protocol_does_not_support(tmp_path: Path) -> None:
    mapped = schema(field("id", "long", **{"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-1"}))
    conf = {"delta.columnMapping.mode": "name"}
    unsupported = WriteTarget.of(SnapshotLike(mapped, [], conf, "none"))
    assert not unsupported.column_mapped and WriteTarget(mapped, (), conf).column_mapped
    (add,) = write_files(LocalLogStore(str(tmp_path)), pa.table({"id": [1]}), unsupported)
    assert pq.read_schema(tmp_path / add.path).names == ["id"] and "/" not in add.path
