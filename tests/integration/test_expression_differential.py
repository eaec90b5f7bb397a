"""Spark SQL expressions through deltalog's evaluator and through pyspark (local mode, ANSI on, Spark 4's
default) over the same Arrow rows: the same values, the same types, and the same rows failing.

Thousands of generated expressions (``expression_cases.py``: every function deltalog evaluates, NULLs, edge
values, instants before 1970 and on daylight-saving changes, unicode), each in the UTC and the
America/Los_Angeles session time zone. pyspark is the specification: a difference is a deltalog bug (or a
function to refuse by name). CI runs a fixed seed; ``DELTALOG_DIFF_EXPRESSIONS`` and ``DELTALOG_DIFF_SEED`` run
more or other expressions.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from deltalog.compute import Evaluation, evaluate
from deltalog.compute.casts import INVALID_UTF8
from deltalog.compute.columns import OUT_OF_RANGE
from deltalog.errors import ExpressionValueError, InvalidExpressionError, UnsupportedExpressionError
from deltalog.expr import Scope, bind
from tests.integration.expression_cases import COLUMNS, Generator, rows, template_names
from tests.integration.expression_cases import SCHEMA as TABLE_SCHEMA

COUNT = int(os.environ.get("DELTALOG_DIFF_EXPRESSIONS", "1500"))
SEED = int(os.environ.get("DELTALOG_DIFF_SEED", "25"))
ZONES = ("UTC", "America/Los_Angeles")
BATCH = 60
NOW = 1_800_000_000_000_000
#: failures that are deltalog's documented limits, not Spark's (docs/expressions.md, "Limits"): dates and
#: timestamps outside the years 1 to 9999, and strings that are not UTF-8
LIMITS = (OUT_OF_RANGE, INVALID_UTF8)
#: Spark error classes that mean the same failure as ours
_ALIASES = {"ARITHMETIC_OVERFLOW": ("ARITHMETIC_OVERFLOW", "BINARY_ARITHMETIC_OVERFLOW", "ArithmeticException")}


@dataclass
class Outcome:
    """deltalog's answer for one expression: an analysis error, or a type, values and failing rows."""

    expression: str
    refused: Exception | None = None
    type: str = ""
    values: list[Any] = field(default_factory=list)
    failing: dict[int, str] = field(default_factory=dict)  # row -> error class


