"""Reading one data file as the table's rows (deltalog.data.read and .conform), on files written here.

Each case writes the parquet a writer would (physical names, field ids, older narrower types, extra columns)
and checks the rows the table's schema says the file holds. The corpus and the peers check the same reader
on real tables in ``tests/integration/test_data_corpus.py``.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.actions import Add
from deltalog.data.conform import conform, plan_field
from deltalog.data.dv import inline_deletion_vector, write_deletion_vector
from deltalog.data.read import DataFile, read_batches, read_file, read_schema
from deltalog.errors import CorruptDataError, InvalidArgumentError, StorageError
from deltalog.storage.local import LocalLogStore
from deltalog.storage.uri import store_for

UTC = dt.timezone.utc


def field(name: str, kind: Any, physical: str | None = None, ident: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if physical is not None:
        meta["delta.columnMapping.physicalName"] = physical
    if ident is not None:
        meta["delta.columnMapping.id"] = ident
    return {"name": name, "type": kind, "nullable": True, "metadata": meta}


def schema(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def write(root: Path, name: str, table: pa.Table, **kwargs: Any) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **kwargs)
    return name


def rows(root: Path, spec: Any, file: DataFile) -> list[dict[str, Any]]:
    return read_file(LocalLogStore(str(root)), spec, file).to_pylist()


# ---------------------------------------------------------------------------------------------- partitions
PARTITION_CASES = [
    ("string", "a/b c", "a/b c"),
    ("long", "-9000000000", -9_000_000_000),
    ("integer", "7", 7),
    ("short", "-3", -3),
    ("byte", "12", 12),
    ("float", "1.5", 1.5),
    ("double", "-0.25", -0.25),
    ("decimal(10,2)", "12.30", Decimal("12.30")),
    ("boolean", "true", True),
    ("date", "2024-02-29", dt.date(2024, 2, 29)),
    ("timestamp", "2024-01-02 03:04:05.123456", dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
    ("timestamp", "2024-01-02T03:04:05.5Z", dt.datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)),
    ("timestamp_ntz", "2024-01-02 03:04:05", dt.datetime(2024, 1, 2, 3, 4, 5)),
    ("binary", "\u0001\u0002", b"\x01\x02"),
    ("integer", None, None),
    ("integer", "", None),
    ("date", "__HIVE_DEFAULT_PARTITION__", None),
]


@pytest.mark.parametrize(("kind", "raw", "value"), PARTITION_CASES)
def test_partition_values_are_typed_from_the_schema(tmp_path: Path, kind: str, raw: str | None, value: Any) -> None:
    write(tmp_path, "p/f.parquet", pa.table({"x": [1, 2]}))
    spec = read_schema(schema(field("x", "long"), field("p", kind)), ["p"])
    assert rows(tmp_path, spec, DataFile("p/f.parquet", {"p": raw})) == [{"x": 1, "p": value}, {"x": 2, "p": value}]


def test_a_partition_value_that_is_not_its_type_names_the_file(tmp_path: Path) -> None:
    write(tmp_path, "f.parquet", pa.table({"x": [1]}))
    spec = read_schema(schema(field("x", "long"), field("p", "integer")), ["p"])
    for raw in ("abc", "99999999999"):
        with pytest.raises(CorruptDataError, match=r"f\.parquet: partition value") as exc:
            rows(tmp_path, spec, DataFile("f.parquet", {"p": raw}))
        assert exc.value.path == "f.parquet"


def test_the_logs_partition_value_wins_over_a_copy_in_the_file(tmp_path: Path) -> None:
    """Iceberg-compatible writers materialize partition columns in the file; the log stays the authority."""
    write(tmp_path, "f.parquet", pa.table({"x": [1], "p": ["stale"]}))
    spec = read_schema(schema(field("x", "long"), field("p", "string")), ["p"])
    assert rows(tmp_path, spec, DataFile("f.parquet", {"p": "fresh"})) == [{"x": 1, "p": "fresh"}]


# ---------------------------------------------------------------------------------------------- columns
def test_missing_columns_read_as_nulls_and_extra_columns_are_dropped(tmp_path: Path) -> None:
    data = pa.table(
        {
            "a": [1, 2],
            "_change_type": ["insert", "insert"],
            "_row-id-col-1f0c": [10, 11],  # a materialized row-tracking column
            "s": [{"x": 1}, None],
        }
    )
    write(tmp_path, "f.parquet", data)
    s = {"type": "struct", "fields": [field("x", "long"), field("added", "string")]}
    spec = read_schema(schema(field("a", "long"), field("s", s), field("b", "string")))
    assert rows(tmp_path, spec, DataFile("f.parquet", {})) == [
        {"a": 1, "s": {"x": 1, "added": None}, "b": None},
        {"a": 2, "s": None, "b": None},
    ]
    assert spec.schema.names == ["a", "s", "b"]


def test_projection_picks_and_orders_columns_and_refuses_unknown_ones(tmp_path: Path) -> None:
    write(tmp_path, "f.parquet", pa.table({"a": [1], "b": ["x"]}))
    table = schema(field("a", "long"), field("b", "string"), field("p", "integer"))
    spec = read_schema(table, ["p"], columns=["p", "b"])
    assert rows(tmp_path, spec, DataFile("f.parquet", {"p": "3"})) == [{"p": 3, "b": "x"}]
    only_partition = read_schema(table, ["p"], columns=["p"])
    assert rows(tmp_path, only_partition, DataFile("f.parquet", {"p": "3"})) == [{"p": 3}]
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        read_schema(table, ["p"], columns=["a", "nope"])


def test_names_resolve_exactly_then_case_insensitively_without_column_mapping(tmp_path: Path) -> None:
    write(tmp_path, "f.parquet", pa.table({"ID": [1], "Name": ["n"], "name": ["exact"]}))
    spec = read_schema(schema(field("id", "long"), field("name", "string")))
    assert rows(tmp_path, spec, DataFile("f.parquet", {})) == [{"id": 1, "name": "exact"}]


def test_a_top_level_name_with_a_dot_is_not_taken_for_a_nested_path(tmp_path: Path) -> None:
    write(tmp_path, "f.parquet", pa.table({"a.b": [1], "a": [{"b": 2}]}))
    spec = read_schema(schema(field("a.b", "long")))
    assert rows(tmp_path, spec, DataFile("f.parquet", {})) == [{"a.b": 1}]


def test_older_files_of_a_widened_table_are_cast_to_todays_types(tmp_path: Path) -> None:
    old = pa.table(
        {
            "i": pa.array([1, None], pa.int32()),
            "f": pa.array([0.5, 2.0], pa.float32()),
            "d": pa.array([dt.date(2020, 1, 2), None], pa.date32()),
            "m": pa.array([Decimal("1.25"), Decimal("-3.50")], pa.decimal128(5, 2)),
            "t": pa.array([dt.datetime(2020, 1, 1, 1)] * 2, pa.timestamp("ms")),
        }
    )
    write(tmp_path, "f.parquet", old)
    table = schema(
        field("i", "long"),
        field("f", "double"),
        field("d", "timestamp_ntz"),
        field("m", "decimal(12,4)"),
        field("t", "timestamp"),
    )
    result = read_file(LocalLogStore(str(tmp_path)), read_schema(table), DataFile("f.parquet", {}))
    assert result.schema.types == [
        pa.int64(),
        pa.float64(),
        pa.timestamp("us"),
        pa.decimal128(12, 4),
        pa.timestamp("us", tz="UTC"),
    ]
    assert result.to_pylist()[0] == {
        "i": 1,
        "f": 0.5,
        "d": dt.datetime(2020, 1, 2),
        "m": Decimal("1.2500"),
        "t": dt.datetime(2020, 1, 1, 1, tzinfo=UTC),
    }


def test_a_column_that_cannot_be_todays_type_names_file_and_column(tmp_path: Path) -> None:
    write(tmp_path, "f.parquet", pa.table({"a": ["not a number"]}))
    with pytest.raises(CorruptDataError, match=r"f\.parquet: column 'a' holds string"):
        rows(tmp_path, read_schema(schema(field("a", "long"))), DataFile("f.parquet", {}))


NESTED = {
    "type": "struct",
    "fields": [
        field("inner", "integer", "col-i", 3),
        field(
            "tags",
            {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True},
            "col-t",
            4,
        ),
        field(
            "items",
            {
                "type": "array",
                "elementType": {"type": "struct", "fields": [field("v", "string", "col-v", 6)]},
                "containsNull": True,
            },
            "col-l",
            5,
        ),
    ],
}
LOGICAL = [
    {"id": 1, "s": {"inner": 7, "tags": [("k", 1)], "items": [{"v": "a"}, None]}},
    {"id": 2, "s": None},
]


def _physical_file(with_ids: bool) -> pa.Table:
    def f(name: str, kind: pa.DataType, ident: int) -> pa.Field:
        return pa.field(name, kind, metadata={b"PARQUET:field_id": str(ident).encode()} if with_ids else None)

    element = pa.struct([f("col-v", pa.string(), 6)])
    inner = pa.struct(
        [
            f("col-i", pa.int32(), 3),
            f("col-t", pa.map_(pa.string(), pa.int64()), 4),
            f("col-l", pa.list_(pa.field("element", element)), 5),
        ]
    )
    physical = pa.schema([f("col-a", pa.int64(), 1), f("col-s", inner, 2)])
    data = [
        {"col-a": 1, "col-s": {"col-i": 7, "col-t": [("k", 1)], "col-l": [{"col-v": "a"}, None]}},
        {"col-a": 2, "col-s": None},
    ]
    return pa.Table.from_pylist(data, schema=physical)


def test_name_mode_reads_physical_names_at_every_depth(tmp_path: Path) -> None:
    write(tmp_path, "f.parquet", _physical_file(with_ids=False))
    table = schema(field("id", "long", "col-a", 1), field("s", NESTED, "col-s", 2))
    assert rows(tmp_path, read_schema(table, mode="name"), DataFile("f.parquet", {})) == LOGICAL


def test_id_mode_resolves_by_parquet_field_id_whatever_the_names(tmp_path: Path) -> None:
    write(tmp_path, "f.parquet", _physical_file(with_ids=True))
    # the schema's physical names differ from the file's: only the ids can find the columns
    renamed = json.loads(json.dumps(NESTED).replace('"col-', '"other-'))
    table = schema(field("id", "long", "other-a", 1), field("s", renamed, "other-s", 2), field("new", "long", "n", 9))
    assert rows(tmp_path, read_schema(table, mode="id"), DataFile("f.parquet", {})) == [
        {**r, "new": None} for r in LOGICAL
    ]


def test_id_mode_refuses_a_file_without_field_ids(tmp_path: Path) -> None:
    write(tmp_path, "f.parquet", _physical_file(with_ids=False))
    table = schema(field("id", "long", "col-a", 1), field("s", NESTED, "col-s", 2))
    with pytest.raises(CorruptDataError, match="no parquet field ids"):
        rows(tmp_path, read_schema(table, mode="id"), DataFile("f.parquet", {}))


def test_sliced_nested_arrays_conform_to_their_slice() -> None:
    lists = pa.array([[1], None, [2, 3], [4]], pa.list_(pa.int32())).slice(1, 2)
    maps = pa.array([[("a", 1)], None, [("b", 2), ("c", 3)]], pa.map_(pa.string(), pa.int32())).slice(1)
    structs = pa.array([{"x": 1}, None, {"x": 3}]).slice(1)
    as_list = plan_field(field("l", {"type": "array", "elementType": "long", "containsNull": True}), "none")
    as_map = plan_field(field("m", {"type": "map", "keyType": "string", "valueType": "long"}), "none")
    as_struct = plan_field(field("s", {"type": "struct", "fields": [field("x", "long")]}), "none")
    assert conform(lists, as_list, "none", "f").to_pylist() == [None, [2, 3]]
    assert conform(maps, as_map, "none", "f").to_pylist() == [None, [("b", 2), ("c", 3)]]
    assert conform(structs, as_struct, "none", "f").to_pylist() == [None, {"x": 3}]


# ---------------------------------------------------------------------------------------------- deletion vectors
def test_deleted_rows_are_dropped_across_batches_and_batches_stay_bounded(tmp_path: Path) -> None:
    write(tmp_path, "f.parquet", pa.table({"n": list(range(100))}), row_group_size=30)
    store = LocalLogStore(str(tmp_path))
    gone = [0, 5, *range(10, 20), 99]  # rows 10..19 are one whole batch of 10
    dv = write_deletion_vector(store, gone, num_records=100)
    spec = read_schema(schema(field("n", "long")))
    batches = list(read_batches(store, spec, DataFile("f.parquet", {}, dv, 100), batch_rows=10))
    assert all(0 < b.num_rows <= 10 for b in batches)
    assert [v for b in batches for v in b.column(0).to_pylist()] == [i for i in range(100) if i not in gone]
    inline = DataFile("f.parquet", {}, inline_deletion_vector([1, 2]), 100)
    assert read_file(store, spec, inline).num_rows == 98


def test_a_dv_that_disagrees_with_its_file_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "f.parquet", pa.table({"n": list(range(5))}))
    store = LocalLogStore(str(tmp_path))
    spec = read_schema(schema(field("n", "long")))
    past_the_end = write_deletion_vector(store, [7])
    with pytest.raises(CorruptDataError, match="deletes row 7 of 5"):
        read_file(store, spec, DataFile("f.parquet", {}, past_the_end))
    with pytest.raises(CorruptDataError, match="numRecords says 6"):
        read_file(store, spec, DataFile("f.parquet", {}, inline_deletion_vector([1]), num_records=6))


def test_a_data_file_comes_from_its_add_action(tmp_path: Path) -> None:
    dv = inline_deletion_vector([0])
    add = Add("p=1/f%20x.parquet", {"p": "1"}, 10, 0, True, stats='{"numRecords": 3}', deletion_vector=dv)
    assert DataFile.of(add) == DataFile("p=1/f%20x.parquet", {"p": "1"}, dv, 3)
    assert DataFile.of(Add("f", {}, 1, 0, True, stats="not json")).num_records is None
    write(tmp_path, "p=1/f x.parquet", pa.table({"n": [1, 2, 3]}))
    spec = read_schema(schema(field("n", "long"), field("p", "long")), ["p"])
    assert rows(tmp_path, spec, DataFile.of(add)) == [{"n": 2, "p": 1}, {"n": 3, "p": 1}]


# ---------------------------------------------------------------------------------------------- where files are
def test_files_are_read_through_a_non_local_store_and_by_absolute_path(tmp_path: Path) -> None:
    import fsspec

    table = pa.table({"n": [1, 2]})
    fs = fsspec.filesystem("memory")
    with fs.open("/dv-read-test/t/f.parquet", "wb") as fh:
        pq.write_table(table, fh)
    store = store_for("memory://dv-read-test/t")
    spec = read_schema(schema(field("n", "long")))
    dv = write_deletion_vector(store, [0])
    assert read_file(store, spec, DataFile("f.parquet", {}, dv, 2)).to_pylist() == [{"n": 2}]
    write(tmp_path, "elsewhere/f.parquet", table)
    local = LocalLogStore(str(tmp_path / "t"))
    absolute = DataFile("file://" + str(tmp_path / "elsewhere" / "f.parquet"), {})
    assert read_file(local, spec, absolute).num_rows == 2
    fs.rm("/dv-read-test", recursive=True)


def test_missing_and_corrupt_data_files_are_typed_errors_naming_the_file(tmp_path: Path) -> None:
    spec = read_schema(schema(field("n", "long")))
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    for name, message in [("gone.parquet", "does not exist"), ("bad.parquet", "not a readable parquet file")]:
        with pytest.raises(CorruptDataError, match=message) as exc:
            rows(tmp_path, spec, DataFile(name, {}))
        assert exc.value.path == name
    (tmp_path / "dir.parquet").mkdir()
    with pytest.raises((CorruptDataError, StorageError), match=r"dir\.parquet"):
        rows(tmp_path, spec, DataFile("dir.parquet", {}))


def test_many_small_files_read_as_one_reads_each_and_joins_only_alike_files(tmp_path: Path) -> None:
    """``read_many`` gives exactly the rows ``read_batches`` gives file by file, in order: files of one partition
    and one file schema joined, a file with another schema, another partition or a deletion vector apart."""
    from deltalog.data.read import read_many

    store = LocalLogStore(str(tmp_path))
    spec = read_schema(schema(field("id", "long"), field("p", "string"), field("x", "double")), ["p"])
    files = []
    for i in range(6):
        table = pa.table({"id": pa.array([i * 10, i * 10 + 1], pa.int64()), "x": [0.5, None]})
        if i == 3:
            table = pa.table({"id": pa.array([30, 31], pa.int32())})  # an older, narrower file without x
        name = write(tmp_path, f"f{i}.parquet", table)
        dv = inline_deletion_vector([1], 2) if i == 4 else None
        files.append(DataFile(name, {"p": "a" if i < 5 else "b"}, dv, 2))
    one_by_one = [r for f in files for r in read_file(store, spec, f).to_pylist()]
    batches = list(read_many(store, spec, files, batch_rows=3))
    assert [r for b in batches for r in b.to_pylist()] == one_by_one
    assert all(b.schema == spec.schema for b in batches)
    assert max(b.num_rows for b in batches) == 3  # joined up to batch_rows


def test_a_bins_files_read_in_parallel_runs_come_out_in_file_order(tmp_path: Path) -> None:
    """A lone compaction bin reads runs of consecutive files on several threads (each run joined as
    ``read_many`` joins it): the rows, deleted ones dropped, are exactly those of the files read one by one."""
    from deltalog.data.rearrange import file_runs, live_batches

    store = LocalLogStore(str(tmp_path))
    spec = read_schema(schema(field("id", "long"), field("p", "string")), ["p"])
    files = []
    for i in range(9):
        name = write(tmp_path, f"f{i}.parquet", pa.table({"id": pa.array([2 * i, 2 * i + 1], pa.int64())}))
        dv = inline_deletion_vector([0], 2) if i == 5 else None
        files.append(DataFile(name, {"p": "a" if i < 7 else "b"}, dv, None if i == 2 else 2))
    one_by_one = [r for f in files for r in read_file(store, spec, f).to_pylist()]
    assert [len(run) for run in file_runs(files, 4)] == [2, 3, 2, 2]  # a file without numRecords counts for little
    for readers in (1, 2, 4):
        batches = list(live_batches(store, spec, files, readers=readers, run_rows=4))
        assert [r for b in batches for r in b.to_pylist()] == one_by_one
        assert all(b.schema == spec.schema for b in batches)
