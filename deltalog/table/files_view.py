"""The live files as users see them: pruned by partition values, keyed by logical names, as actions.

The file state keeps the log's own shape (physical partition keys, ``""`` for null, the log's field
names) because that is what checkpoints and conflict checks need; everything that shows files to a user
goes through here, so the two shapes never mix.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core import actions as A
from deltalog.core.files.partitions import PartitionValueError, conditions_from_where, parse_value
from deltalog.core.log.codec import decode_dv
from deltalog.core.schema import top_level_fields
from deltalog.core.state.columns import array_of, scalar_of
from deltalog.errors import InvalidArgumentError

_DV_RENAMES = ["storage_type", "path_or_inline_dv", "offset", "size_in_bytes", "cardinality"]
_OUTPUT = [
    ("path", "path"),
    ("partitionValues", "partition_values"),
    ("size", "size"),
    ("modificationTime", "modification_time"),
    ("dataChange", "data_change"),
    ("deletionVector", "deletion_vector"),
    ("tags", "tags"),
    ("baseRowId", "base_row_id"),
    ("defaultRowCommitVersion", "default_row_commit_version"),
    ("clusteringProvider", "clustering_provider"),
]


def partition_mask(
    table: pa.Table,
    where: Mapping[str, Any],
    schema_json: Mapping[str, Any],
    partition_columns: Sequence[str],
    physical: Mapping[str, str],
) -> pa.Array:
    """A boolean mask over ``table`` (adds in the log's field names) for the partition filter ``where``.

    An unknown column or a value of the wrong type is an :class:`InvalidArgumentError`; a condition on a
    data column keeps every file (the log cannot judge rows); a partition value that does not parse is
    kept (never prune what cannot be judged).
    """
    try:
        conds = conditions_from_where(where)
    except PartitionValueError as exc:
        raise InvalidArgumentError(str(exc)) from None
    columns = {f["name"]: f for f in top_level_fields(dict(schema_json))}
    mask = pa.repeat(scalar_of(True, pa.bool_()), table.num_rows)
    partition = set(partition_columns)
    for column in {c.column for c in conds}:
        if column not in columns:
            raise InvalidArgumentError(f"unknown column {column!r}; the table has {sorted(columns) or 'no columns'}")
        if column not in partition or table.num_rows == 0:
            continue  # data columns cannot prune by partition values
        col_conds = [c for c in conds if c.column == column]
        ctype = columns[column]["type"]
        try:
            typed = [type(c)(c.column, c.op, tuple(parse_value(ctype, v) for v in c.values)) for c in col_conds]
        except PartitionValueError as exc:
            raise InvalidArgumentError(f"column {column!r}: {exc}") from None
        key = scalar_of(physical.get(column, column), pa.string())
        raw = pc.map_lookup(table.column("partitionValues"), key, "first")
        encoded = (
            raw.combine_chunks().dictionary_encode() if isinstance(raw, pa.ChunkedArray) else raw.dictionary_encode()
        )
        uniques = encoded.dictionary.to_pylist()
        keep_unique = []
        for u in uniques:
            try:
                value = parse_value(ctype, u)
            except PartitionValueError:
                keep_unique.append(True)  # unparsable value: never prune what we cannot judge
                continue
            keep_unique.append(all(c.matches(value) for c in typed))
        null_keep = all(c.matches(None) for c in typed)
        indices = encoded.indices
        col_mask = (
            pc.take(array_of(keep_unique, pa.bool_()), indices) if uniques else pa.nulls(len(indices), pa.bool_())
        )
        col_mask = pc.fill_null(col_mask, scalar_of(null_keep, pa.bool_()))
        mask = pc.and_(mask, col_mask)
    return mask


def present(table: pa.Table, stats: bool, physical: Mapping[str, str]) -> pa.Table:
    """Adds in the log's shape as :meth:`~deltalog.table.snapshot.Snapshot.files` shows them."""
    arrays = []
    names = []
    for src, dst in _OUTPUT:
        col = table.column(src)
        if src == "partitionValues":
            col = _logical_partition_keys(col, physical)
        elif src == "deletionVector":
            col = _rename_struct(col, _DV_RENAMES)
        arrays.append(col)
        names.append(dst)
    if stats:
        arrays.append(table.column("stats"))
        names.append("stats")
    return pa.Table.from_arrays(arrays, names=names)


def add_actions(table: pa.Table) -> Iterator[A.Add]:
    """Rows of adds (the log's field names, stats included) as :class:`~deltalog.actions.Add` values."""
    for row in table.to_pylist():
        yield A.Add(
            path=row["path"],
            partition_values=dict(row["partitionValues"] or []),
            size=row["size"],
            modification_time=row["modificationTime"],
            data_change=bool(row["dataChange"]),
            stats=row["stats"],
            tags=dict(row["tags"]) if row["tags"] is not None else None,
            deletion_vector=decode_dv(row["deletionVector"]),
            base_row_id=row["baseRowId"],
            default_row_commit_version=row["defaultRowCommitVersion"],
            clustering_provider=row["clusteringProvider"],
        )


def _logical_partition_keys(col: pa.ChunkedArray, physical: Mapping[str, str]) -> pa.ChunkedArray:
    """Partition values keyed by logical names, with the protocol's nulls made plain.

    The log may spell null as an empty string; a user must not see ``""`` and ``None`` as two values.
    """
    renames = {p: logical for logical, p in physical.items() if p != logical}
    chunks = []
    for chunk in col.chunks:
        items = chunk.items
        empty = pc.equal(items, scalar_of("", pa.string()))
        has_empty = bool(pc.any(empty).as_py())
        if not renames and not has_empty:
            chunks.append(chunk)
            continue
        keys = chunk.keys
        if renames:
            keys = array_of([renames.get(k, k) for k in keys.to_pylist()], pa.string())
        if has_empty:
            items = pc.if_else(empty, scalar_of(None, pa.string()), items)
        chunks.append(pa.MapArray.from_arrays(chunk.offsets, keys, items, type=chunk.type, mask=chunk.is_null()))
    return pa.chunked_array(chunks, type=col.type)


def _rename_struct(col: pa.ChunkedArray, names: list[str]) -> pa.ChunkedArray:
    chunks = []
    for chunk in col.chunks:
        fields = [pa.field(n, chunk.type.field(i).type) for i, n in enumerate(names)]
        chunks.append(
            pa.StructArray.from_arrays([chunk.field(i) for i in range(len(names))], fields=fields, mask=chunk.is_null())
        )
    target = pa.struct([pa.field(n, col.type.field(i).type) for i, n in enumerate(names)])
    return pa.chunked_array(chunks, type=target)


__all__ = ["add_actions", "partition_mask", "present"]
