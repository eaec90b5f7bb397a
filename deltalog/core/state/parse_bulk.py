"""The bulk parser: many commits at once through Arrow's JSON reader, file actions never Python objects.

A long run of commits is mostly ``add`` lines. Parsing them with orjson makes one dict per action, and
turning those dicts into columns costs as much again; Arrow's multi-threaded JSON reader turns the same
bytes straight into columns, with each row's position (its line in the run) for the reconciler. Non-file
actions stay exact: the few commits that hold a protocol, metaData, txn or domainMetadata (found as rows
where the reader saw one, whatever else the line holds) are parsed with orjson as well and applied in
version order by the same :class:`~deltalog.core.state.small.SmallState` the exact parser uses. The
``commitInfo`` line writers put first is parsed with orjson alone and cut from the bytes the reader sees,
so an ordinary commit holds file actions only.

The result is the exact parser's for every input the reader accepts (:mod:`deltalog.core.state.replay`
states the semantics), or None and the caller parses exactly, which also produces the precise error
naming the file and line. What the reader cannot see is made not to matter or handed over:

* ``partitionValues`` is parsed as a struct of the table's partition keys, so a stray key is not seen and
  a missing one reads as null: exactly the shape the reconciler gives every row. A table whose partition
  keys at the end of the run are not the ones the parse was shaped by is handed over.
* A ``null`` action and an absent one read alike, as both parsers treat them.
* The reader rejects what orjson rejects (bad syntax, a key given twice, a value of the wrong JSON type,
  lone surrogates, control characters), except what is checked here before it runs: a line that does not
  start an object (a ``null`` line at the start of a reader block crashes pyarrow 26), a byte order mark,
  invalid UTF-8. Still accepted by the reader alone: ``NaN``/``Infinity`` literals and nesting deeper than
  orjson's 1024 levels inside a field the replay ignores (the exact parser reports those lines as
  malformed JSON; finding them here would take a second parse).
* Handed over: ``tags`` (a map the reader cannot parse), an add or remove without a path, an add and a
  remove on one line, a blank or whitespace-only line, two objects on one line.
* ``stats`` left unparsed by the first read are read again, as the exact parser would read them (a value
  that is not a string becomes its JSON text), when asked for.

It relies on the protocol's one action per line for the row positions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core import actions as A
from deltalog.core.codec import ActionDecodeError, from_dict
from deltalog.core.jsonlines import corrupt_line, malformed, objects
from deltalog.core.state import BaseState, CommitData, FileActions, Parsed, StatsAt
from deltalog.core.state.columns import (
    ADD_FIELDS,
    REMOVE_FIELDS,
    array_of,
    as_numpy,
    as_text,
    int_array,
    to_table,
    valid_rows,
)
from deltalog.core.state.small import STATE_KEYS, SmallState, partition_keys, version_partition_keys
from deltalog.errors import CorruptLogError

log = logging.getLogger(__name__)

#: below this many bytes of commits the exact parser is as fast and has no fixed cost
MIN_BYTES = 1 << 20
#: up to this many bytes of commits, adds' stats are parsed only when asked for (the bytes are held)
DEFER_STATS_BYTES = 256 << 20

#: the reader's block size, its unit of parallel parsing
BLOCK_BYTES = 1 << 22
#: top-level actions parsed as empty structs: only whether a line holds one (commitInfo's content is read
#: by ``last_commit_info``; declaring it keeps a commitInfo line from being anything else)
_SEEN = ("commitInfo", *sorted(STATE_KEYS))


def _json_type(fields: list[pa.Field], partition: pa.DataType) -> pa.DataType:
    """The struct the JSON reader parses a file action into. Maps are not parseable: ``partitionValues``
    becomes a struct of the partition keys, and ``tags`` an empty struct that only tells whether an
    action had any (then the exact parser takes over)."""
    out = []
    for f in fields:
        if f.name == "partitionValues":
            out.append(pa.field(f.name, partition))
        elif f.name == "tags":
            out.append(pa.field(f.name, pa.struct([])))
        else:
            out.append(f)
    return pa.struct(out)


def _plain(chunks: list[pa.StructArray]) -> bool:
    """Every action has a path and no tags."""
    return all(not col.field("path").null_count and col.field("tags").null_count == len(col) for col in chunks)


def _valid_utf8(buf: bytes) -> bool:
    """Arrow's reader copies strings without checking their encoding; orjson refuses invalid UTF-8."""
    if buf.isascii():
        return True
    offsets = pa.py_buffer(np.array([0, len(buf)], dtype="int64"))
    try:
        pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(buf)]).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _read_json(buf: bytes, schema: pa.Schema) -> pa.Table:
    import pyarrow.json as pj  # only long logs come here: not a cost of ``import deltalog``

    return pj.read_json(
        pa.BufferReader(buf),
        read_options=pj.ReadOptions(block_size=BLOCK_BYTES),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )


