"""The expression tree, its binder and the evaluator's coverage: names resolve as Spark resolves them (case,
backticks, nested fields, merge aliases, ambiguity, column mapping), refusals name the expression, the
position and the column or function, every function the binder types has a kernel, and Spark's hash
functions are bit-exact on known values."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest

from deltalog.compute import Evaluation, evaluate, kernel_names
from deltalog.compute.hashing import murmur3_bytes, xxh64
from deltalog.errors import InvalidExpressionError, UnsupportedExpressionError
from deltalog.expr import Relation, Scope, bind, parse
from deltalog.expr import tree as X
from deltalog.expr import types as T
from deltalog.expr.functions import NULL_INTOLERANT, RULES


def field(name: str, t: Any, **meta: Any) -> dict[str, Any]:
    return {"name": name, "type": t, "nullable": True, "metadata": meta}


MAPPED = {
    "fields": [
        field("Id", "long", **{"delta.columnMapping.physicalName": "col-1"}),
        field(
            "st",
            {"type": "struct", "fields": [field("x", "long", **{"delta.columnMapping.physicalName": "col-3"})]},
            **{"delta.columnMapping.physicalName": "col-2"},
        ),
        field("a.b", "string", **{"delta.columnMapping.physicalName": "col-4"}),
    ]
}


def test_names_resolve_case_insensitively_to_physical_names() -> None:
    scope = Scope.of_schema(MAPPED)
    bound = bind("ID > 1 AND St.X = 2 AND `a.b` = 'z'", scope)
    fields = X.references(bound)
    assert [(f.path, f.physical) for f in fields] == [
        (("Id",), ("col-1",)),
        (("st", "x"), ("col-2", "col-3")),
        (("a.b",), ("col-4",)),
    ]
    batch = pa.record_batch(
        {
            "col-1": pa.array([1, 2], pa.int64()),
            "col-2": pa.array([{"col-3": 2}, {"col-3": 3}], pa.struct([("col-3", pa.int64())])),
            "col-4": ["z", "z"],
        }
    )
    assert evaluate(bound, Evaluation.of(batch)).to_pylist() == [False, False]
    assert evaluate(bind("Id + st.x", scope), Evaluation.of(batch)).to_pylist() == [3, 5]


def test_merge_aliases_qualify_and_unqualified_shared_names_are_ambiguous() -> None:
    source = Relation(T.schema_fields({"fields": [field("id", "long"), field("amount", "double")]}), "s")
    target = Relation(T.schema_fields({"fields": [field("id", "long"), field("total", "double")]}), "t")
    scope = Scope((source, target))
    bound = bind("s.amount * 1.1 + t.total", scope)
    assert [(f.relation, f.path) for f in X.references(bound)] == [(0, ("amount",)), (1, ("total",))]
    with pytest.raises(InvalidExpressionError, match="ambiguous") as info:
        bind("id = 1", scope)
    assert (info.value.column, info.value.position) == ("id", 0)
    s_rows = pa.record_batch({"id": pa.array([1], pa.int64()), "amount": [10.0]})
    t_rows = pa.record_batch({"id": pa.array([1], pa.int64()), "total": [5.0]})
    assert evaluate(bound, Evaluation.of(s_rows, t_rows)).to_pylist() == [16.0]


@pytest.mark.parametrize(
    ("text", "error", "position", "named"),
    [
        ("id > = 1", InvalidExpressionError, 5, None),
        ("x + nope", InvalidExpressionError, 4, "nope"),
        ("x + soundex(s)", UnsupportedExpressionError, 4, "soundex"),
        ("s * s", InvalidExpressionError, 0, None),
    ],
)
def test_refusals_name_the_expression_the_position_and_the_column_or_function(
    text: str, error: type, position: int, named: str | None
) -> None:
    scope = Scope.of_schema({"fields": [field("id", "long"), field("x", "long"), field("s", "string")]})
    with pytest.raises(error) as info:
        bind(text, scope)
    exc = info.value
    assert exc.expression == text and exc.position == position  # type: ignore[attr-defined]
    if named is not None:
        assert named in str(exc)
        assert getattr(exc, "column", None) == named or getattr(exc, "function", None) == named


def test_every_function_the_binder_types_has_a_kernel() -> None:
    kernels = set(kernel_names())
    produced = {"add_interval_months", "add_interval_micros", "date_add", "date_sub"}  # the binder's own calls
    aliases_renamed = {"regexp": "rlike", "regexp_like": "rlike", "btrim": "trim", "cardinality": "size"}
    missing = [n for n in RULES if aliases_renamed.get(n, n) not in kernels]
    assert not missing and produced <= kernels and kernels >= NULL_INTOLERANT


def test_the_tree_is_a_value_and_prints_back_as_spark_sql() -> None:
    a, b = parse("upper(s) = 'X' AND n BETWEEN 1 AND 3"), parse("UPPER(s)='X' and n between 1 and 3")
    assert a == b and hash(a) == hash(b)
    assert X.to_sql(a) == "(upper(s) = 'X') AND (n >= 1) AND (n <= 3)"
    assert parse(X.to_sql(a)) == a
    assert X.literal_of(dt.date(2024, 2, 29)) == X.Literal(19782, T.DATE)


def test_spark_hashes_are_bit_exact() -> None:
    # values pyspark 4.3 returns: hash('a'), xxhash64('a'), hash(X'0102')
    assert murmur3_bytes(b"a", 42) - (1 << 32) * (murmur3_bytes(b"a", 42) >> 31) == 1485273170
    assert xxh64(b"a", 42) - (1 << 64) == -8582455328737087284
    scope = Scope.of_schema({"fields": [field("b", "binary"), field("i", "integer")]})
    batch = pa.record_batch({"b": pa.array([b"\x01\x02"]), "i": pa.array([1], pa.int32())})
    assert evaluate(bind("hash(b)", scope), Evaluation.of(batch)).to_pylist() == [1964783052]
    assert evaluate(bind("hash(i)", scope), Evaluation.of(batch)).to_pylist() == [-559580957]


def test_assignments_are_typed_as_their_column_by_spark_store_assignment() -> None:
    """MERGE and UPDATE assignments: an ANSI cast into the column's type where Spark's store assignment allows
    one (numbers both ways, anything into STRING, dates and timestamps), a refusal naming the column where it
    does not (STRING into a number, a struct with a field the column lacks)."""
    from deltalog.expr import bind_assignment
    from deltalog.expr.coerce import store_assignable

    scope = Scope.of_schema({"fields": [field("n", "integer"), field("s", "string"), field("d", "date")]})
    widened = bind_assignment("n + 1", scope, "total", T.LONG)
    assert isinstance(widened, X.Cast) and widened.to == T.LONG and widened.implicit
    narrowed = bind_assignment("CAST(n AS BIGINT)", scope, "small", T.SHORT)
    assert isinstance(narrowed, X.Cast) and narrowed.to == T.SHORT
    assert bind_assignment("n", scope, "n", T.INT).type == T.INT
    assert bind_assignment("NULL", scope, "d", T.DATE) == X.Literal(None, T.DATE)
    assert bind_assignment("d", scope, "ts", T.TIMESTAMP).type == T.TIMESTAMP
    assert bind_assignment("n", scope, "s", T.STRING).type == T.STRING
    with pytest.raises(InvalidExpressionError, match="column n") as info:
        bind_assignment("s", scope, "n", T.INT)
    assert info.value.column == "n"
    with pytest.raises(InvalidExpressionError, match="column flag"):
        bind_assignment("n", scope, "flag", T.BOOLEAN)
    point = T.Struct((T.StructField("x", T.INT), T.StructField("y", T.INT)))
    assert store_assignable(T.Struct((T.StructField("Y", T.SHORT), T.StructField("x", T.LONG))), point)
    assert not store_assignable(T.Struct((T.StructField("z", T.INT),)), point)
    assert store_assignable(T.Array(T.INT), T.Array(T.LONG)) and not store_assignable(T.Array(T.STRING), T.Array(T.INT))
    assert store_assignable(T.LONG, T.TIMESTAMP) and not store_assignable(T.BOOLEAN, T.INT)
