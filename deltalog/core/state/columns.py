"""Arrow layouts for file actions, builders from parsed JSON, and every Arrow workaround replay relies on.

Live files are held as one Arrow table, never as one Python object per file, because replay speed on
large tables is the product. Column names follow the checkpoint's ``add``/``remove`` struct fields so
that checkpoints can be written from this state without renaming.

This module is the one home of the workarounds around pyarrow: ``pa.array``, ``pa.scalar``,
``Schema.empty_table`` and ``to_numpy`` first ask whether their input is a pandas object, which imports
pandas (half a second in a cold process), so arrays are built here from Arrow builders and numpy buffers
wrapped zero-copy; and rows are dropped by slicing where few are, so the stats strings are never copied.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

STRING_MAP = pa.map_(pa.string(), pa.string())
DV_TYPE = pa.struct(
    [
        pa.field("storageType", pa.string()),
        pa.field("pathOrInlineDv", pa.string()),
        pa.field("offset", pa.int32()),
        pa.field("sizeInBytes", pa.int32()),
        pa.field("cardinality", pa.int64()),
    ]
)

ADD_FIELDS: list[pa.Field] = [
    pa.field("path", pa.string()),
    pa.field("partitionValues", STRING_MAP),
    pa.field("size", pa.int64()),
    pa.field("modificationTime", pa.int64()),
    pa.field("dataChange", pa.bool_()),
    pa.field("stats", pa.string()),
    pa.field("tags", STRING_MAP),
    pa.field("deletionVector", DV_TYPE),
    pa.field("baseRowId", pa.int64()),
    pa.field("defaultRowCommitVersion", pa.int64()),
    pa.field("clusteringProvider", pa.string()),
]
ADD_SCHEMA = pa.schema(ADD_FIELDS)

REMOVE_FIELDS: list[pa.Field] = [
    pa.field("path", pa.string()),
    pa.field("deletionTimestamp", pa.int64()),
    pa.field("dataChange", pa.bool_()),
    pa.field("extendedFileMetadata", pa.bool_()),
    pa.field("partitionValues", STRING_MAP),
    pa.field("size", pa.int64()),
    pa.field("stats", pa.string()),
    pa.field("tags", STRING_MAP),
    pa.field("deletionVector", DV_TYPE),
    pa.field("baseRowId", pa.int64()),
    pa.field("defaultRowCommitVersion", pa.int64()),
]
REMOVE_SCHEMA = pa.schema(REMOVE_FIELDS)

#: add columns read from checkpoints by default; ``stats`` is read only when asked for
ADD_COLUMNS_NO_STATS = [f.name for f in ADD_FIELDS if f.name != "stats"]


_NUMPY_TYPES: dict[pa.DataType, Any] = {pa.int64(): np.int64, pa.int32(): np.int32, pa.bool_(): np.bool_}
_PYTHON_TYPES: dict[pa.DataType, type] = {pa.int64(): int, pa.int32(): int, pa.bool_(): bool}


def array_of(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array:
    """``pa.array`` of a Python sequence, for strings, integers and booleans, without pyarrow's pandas probe.

    ``pa.array`` (of a list or of a numpy array alike) first asks whether its input is a pandas object,
    which imports pandas when it is installed: half a second in a cold process, and pyspark users always
    have it. Strings go through Arrow's own builder, numbers through numpy buffers; neither asks. Values
    of the wrong Python type are an ``ArrowTypeError``, as ``pa.array`` would raise (no silent casts).
    """
    if arrow_type == pa.string():
        builder = pa.lib.StringBuilder()
        try:
            builder.append_values(values)
        except TypeError as exc:
            raise pa.ArrowTypeError(f"expected strings: {exc}") from None
        return builder.finish()
    dtype = _NUMPY_TYPES.get(arrow_type)
    if dtype is None:
        return pa.array(values, arrow_type)
    want = _PYTHON_TYPES[arrow_type]
    bad = next((v for v in values if v is not None and type(v) is not want), None)
    if bad is not None:
        raise pa.ArrowTypeError(f"expected {want.__name__}, got {type(bad).__name__}: {bad!r}")
    n = len(values)
    present = [v is not None for v in values]
    complete = all(present)
    try:
        data = np.fromiter(values if complete else (0 if v is None else v for v in values), dtype=dtype, count=n)
    except OverflowError as exc:
        raise pa.ArrowInvalid(f"integer out of range for {arrow_type}: {exc}") from None
    if arrow_type == pa.bool_():
        data = np.packbits(data, bitorder="little")
    validity = None
    if not complete:
        validity = pa.py_buffer(np.packbits(np.fromiter(present, dtype=np.bool_, count=n), bitorder="little"))
    return pa.Array.from_buffers(arrow_type, n, [validity, pa.py_buffer(data)])


def scalar_of(value: Any, arrow_type: pa.DataType) -> pa.Scalar:
    """``pa.scalar`` without the pandas probe (see :func:`array_of`); compute kernels given a bare Python
    value make the same call, so hot paths pass scalars built here."""
    return pa.nulls(1, arrow_type)[0] if value is None else array_of([value], arrow_type)[0]


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of no rows; ``Schema.empty_table`` would import pandas (see :func:`array_of`)."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


def empty_adds() -> pa.Table:
    return empty_table(ADD_SCHEMA)


def empty_removes() -> pa.Table:
    return empty_table(REMOVE_SCHEMA)


def as_text(v: Any) -> str | None:
    """A JSON value as the string column holds it: strings as they are, anything else as its JSON text."""
    if v is None or isinstance(v, str):
        return v
    return orjson.dumps(v).decode()  # some writers put a number or an object where a JSON string belongs


def _as_map_item(v: Any) -> str | None:
    """A partition value or tag as text: a number or a boolean is spelled as JSON does (Delta Spark's
    reader coerces those too); a list or an object is no value at all, and is refused rather than guessed."""
    if isinstance(v, (list, dict)):
        raise pa.ArrowTypeError(f"expected a string, got a JSON {'array' if isinstance(v, list) else 'object'}")
    return as_text(v)


def map_column(values: Sequence[Any]) -> pa.Array:
    """map<string,string> from JSON objects (or None), built flat: no per-row Python containers."""
    if all(v is None for v in values):
        return pa.nulls(len(values), STRING_MAP)
    objs = [v or {} for v in values]
    offsets = [0]
    total = 0
    for o in objs:
        total += len(o)
        offsets.append(total)
    keys = [k for o in objs for k in o]
    items = [x for o in objs for x in o.values()]
    try:
        item_array = array_of(items, pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        item_array = array_of([_as_map_item(x) for x in items], pa.string())
    mask = array_of([v is None for v in values], pa.bool_()) if any(v is None for v in values) else None
    return pa.MapArray.from_arrays(
        array_of(offsets, pa.int32()), array_of(keys, pa.string()), item_array, type=STRING_MAP, mask=mask
    )


def _text_column(values: list[Any]) -> pa.Array:
    try:
        return array_of(values, pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return array_of([as_text(v) for v in values], pa.string())


_COMMON = ("path", "partitionValues", "size", "modificationTime", "dataChange")


def _columns(rows: Sequence[dict[str, Any]], names: list[str]) -> dict[str, list[Any]]:
    """Field values column by column, taking the fast C-level path when every row has the common fields.

    Writers put the same five fields in every add and usually ``stats`` too; optional fields are mostly
    absent, which a length check per row reveals without looking them up.
    """
    out: dict[str, list[Any]] = {}
    common = [n for n in _COMMON if n in names]
    n_common = len(common)
    try:
        columns = list(zip(*map(itemgetter(*common), rows), strict=True)) if rows else [() for _ in common]
        for n, col in zip(common, columns, strict=True):
            out[n] = list(col)
        # Every row holds the common fields, so a longer row holds an optional one.
        has_more = any(len(r) > n_common + ("stats" in r) for r in rows)
    except KeyError:
        for n in common:
            out[n] = [r.get(n) for r in rows]
        has_more = True
    rest = [n for n in names if n not in out]
    for n in rest:
        if n == "stats" or has_more:
            out[n] = [r.get(n) for r in rows]
        else:
            out[n] = [None] * len(rows)
    return out


def table_from_dicts(rows: Sequence[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Build a file-action table from the parsed JSON bodies of ``add`` or ``remove`` actions."""
    columns = _columns(rows, schema.names)
    arrays = []
    for f in schema:
        values = columns[f.name]
        if f.type == STRING_MAP:
            try:
                arrays.append(map_column(values))
            except pa.ArrowTypeError as exc:  # an entry that is no string
                raise pa.ArrowTypeError(f"{f.name}: {exc}") from None
            except (AttributeError, TypeError) as exc:  # a list or a scalar where an object belongs
                raise pa.ArrowTypeError(f"{f.name} must be a JSON object: {exc}") from None
        elif f.name == "stats":
            arrays.append(_text_column(values))
        elif all(v is None for v in values):
            arrays.append(pa.nulls(len(values), f.type))
        else:
            arrays.append(array_of(values, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Reshape a table read from a checkpoint to ``schema``: missing columns become nulls, types are cast.

    Other writers differ in small ways (int64 DV offsets, extra ``maxRowIndex``, no ``tags``), and the
    replay must not care.
    """
    n = table.num_rows
    arrays = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name)
            if col.type != f.type:
                col = _cast(col, f.type)
            arrays.append(col)
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _cast(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if pa.types.is_struct(target) and pa.types.is_struct(col.type):
        chunks = []
        for chunk in col.chunks:
            children = []
            for field in target:
                idx = chunk.type.get_field_index(field.name)
                if idx < 0:
                    children.append(pa.nulls(len(chunk), field.type))
                else:
                    child = chunk.field(idx)
                    children.append(child if child.type == field.type else child.cast(field.type))
            chunks.append(pa.StructArray.from_arrays(children, fields=list(target), mask=pc.is_null(chunk)))
        return pa.chunked_array(chunks, type=target)
    return col.cast(target)


# ------------------------------------------------------------------ columns the JSON reader parsed
def as_numpy(arr: pa.Array) -> Any:
    """A null-free fixed-width Arrow array as numpy, zero-copy (``to_numpy`` would import pandas)."""
    width = arr.type.bit_width // 8
    return np.frombuffer(
        arr.buffers()[1], dtype=f"<i{width}" if pa.types.is_signed_integer(arr.type) else f"<u{width}"
    )[arr.offset : arr.offset + len(arr)]


def int_array(values: Any, type: pa.DataType | None = None) -> pa.Array:
    """A numpy integer vector as Arrow, zero-copy (``pa.array`` would import pandas: see :func:`array_of`)."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(type or pa.int64(), len(values), [None, pa.py_buffer(values)])


def bool_array(values: Any) -> pa.Array:
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(np.packbits(values, bitorder="little"))])


