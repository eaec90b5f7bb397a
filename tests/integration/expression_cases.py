# ruff: noqa: E501 - the templates read best one per line
"""Generated Spark SQL expressions and the Arrow rows they run on, for the differential test against pyspark.

Every function and operator deltalog evaluates appears, over columns of every Delta type with NULLs and edge
values (integer limits, NaN, infinities, -0.0, leap days, instants before 1970 and on DST changes, unicode,
strings that are and are not numbers or dates), and literals of every kind. The generator is seeded: the same
seed gives the same expressions.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from decimal import Decimal

import pyarrow as pa

UTC = dt.timezone.utc

#: column name -> (Spark DDL type, kind the generator uses it as)
COLUMNS = {
    "i": ("INT", "int"),
    "l": ("BIGINT", "int"),
    "b": ("TINYINT", "int"),
    "sh": ("SMALLINT", "int"),
    "d": ("DOUBLE", "frac"),
    "f": ("FLOAT", "frac"),
    "dec": ("DECIMAL(10,2)", "dec"),
    "s": ("STRING", "str"),
    "ns": ("STRING", "numstr"),
    "ds": ("STRING", "datestr"),
    "dt": ("DATE", "date"),
    "ts": ("TIMESTAMP", "ts"),
    "ntz": ("TIMESTAMP_NTZ", "ntz"),
    "bo": ("BOOLEAN", "bool"),
    "bin": ("BINARY", "bin"),
    "arr": ("ARRAY<INT>", "arr"),
    "m": ("MAP<STRING,INT>", "map"),
    "st": ("STRUCT<x: INT, y: STRING>", "struct"),
}


def rows() -> pa.Table:
    """The rows: 24, each column with NULLs and its edge values."""
    n = 24

    def cycle(values: list[object]) -> list[object]:
        return [values[k % len(values)] for k in range(n)]

    i = cycle([0, 1, -1, 7, None, 2**31 - 1, -(2**31), 42, 3, -7, 100, None])
    l_ = cycle([0, 10, -3, 2**63 - 1, None, -(2**63), 5, 12345678901, -1, 2, None, 64])
    b = cycle([0, 1, -128, 127, None, 5, -3])
    sh = cycle([0, -32768, 32767, 9, None, -2])
    d = cycle([0.0, 1.5, -2.25, float("nan"), None, float("inf"), -0.0, 1e300, 3.0, -1e-5, 2.5, float("-inf"), 0.1])
    f = cycle([0.0, 1.5, -2.5, float("nan"), None, 3.25, -0.0, 1e30, 0.5])
    dec = cycle([Decimal("0.00"), Decimal("1.25"), Decimal("-99999999.99"), None, Decimal("12.50"), Decimal("-0.05")])
    s = cycle(["a", "", " x ", "é", "日本語", None, "ABC", "a%b_c", "Straße", "hello world", "ǅ", "x,y,z"])
    ns = cycle(["1", "-12", " 7 ", "1.5", "abc", None, "9999999999", "0", "+3", "1e2", "", "2147483647"])
    ds = cycle(
        ["2024-02-29", "2020-1-5", "1969-12-31 23:59:59", "bad", None, "2024-03-10T02:30:00", "2021-02-30", "2024"]
    )
    day = dt.date
    dates = cycle(
        [
            day(2024, 2, 29),
            day(1969, 12, 31),
            day(1900, 3, 1),
            None,
            day(2024, 3, 10),
            day(2000, 1, 1),
            day(2024, 11, 3),
            day(1582, 10, 15),
            day(9999, 12, 31),
            day(2023, 12, 31),
        ]
    )
    when = dt.datetime
    ts = cycle(
        [
            when(2024, 3, 10, 10, 30, tzinfo=UTC),
            when(1960, 1, 1, tzinfo=UTC),
            None,
            when(2024, 11, 3, 8, 30, 15, 123456, tzinfo=UTC),
            when(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            when(2000, 2, 29, 12, tzinfo=UTC),
            when(2024, 1, 31, 0, 0, 1, tzinfo=UTC),
        ]
    )
    ntz = cycle([when(2024, 3, 10, 2, 30), None, when(1950, 6, 15, 23, 59, 59, 500000), when(2024, 12, 31, 23, 0)])
    bo = cycle([True, False, None])
    binary = cycle([b"", b"\x00\xff", b"abc", None, "é".encode(), b"\x01\x02\x03\x04\x05"])
    arr = cycle([[1, 2, 3], [], None, [None, 5], [7]])
    m = cycle([{"a": 1, "b": None}, {}, None, {"x": 9}])
    st = cycle([{"x": 1, "y": "p"}, None, {"x": None, "y": "q"}, {"x": -5, "y": None}])
    return pa.table(
        {
            "rid": pa.array(range(n), pa.int32()),
            "i": pa.array(i, pa.int32()),
            "l": pa.array(l_, pa.int64()),
            "b": pa.array(b, pa.int8()),
            "sh": pa.array(sh, pa.int16()),
            "d": pa.array(d, pa.float64()),
            "f": pa.array(f, pa.float32()),
            "dec": pa.array(dec, pa.decimal128(10, 2)),
            "s": pa.array(s, pa.string()),
            "ns": pa.array(ns, pa.string()),
            "ds": pa.array(ds, pa.string()),
            "dt": pa.array(dates, pa.date32()),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "ntz": pa.array(ntz, pa.timestamp("us")),
            "bo": pa.array(bo, pa.bool_()),
            "bin": pa.array(binary, pa.binary()),
            "arr": pa.array(arr, pa.list_(pa.int32())),
            "m": pa.array([None if v is None else list(v.items()) for v in m], pa.map_(pa.string(), pa.int32())),
            "st": pa.array(st, pa.struct([("x", pa.int32()), ("y", pa.string())])),
        }
    )


SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "rid", "type": "integer", "nullable": True, "metadata": {}},
        *(
            {"name": n, "type": t, "nullable": True, "metadata": {}}
            for n, t in [
                ("i", "integer"),
                ("l", "long"),
                ("b", "byte"),
                ("sh", "short"),
                ("d", "double"),
                ("f", "float"),
                ("dec", "decimal(10,2)"),
                ("s", "string"),
                ("ns", "string"),
                ("ds", "string"),
                ("dt", "date"),
                ("ts", "timestamp"),
                ("ntz", "timestamp_ntz"),
                ("bo", "boolean"),
                ("bin", "binary"),
            ]
        ),
        {
            "name": "arr",
            "type": {"type": "array", "elementType": "integer", "containsNull": True},
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "m",
            "type": {"type": "map", "keyType": "string", "valueType": "integer", "valueContainsNull": True},
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "st",
            "type": {
                "type": "struct",
                "fields": [
                    {"name": "x", "type": "integer", "nullable": True, "metadata": {}},
                    {"name": "y", "type": "string", "nullable": True, "metadata": {}},
                ],
            },
            "nullable": True,
            "metadata": {},
        },
    ],
}

LITERALS = {
    "int": ["0", "1", "-1", "7", "2147483647", "-2147483648", "100L", "9223372036854775807L", "3Y", "-5S", "NULL"],
    "frac": ["1.5D", "-0.0D", "1e300D", "CAST('NaN' AS DOUBLE)", "CAST('-Infinity' AS DOUBLE)", "0.25F", "2.0D"],
    "dec": ["1.5", "-0.25", "123.456", "0.001", "99999999999999999999.5", "2BD"],
    "str": ["'a'", "''", "' x '", "'é'", "'日本'", "'ABC'", "'a%'", "'%b%'", "'_b%'", "'ß'", "NULL"],
    "numstr": ["'1'", "'-3'", "' 12 '", "'1.5'", "'x'", "'1e3'"],
    "datestr": ["'2024-02-29'", "'2021-02-30'", "'1970-01-01 00:00:00'", "'nope'", "'2024-03-10T02:30:00Z'"],
    "date": ["DATE '2024-02-29'", "DATE '1969-12-31'", "DATE '1900-01-01'", "DATE '2024-03-31'"],
    "ts": ["TIMESTAMP '2024-03-10 10:30:00'", "TIMESTAMP '1960-06-01 12:00:00'", "TIMESTAMP '2024-11-03 01:30:00'",
           "TIMESTAMP '2024-01-31 23:59:59.999999'"],
    "ntz": ["TIMESTAMP_NTZ '2024-03-10 02:30:00'", "TIMESTAMP_NTZ '1950-01-01 00:00:00'"],
    "bool": ["true", "false", "NULL"],
    "bin": ["X'00FF'", "X''", "X'616263'"],
}  # fmt: skip
FORMATS = ["'yyyy-MM-dd'", "'yyyy-MM'", "'yyyy'", "'dd/MM/yyyy HH:mm:ss'", "'MMM d, yyyy'", "'EEE'", "'EEEE MMMM'",
           "'yyyy-MM-dd HH:mm:ss.SSS'", "'hh:mm a'", "'D'", "'QQQ'", "'yyyyMMdd'", "'HH'", "'y'", "'yy'"]  # fmt: skip
UNITS = ["'YEAR'", "'MONTH'", "'QUARTER'", "'WEEK'", "'DAY'", "'HOUR'", "'MINUTE'", "'SECOND'", "'mm'", "'yy'", "'bad'"]


LIKE_ESCAPED = ["'a!%%'", "'%!_%'", "'!!%'"]
REGEXES = ["'^a'", "'[0-9]+'", "'b|c'", "'\\\\s'"]
TRIM_CHARS = ["'a'", "' x'"]
SUBSTRING_ARGS = ["", ", 2", ", 0", ", -1", ", b"]
SEPARATORS = ["'-'", "''", "s"]
SEARCHES = ["'a'", "''", "'l'"]
REPLACEMENTS = ["", ", 'ZZ'"]
PADS = ["", ", 'xy'", ", ''"]
SPLITS = ["','", "' '", "''"]
TO_DATE_FORMATS = ["", ", 'yyyy-MM-dd'", ", 'dd/MM/yyyy'"]
TO_TS_FORMATS = ["", ", 'yyyy-MM-dd HH:mm:ss'", ", 'yyyy-MM-dd'"]
UNIX_FORMATS = ["", ", 'yyyy-MM-dd'"]
FROM_UNIX_FORMATS = ["", ", 'yyyy-MM-dd HH:mm'"]
MAP_KEYS = ["'a'", "'zz'", "s"]
MAP_SUBSCRIPTS = ["'a'", "'x'"]

_BY_KIND: dict[str, list[str]] = {}
for _name, (_, _kind) in COLUMNS.items():
    _BY_KIND.setdefault(_kind, []).append(_name)


class Generator:
    """Random expressions of a kind (int, frac, dec, str, date, ts, ntz, bool, bin, ...), nested a little."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def pick(self, values: list[str]) -> str:
        return self.r.choice(values)

    def leaf(self, kind: str) -> str:
        columns = _BY_KIND.get(kind, [])
        literals = LITERALS.get(kind, [])
        if columns and (not literals or self.r.random() < 0.7):
            return self.pick(columns)
        return self.pick(literals)

    def num(self, depth: int = 1) -> str:
        return self.of(self.pick(["int", "int", "frac", "dec", "numstr"]), depth)

    def of(self, kind: str, depth: int = 1) -> str:
        if depth <= 0 or self.r.random() < 0.55:
            if kind == "numstr" and self.r.random() < 0.5:
                return self.pick(["ns", "s"])
            return self.leaf(kind)
        inner = {
            "int": lambda: self.pick([f"({self.of('int', depth - 1)} + {self.leaf('int')})", f"abs({self.leaf('int')})",
                                       f"length({self.leaf('str')})", f"year({self.leaf('date')})"]),
            "frac": lambda: self.pick([f"({self.leaf('frac')} * {self.leaf('int')})", f"({self.leaf('int')} / 3)"]),
            "dec": lambda: self.pick([f"({self.leaf('dec')} + {self.leaf('int')})", f"round({self.leaf('dec')}, 1)"]),
            "str": lambda: self.pick([f"upper({self.leaf('str')})", f"concat({self.leaf('str')}, '-')",
                                       f"CAST({self.leaf('int')} AS STRING)", f"substring({self.leaf('str')}, 2)"]),
            "date": lambda: self.pick([f"date_add({self.leaf('date')}, {self.leaf('int')})", f"CAST({self.leaf('ts')} AS DATE)"]),
            "ts": lambda: self.pick([f"({self.leaf('ts')} + INTERVAL 1 HOUR)", f"CAST({self.leaf('date')} AS TIMESTAMP)"]),
            "bool": lambda: self.pick([f"({self.leaf('int')} > {self.leaf('int')})", f"({self.leaf('str')} IS NULL)"]),
        }.get(kind)  # fmt: skip
        return inner() if inner is not None else self.leaf(kind)

    def templates(self) -> list[tuple[str, Callable[[], str]]]:
        o, n, p = self.of, self.num, self.pick
        cmp_kind = lambda: p(["int", "frac", "dec", "str", "date", "ts", "ntz", "bool", "bin", "numstr", "datestr"])  # noqa: E731

        def comparison(op: str) -> Callable[[], str]:
            def make() -> str:
                k = cmp_kind()
                other = p([k, k, k, "int", "str", "date"]) if k in ("numstr", "datestr", "str") else k
                return f"{o(k)} {op} {o(other)}"

            return make

        cast_types = ["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(5,2)", "DECIMAL(38,10)",
                      "STRING", "BOOLEAN", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "BINARY"]  # fmt: skip
        cast_from = ["int", "frac", "dec", "str", "numstr", "datestr", "date", "ts", "ntz", "bool", "bin"]
        out: list[tuple[str, Callable[[], str]]] = [
            *((op, comparison(op)) for op in ("=", "!=", "<", "<=", ">", ">=", "<=>")),
            *((op, lambda op=op: f"{n()} {op} {n()}") for op in ("+", "-", "*", "/", "%")),
            ("div", lambda: f"{o('int')} div {p([o('int'), o('dec')])}"),
            ("neg", lambda: f"-{n()}"),
            ("and", lambda: f"{o('bool', 2)} AND {o('bool', 2)}"),
            ("or", lambda: f"{o('bool', 2)} OR {o('bool', 2)}"),
            ("not", lambda: f"NOT {o('bool', 2)}"),
            ("is_null", lambda: f"{o(cmp_kind())} IS {p(['', 'NOT '])}NULL"),
            ("is_true", lambda: f"{o('bool', 2)} IS {p(['', 'NOT '])}{p(['TRUE', 'FALSE'])}"),
            ("in", lambda: (lambda k: f"{o(k)} {p(['', 'NOT '])}IN ({o(k)}, {o(k)}, {self.leaf(k)})")(p(["int", "str", "date", "dec", "frac"]))),
            ("between", lambda: (lambda k: f"{o(k)} {p(['', 'NOT '])}BETWEEN {o(k)} AND {o(k)}")(p(["int", "date", "str", "frac"]))),
            ("like", lambda: f"{o('str')} {p(['LIKE', 'NOT LIKE', 'ILIKE'])} {p([*LITERALS['str'][:-1], 's'])}"),
            ("like_escape", lambda: f"{o('str')} LIKE {p(LIKE_ESCAPED)} ESCAPE '!'"),
            ("rlike", lambda: f"{o('str')} RLIKE {p(REGEXES)}"),
            ("case", lambda: f"CASE WHEN {o('bool')} THEN {o('int')} WHEN {o('bool')} THEN {n()} ELSE {o('int')} END"),
            ("case_simple", lambda: f"CASE {o('str')} WHEN 'a' THEN 1 WHEN 'ABC' THEN 2 END"),
            ("if", lambda: f"IF({o('bool')}, {o(p(['str', 'int']))}, {o(p(['str', 'int']))})"),
            ("coalesce", lambda: (lambda k: f"coalesce({o(k)}, {o(k)}, {self.leaf(k)})")(p(["int", "str", "date", "frac"]))),
            ("nvl", lambda: (lambda k: f"nvl({o(k)}, {o(k)})")(p(["int", "str", "ts"]))),
            ("nullif", lambda: (lambda k: f"nullif({o(k)}, {o(k)})")(p(["int", "str", "date"]))),
            ("cast", lambda: f"CAST({o(p(cast_from))} AS {p(cast_types)})"),
            ("try_cast", lambda: f"TRY_CAST({o(p(cast_from))} AS {p(cast_types)})"),
            ("guarded_divide", lambda: f"CASE WHEN {o('int')} = 0 THEN NULL ELSE {o('int')} / i END"),
            ("short_circuit", lambda: "i IS NULL OR i = 0 OR 100 div i > 1"),
            ("upper", lambda: f"upper({o('str')})"),
            ("lower", lambda: f"lower({o('str')})"),
            ("trim", lambda: f"{p(['trim', 'ltrim', 'rtrim'])}({o('str')})"),
            ("trim_from", lambda: f"trim({p(['BOTH', 'LEADING', 'TRAILING'])} {p(TRIM_CHARS)} FROM {o('str')})"),
            ("substring", lambda: f"{p(['substring', 'substr'])}({o('str')}, {p(['1', '2', '0', '-2', '-10', 'i'])}{p(SUBSTRING_ARGS)})"),
            ("concat", lambda: f"concat({o(p(['str', 'int', 'date']))}, {o('str')}, {o(p(['str', 'frac']))})"),
            ("concat_pipe", lambda: f"{o('str')} || {o(p(['str', 'int']))}"),
            ("concat_ws", lambda: f"concat_ws({p(SEPARATORS)}, {o('str')}, {o('str')})"),
            ("length", lambda: f"{p(['length', 'char_length'])}({o(p(['str', 'bin', 'int']))})"),
            ("replace", lambda: f"replace({o('str')}, {p(SEARCHES)}{p(REPLACEMENTS)})"),
            ("pad", lambda: f"{p(['lpad', 'rpad'])}({o('str')}, {p(['5', '0', '-1', '2', 'b'])}{p(PADS)})"),
            ("split_part", lambda: f"split_part({o('str')}, {p(SPLITS)}, {p(['1', '2', '-1', '5', '0'])})"),
            ("left", lambda: f"{p(['left', 'right'])}({o('str')}, {p(['2', '0', '-1', '10', 'b'])})"),
            ("startswith", lambda: f"{p(['startswith', 'endswith', 'contains'])}({o('str')}, {o('str')})"),
            ("abs", lambda: f"abs({n()})"),
            ("round", lambda: f"{p(['round', 'bround'])}({n()}{p(['', ', 1', ', -1', ', 2'])})"),
            ("floor", lambda: f"{p(['floor', 'ceil', 'ceiling'])}({n()})"),
            ("greatest", lambda: (lambda k: f"{p(['greatest', 'least'])}({o(k)}, {o(k)}, {self.leaf(k)})")(p(["int", "frac", "str", "date"]))),
            ("pmod", lambda: f"pmod({o(p(['int', 'frac', 'dec']))}, {o(p(['int', 'frac', 'dec']))})"),
            ("sign", lambda: f"{p(['sign', 'signum'])}({n()})"),
            *((fn, lambda fn=fn: f"{fn}({o(p(['date', 'ts', 'ntz', 'datestr']))})")
              for fn in ("year", "month", "day", "dayofmonth", "dayofweek", "dayofyear", "quarter", "weekofyear")),
            *((fn, lambda fn=fn: f"{fn}({o(p(['ts', 'ntz', 'date']))})") for fn in ("hour", "minute", "second")),
            ("date_trunc", lambda: f"date_trunc({p(UNITS)}, {o(p(['ts', 'date']))})"),
            ("trunc", lambda: f"trunc({o(p(['date', 'ts']))}, {p(UNITS)})"),
            ("date_format", lambda: f"date_format({o(p(['ts', 'date', 'ntz']))}, {p(FORMATS)})"),
            ("to_date", lambda: f"to_date({o(p(['datestr', 'ts', 'str']))}{p(TO_DATE_FORMATS)})"),
            ("to_timestamp", lambda: f"to_timestamp({o(p(['datestr', 'date']))}{p(TO_TS_FORMATS)})"),
            ("date_add", lambda: f"{p(['date_add', 'date_sub'])}({o(p(['date', 'ts']))}, {o(p(['int']))})"),
            ("date_plus", lambda: f"{o('date')} {p(['+', '-'])} {p(['1', 'b', 'sh', 'INTERVAL 2 DAY', 'INTERVAL 1 MONTH', 'INTERVAL 3 HOUR'])}"),
            ("ts_plus", lambda: f"{o(p(['ts', 'ntz']))} {p(['+', '-'])} {p(['INTERVAL 1 DAY', 'INTERVAL 90 MINUTE', 'INTERVAL 1 MONTH', 'INTERVAL 2 YEAR'])}"),
            ("add_months", lambda: f"add_months({o('date')}, {p(['1', '-1', '13', 'b'])})"),
            ("datediff", lambda: f"datediff({o('date')}, {o(p(['date', 'ts']))})"),
            ("months_between", lambda: f"months_between({o(p(['ts', 'date']))}, {o(p(['ts', 'date']))}{p(['', ', false'])})"),
            ("current", lambda: p(["current_date() IS NOT NULL", "current_timestamp() > TIMESTAMP '2020-01-01 00:00:00'", "now() IS NOT NULL"])),
            ("make_date", lambda: f"make_date({p(['2024', 'i', '1969'])}, {p(['2', '13', '1', 'b'])}, {p(['29', '30', '1', 'sh'])})"),
            ("unix_timestamp", lambda: f"unix_timestamp({o(p(['ts', 'date', 'datestr']))}{p(UNIX_FORMATS)})"),
            ("from_unixtime", lambda: f"from_unixtime({p(['l', '0', '-86401', '1700000000'])}{p(FROM_UNIX_FORMATS)})"),
            ("hash", lambda: f"hash({o(p(list(LITERALS)))}{p(['', ', ' + o(p(list(LITERALS)))])})"),
            ("xxhash64", lambda: f"xxhash64({o(p(list(LITERALS)))}{p(['', ', ' + o(p(list(LITERALS)))])})"),
            ("md5", lambda: f"md5({o(p(['str', 'bin']))})"),
            ("sha2", lambda: f"sha2({o(p(['str', 'bin']))}, {p(['0', '224', '256', '384', '512', '100'])})"),
            ("element_at", lambda: p([f"element_at(arr, {p(['1', '-1', '3', '4', '0', 'b'])})", f"element_at(m, {p(MAP_KEYS)})"])),
            ("subscript", lambda: p([f"arr[{p(['0', '2', '5', '-1'])}]", f"m[{p(MAP_SUBSCRIPTS)}]"])),
            ("size", lambda: f"{p(['size', 'cardinality'])}({p(['arr', 'm'])})"),
            ("struct_field", lambda: f"st.{p(['x', 'y', 'X'])}"),
            ("typed_literals", lambda: p(LITERALS["bin"] + LITERALS["date"] + LITERALS["ts"] + LITERALS["ntz"] + LITERALS["dec"] + ["INTERVAL 1 DAY IS NOT NULL"])),
        ]  # fmt: skip
        return out

    def expressions(self, count: int) -> list[str]:
        """``count`` expressions, cycling through every template so each function appears evenly."""
        templates = self.templates()
        out = []
        k = 0
        while len(out) < count:
            _, make = templates[k % len(templates)]
            out.append(make())
            k += 1
        return out


def template_names() -> list[str]:
    return [name for name, _ in Generator(0).templates()]


__all__ = ["COLUMNS", "FORMATS", "SCHEMA", "Generator", "rows", "template_names"]
