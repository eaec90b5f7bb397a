"""A pyspark Column read back as Spark SQL text (``deltalog.spark.columns``): Spark evaluates the text exactly as
it evaluates the Column, on rows with nulls, NaN, negative zero and string edge cases; a Column with no SQL
spelling is refused, typed, with the reason."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import pytest

from deltalog.errors import InvalidArgumentError
from deltalog.expr import parse
from deltalog.spark.columns import column_sql, is_column

pytestmark = pytest.mark.interop

ROWS = [
    (1, 2.5, "a'b", dt.date(2026, 11, 1), True, [1, 2], {"k": 1}),
    (-3, float("nan"), "x%y", dt.date(2020, 2, 29), False, [5], {}),
    (None, -0.0, None, None, None, None, None),
    (7, None, "", dt.date(1970, 1, 1), True, [3], {"k": None}),
]
SCHEMA = "i INT, d DOUBLE, s STRING, day DATE, b BOOLEAN, arr ARRAY<INT>, m MAP<STRING, INT>"


def _columns() -> list[Any]:
    from pyspark.sql import functions as F

    i, d, s = F.col("i"), F.col("d"), F.col("s")
    return [
        (i > 3) & ~F.col("b") | i.isNull(),
        (i % 2 == 0) != F.lit(True),
        i.between(-3, 5),
        i.isin(1, 7, None),
        -i + F.lit(2**40) * 2 - i / 3,
        d.eqNullSafe(F.lit(float("nan"))),
        d == F.lit(0.0),
        s.like("x%") | s.startswith("a") | s.contains("'"),
        F.when(i > 0, F.lit("pos")).when(i < 0, "neg").otherwise(F.lit(None)),
        F.coalesce(s, F.lit("it's")),
        F.upper(s).isNotNull(),
        F.col("day") >= F.lit(dt.date(2020, 1, 1)),
        F.col("day") == F.to_date(F.lit("2026-11-01")),
        F.lit(decimal.Decimal("1.50")) + i,
        i.cast("string").try_cast("bigint"),
        F.col("arr")[0],
        F.col("m")["k"],
        F.array_contains(F.col("arr"), 2),
        F.expr("i * 2 + length(s)"),
        F.lit(dt.datetime(2026, 11, 1, 12, 30)) > F.lit(dt.datetime(2026, 11, 1, 0, 0)),
        F.lit(b"\x00\x01") == F.lit(b"\x00\x01"),
        F.lit(math.inf) > d,
    ]


def test_the_text_means_what_the_column_means(spark: Any) -> None:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(ROWS, SCHEMA)
    columns = _columns()
    texts = [column_sql(spark, c, "test") for c in columns]
    for text in texts:
        assert text == text.strip() and "Column<" not in text
    both = frame.select(
        *(c.alias(f"c{n}") for n, c in enumerate(columns)), *(F.expr(t).alias(f"t{n}") for n, t in enumerate(texts))
    ).collect()
    for row in both:
        for n, text in enumerate(texts):
            a, b = row[f"c{n}"], row[f"t{n}"]
            same = a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
            assert same, (text, a, b)
    assert texts[0] == "(((`i` > 3) AND (NOT `b`)) OR (`i` IS NULL))"
    assert texts[4].count("1099511627776L") == 1  # a BIGINT literal stays one
    for text in texts[:12]:
        parse(text)  # deltalog's parser reads what it is handed


def test_columns_without_sql_are_refused_with_the_reason(spark: Any) -> None:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(ROWS, SCHEMA)
    refused = {
        "user-defined function": F.udf(lambda x: x, "int")(F.col("i")),
        "LambdaFunction": F.transform(F.col("arr"), lambda x: x + 1),
        "UnresolvedStar": F.col("*"),
        "bound to the DataFrame": frame["i"] > 1,
    }
    for reason, column in refused.items():
        assert is_column(column)
        with pytest.raises(InvalidArgumentError, match=rf"where: the Column .*{reason}.*pass it as Spark SQL text"):
            column_sql(spark, column, "where")
    assert not is_column("i > 1")