def repeats(strings: pa.Array, pattern: Sequence[str]) -> bool:
    """Whether ``strings`` (no nulls) is ``pattern`` repeated, found on its buffers: the lengths repeat one
    pattern and the bytes equal the pattern's, without a Python string per row."""
    spelled = [s.encode() for s in pattern]
    if not spelled or len(strings) % len(spelled):
        return len(strings) == 0
    ends = np.frombuffer(strings.buffers()[1], dtype=np.int32)[strings.offset : strings.offset + len(strings) + 1]
    if not (np.diff(ends).reshape(-1, len(spelled)) == np.array([len(b) for b in spelled])).all():
        return False
    raw = strings.buffers()[2]
    data = raw.slice(int(ends[0]), int(ends[-1] - ends[0])) if raw is not None else pa.py_buffer(b"")
    return bool(data.equals(pa.py_buffer(b"".join(spelled) * (len(strings) // len(spelled)))))


def struct_to_map(col: pa.Array) -> pa.Array:
    """A parsed ``partitionValues`` struct back to the map the rest of deltalog holds."""
    n = len(col)
    names = [f.name for f in col.type]
    k = len(names)
    mask = col.is_null() if col.null_count else None
    offsets = int_array(np.arange(n + 1, dtype="int32") * k, pa.int32())
    if k == 0:
        empty = pa.nulls(0, pa.string())
        return pa.MapArray.from_arrays(offsets, empty, empty, type=STRING_MAP, mask=mask)
    fields = [col.field(i) for i in range(k)]
    if k == 1:
        items = fields[0]
    else:
        order = (np.arange(k, dtype="int64")[None, :] * n + np.arange(n, dtype="int64")[:, None]).ravel()
        items = pa.concat_arrays(fields).take(int_array(order))
    keys = pc.take(array_of(names, pa.string()), int_array(np.tile(np.arange(k, dtype="int64"), n)))
    return pa.MapArray.from_arrays(offsets, keys, items, type=STRING_MAP, mask=mask)


def to_table(chunks: list[pa.StructArray], fields: list[pa.Field]) -> pa.Table:
    schema = pa.schema(fields)
    batches = []
    for col in chunks:
        arrays = []
        for f in fields:
            if f.name == "tags":
                arrays.append(pa.nulls(len(col), STRING_MAP))
            elif col.type.get_field_index(f.name) < 0:  # stats, when the parse skipped them
                arrays.append(pa.nulls(len(col), f.type))
            elif f.name == "partitionValues":
                arrays.append(struct_to_map(col.field(f.name)))
            else:
                arrays.append(col.field(f.name))
        batches.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
    return pa.Table.from_batches(batches, schema=schema)


def runs(col: pa.StructArray, gaps: Any) -> list[pa.StructArray]:
    """``col`` without the rows at ``gaps`` (sorted), as zero-copy slices: no copy of the stats strings."""
    out = []
    start = 0
    for g in gaps.tolist():
        if g > start:
            out.append(col.slice(start, g - start))
        start = g + 1
    if start < len(col):
        out.append(col.slice(start))
    return out


def valid_rows(col: pa.StructArray, offset: int) -> tuple[list[pa.StructArray], Any]:
    """The non-null rows of ``col`` and their positions in the whole run (slices when few rows are null)."""
    n = len(col)
    if not col.null_count:
        return [col], np.arange(offset, offset + n, dtype="int64")
    valid = col.is_valid()
    positions = as_numpy(pc.indices_nonzero(valid)).astype("int64") + offset
    if col.null_count == n:
        return [], positions
    if col.null_count <= 64:
        return runs(col, as_numpy(pc.indices_nonzero(pc.invert(valid)))), positions
    return [col.filter(valid)], positions


__all__ = [
    "ADD_COLUMNS_NO_STATS",
    "ADD_FIELDS",
    "ADD_SCHEMA",
    "DV_TYPE",
    "REMOVE_FIELDS",
    "REMOVE_SCHEMA",
    "STRING_MAP",
    "array_of",
    "as_numpy",
    "as_text",
    "bool_array",
    "empty_adds",
    "empty_removes",
    "empty_table",
    "int_array",
    "map_column",
    "repeats",
    "scalar_of",
    "conform",
    "runs",
    "struct_to_map",
    "table_from_dicts",
    "to_table",
    "valid_rows",
]
