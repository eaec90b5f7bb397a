"""The Spark SQL subset: parsing, refusal of everything else, evaluation with Spark's semantics, table rules."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from deltalog.data import sql
from deltalog.data.constraints import check_rows, fill_columns, table_rules
from deltalog.data.evaluate import Frame, compile_expression, evaluate
from deltalog.data.sql import SqlSubsetError, parse
from deltalog.data.types import conform_array, plan_schema
from deltalog.errors import ConstraintViolationError, UnsupportedExpressionError, UnsupportedFeatureError

UTC = dt.timezone.utc


def field(name: str, t: Any, nullable: bool = True, **meta: Any) -> dict[str, Any]:
    return {"name": name, "type": t, "nullable": nullable, "metadata": meta}


SCHEMA = {
    "type": "struct",
    "fields": [
        field("i", "integer"),
        field("l", "long"),
        field("d", "double"),
        field("f", "float"),
        field("s", "string"),
        field("day", "date"),
        field("ts", "timestamp"),
        field("ntz", "timestamp_ntz"),
        field("dec", "decimal(10,2)"),
        field("b", "boolean"),
        field("odd name", "long"),
        field("st", {"type": "struct", "fields": [field("x", "long"), field("Inner", "string")]}),
        field("arr", {"type": "array", "elementType": "long", "containsNull": True}),
    ],
}
PLANS = plan_schema(SCHEMA, mapped=False)


def batch(**columns: list[Any]) -> pa.RecordBatch:
    """A file-shaped batch holding ``columns`` (the others null), as the writer hands it to the rules."""
    n = len(next(iter(columns.values())))
    arrays = []
    for plan in PLANS:
        given = pa.array(columns[plan.name]) if plan.name in columns else pa.nulls(n)
        if plan.name == "ts" and plan.name in columns:
            given = pa.array(columns["ts"], pa.timestamp("us", tz="UTC"))
        if plan.name == "f" and plan.name in columns:
            given = pa.array(columns["f"], pa.float32())
        arrays.append(conform_array(given, plan, plan.name))
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema([p.file_field for p in PLANS]))


def run(text: str, data: pa.RecordBatch) -> list[Any]:
    return evaluate(compile_expression(parse(text), PLANS), Frame(data)).to_pylist()  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------- parsing


def test_every_construct_parses() -> None:
    node = parse("NOT (`odd name` + 1 BETWEEN -2 AND 3L) OR st.x IN (1, 2) AND s IS NOT NULL")
    assert isinstance(node, sql.Binary) and node.op == "or"
    assert sql.columns(node) == [("odd name",), ("st", "x"), ("s",)]
    assert parse("a <=> b") == sql.Binary("<=>", sql.Column(("a",)), sql.Column(("b",)))
    assert parse("a != b") == parse("a <> b") == sql.Binary("!=", sql.Column(("a",)), sql.Column(("b",)))
    assert parse("!a") == sql.Unary("not", sql.Column(("a",)))
    assert parse("x NOT IN (1)") == sql.In(sql.Column(("x",)), (sql.Literal("int", 1, 32),), True)


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("1", sql.Literal("int", 1, 32)),
        ("3000000000", sql.Literal("int", 3000000000, 64)),
        ("7S", sql.Literal("int", 7, 16)),
        ("1.50", sql.Literal("decimal", Decimal("1.50"))),
        ("2BD", sql.Literal("decimal", Decimal("2"))),
        ("1e3", sql.Literal("double", 1000.0)),
        ("1.5D", sql.Literal("double", 1.5)),
        ("1.5F", sql.Literal("float", 1.5)),
        ("'it\\'s' 'x'", sql.Literal("string", "it'sx")),
        ('"tab\\there"', sql.Literal("string", "tab\there")),
        ("DATE '2024-02-29'", sql.Literal("date", "2024-02-29")),
        ("timestamp_ntz '2024-01-01 10:00:00'", sql.Literal("timestamp_ntz", "2024-01-01 10:00:00")),
        ("NULL", sql.Literal("null", None)),
        ("-5", sql.Literal("int", -5, 32)),
    ],
)
def test_literals_are_typed_as_spark_types_them(text: str, literal: sql.Literal) -> None:
    assert parse(text) == literal


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("length(s) > 3", "function length"),
        ("CAST(i AS LONG) > 3", "function CAST"),
        ("i / 2 > 1", "division"),
        ("i % 2 = 0", "division and modulo"),
        ("s LIKE 'a%'", "unsupported syntax"),
        ("CASE WHEN i > 0 THEN true END", "unexpected keyword|unsupported"),
        ("i > ", "found 'the end'"),
        ("i IS TRUE", "only IS \\[NOT\\] NULL"),
        ("i > 1; DROP TABLE t", "unexpected character"),
        ("(" * 60 + "i" + ")" * 60, "nests deeper"),
        (" OR ".join(["i = 1"] * 300), "nests deeper"),
        ("", "empty"),
    ],
)
def test_everything_else_is_refused_with_a_reason(text: str, why: str) -> None:
    with pytest.raises(SqlSubsetError, match=why):
        parse(text)


# ---------------------------------------------------------------------------------------------- semantics


def test_comparisons_and_three_valued_logic() -> None:
    data = batch(i=[1, 5, None], b=[True, None, False])
    assert run("i > 3", data) == [False, True, None]
    assert run("i > 3 AND b", data) == [False, None, False]
    assert run("i > 3 OR b", data) == [True, True, None]
    assert run("NOT b", data) == [False, None, True]
    assert run("i = NULL", data) == [None, None, None]
    assert run("i <=> NULL", data) == [False, False, True]
    assert run("i <=> 5", data) == [False, True, False]
    assert run("i IS NULL", data) == [False, False, True]
    assert run("i IS NOT NULL", data) == [True, True, False]


def test_in_and_between_follow_sql_null_rules() -> None:
    data = batch(i=[1, 3, None])
    assert run("i IN (1, 2)", data) == [True, False, None]
    assert run("i IN (1, NULL)", data) == [True, None, None]  # no match and a NULL in the list: unknown
    assert run("i NOT IN (1, 2)", data) == [False, True, None]
    assert run("i BETWEEN 1 AND 2", data) == [True, False, None]
    assert run("i NOT BETWEEN 1 AND 2", data) == [False, True, None]


def test_arithmetic_is_exact_and_checked() -> None:
    data = batch(i=[2, None], l=[10, 20], dec=[Decimal("1.25"), Decimal("2.00")])
    assert run("i * 3 + l - 1 = 15", data) == [True, None]
    assert run("dec * 2 = 2.50", data) == [True, False]
    assert run("l + dec > 11.24", data) == [True, True]  # long + decimal stays exact, not a double
    assert run("-i = -2", data) == [True, None]
    overflow = batch(i=[2**31 - 1])
    with pytest.raises(pa.ArrowInvalid, match="overflow"):
        run("i + 1 > 0", overflow)


def test_nan_orders_above_every_number_and_equals_itself_as_in_spark() -> None:
    data = batch(d=[math.nan, 1.0, None], f=[math.nan, 2.0, 1.0])
    assert run("d > 1e308", data) == [True, False, None]
    assert run("d = d", data) == [True, True, None]
    assert run("d < 5", data) == [False, True, None]
    assert run("f >= d", data) == [True, True, None]
    assert run("d <=> f", data) == [True, False, False]


def test_strings_dates_and_timestamps() -> None:
    data = batch(
        s=["b", "a", None],
        day=[dt.date(2024, 1, 2), dt.date(1999, 1, 1), None],
        ts=[dt.datetime(2024, 1, 1, 12, tzinfo=UTC), None, None],
        ntz=[dt.datetime(2024, 1, 1, 12), None, None],
    )
    assert run("s >= 'b'", data) == [True, False, None]
    assert run("day > '2000-01-01'", data) == [True, False, None]  # a string literal read as a date
    assert run("day = DATE '1999-01-01'", data) == [False, True, None]
    assert run("ts = TIMESTAMP '2024-01-01T13:00:00+01:00'", data) == [True, None, None]
    assert run("ntz < TIMESTAMP_NTZ '2024-01-01 12:00:01'", data) == [True, None, None]


def test_names_resolve_case_insensitively_through_structs_and_backticks() -> None:
    data = batch(st=[{"x": 1, "Inner": "a"}, None], **{"odd name": [5, 6]})
    assert run("ST.X = 1 AND st.inner = 'a'", data) == [True, None]
    assert run("`odd name` > 5", data) == [False, True]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("missing > 1", "does not exist"),
        ("arr.x = 1", "only struct fields"),
        ("s > 1", "comparing string with int32"),
        ("ts > TIMESTAMP '2024-01-01 00:00:00'", "session time zone"),
        ("ts > '2024-01-01 00:00:00'", "session time zone"),
        ("ts > ntz", "comparing timestamp"),
        ("day > DATE 'yesterday'", "not a date"),
        ("s + 1 = 2", "numbers only"),
        ("i AND b", "boolean operand"),
        ("st = st", "comparing struct"),
    ],
)
def test_type_combinations_outside_the_subset_are_refused_before_evaluating(text: str, why: str) -> None:
    with pytest.raises(SqlSubsetError, match=why):
        compile_expression(parse(text), PLANS)


# ---------------------------------------------------------------------------------------------- table rules


def test_check_constraints_fail_on_false_and_on_null_naming_the_rule_and_a_row() -> None:
    rules = table_rules(SCHEMA, {"delta.constraints.positive": "i > 0"}, PLANS)
    check_rows(rules, batch(i=[1, 2]), PLANS)
    with pytest.raises(ConstraintViolationError, match=r"CHECK constraint positive \(i > 0\).*row 1.*i => -1") as info:
        check_rows(rules, batch(i=[1, -1]), PLANS)
    assert (info.value.constraint, info.value.expression, info.value.row) == (
        "CHECK constraint positive",
        "i > 0",
        {"i": -1},
    )
    with pytest.raises(ConstraintViolationError, match="false or null") as null_info:
        check_rows(rules, batch(i=[None]), PLANS)
    assert null_info.value.row == {"i": None}


def test_invariants_on_nested_fields_are_enforced() -> None:
    inv = '{"expression": {"expression": "st.x < 10"}}'
    schema = {"fields": [field("st", {"type": "struct", "fields": [field("x", "long", **{"delta.invariants": inv})]})]}
    plans = plan_schema(schema, mapped=False)
    rules = table_rules(schema, {}, plans)
    ok = pa.RecordBatch.from_arrays([conform_array(pa.array([{"x": 1}]), plans[0], "st")], names=["st"])
    check_rows(rules, ok, plans)
    bad = pa.RecordBatch.from_arrays([conform_array(pa.array([{"x": 11}]), plans[0], "st")], names=["st"])
    with pytest.raises(ConstraintViolationError, match=r"invariant on st\.x"):
        check_rows(rules, bad, plans)
    with pytest.raises(UnsupportedExpressionError, match="not the protocol's"):
        table_rules({"fields": [field("x", "long", **{"delta.invariants": "x > 1"})]}, {}, plans)


def test_an_expression_outside_the_subset_refuses_the_write_by_name() -> None:
    with pytest.raises(UnsupportedExpressionError, match=r"CHECK constraint c1 \(length\(s\) > 0\)") as info:
        table_rules(SCHEMA, {"delta.constraints.c1": "length(s) > 0"}, PLANS)
    assert (info.value.constraint, info.value.feature) == ("CHECK constraint c1", "checkConstraints")
    with pytest.raises(UnsupportedExpressionError, match="not boolean"):
        table_rules(SCHEMA, {"delta.constraints.c2": "i + 1"}, PLANS)


def test_generated_columns_are_computed_when_missing_and_checked_when_given() -> None:
    schema = {"fields": [field("a", "long"), field("b", "long", **{"delta.generationExpression": "a * 2 + 1"})]}
    plans = plan_schema(schema, mapped=False)
    rules = table_rules(schema, {}, plans)
    given = pa.RecordBatch.from_arrays([pa.array([1, None]), pa.nulls(2, pa.int64())], names=["a", "b"])
    filled = fill_columns(rules, given, plans, missing={"b"})
    assert filled.column("b").to_pylist() == [3, None]
    fill_columns(rules, filled, plans, missing=set())  # (v <=> expr): null matches null
    wrong = pa.RecordBatch.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["a", "b"])
    with pytest.raises(ConstraintViolationError, match=r"generated column b \(a \* 2 \+ 1\).*row 1") as info:
        fill_columns(rules, wrong, plans, missing=set())
    assert info.value.row == {"b": 4, "a": 2}


def test_defaults_fill_missing_columns_only_and_identity_columns_are_refused() -> None:
    schema = {"fields": [field("a", "long"), field("c", "string", CURRENT_DEFAULT="'x'")]}
    plans = plan_schema(schema, mapped=False)
    rules = table_rules(schema, {}, plans)
    given = pa.RecordBatch.from_arrays([pa.array([1]), pa.nulls(1, pa.string())], names=["a", "c"])
    assert fill_columns(rules, given, plans, missing={"c"}).column("c").to_pylist() == ["x"]
    assert fill_columns(rules, given, plans, missing=set()).column("c").to_pylist() == [None]
    identity = {"fields": [field("id", "long", **{"delta.identity.start": 1, "delta.identity.step": 1})]}
    with pytest.raises(UnsupportedFeatureError, match="identity column") as info:
        table_rules(identity, {}, plan_schema(identity, mapped=False))
    assert info.value.feature == "identityColumns"


def test_rules_where_no_row_level_check_is_possible_are_refused_not_skipped() -> None:
    inv = '{"expression": {"expression": "x > 0"}}'
    in_array = {
        "type": "array",
        "elementType": {"type": "struct", "fields": [field("x", "long", **{"delta.invariants": inv})]},
    }
    schema = {"fields": [field("a", in_array)]}
    with pytest.raises(UnsupportedExpressionError, match=r"invariant on a\.x.*array or map"):
        table_rules(schema, {}, plan_schema(schema, mapped=False))
    nested_generated = {"type": "struct", "fields": [field("g", "long", **{"delta.generationExpression": "1"})]}
    schema = {"fields": [field("s", nested_generated)]}
    with pytest.raises(UnsupportedExpressionError, match=r"generation expression on s\.g") as info:
        table_rules(schema, {}, plan_schema(schema, mapped=False))
    assert info.value.feature == "generatedColumns"