def plain(arr: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Values to compare: dates as days and timestamps as microseconds (Spark's range is wider than Python's)."""
    t = arr.type
    if pa.types.is_date(t):
        arr = arr.cast(pa.int32())
    elif pa.types.is_timestamp(t):
        arr = arr.cast(pa.int64())
    return arr.to_pylist()  # type: ignore[no-any-return]


def _deltalog(expression: str, table: pa.Table, zone: str) -> Outcome:
    scope = Scope.of_schema(TABLE_SCHEMA)
    try:
        bound = bind(expression, scope)
    except (InvalidExpressionError, UnsupportedExpressionError) as exc:
        return Outcome(expression, refused=exc)
    assert bound.type is not None
    out = Outcome(expression, type=bound.type.sql().lower().replace(" ", ""))
    batch = table.combine_chunks().to_batches()[0]
    try:
        out.values = plain(evaluate(bound, Evaluation.of(batch, session_time_zone=zone, now_micros=NOW)))
        return out
    except ExpressionValueError:
        pass
    for r in range(batch.num_rows):
        try:
            value = evaluate(bound, Evaluation.of(batch.slice(r, 1), session_time_zone=zone, now_micros=NOW))
            out.values.append(plain(value)[0])
        except ExpressionValueError as exc:
            out.values.append(None)
            out.failing[r] = exc.error_class
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b or (math.isfinite(a) and abs(a - b) <= 1e-12 * max(abs(a), abs(b)))
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        if (a.tzinfo is None) != (b.tzinfo is None):
            return False
        return a == b
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return _same(list(a), list(b))
    return bool(type(a) is type(b) and a == b) or (
        isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b and not isinstance(a, bool)
    )


def _error_class(exc: BaseException) -> str:
    text = str(exc)
    return text[text.index("[") + 1 : text.index("]")] if "[" in text and "]" in text else type(exc).__name__


def _chunks(items: Sequence[Outcome], size: int) -> Iterator[Sequence[Outcome]]:
    for k in range(0, len(items), size):
        yield items[k : k + size]


class Spark:
    def __init__(self, session: Any) -> None:
        self.session = session

    def zone(self, zone: str) -> None:
        self.session.conf.set("spark.sql.session.timeZone", zone)
        self.session.conf.set("spark.sql.ansi.enabled", "true")

    def analyses(self, expression: str) -> Exception | None:
        try:
            self.session.sql(f"SELECT {expression} AS v FROM t").schema  # noqa: B018 - analysis happens here
        except Exception as exc:  # AnalysisException, ParseException: pyspark's classes vary by version
            return exc
        return None

    def columns(self, outcomes: Sequence[Outcome]) -> tuple[list[str], list[list[Any]]]:
        """Types and values (by row) of many expressions in one query; rows deltalog saw fail are skipped
        with a CASE Spark evaluates lazily too."""
        parts = []
        for k, o in enumerate(outcomes):
            if o.failing:
                skip = ", ".join(str(r) for r in o.failing)
                parts.append(f"CASE WHEN rid IN ({skip}) THEN NULL ELSE ({o.expression}) END AS c{k}")
            else:
                parts.append(f"({o.expression}) AS c{k}")
        df = self.session.sql(f"SELECT {', '.join(parts)} FROM t ORDER BY rid")
        types = [f.dataType.simpleString() for f in df.schema.fields]
        table = df.toArrow()
        return types, [plain(table.column(k)) for k in range(len(outcomes))]

    def fails_on(self, expression: str, row: int) -> str | None:
        try:
            self.session.sql(f"SELECT ({expression}) AS v FROM t WHERE rid = {row}").collect()
        except Exception as exc:
            return _error_class(exc)
        return None


def _compare(spark: Spark, outcomes: Sequence[Outcome], problems: list[str]) -> None:
    try:
        types, values = spark.columns(outcomes)
    except Exception as exc:
        if len(outcomes) == 1:
            problems.append(f"{outcomes[0].expression}: deltalog evaluates it, Spark fails: {_error_class(exc)}")
            return
        half = len(outcomes) // 2
        _compare(spark, outcomes[:half], problems)
        _compare(spark, outcomes[half:], problems)
        return
    for o, t, vals in zip(outcomes, types, values, strict=True):
        if o.type != t and not (o.type == "void" and t in ("void", "null")):
            problems.append(f"{o.expression}: type {o.type} here, {t} in Spark")
            continue
        for r, (mine, theirs) in enumerate(zip(o.values, vals, strict=True)):
            if r in o.failing:
                continue
            if not _same(mine, theirs):
                problems.append(f"{o.expression}: row {r} gives {mine!r} here, {theirs!r} in Spark")
                break


@pytest.mark.parametrize("zone", ZONES)
def test_expressions_agree_with_spark(spark: Any, zone: str) -> None:
    table = rows()
    ddl = ", ".join(f"{n} {t}" for n, (t, _) in {"rid": ("INT", ""), **COLUMNS}.items())
    spark.createDataFrame(table, schema=ddl).createOrReplaceTempView("t")
    oracle = Spark(spark)
    oracle.zone(zone)
    expressions = list(dict.fromkeys(Generator(SEED).expressions(COUNT)))
    problems: list[str] = []
    outcomes = []
    for e in expressions:
        try:
            outcomes.append(_deltalog(e, table, zone))
        except Exception as exc:  # a crash is a difference too: Spark answers every one of them
            problems.append(f"{e}: deltalog crashes: {type(exc).__name__}: {exc}")
    evaluated = []
    for o in outcomes:
        if o.refused is not None:
            if isinstance(o.refused, UnsupportedExpressionError) or oracle.analyses(o.expression) is None:
                problems.append(f"{o.expression}: refused here ({o.refused}), Spark analyses it")
        else:
            evaluated.append(o)
    for chunk in _chunks(evaluated, BATCH):
        _compare(oracle, chunk, problems)
    for o in evaluated:
        # deltalog evaluates dates and timestamps in the years 1 to 9999 (docs/expressions.md): beyond, it refuses
        limits = {r for r, c in o.failing.items() if c in LIMITS}
        if o.failing and len(limits) < len(o.failing):
            row, mine = next((r, c) for r, c in o.failing.items() if c not in LIMITS)
            theirs = oracle.fails_on(o.expression, row)
            if theirs is None:
                problems.append(f"{o.expression}: row {row} fails here ({mine}), not in Spark")
    failing = sum(1 for o in evaluated if o.failing)
    print(f"{zone}: {len(expressions)} expressions, {len(evaluated)} evaluated, {failing} failing on some rows")
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:40])


def test_every_function_is_generated() -> None:
    """The generator covers the functions deltalog evaluates (a new function needs its template)."""
    from deltalog.expr.functions import RULES

    names = set(template_names())
    generated = " ".join(Generator(SEED).expressions(COUNT)).lower()
    internal = {"get_field", "subscript", "is_not_null", "is_false", "is_not_true", "is_not_false", "regexp",
                "regexp_like", "btrim", "cardinality"}  # fmt: skip
    missing = [
        n
        for n in RULES
        if n not in internal and n not in names and f"{n}(" not in generated and f" {n} " not in generated
    ]
    assert not missing, missing
