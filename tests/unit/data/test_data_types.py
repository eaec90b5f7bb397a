"""Arrow input to a table's columns: the type mapping, safe casts with typed refusals, names, void, NOT NULL."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from deltalog.arrow.schema import delta_type, from_arrow_schema
from deltalog.data.types import FieldPlan, check_not_null, conform_array, match_names, plan_field, plan_schema
from deltalog.errors import NotNullViolationError, SchemaMismatchError, UnsupportedFeatureError

UTC = dt.timezone.utc


def field(name: str, t: Any, nullable: bool = True, **meta: Any) -> dict[str, Any]:
    return {"name": name, "type": t, "nullable": nullable, "metadata": meta}


def conform(values: pa.Array, t: Any, nullable: bool = True) -> pa.Array:
    plan = plan_field(field("c", t, nullable), mapped=False)
    return conform_array(values, plan, "c")


# ---------------------------------------------------------------------------------------------- type mapping


@pytest.mark.parametrize(
    ("arrow", "delta"),
    [
        (pa.timestamp("ns", tz="America/New_York"), "timestamp"),
        (pa.timestamp("s"), "timestamp_ntz"),
        (pa.uint8(), "short"),
        (pa.uint16(), "integer"),
        (pa.uint32(), "long"),
        (pa.uint64(), "long"),
        (pa.large_string(), "string"),
        (pa.string_view(), "string"),
        (pa.binary_view(), "binary"),
        (pa.binary(16), "binary"),
        (pa.dictionary(pa.int32(), pa.string()), "string"),
        (pa.float16(), "float"),
        (pa.date64(), "date"),
        (pa.decimal256(38, 4), "decimal(38,4)"),
        (pa.null(), "void"),
        (pa.large_list(pa.int8()), {"type": "array", "elementType": "byte", "containsNull": True}),
        (pa.list_view(pa.string()), {"type": "array", "elementType": "string", "containsNull": True}),
    ],
)
def test_arrow_types_map_to_their_delta_base_types(arrow: pa.DataType, delta: Any) -> None:
    assert delta_type(arrow) == delta


@pytest.mark.parametrize(
    "arrow", [pa.time64("us"), pa.duration("s"), pa.month_day_nano_interval(), pa.decimal256(40, 2)]
)
def test_types_delta_cannot_hold_are_refused_by_name(arrow: pa.DataType) -> None:
    with pytest.raises(UnsupportedFeatureError, match="no Delta equivalent") as info:
        from_arrow_schema(pa.schema([("c", arrow)]))
    assert info.value.feature == str(arrow)


# ---------------------------------------------------------------------------------------------- safe casts


def test_nanoseconds_become_microseconds_only_without_loss() -> None:
    exact = pa.array([1_000, None, -2_000], pa.timestamp("ns", tz="UTC"))
    assert conform(exact, "timestamp").to_pylist() == [
        dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        None,
        dt.datetime(1969, 12, 31, 23, 59, 59, 999998, tzinfo=UTC),
    ]
    with pytest.raises(SchemaMismatchError, match=r"column c.*would lose data") as info:
        conform(pa.array([1_001], pa.timestamp("ns", tz="UTC")), "timestamp")
    assert info.value.column == "c"


def test_seconds_out_of_microsecond_range_are_refused_not_wrapped() -> None:
    with pytest.raises(SchemaMismatchError, match="out of bounds"):
        conform(pa.array([2**62], pa.timestamp("s")), "timestamp_ntz")


def test_zone_aware_fills_timestamp_naive_fills_ntz_and_never_crosswise() -> None:
    paris = pa.array([dt.datetime(2024, 1, 1, 12, tzinfo=UTC)], pa.timestamp("ms", tz="Europe/Paris"))
    out = conform(paris, "timestamp")
    assert out.type == pa.timestamp("us", tz="UTC") and out[0].as_py() == dt.datetime(2024, 1, 1, 12, tzinfo=UTC)
    naive = pa.array([dt.datetime(2024, 1, 1, 12)], pa.timestamp("us"))
    assert conform(naive, "timestamp_ntz").type == pa.timestamp("us")
    with pytest.raises(SchemaMismatchError, match="zone-aware timestamps fill `timestamp`"):
        conform(naive, "timestamp")
    with pytest.raises(SchemaMismatchError, match="timestamp_ntz"):
        conform(paris, "timestamp_ntz")


def test_unsigned_integers_widen_with_a_range_check() -> None:
    assert conform(pa.array([255], pa.uint8()), "short").to_pylist() == [255]
    assert conform(pa.array([2**63 - 1], pa.uint64()), "long").to_pylist() == [2**63 - 1]
    with pytest.raises(SchemaMismatchError, match="not in range"):
        conform(pa.array([2**63], pa.uint64()), "long")
    with pytest.raises(SchemaMismatchError, match="not in range"):
        conform(pa.array([300], pa.int64()), "byte")


def test_large_view_dictionary_and_null_inputs_take_the_base_type() -> None:
    assert conform(pa.array(["a", "b"], pa.large_string()), "string").type == pa.string()
    assert conform(pa.array(["a"], pa.string_view()), "string").to_pylist() == ["a"]
    assert conform(pa.array(["x", "y", "x"]).dictionary_encode(), "string").to_pylist() == ["x", "y", "x"]
    assert conform(pa.array([b"ab"], pa.binary(2)), "binary").to_pylist() == [b"ab"]
    assert conform(pa.nulls(2), "long").to_pylist() == [None, None]
    listed = conform(pa.array([[1, 2], None], pa.large_list(pa.int16())), {"type": "array", "elementType": "long"})
    assert listed.type == pa.list_(pa.int64()) and listed.to_pylist() == [[1, 2], None]


def test_decimals_are_checked_and_doubles_never_narrow() -> None:
    assert conform(pa.array([Decimal("1.50")], pa.decimal128(5, 2)), "decimal(10,3)").to_pylist() == [Decimal("1.500")]
    with pytest.raises(SchemaMismatchError):
        conform(pa.array([Decimal("1.55")], pa.decimal128(5, 2)), "decimal(10,1)")
    with pytest.raises(SchemaMismatchError, match="float column"):
        conform(pa.array([1.1]), "float")
    with pytest.raises(SchemaMismatchError, match="string column"):
        conform(pa.array([1]), "string")


def test_nested_fields_are_matched_by_name_case_insensitively_and_missing_ones_are_null() -> None:
    t = {"type": "struct", "fields": [field("a", "long"), field("b", "string")]}
    given = pa.array([{"B": "x", "A": 1}, None], pa.struct([("B", pa.string()), ("A", pa.int32())]))
    out = conform(given, t)
    assert out.type == pa.struct([("a", pa.int64()), ("b", pa.string())])
    assert out.to_pylist() == [{"a": 1, "b": "x"}, None]
    partial = conform(pa.array([{"a": 5}], pa.struct([("a", pa.int64())])), t)
    assert partial.to_pylist() == [{"a": 5, "b": None}]
    with pytest.raises(SchemaMismatchError, match=r"c\.z"):
        conform(pa.array([{"a": 5, "z": 1}]), t)


def test_top_level_names_follow_spark_rules() -> None:
    plans = plan_schema({"fields": [field("Id", "long"), field("name", "string")]}, mapped=False)
    assert match_names(["ID", "Name"], plans) == [0, 1]
    assert match_names(["id"], plans) == [0, None]
    with pytest.raises(SchemaMismatchError, match="two columns named"):
        match_names(["id", "ID"], plans)
    with pytest.raises(SchemaMismatchError, match="columns the table does not") as info:
        match_names(["id", "extra"], plans)
    assert info.value.column == "extra"


def test_maps_keep_keys_and_values() -> None:
    t = {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True}
    given = pa.array([[("k", 1)], None], pa.map_(pa.large_string(), pa.int8()))
    out = conform(given, t)
    assert out.type == pa.map_(pa.string(), pa.int64()) and out.to_pylist() == [[("k", 1)], None]


# ---------------------------------------------------------------------------------------------- void


def test_void_columns_take_only_nulls_and_bad_void_shapes_are_refused() -> None:
    plans = plan_schema({"fields": [field("a", "long"), field("v", "void")]}, mapped=False)
    assert [p.kind for p in plans] == ["leaf", "void"] and plans[1].file_field is None
    with pytest.raises(UnsupportedFeatureError, match="only void columns"):
        plan_schema({"fields": [field("v", "void")]}, mapped=False)
    with pytest.raises(UnsupportedFeatureError, match="void as its element"):
        plan_field(field("a", {"type": "array", "elementType": "void", "containsNull": True}), mapped=False)
    with pytest.raises(UnsupportedFeatureError, match="struct of void fields only"):
        plan_field(field("s", {"type": "struct", "fields": [field("v", "void")]}), mapped=False)
    struct = {"type": "struct", "fields": [field("x", "long"), field("v", "void")]}
    out = conform(pa.array([{"x": 1, "v": None}], pa.struct([("x", pa.int64()), ("v", pa.null())])), struct)
    assert out.type == pa.struct([("x", pa.int64())])  # void never reaches the file
    with pytest.raises(SchemaMismatchError, match=r"c\.v is void"):
        conform(pa.array([{"x": 1, "v": 2}]), struct)


# ---------------------------------------------------------------------------------------------- column mapping


def test_column_mapped_plans_carry_physical_names_and_field_ids_at_every_level() -> None:
    inner = field("x", "long", **{"delta.columnMapping.id": 3, "delta.columnMapping.physicalName": "col-x"})
    element = {"type": "struct", "fields": [inner]}
    outer = field(
        "s",
        {"type": "array", "elementType": element, "containsNull": True},
        **{"delta.columnMapping.id": 2, "delta.columnMapping.physicalName": "col-s"},
    )
    plan = plan_field(outer, mapped=True)
    assert plan.file_field is not None
    assert plan.file_field.name == "col-s" and plan.file_field.metadata == {b"PARQUET:field_id": b"2"}
    struct_type = plan.file_field.type.value_type
    assert struct_type.field(0).name == "col-x" and struct_type.field(0).metadata == {b"PARQUET:field_id": b"3"}
    out = conform_array(pa.array([[{"X": 7}]]), plan, "s")
    assert out.type.value_type.field(0).name == "col-x" and out.to_pylist() == [[{"col-x": 7}]]
    unmapped = plan_field(outer, mapped=False)
    assert unmapped.file_field is not None and unmapped.file_field.name == "s" and unmapped.file_field.metadata is None


# ---------------------------------------------------------------------------------------------- NOT NULL


def _not_null(values: pa.Array, plan: FieldPlan) -> None:
    check_not_null(conform_array(values, plan, plan.name), plan, plan.name, None)


def test_top_level_not_null_names_the_column_and_row() -> None:
    plan = plan_field(field("id", "long", nullable=False), mapped=False)
    _not_null(pa.array([1, 2]), plan)
    with pytest.raises(NotNullViolationError, match=r"column id is non-nullable.*row 1") as info:
        _not_null(pa.array([1, None]), plan)
    assert info.value.column == "id" and info.value.constraint == "NOT NULL id" and info.value.row == {"row": 1}


def test_nested_not_null_applies_where_the_parent_is_present() -> None:
    t = {"type": "struct", "fields": [field("x", "long", nullable=False), field("y", "long")]}
    plan = plan_field(field("s", t), mapped=False)
    _not_null(pa.array([{"x": 1, "y": None}, None]), plan)  # a null struct may have a null x
    with pytest.raises(NotNullViolationError, match=r"column s\.x is non-nullable.*row 1"):
        _not_null(pa.array([{"x": 1, "y": 2}, {"x": None, "y": 2}]), plan)
    deep = plan_field(field("o", {"type": "struct", "fields": [field("s", t, nullable=False)]}), mapped=False)
    with pytest.raises(NotNullViolationError, match=r"column o\.s is non-nullable"):
        _not_null(pa.array([{"s": None}]), deep)


def test_array_elements_and_map_values_without_nulls_are_enforced() -> None:
    arr = plan_field(field("a", {"type": "array", "elementType": "long", "containsNull": False}), mapped=False)
    _not_null(pa.array([[1, 2], None, []]), arr)
    with pytest.raises(NotNullViolationError, match=r"column a\.element is non-nullable.*an element"):
        _not_null(pa.array([[1, None]]), arr)
    element = {"type": "struct", "fields": [field("x", "long", nullable=False)]}
    structs = plan_field(field("a", {"type": "array", "elementType": element, "containsNull": True}), mapped=False)
    with pytest.raises(NotNullViolationError, match=r"column a\.element\.x"):
        _not_null(pa.array([[{"x": 1}, {"x": None}]]), structs)
    mapped = plan_field(
        field("m", {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": False}),
        mapped=False,
    )
    _not_null(pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())), mapped)
    with pytest.raises(NotNullViolationError, match=r"column m\.value"):
        _not_null(pa.array([[("k", None)]], pa.map_(pa.string(), pa.int64())), mapped)