def _hand_over(why: str) -> Parsed | None:
    """None, always: ``return _hand_over(why)`` in :func:`parse` reads as what it is (typed as its result)."""
    log.debug("the bulk parser hands over to the exact one: %s", why)
    return None


def _body(data: bytes) -> memoryview | bytes | None:
    """What the reader sees of a commit: without a first line that holds a commitInfo and nothing else.

    Writers put one there; the reader need not parse it (its content is read by ``last_commit_info``),
    and as a row it would leave a gap in the add column. Cut, it is parsed with orjson here, as the exact
    path parses it, so it can hide nothing (say, an action under an escaped key). None: it is not JSON
    orjson reads (the exact parser reports it).
    """
    if not data.startswith(b'{"commitInfo"'):
        return data
    end = data.find(b"\n")
    try:
        first = orjson.loads(data if end < 0 else data[:end])
    except orjson.JSONDecodeError:
        return None
    if type(first) is not dict or len(first) != 1:
        return data
    return memoryview(data)[len(data) if end < 0 else end + 1 :]


def _bodies(commits: Sequence[CommitData]) -> list[memoryview | bytes] | None:
    out = []
    for c in commits:
        body = _body(c.data)
        if body is None:
            return None
        out.append(body)
    return out


def _joined(bodies: Sequence[memoryview | bytes]) -> tuple[bytes, Any, bool]:
    """The bytes the reader parses, the cumulative line count after each body, and whether every line
    starts with ``{``.

    Joined with newlines: a piece's own final newline becomes a blank line, which the reader skips; any
    other blank or whitespace-only line makes the row count differ from the line count (exact parser). A
    line that is not an object is the exact parser's to report, and must not reach the reader: a ``null``
    line at the start of one of its blocks crashes it (pyarrow 26).
    """
    buf = b"\n".join(bodies)
    raw = np.frombuffer(buf, dtype=np.uint8)
    n = len(raw)
    step = 1 << 22  # scanned in pieces: no mask as large as the log
    newlines = np.concatenate(
        [np.flatnonzero(raw[at : at + step] == 0x0A) + at for at in range(0, n, step)] or [np.zeros(0, "int64")]
    )
    sizes = np.fromiter((len(b) for b in bodies), dtype="int64", count=len(bodies))
    separators = np.cumsum(sizes + 1) - 1  # where the newline after each piece goes (n for the last piece)
    inner = np.diff(np.searchsorted(newlines, separators), prepend=0) - (np.arange(len(bodies)) > 0)
    lines = inner + np.fromiter((bool(len(b)) and b[-1] != 0x0A for b in bodies), dtype="int64", count=len(bodies))
    follow = raw[newlines[newlines + 1 < n] + 1]
    objects_only = bool(n and raw[0] in (0x7B, 0x0A) and np.all((follow == 0x7B) | (follow == 0x0A)))
    return buf, np.cumsum(lines), objects_only


