"""Replaying many commits at once through Arrow's JSON reader: file actions never become Python objects.

A long run of commits is mostly ``add`` lines. Parsing them with orjson makes one dict per action, and
turning those dicts into columns costs as much again; Arrow's multi-threaded JSON reader turns the same
bytes straight into columns, and reconciling them (newest action per file key wins) is a hash
aggregation. Non-file actions stay on the exact path: the few commits that hold them (found as rows with
neither an ``add`` nor a ``remove``) are parsed with orjson as well, and their protocol, metadata, txns and
domains are applied in version order. The ``commitInfo`` line writers put first is cut from the bytes the
reader sees, so an ordinary commit holds file actions only.

The fast path only takes logs it can replay exactly like the exact path in :mod:`deltalog.core.replay`;
anything unusual (a parse error, a line holding two objects, an ``add`` without a path, file actions with
``tags``, a table whose partition columns change, column mapping) returns ``None`` and the caller replays
on the exact path, which also produces the precise error naming the file and line. It relies on the
protocol's one action per line. One documented difference: keys in ``partitionValues`` that are not
partition columns of the table are dropped (the protocol has the map hold exactly the partition columns).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core import actions as A
from deltalog.core.arrow_rows import as_numpy, bool_array, int_array, to_table, valid_rows
from deltalog.core.codec import ActionDecodeError, from_dict
from deltalog.core.file_columns import ADD_FIELDS, REMOVE_FIELDS
from deltalog.core.file_state import key_column
from deltalog.core.jsonlines import objects
from deltalog.core.table_state import TableState
from deltalog.errors import CorruptLogError

try:
    import numpy as np
except ImportError:  # pragma: no cover - then the exact path replays everything
    np = None

if TYPE_CHECKING:
    from deltalog.core.replay import BaseState, CommitData

log = logging.getLogger(__name__)

#: below this many bytes of commits the exact path is as fast and has no fixed cost
MIN_BYTES = 1 << 20
#: up to this many bytes of commits, adds' stats are parsed only when asked for (the bytes are held)
DEFER_STATS_BYTES = 256 << 20

_NON_FILE_KEYS = (b'"metaData"', b'"protocol"', b'"txn"', b'"domainMetadata"', b'"add"', b'"remove"')
_BLOCK = 1 << 22


@dataclass(frozen=True)
class Replayed:
    """What a bulk replay produced: non-file state plus the reconciled file actions."""

    state: TableState
    adds: pa.Table
    removes: pa.Table
    touched: pa.Array  # keys of every file action (duplicates allowed)
    #: the line (row) of each of ``adds`` in the parsed run, for :func:`stats_of`
    positions: Any


def _json_type(fields: list[pa.Field], partition: pa.DataType) -> pa.DataType:
    """The struct the JSON reader parses a file action into. Maps are not parseable: ``partitionValues``
    becomes a struct of the partition columns, and ``tags`` an empty struct that only tells whether an
    action had any (then the exact path takes over)."""
    out = []
    for f in fields:
        if f.name == "partitionValues":
            out.append(pa.field(f.name, partition))
        elif f.name == "tags":
            out.append(pa.field(f.name, pa.struct([])))
        else:
            out.append(f)
    return pa.struct(out)


def _body(data: bytes) -> tuple[memoryview | bytes, int]:
    """The part of a commit the JSON reader sees and its line count: without a plain first commitInfo line."""
    if data.startswith(b'{"commitInfo"'):
        end = data.find(b"\n")
        if end > 0 and not any(k in data[:end] for k in _NON_FILE_KEYS):
            rest = memoryview(data)[end + 1 :]
            return rest, _lines(data) - 1
    return data, _lines(data)


def _lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _partition_ok(chunks: list[pa.StructArray], k: int, required: bool) -> bool:
    """Every action has a path and no tags, and names its partition values (a remove may leave them out);
    an all-null row may hide keys under other names (another case, physical names)."""
    for col in chunks:
        if col.null_count or col.field("path").null_count or col.field("tags").null_count != len(col):
            return False
        if k:
            values = col.field("partitionValues")
            if required and values.null_count:
                return False
            nulls = [pc.and_(values.field(i).is_null(), values.is_valid()) for i in range(k)]
            all_null = nulls[0]
            for more in nulls[1:]:
                all_null = pc.and_(all_null, more)
            if pc.any(all_null).as_py():
                return False
    return True


def _read_json(buf: bytes, schema: pa.Schema) -> pa.Table:
    import pyarrow.json as pj  # only long logs come here: not a cost of ``import deltalog``

    return pj.read_json(
        pa.BufferReader(buf),
        read_options=pj.ReadOptions(block_size=_BLOCK),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )


def _hand_over(why: str) -> None:
    log.debug("bulk replay hands over to the exact path: %s", why)
    return None


def _joined(commits: Sequence[CommitData]) -> tuple[bytes, Any]:
    """The bytes the reader parses and the cumulative line count after each commit.

    Joined with newlines: a piece's own final newline becomes a blank line, which the reader skips; any
    other blank or whitespace-only line makes the row count differ from the line count (exact path).
    """
    bodies = [_body(c.data) for c in commits]
    ends = np.cumsum(np.fromiter((n for _, n in bodies), dtype="int64", count=len(bodies)))
    return b"\n".join(body for body, _ in bodies), ends


def stats_of(commits: Sequence[CommitData], positions: Any) -> pa.Array:
    """The ``stats`` of the adds at ``positions`` (rows of a :func:`replay_commits` run over ``commits``).

    A parse that builds nothing but the stats strings: the rows are the same lines, so the positions
    recorded by the first parse pick the same adds.
    """
    buf, ends = _joined(commits)
    schema = pa.schema([pa.field("add", pa.struct([pa.field("stats", pa.string())]))])
    table = _read_json(buf, schema)
    if table.num_rows != int(ends[-1]):
        raise CorruptLogError(f"{commits[0].path} .. {commits[-1].path} changed between two reads")
    chunks = table.column("add").chunks
    if not chunks:
        return pa.nulls(0, pa.string())
    return pa.concat_arrays([chunk.field("stats") for chunk in chunks]).take(int_array(positions))


def replay_commits(
    base: BaseState, commits: Sequence[CommitData], root: str | None, stats: bool = True
) -> Replayed | None:
    """Non-file state and file actions of ``commits`` on top of ``base``, or None to use the exact path.

    Without ``stats`` the adds' ``stats`` column is all null: the reader skips the strings instead of
    copying them, a third of the parse; a second call with ``stats`` gives the same rows with them.
    """
    if np is None or not commits or any(not c.data or c.data.isspace() for c in commits):
        return _hand_over("an empty commit")  # corrupt: the exact path says so
    buf, ends = _joined(commits)
    metadata = _metadata_guess(base, commits)
    if metadata is None:
        return _hand_over("no metadata to shape the parse")
    partition_columns = list(metadata.partition_columns)
    partition = pa.struct([pa.field(name, pa.string()) for name in partition_columns])
    add_fields = ADD_FIELDS if stats else [f for f in ADD_FIELDS if f.name != "stats"]
    schema = pa.schema(
        [pa.field("add", _json_type(add_fields, partition)), pa.field("remove", _json_type(REMOVE_FIELDS, partition))]
    )
    try:
        table = (
            _read_json(buf, schema)
            if buf and not buf.isspace()
            else pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        return _hand_over(f"the JSON reader refused the log ({exc})")
    del buf
    if table.num_rows != int(ends[-1]):
        return _hand_over("a blank line or two objects on one line")
    add_chunks: list[pa.StructArray] = []
    remove_chunks: list[pa.StructArray] = []
    add_pos: list[Any] = []
    remove_pos: list[Any] = []
    offset = 0
    for batch in table.to_batches():
        add, remove = batch.column(0), batch.column(1)
        chunks, pos = valid_rows(add, offset)
        add_chunks += chunks
        add_pos.append(pos)
        if remove.null_count != len(remove):
            chunks, pos = valid_rows(remove, offset)
            remove_chunks += chunks
            remove_pos.append(pos)
        offset += len(batch)
    adds_at = np.concatenate(add_pos) if add_pos else np.zeros(0, "int64")
    removes_at = np.concatenate(remove_pos) if remove_pos else np.zeros(0, "int64")
    file_rows = np.union1d(adds_at, removes_at) if len(removes_at) else adds_at
    if len(file_rows) != len(adds_at) + len(removes_at):
        return _hand_over("an add and a remove on one line")
    state = TableState(base)
    if len(file_rows) != offset:
        others = np.setdiff1d(np.arange(offset, dtype="int64"), file_rows, assume_unique=True)
        try:
            for i in sorted(set(np.searchsorted(ends, others, side="right").tolist())):
                state.apply(commits[i])
        except CorruptLogError:
            return _hand_over("an invalid non-file action")  # the exact path reports its line
    if state.metadata is None or state.partition_sets != {tuple(partition_columns)}:
        return _hand_over("the partition columns change")
    if state.metadata.configuration.get("delta.columnMapping.mode", "none") != "none":
        return _hand_over("column mapping")  # partition keys are physical names there
    k = len(partition_columns)
    if not _partition_ok(add_chunks, k, True) or not _partition_ok(remove_chunks, k, False):
        return _hand_over("tags, a missing path, or partition values under other keys")
    adds = to_table(add_chunks, ADD_FIELDS)
    removes = to_table(remove_chunks, REMOVE_FIELDS)
    add_keys = key_column(adds, root)
    if not len(removes_at) and pc.count_distinct(add_keys).as_py() == len(add_keys):
        return Replayed(state, adds, removes, add_keys, adds_at)
    remove_keys = key_column(removes, root)
    parts = [c for k in (add_keys, remove_keys) for c in (k.chunks if isinstance(k, pa.ChunkedArray) else [k])]
    keys = pa.concat_arrays(parts) if parts else pa.nulls(0, pa.string())
    # The newest action per key: dictionary codes of the keys, then the highest row position per code
    # (numpy's ufunc.at applies every pair, in any order; Arrow's group_by would import pandas).
    codes = as_numpy(keys.dictionary_encode().indices).astype("int64")
    positions = np.concatenate([adds_at, removes_at])
    newest = np.full(int(codes.max()) + 1, -1, dtype="int64")
    np.maximum.at(newest, codes, positions)
    alive = np.zeros(offset, dtype=np.bool_)
    alive[newest] = True
    kept = alive[adds_at]
    adds = adds.filter(bool_array(kept))
    removes = removes.filter(bool_array(alive[removes_at]))
    return Replayed(state, adds, removes, keys, adds_at[kept])


def _metadata_guess(base: BaseState, commits: Sequence[CommitData]) -> A.Metadata | None:
    """The metadata whose partition columns shape the parse: the base's, else the first metaData line.

    Only a guess for the parse schema: :func:`replay_commits` checks every metaData the run holds against
    it, and a table whose partition columns change within the run goes to the exact path.
    """
    if base.metadata is not None:
        return base.metadata
    for commit in commits:
        if b'"metaData"' not in commit.data:
            continue
        for _, obj in objects(commit.data, commit.path):
            body = obj.get("metaData")
            if isinstance(body, dict):
                try:
                    action = from_dict("metaData", body)
                except ActionDecodeError:
                    return None
                return action if isinstance(action, A.Metadata) else None
    return None


__all__ = [
    "DEFER_STATS_BYTES",
    "MIN_BYTES",
    "Replayed",
    "replay_commits",
    "stats_of",
]
