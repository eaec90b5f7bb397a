"""Building tables for the scan tests: real parquet files, the statistics a test chooses, deletion vectors.

deltalog creates the table (version 0); version 1 is written by hand as another engine would, because the
stats must be exactly what a test says (Spark's truncations, missing stats, ``tightBounds=false``) and because
deltalog does not yet enable deletion vectors itself. Directories on disk are Hive-escaped by the test; the
log spells them URI-encoded (``region=us%2Feast`` on disk is ``region=us%252Feast`` in the log), as Spark does.
Every table made here is read by both peers, which must count its live rows.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable, QueryBuilder

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.core.log.codec import encode_actions
from deltalog.data.dv import write_deletion_vector
from tests.peers import duckdb_view


@dataclass(frozen=True)
class FileSpec:
    """One data file: its directory on disk, partition values (log strings), rows, stats, deleted rows."""

    directory: str
    partition: Mapping[str, str | None]
    data: pa.Table
    stats: Mapping[str, Any] | None = None
    deleted: Sequence[int] = ()
    name: str = ""


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def exact_stats(table: pa.Table, tight: bool = True) -> dict[str, Any]:
    """numRecords, min, max and nullCount of every top-level primitive column, exact (µs timestamps)."""
    lows, highs, nulls = {}, {}, {}
    for name in table.column_names:
        column = table.column(name)
        nulls[name] = column.null_count
        if column.null_count < len(column) and not pa.types.is_boolean(column.type):
            bounds = pc.min_max(column)
            lows[name] = _json_value(bounds["min"].as_py())
            highs[name] = _json_value(bounds["max"].as_py())
    out: dict[str, Any] = {"numRecords": table.num_rows, "minValues": lows, "maxValues": highs, "nullCount": nulls}
    if not tight:
        out["tightBounds"] = False
    return out


def log_path(directory: str, name: str) -> str:
    """A file's path as the log spells it: the on-disk directory URI-encoded (Spark encodes ``%`` too)."""
    encoded = urllib.parse.quote(directory, safe="/=") if directory else ""
    return f"{encoded}/{name}" if encoded else name


def physical(name: str) -> str:
    """The physical name :func:`make_table` gives a column of a column-mapped table."""
    return f"col-{name}"


def _mapped_schema(schema_string: str) -> str:
    fields = json.loads(schema_string)["fields"]
    for i, f in enumerate(fields):
        f["metadata"] = {"delta.columnMapping.id": i + 1, "delta.columnMapping.physicalName": physical(f["name"])}
    return json.dumps({"type": "struct", "fields": fields})


def _renamed(spec: FileSpec) -> FileSpec:
    """A file of a column-mapped table: physical names in the parquet file, the partition values and the stats."""
    stats = None
    if spec.stats is not None:
        stats = {
            k: ({physical(c): v for c, v in v.items()} if isinstance(v, dict) else v) for k, v in spec.stats.items()
        }
    data = spec.data.rename_columns([physical(n) for n in spec.data.column_names])
    partition = {physical(k): v for k, v in spec.partition.items()}
    return dataclasses.replace(spec, data=data, partition=partition, stats=stats)


def make_table(
    root: Path,
    schema: pa.Schema,
    partition_columns: Sequence[str],
    files: Sequence[FileSpec],
    dvs: bool = False,
    mapped: bool = False,
) -> dict[str, str]:
    """Create the table and commit ``files``; returns each file's label (``FileSpec.name``) by its store key.

    ``dvs`` turns deletion vectors on (files with ``deleted`` rows get a DV file); ``mapped`` makes it a
    column-mapped table in name mode, whose files and stats use :func:`physical` names.
    """
    log = DeltaLog.for_table(root)
    log.create(schema, partition_columns=partition_columns)
    actions: list[A.Action] = [A.CommitInfo(timestamp=int(time.time() * 1000), operation="WRITE", engine_info="t")]
    features = (("deletionVectors",) if dvs else ()) + (("columnMapping",) if mapped else ())
    if features:
        snap = log.snapshot()
        actions.append(A.Protocol(3, 7, features, features))
        config = {**snap.configuration, **({"delta.enableDeletionVectors": "true"} if dvs else {})}
        metadata = dataclasses.replace(snap.metadata, configuration=config)
        if mapped:
            config.update({"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": str(len(schema))})
            metadata = dataclasses.replace(metadata, schema_string=_mapped_schema(snap.metadata.schema_string or ""))
        actions.append(metadata)
    labels = {}
    for i, spec in enumerate(_renamed(f) if mapped else f for f in files):
        name = f"part-{i:05d}-{spec.name or i}.parquet"
        on_disk = root / spec.directory / name
        on_disk.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(spec.data, on_disk)
        dv = write_deletion_vector(log.store, spec.deleted, num_records=spec.data.num_rows) if spec.deleted else None
        stats = None if spec.stats is None else json.dumps(spec.stats)
        path = log_path(spec.directory, name)
        actions.append(A.Add(path, dict(spec.partition), on_disk.stat().st_size, 0, True, stats, deletion_vector=dv))
        labels[f"{spec.directory}/{name}" if spec.directory else name] = spec.name or str(i)
    log.store.put_if_absent("_delta_log/00000000000000000001.json", encode_actions(actions))
    live = sum(f.data.num_rows - len(f.deleted) for f in files)
    assert peer_rows(root) == (live, live)
    return labels


def peer_rows(root: Path) -> tuple[int, int]:
    """How many rows deltalake's SQL path and duckdb's ``delta_scan`` read (both apply deletion vectors).

    deltalake 1.6.6 fails ``count(*)`` on column-mapped tables, so its rows are read and counted.
    """
    lake = QueryBuilder().register("t", DeltaTable(str(root))).execute("select * from t").read_all()
    return pa.table(lake).num_rows, duckdb_view(root).rows or 0
