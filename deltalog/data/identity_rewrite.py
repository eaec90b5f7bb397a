"""Data files rewritten with their identity values moved: how a write whose ids another writer's commit took
first gets ids of its own without failing (:mod:`deltalog.table.identity_rebase` decides when and by how much).

A file's generated values are a run ``first, first + step, ...`` a writer took above the mark it read; another
writer that committed first took the same run. Adding one offset to the column makes the run start beyond that
writer's mark, and everything else of the file stays as it was: rows, order, other columns, partition values.
The file is written anew under a new name (data files are never overwritten: PROTOCOL.md "Data Files") in the
same directory, its statistics moved by the same offset; the old file, which no commit references, is deleted
by the caller once the new one stands in for it.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Mapping
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.core import actions as A
from deltalog.data.locate import resolve
from deltalog.data.output import Output
from deltalog.data.paths import data_file_name
from deltalog.storage.base import LogStore


def _moved_stats(stats: str | None, shifts: Mapping[str, int]) -> str | None:
    if not stats:
        return stats
    doc = orjson.loads(stats)
    for bound in ("minValues", "maxValues"):
        values = doc.get(bound)
        if not isinstance(values, dict):
            continue
        for column, offset in shifts.items():
            if isinstance(values.get(column), int):
                values[column] += offset
    return orjson.dumps(doc).decode()


def shifted_file(store: LogStore, add: A.Add, shifts: Mapping[str, int], parquet_options: Mapping[str, Any]) -> A.Add:
    """``add``'s file written again with ``offset`` added to each identity column (physical name) of
    ``shifts``; the add of the new file (the old one is left for the caller to delete)."""
    key = resolve(store, add.path)
    table = pq.read_table(pa.BufferReader(store.read(key)))
    for column, offset in shifts.items():
        index = table.schema.get_field_index(column)
        if index < 0 or offset == 0:
            continue
        moved = pc.add_checked(table.column(index), pa.scalar(offset, pa.int64()))
        table = table.set_column(index, table.schema.field(index), moved)
    name = data_file_name(str(parquet_options.get("compression", "snappy")))
    directory = posixpath.dirname(add.path)
    new_path = f"{directory}/{name}" if directory else name
    new_key = resolve(store, new_path)
    out = Output(store, new_key)
    try:
        pq.write_table(table, out.stream, **parquet_options)
        size = out.close()
    except BaseException:
        out.discard()
        raise
    return dataclasses.replace(add, path=new_path, size=size, stats=_moved_stats(add.stats, shifts))


__all__ = ["shifted_file"]
