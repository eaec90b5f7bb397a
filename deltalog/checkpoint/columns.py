"""What a checkpoint's action columns must look like before any row of them is believed.

Readers cast what they read to the replay's layout, and a cast is happy to turn a column of the wrong
type into *other* values: a ``size`` of strings, an ``add`` that is not a struct, a path that is a number.
Read that way, a damaged checkpoint describes a different set of live files, and ``vacuum`` would delete
the difference. So every action column a reader touches is checked against the protocol's type first,
loosely where writers legitimately differ (any integer width, large or dictionary-encoded strings, list
and map spellings, extra fields, a missing optional field) and strictly everywhere else; a mismatch is a
:class:`~deltalog.errors.CorruptLogError` naming the file and the column, which the loader treats like
any unreadable checkpoint (it falls back to older state, or reports the file).
"""

from __future__ import annotations

import pyarrow as pa

from deltalog.checkpoint import schema as S
from deltalog.core.state.columns import ADD_SCHEMA, REMOVE_SCHEMA
from deltalog.errors import CorruptLogError

#: the type each action column must fit; ``stats_parsed``/``partitionValues_parsed`` are table-typed, not here
EXPECTED: dict[str, pa.StructType] = {
    "add": pa.struct(list(ADD_SCHEMA)),
    "remove": pa.struct(list(REMOVE_SCHEMA)),
    "metaData": S.METADATA,
    "protocol": S.PROTOCOL,
    "txn": S.TXN,
    "domainMetadata": S.DOMAIN,
    "checkpointMetadata": S.CHECKPOINT_METADATA,
    "sidecar": S.SIDECAR,
}

#: fields an ``add`` row cannot do without: without them it names no file, or a file of unknown size or age
ADD_REQUIRED = ("path", "partitionValues", "size", "modificationTime", "dataChange")
#: a ``remove`` row only needs its path to mean something (old writers leave the rest out)
REMOVE_REQUIRED = ("path",)
#: fields every writer puts in each action struct of a checkpoint; a struct without one of them cannot be the
#: action it claims (a metaData without partitionColumns would read as an unpartitioned table, say)
STRUCT_FIELDS: dict[str, tuple[str, ...]] = {
    "add": ADD_REQUIRED,
    "remove": REMOVE_REQUIRED,
    "metaData": ("id", "format", "schemaString", "partitionColumns", "configuration"),
    "protocol": ("minReaderVersion", "minWriterVersion"),
    "txn": ("appId", "version"),
    "domainMetadata": ("domain", "configuration", "removed"),
    "sidecar": ("path", "sizeInBytes"),
}


def _stringish(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return _stringish(t.value_type)
    return bool(
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def mismatch(actual: pa.DataType, expected: pa.DataType, name: str) -> str | None:
    """Why a column of type ``actual`` cannot hold values of ``expected`` (``name`` is its dotted path), or None.

    Every value of a fitting type converts to the same value in the expected type (or the conversion fails
    loudly, like an integer out of range); an all-null column (``null`` type) fits anything.
    """
    if pa.types.is_null(actual):
        return None
    if pa.types.is_dictionary(actual) and not pa.types.is_dictionary(expected):
        actual = actual.value_type
    if pa.types.is_integer(expected):
        ok = pa.types.is_integer(actual)
    elif pa.types.is_string(expected):
        ok = _stringish(actual)
    elif pa.types.is_boolean(expected):
        ok = pa.types.is_boolean(actual)
    elif pa.types.is_map(expected):
        ok = pa.types.is_map(actual) and _stringish(actual.key_type) and _fits_item(actual.item_type)
    elif pa.types.is_list(expected):
        ok = (pa.types.is_list(actual) or pa.types.is_large_list(actual)) and _stringish(actual.value_type)
    elif pa.types.is_struct(expected):
        if not pa.types.is_struct(actual):
            return f"{name} is {actual}, not a struct"
        for field in expected:
            idx = actual.get_field_index(field.name)
            if idx >= 0:
                problem = mismatch(actual.field(idx).type, field.type, f"{name}.{field.name}")
                if problem:
                    return problem
        return None
    else:  # pragma: no cover - every expected type above is one of these kinds
        ok = actual == expected
    return None if ok else f"{name} is {actual}, not {expected}"


def _fits_item(t: pa.DataType) -> bool:
    return pa.types.is_null(t) or _stringish(t)


def _required_fields(kind: str) -> tuple[str, ...]:
    return ADD_REQUIRED if kind == "add" else REMOVE_REQUIRED


def _unusable(path: str, why: str) -> CorruptLogError:
    return CorruptLogError(f"{path} is not a usable checkpoint: {why}", path=path)


def check_columns(schema: pa.Schema, path: str) -> None:
    """Refuse a checkpoint file whose action columns have the wrong types.

    Columns and fields this engine does not know are ignored, as the protocol asks of readers, and so is a
    missing action column ("Any missing column should be treated as null", PROTOCOL.md "Checkpoints"): a
    part written with only the actions it holds is whole. An action struct without a field every such
    action must carry is refused even before any row is read.
    """
    for name, expected in EXPECTED.items():
        idx = schema.get_field_index(name)
        if idx < 0:
            continue
        actual = schema.field(idx).type
        problem = mismatch(actual, expected, name)
        if problem:
            raise _unusable(path, f"column {problem}")
        for field in STRUCT_FIELDS.get(name, ()):
            if actual.get_field_index(field) < 0:
                raise _unusable(path, f"column {name} has no field {field!r}, which every {name} action needs")


def missing_required(table: pa.Table, kind: str) -> str | None:
    """The first field the protocol requires of every ``kind`` (``add``/``remove``) row that some row lacks."""
    for name in _required_fields(kind):
        if name not in table.column_names or table.column(name).null_count:
            return name
    return None


def check_required(table: pa.Table, kind: str, path: str) -> None:
    """Refuse file-action rows (``kind`` ``add`` or ``remove``) that lack a field the protocol requires."""
    name = missing_required(table, kind)
    if name is not None:
        raise _unusable(path, f"a {kind} action has no {kind}.{name}, which is required")


__all__ = [
    "ADD_REQUIRED",
    "EXPECTED",
    "REMOVE_REQUIRED",
    "STRUCT_FIELDS",
    "check_columns",
    "check_required",
    "mismatch",
    "missing_required",
]
