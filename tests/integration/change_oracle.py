"""The change rows PROTOCOL.md defines for a range of versions, read without deltalog's change reader: the test
oracle where ``deltalake``'s ``load_cdf`` cannot read a table.

PROTOCOL "Change Data Files": a version with ``cdc`` actions is its change files' rows (typed by their own
``_change_type``), else its ``dataChange`` adds as inserts and removes as deletes; a file removed and added
again with another deletion vector is the rows whose mark changed (Delta Spark's ``CDCReader``). The files are
read with pyarrow as they are on disk (paths percent-decoded once), partition values cast from the log's
strings; the latest schema is deltalog's snapshot's and deletion vectors are decoded by deltalog's codec, both
checked against the peers by their own tests. Tables
with column mapping are out of its reach (none in the corpus has change data).

Rows come back as a multiset per version: each row's JSON (sorted keys, values as text where JSON has no
type), ``_commit_timestamp`` left out (the engines disagree on it by design; tested apart).
"""

from __future__ import annotations

import collections
import json
import urllib.parse
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import DeltaLog
from deltalog.actions import DeletionVector
from deltalog.arrow.schema import arrow_type
from deltalog.data.dv import read_deletion_vector
from deltalog.storage.local import LocalLogStore

PerVersion = dict[int, collections.Counter[str]]


def row_key(row: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in row.items() if k != "_commit_timestamp"}, sort_keys=True, default=str)


def per_version(table: pa.Table) -> PerVersion:
    """Change rows (any engine's Arrow output) as a multiset per ``_commit_version``."""
    out: PerVersion = collections.defaultdict(collections.Counter)
    for row in table.to_pylist():
        out[int(row["_commit_version"])][row_key({**row, "_commit_version": int(row["_commit_version"])})] += 1
    return dict(out)


def _commit(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _dv(store: LocalLogStore, raw: dict[str, Any] | None) -> np.ndarray:
    if raw is None:
        return np.empty(0, dtype=np.int64)
    fields = (raw["storageType"], raw["pathOrInlineDv"], raw["sizeInBytes"], raw["cardinality"], raw.get("offset"))
    return read_deletion_vector(store, DeletionVector(*fields))


def _rows(
    root: Path, action: dict[str, Any], schema: dict[str, Any], partitions: list[str], keep: np.ndarray | None
) -> list[dict[str, Any]]:
    table = pq.read_table(root / urllib.parse.unquote(action["path"]))
    if keep is not None:
        table = table.take(pa.array(keep, pa.int64()))
    out = []
    values = action.get("partitionValues") or {}
    for row in table.to_pylist():
        shaped = {}
        for field in schema["fields"]:
            name = field["name"]
            if name in partitions:
                raw = values.get(name)
                shaped[name] = None if raw in (None, "") else pa.scalar(raw).cast(arrow_type(field["type"])).as_py()
            else:
                shaped[name] = row.get(name)
        if "_change_type" in row:
            shaped["_change_type"] = row["_change_type"]
        out.append(shaped)
    return out


def _count(root: Path, action: dict[str, Any]) -> int:
    return int(pq.ParquetFile(root / urllib.parse.unquote(action["path"])).metadata.num_rows)


def protocol_rows(root: Path, start: int, end: int) -> PerVersion:
    """The PROTOCOL-defined change rows of versions ``start..end`` (latest schema; no range checks)."""
    store = LocalLogStore(str(root))
    snap = DeltaLog.for_table(root).snapshot()  # the latest schema (replay is checked by the conformance tests)
    schema, partitions = snap.schema_json, snap.partition_columns
    out: PerVersion = {}
    for v in range(start, end + 1):
        actions = _commit(root, v)
        rows: list[dict[str, Any]] = []
        cdc = [a["cdc"] for a in actions if "cdc" in a]
        if cdc:
            for c in cdc:
                rows += _rows(root, c, schema, partitions, None)
        else:
            adds = {
                urllib.parse.unquote(a["add"]["path"]): a["add"] for a in actions if a.get("add", {}).get("dataChange")
            }
            removes = {
                urllib.parse.unquote(a["remove"]["path"]): a["remove"]
                for a in actions
                if a.get("remove", {}).get("dataChange")
            }
            for path, add in adds.items():
                new = _dv(store, add.get("deletionVector"))
                if path in removes:
                    old = _dv(store, removes[path].get("deletionVector"))
                    deleted = np.setdiff1d(new, old)
                    again = np.setdiff1d(old, new)
                    rows += [{**r, "_change_type": "delete"} for r in _rows(root, add, schema, partitions, deleted)]
                    rows += [{**r, "_change_type": "insert"} for r in _rows(root, add, schema, partitions, again)]
                else:
                    live = np.setdiff1d(np.arange(_count(root, add)), new)
                    rows += [{**r, "_change_type": "insert"} for r in _rows(root, add, schema, partitions, live)]
            for path, remove in removes.items():
                if path in adds:
                    continue
                live = np.setdiff1d(np.arange(_count(root, remove)), _dv(store, remove.get("deletionVector")))
                rows += [{**r, "_change_type": "delete"} for r in _rows(root, remove, schema, partitions, live)]
        if rows:
            out[v] = collections.Counter(row_key({**r, "_commit_version": v}) for r in rows)
    return out


__all__ = ["PerVersion", "per_version", "protocol_rows", "row_key"]
