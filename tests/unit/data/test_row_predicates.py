"""Row predicates (deltalog.data.predicate): an Expression, SQL text and a where mapping select the same rows;
null is not a match; the pruning expression a SQL predicate gets is implied by it (never prunes a match away).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog.data.predicate import row_filter
from deltalog.errors import InvalidArgumentError, UnsupportedExpressionError

SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "day", "type": "date", "nullable": True, "metadata": {}},
        {"name": "x", "type": "double", "nullable": True, "metadata": {}},
    ],
}
BATCH = pa.record_batch(
    {
        "id": pa.array([1, 2, None, 4, 5], pa.int64()),
        "name": ["a", "b", "c", None, "e"],
        "day": pa.array([dt.date(2024, 1, d) for d in (1, 2, 3, 4, 5)], pa.date32()),
        "x": [0.5, float("nan"), 2.0, None, -1.0],
    }
)


def positions(predicate: Any) -> list[int]:
    return row_filter(predicate, SCHEMA).positions(BATCH).tolist()


@pytest.mark.parametrize(
    ("expression", "sql", "where", "dnf", "expected"),
    [
        (pc.field("id") > 2, "id > 2", {"id": {">": 2}}, [("id", ">", 2)], [3, 4]),
        (pc.field("name") == "b", "name = 'b'", {"name": "b"}, [("name", "=", "b")], [1]),
        (
            pc.field("name").isin(["a", "e"]),
            "name IN ('a', 'e')",
            {"name": ["a", "e"]},
            [("name", "in", ["a", "e"])],
            [0, 4],
        ),
        (pc.field("id").is_null(), "id IS NULL", {"id": None}, [("id", "=", None)], [2]),
        (
            pc.field("day") >= dt.date(2024, 1, 4),
            "day >= DATE '2024-01-04'",
            {"day": {">=": "2024-01-04"}},
            [("day", ">=", "2024-01-04")],
            [3, 4],
        ),
        (
            (pc.field("id") < 2) | (pc.field("name") == "c"),
            "id < 2 OR name = 'c'",
            None,
            [[("id", "<", 2)], [("name", "=", "c")]],
            [0, 2],
        ),
    ],
)
def test_every_form_selects_the_same_rows(expression: Any, sql: str, where: Any, dnf: Any, expected: list[int]) -> None:
    assert positions(expression) == positions(sql) == positions(dnf) == expected
    if where is not None:
        assert positions(where) == expected


def test_null_is_not_a_match_and_sql_orders_nan_as_spark_does() -> None:
    assert positions("NOT (id > 2)") == [0, 1]  # null id: NOT null is null, not a match
    assert positions("x > 1") == [1, 2]  # Spark: NaN is larger than every number
    assert positions(pc.field("x") > 1) == [2]  # pyarrow's own semantics for an Expression
    assert positions({"id": {"not in": [1, None]}}) == []  # SQL: NOT IN over a list holding NULL


def test_bad_predicates_are_refused_naming_what_is_wrong() -> None:
    with pytest.raises(InvalidArgumentError, match="nope"):
        row_filter(pc.field("nope") == 1, SCHEMA)
    with pytest.raises(InvalidArgumentError, match="nope"):
        row_filter("nope = 1", SCHEMA)
    with pytest.raises(InvalidArgumentError, match="nope"):
        row_filter({"nope": 1}, SCHEMA)
    with pytest.raises(UnsupportedExpressionError, match="soundex") as unsupported:
        row_filter("soundex(name) = 'x'", SCHEMA)
    assert (unsupported.value.function, unsupported.value.position) == ("soundex", 0)
    with pytest.raises(InvalidArgumentError, match="not BOOLEAN"):
        row_filter("id + 1", SCHEMA)
    with pytest.raises(InvalidArgumentError, match="not a valid long"):
        row_filter({"id": "x"}, SCHEMA)
    with pytest.raises(InvalidArgumentError, match="SQL text, a pyarrow compute Expression, DNF tuples"):
        row_filter(42, SCHEMA)


COMPARISONS = ["=", "!=", "<", "<=", ">", ">="]
atoms = st.one_of(
    st.builds(lambda op, v: f"id {op} {v}", st.sampled_from(COMPARISONS), st.integers(-1, 6)),
    st.builds(lambda op, v: f"name {op} '{v}'", st.sampled_from(COMPARISONS), st.sampled_from("abcdez")),
    st.builds(lambda v: f"x > {v}", st.integers(-2, 3)),  # floats: never translated
    st.sampled_from(["id IS NULL", "name IS NOT NULL", "id IN (1, 4)", "id BETWEEN 2 AND 4", "id + 1 > 3"]),
)
predicates = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
        st.builds(lambda a: f"NOT ({a})", inner),
    ),
    max_leaves=6,
)


@settings(derandomize=True, deadline=None, max_examples=300)
@given(predicates)
def test_the_pruning_expression_of_sql_is_implied_by_it(text: str) -> None:
    """Every row the SQL matches satisfies the pruning expression: skipping by it never loses a match."""
    chosen = row_filter(text, SCHEMA)
    matched = set(chosen.positions(BATCH).tolist())
    if chosen.pruning is None:
        return
    kept = set(row_filter(chosen.pruning, SCHEMA).positions(BATCH).tolist())
    assert matched <= kept, (text, str(chosen.pruning))
