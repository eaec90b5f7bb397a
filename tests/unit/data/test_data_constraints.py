"""Spark SQL expressions as the table rules use them: parsing (what the old hand-written subset took, now through
sqlglot), refusal by name of what deltalog does not evaluate, Spark's semantics, table rules."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from deltalog.compute import Evaluation, evaluate
from deltalog.data.constraints import check_rows, fill_columns, scope_of, table_rules
from deltalog.data.identity_values import IdentityValues
from deltalog.data.types import conform_array, plan_schema
from deltalog.errors import (
    ConstraintViolationError,
    ExpressionValueError,
    InvalidExpressionError,
    UnsupportedExpressionError,
)
from deltalog.expr import bind, parse
from deltalog.expr import tree as X
from deltalog.expr import types as T

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
    return evaluate(bind(text, scope_of(PLANS)), Evaluation.of(data)).to_pylist()  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------- parsing


def test_every_construct_parses() -> None:
    node = parse("NOT (`odd name` + 1 BETWEEN -2 AND 3L) OR st.x IN (1, 2) AND s IS NOT NULL")
    assert isinstance(node, X.Call) and node.name == "or"
    assert [c.parts for c in X.column_refs(node)] == [("odd name",), ("st", "x"), ("s",)]
    assert parse("a <=> b") == X.Call("<=>", (X.Column(("a",)), X.Column(("b",))))
    assert parse("a != b") == parse("a <> b") == X.Call("!=", (X.Column(("a",)), X.Column(("b",))))
    assert parse("!a") == X.Call("not", (X.Column(("a",)),))
    assert parse("x NOT IN (1)") == X.Call("not", (X.Call("in", (X.Column(("x",)), X.Literal(1, T.INT))),))


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("1", X.Literal(1, T.INT)),
        ("3000000000", X.Literal(3000000000, T.LONG)),
        ("7S", X.Literal(7, T.SHORT)),
        ("1.50", X.Literal(Decimal("1.50"), T.Decimal(3, 2))),
        ("2BD", X.Literal(Decimal("2"), T.Decimal(1, 0))),
        ("1e3", X.Literal(1000.0, T.DOUBLE)),
        ("1.5D", X.Literal(1.5, T.DOUBLE)),
        ("1.5F", X.Literal(1.5, T.FLOAT)),
        ("'it\\'s' 'x'", X.Literal("it'sx", T.STRING)),
        ('"tab\\there"', X.Literal("tab\there", T.STRING)),
        ("'it''s'", X.Literal("it's", T.STRING)),
        ("DATE '2024-02-29'", X.Cast(X.Literal("2024-02-29", T.STRING), T.DATE)),
        ("timestamp_ntz '2024-01-01 10:00:00'", X.Cast(X.Literal("2024-01-01 10:00:00", T.STRING), T.TIMESTAMP_NTZ)),
        ("NULL", X.Literal(None, T.VOID)),
        ("-5", X.Literal(-5, T.INT)),
        ("-2147483648", X.Literal(-2147483648, T.INT)),
    ],
)
def test_literals_are_typed_as_spark_types_them(text: str, literal: X.Expr) -> None:
    assert parse(text) == literal


@pytest.mark.parametrize(
    ("text", "error", "why"),
    [
        ("soundex(s) > 3", UnsupportedExpressionError, "function soundex"),
        ("s LIKE ANY ('a%')", UnsupportedExpressionError, "LIKE ANY"),
        ("i IN (SELECT 1)", UnsupportedExpressionError, "subquery"),
        ("i > ", InvalidExpressionError, "position 2"),
        ("i > 1; DROP TABLE t", InvalidExpressionError, "2 statements"),
        ("i = 'unclosed", InvalidExpressionError, "not closed"),
        (" OR ".join(["i = (1 + (2 + (3 + 4)))"] * 5) + " + 1" * 300, InvalidExpressionError, "nests deeper"),
        ("", InvalidExpressionError, "empty"),
    ],
)
def test_what_deltalog_does_not_evaluate_is_refused_with_a_reason(text: str, error: type, why: str) -> None:
    with pytest.raises(error, match=why):
        bind(text, scope_of(PLANS))


def test_long_and_or_chains_stay_shallow() -> None:
    node = parse(" OR ".join(["i = 1"] * 300))
    assert isinstance(node, X.Call) and node.name == "or" and len(node.args) == 300 and X.depth(node) == 3


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
    with pytest.raises(ExpressionValueError, match="overflow") as info:
        run("i + 1 > 0", overflow)
    assert info.value.error_class == "ARITHMETIC_OVERFLOW"


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


def test_timestamps_without_a_zone_are_read_in_the_session_time_zone() -> None:
    data = batch(ts=[dt.datetime(2024, 1, 1, 8, tzinfo=UTC)])
    assert run("ts = TIMESTAMP '2024-01-01 08:00:00'", data) == [True]  # UTC unless a zone is given
    scope = scope_of(PLANS)
    in_la = Evaluation.of(data, session_time_zone="America/Los_Angeles")
    assert evaluate(bind("ts = TIMESTAMP '2024-01-01 00:00:00'", scope), in_la).to_pylist() == [True]
    assert evaluate(bind("hour(ts)", scope), in_la).to_pylist() == [0]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("missing > 1", "does not exist"),
        ("arr.x = 1", "only struct fields"),
        ("ts > ntz + 1", "TIMESTAMP_NTZ \\+ INT|cannot resolve"),
        ("day > DATE 'yesterday'", "INVALID_TYPED_LITERAL"),
        ("s * s = 2", "NUMERIC"),
        ("i AND b", "must be BOOLEAN"),
        ("day = 1", "cannot be compared"),
    ],
)
def test_type_combinations_spark_rejects_are_refused_before_evaluating(text: str, why: str) -> None:
    with pytest.raises((InvalidExpressionError, UnsupportedExpressionError, ExpressionValueError), match=why):
        run(text, batch(i=[1]))


def test_comparing_structs_is_refused_by_name() -> None:
    with pytest.raises(UnsupportedExpressionError, match="comparing STRUCT"):
        bind("st = st", scope_of(PLANS))


def test_a_malformed_value_fails_on_the_row_naming_it() -> None:
    data = batch(s=["1", "a"])
    with pytest.raises(ExpressionValueError, match="'a'") as info:
        run("s + 1 > 0", data)
    assert (info.value.error_class, info.value.value) == ("CAST_INVALID_INPUT", "a")
    assert run("s + 1", batch(s=["1", None])) == [2, None]


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


def test_an_expression_deltalog_does_not_evaluate_refuses_the_write_by_name() -> None:
    table_rules(SCHEMA, {"delta.constraints.c0": "length(s) > 0"}, PLANS)  # beyond the old subset: evaluated
    with pytest.raises(UnsupportedExpressionError, match=r"CHECK constraint c1 \(soundex\(s\) > 0\)") as info:
        table_rules(SCHEMA, {"delta.constraints.c1": "soundex(s) > 0"}, PLANS)
    assert (info.value.constraint, info.value.feature, info.value.function) == (
        "CHECK constraint c1",
        "checkConstraints",
        "soundex",
    )
    with pytest.raises(UnsupportedExpressionError, match="not BOOLEAN"):
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


def test_defaults_fill_missing_columns_only_and_identity_columns_take_the_next_values() -> None:
    schema = {"fields": [field("a", "long"), field("c", "string", CURRENT_DEFAULT="'x'")]}
    plans = plan_schema(schema, mapped=False)
    rules = table_rules(schema, {}, plans)
    given = pa.RecordBatch.from_arrays([pa.array([1]), pa.nulls(1, pa.string())], names=["a", "c"])
    assert fill_columns(rules, given, plans, missing={"c"}).column("c").to_pylist() == ["x"]
    assert fill_columns(rules, given, plans, missing=set()).column("c").to_pylist() == [None]
    meta = {"delta.identity.start": 1, "delta.identity.step": 2, "delta.identity.highWaterMark": 5}
    identity = {"fields": [field("id", "long", **meta)]}
    assert table_rules(identity, {}, plan_schema(identity, mapped=False)) == ()  # a sequence, not a row rule
    values = IdentityValues(identity)
    for n in (2, 1):
        batch = values.fill(pa.RecordBatch.from_arrays([pa.nulls(n, pa.int64())], names=["id"]), missing={"id"})
        assert batch.column("id").to_pylist() == ([7, 9] if n == 2 else [11])
    assert values.marks() == {"id": 11} and [(r.first, r.last) for r in values.generated] == [(7, 11)]


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