def stats_of(commits: Sequence[CommitData], positions: Any) -> pa.Array:
    """The ``stats`` of the adds at ``positions`` (rows of a :func:`parse` run over ``commits``).

    A parse that builds nothing but the stats strings: the rows are the same lines, so the positions
    recorded by the first parse pick the same adds. The first parse did not look at ``stats``; where
    the reader refuses them now (not a string, or given twice), the lines are read as the exact parser
    reads them.
    """
    bodies = _bodies(commits)
    if bodies is None:
        raise CorruptLogError(f"{commits[0].path} .. {commits[-1].path} changed between two reads")
    buf, ends, _ = _joined(bodies)
    schema = pa.schema([pa.field("add", pa.struct([pa.field("stats", pa.string())]))])
    try:
        table = _read_json(buf, schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return _stats_exactly(commits, bodies, ends, positions)
    if table.num_rows != int(ends[-1]):
        raise CorruptLogError(f"{commits[0].path} .. {commits[-1].path} changed between two reads")
    chunks = table.column("add").chunks
    if not chunks:
        return pa.nulls(0, pa.string())
    return pa.concat_arrays([chunk.field("stats") for chunk in chunks]).take(int_array(positions))


def _stats_exactly(
    commits: Sequence[CommitData], bodies: Sequence[memoryview | bytes], ends: Any, positions: Any
) -> pa.Array:
    split: dict[int, list[bytes]] = {}
    out = []
    for row in positions.tolist():
        i = int(np.searchsorted(ends, row, side="right"))
        lines = split.get(i)
        if lines is None:
            lines = split[i] = bytes(bodies[i]).split(b"\n")
        cut = len(commits[i].data) != len(bodies[i])
        line = row - (int(ends[i - 1]) if i else 0)
        try:
            body = orjson.loads(lines[line]).get("add")
        except orjson.JSONDecodeError as exc:
            raise corrupt_line(commits[i].path)(line + 1 + cut, malformed(exc)) from None
        out.append(as_text(body.get("stats")))
    return array_of(out, pa.string())


def parse(base: BaseState, commits: Sequence[CommitData], stats: bool = True) -> Parsed | None:
    """The state after ``commits`` (on top of ``base``) and their adds and removes, or None: the exact
    parser's to read.

    Without ``stats`` the adds' ``stats`` column is all null: the reader skips the strings instead of
    copying them, a third of the parse; the result then loads them when asked for (:func:`stats_of`).
    """
    if not commits or any(not c.data or c.data.isspace() for c in commits):
        return _hand_over("an empty commit")  # corrupt: the exact parser says so
    keys = _keys_guess(base, commits)
    if keys is None:
        return _hand_over("no metadata to shape the parse")
    bodies = _bodies(commits)
    if bodies is None:
        return _hand_over("a commitInfo line that is not JSON")
    buf, ends, objects_only = _joined(bodies)
    if not objects_only:
        return _hand_over("a line that does not start an object")
    if not _valid_utf8(buf):
        return _hand_over("invalid UTF-8")
    partition = pa.struct([pa.field(name, pa.string()) for name in keys])
    add_fields = ADD_FIELDS if stats else [f for f in ADD_FIELDS if f.name != "stats"]
    schema = pa.schema(
        [pa.field("add", _json_type(add_fields, partition)), pa.field("remove", _json_type(REMOVE_FIELDS, partition))]
        + [pa.field(name, pa.struct([])) for name in _SEEN]
    )
    try:
        table = _read_json(buf, schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        return _hand_over(f"the JSON reader refused the log ({exc})")
    del buf
    if table.num_rows != int(ends[-1]):
        return _hand_over("a blank line or two objects on one line")
    add_chunks: list[pa.StructArray] = []
    remove_chunks: list[pa.StructArray] = []
    add_pos: list[Any] = []
    remove_pos: list[Any] = []
    state_pos: list[Any] = []
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
        for name in STATE_KEYS:
            col = batch.column(name)
            if col.null_count != len(col):
                state_pos.append(as_numpy(pc.indices_nonzero(col.is_valid())).astype("int64") + offset)
        offset += len(batch)
    adds_at = np.concatenate(add_pos) if add_pos else np.zeros(0, "int64")
    removes_at = np.concatenate(remove_pos) if remove_pos else np.zeros(0, "int64")
    if len(removes_at) and len(np.intersect1d(adds_at, removes_at, assume_unique=True)):
        return _hand_over("an add and a remove on one line")
    state = SmallState(base)
    if state_pos:
        try:
            for i in sorted(set(np.searchsorted(ends, np.concatenate(state_pos), side="right").tolist())):
                state.apply(commits[i])
            final_keys = version_partition_keys(state)
        except CorruptLogError:
            return _hand_over("an invalid non-file action")  # the exact parser reports its line
    else:
        final_keys = version_partition_keys(state)
    if final_keys != keys:
        return _hand_over("the partition keys change")
    if not _plain(add_chunks) or not _plain(remove_chunks):
        return _hand_over("tags, or an action without a path")
    actions = FileActions(to_table(add_chunks, ADD_FIELDS), adds_at, to_table(remove_chunks, REMOVE_FIELDS), removes_at)
    return Parsed(state.freeze(commits), actions, None if stats else _stats_at(commits))


def _stats_at(commits: Sequence[CommitData]) -> StatsAt:
    """For a parse without stats: the loader of the stats of the adds at some positions (read once)."""

    def at(positions: np.ndarray) -> Callable[[], pa.Array]:
        loaded: list[pa.Array] = []

        def load() -> pa.Array:
            if not loaded:
                loaded.append(stats_of(commits, positions))
            return loaded[0]

        return load

    return at


def _keys_guess(base: BaseState, commits: Sequence[CommitData]) -> tuple[str, ...] | None:
    """The partition keys that shape the parse: the base's, else those of the first protocol and metaData.

    Only a guess: :func:`parse` checks them against the state at the end of the run, and hands a run whose
    partition keys changed to the exact parser.
    """
    protocol, metadata, source = base.protocol, base.metadata, base.source
    for commit in commits:
        if metadata is not None and protocol is not None:
            break
        data = commit.data
        if (metadata is None and b'"metaData"' in data) or (protocol is None and b'"protocol"' in data):
            try:
                for _, obj in objects(commit.data, commit.path):
                    for key, want in (("metaData", metadata is None), ("protocol", protocol is None)):
                        body = obj.get(key)
                        if want and isinstance(body, dict):
                            action = from_dict(key, body)
                            if isinstance(action, A.Metadata):
                                metadata, source = action, commit.path
                            elif isinstance(action, A.Protocol):
                                protocol = action
            except (CorruptLogError, ActionDecodeError):
                return None
    if metadata is None:
        return None
    try:
        return partition_keys(protocol, metadata, source)
    except CorruptLogError:
        return None


__all__ = [
    "BLOCK_BYTES",
    "DEFER_STATS_BYTES",
    "MIN_BYTES",
    "parse",
    "stats_of",
]
