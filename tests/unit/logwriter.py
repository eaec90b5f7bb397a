"""Writing hand-made Delta logs in unit tests: commits, whole tables, checkpoints (owned by the unit tests).

Commits are lists of action dicts (:mod:`tests.unit.logkit`) written as newline-delimited JSON with orjson,
or raw bytes written verbatim; checkpoints are parquet files in the shape Delta Spark writes (one top-level
struct column per action kind, one action per row); commit times are file modification times set with
:func:`os.utime` (without in-commit timestamps that mtime *is* the commit time time travel sees).

Two table writers, one per convention set of :mod:`tests.unit.logkit`:

* :func:`write_table` / :func:`write_commit`: versions at ``T0 + v * STEP`` of :data:`~tests.unit.logkit.Y2025`,
  actions written exactly as given.
* :func:`make_table`: versions at ``Y2026.commit_time(v)`` (or given times), a version 0 added when the
  first commit has no protocol or metaData, and each commitInfo without a timestamp given its commit's time::

      root = make_table(tmp_path / "t", [[Y2026.add("a.parquet", size=10)], [Y2026.remove("a.parquet")]])
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from .logkit import STEP, T0, Y2026, Conventions, add, commit_info, metadata, protocol

LOG = "_delta_log"

Action = Mapping[str, Any]
Commit = Sequence[Action] | bytes


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def log_dir(root: Path) -> Path:
    d = root / LOG
    d.mkdir(parents=True, exist_ok=True)
    return d


# ---------------------------------------------------------------------------------------------- commits


def set_mtime_ms(path: Path, ms: int) -> None:
    ns = ms * 1_000_000
    os.utime(path, ns=(ns, ns))


def write_commit(root: Path, version: int, actions: Sequence[Action] | bytes, mtime_ms: int | None = None) -> Path:
    """Write ``_delta_log/<version>.json`` and set its mtime (default ``T0 + version * STEP``)."""
    path = log_dir(root) / commit_name(version)
    data = actions if isinstance(actions, bytes) else b"".join(orjson.dumps(a) + b"\n" for a in actions)
    path.write_bytes(data)
    set_mtime_ms(path, T0 + version * STEP if mtime_ms is None else mtime_ms)
    return path


def write_table(root: Path, commits: Iterable[Sequence[Action] | bytes], start: int = 0) -> Path:
    """Write consecutive commits from version ``start``; return ``root``."""
    for i, actions in enumerate(commits):
        write_commit(root, start + i, actions)
    return root


def basic_table(root: Path, extra_commits: int = 0) -> Path:
    """Version 0 (protocol, metadata, one add), plus ``extra_commits`` commits adding one file each."""
    commits: list[Sequence[Action]] = [[commit_info("CREATE TABLE"), protocol(), metadata(), add("part-0.parquet")]]
    for v in range(1, extra_commits + 1):
        commits.append([commit_info(), add(f"part-{v}.parquet")])
    return write_table(root, commits)


def make_table(
    location: str | os.PathLike[str],
    commits: Sequence[Commit],
    *,
    partition_columns: Sequence[str] = (),
    columns: Mapping[str, Any] | None = None,
    configuration: Mapping[str, str] | None = None,
    commit_times: Sequence[int] | None = None,
    conventions: Conventions = Y2026,
) -> Path:
    """Write ``commits`` as versions 0, 1, ... of a table at ``location`` and return its root.

    When the first commit is a list without a protocol or metaData action, a version 0 holding
    ``protocol()`` and ``metadata(columns, partition_columns, configuration)`` is written first and the
    given commits follow it. A commitInfo without a timestamp gets its commit's time. ``commit_times``
    (epoch ms, one per written version) overrides ``conventions.commit_time``.
    """
    root = Path(location)
    log = log_dir(root)
    all_commits: list[Commit] = list(commits)
    first = all_commits[0] if all_commits else []
    if not isinstance(first, bytes) and not any("protocol" in a or "metaData" in a for a in first):
        all_commits.insert(0, [protocol(), conventions.metadata(columns, partition_columns, configuration)])
    if commit_times is not None and len(commit_times) != len(all_commits):
        raise ValueError(f"{len(commit_times)} commit times for {len(all_commits)} versions")
    for version, commit in enumerate(all_commits):
        when = commit_times[version] if commit_times is not None else conventions.commit_time(version)
        path = log / commit_name(version)
        path.write_bytes(commit if isinstance(commit, bytes) else encode_stamped(commit, when))
        set_mtime_ms(path, when)
    return root


def encode_stamped(actions: Sequence[Action], when: int) -> bytes:
    """A commit's JSON lines, a commitInfo without a timestamp given ``when`` (as its first field)."""
    lines = []
    for action in actions:
        info = action.get("commitInfo")
        if isinstance(info, Mapping) and "timestamp" not in info:
            action = {"commitInfo": {"timestamp": when, **info}}
        lines.append(orjson.dumps(action))
    return b"".join(line + b"\n" for line in lines)


# ---------------------------------------------------------------------------------------------- checkpoints
_MAP = pa.map_(pa.string(), pa.string())
_DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)
CHECKPOINT_SCHEMA = pa.schema(
    [
        ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])),
        (
            "add",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("partitionValues", _MAP),
                    ("size", pa.int64()),
                    ("modificationTime", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("tags", _MAP),
                    ("deletionVector", _DV),
                    ("baseRowId", pa.int64()),
                    ("defaultRowCommitVersion", pa.int64()),
                    ("clusteringProvider", pa.string()),
                    ("stats", pa.string()),
                ]
            ),
        ),
        (
            "remove",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("deletionTimestamp", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("extendedFileMetadata", pa.bool_()),
                    ("partitionValues", _MAP),
                    ("size", pa.int64()),
                    ("deletionVector", _DV),
                    ("baseRowId", pa.int64()),
                    ("defaultRowCommitVersion", pa.int64()),
                ]
            ),
        ),
        (
            "metaData",
            pa.struct(
                [
                    ("id", pa.string()),
                    ("name", pa.string()),
                    ("description", pa.string()),
                    ("format", pa.struct([("provider", pa.string()), ("options", _MAP)])),
                    ("schemaString", pa.string()),
                    ("partitionColumns", pa.list_(pa.string())),
                    ("configuration", _MAP),
                    ("createdTime", pa.int64()),
                ]
            ),
        ),
        (
            "protocol",
            pa.struct(
                [
                    ("minReaderVersion", pa.int32()),
                    ("minWriterVersion", pa.int32()),
                    ("readerFeatures", pa.list_(pa.string())),
                    ("writerFeatures", pa.list_(pa.string())),
                ]
            ),
        ),
        (
            "domainMetadata",
            pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]),
        ),
    ]
)


def _map_pairs(v: Any) -> Any:
    return None if v is None else list(dict(v).items())


def _struct_value(struct: pa.StructType, body: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in struct:
        v = body.get(f.name)
        if v is not None and pa.types.is_map(f.type):
            v = _map_pairs(v)
        elif v is not None and pa.types.is_struct(f.type):
            v = _struct_value(f.type, v)
        out[f.name] = v
    return out


def checkpoint_table(actions: Sequence[Mapping[str, Any]]) -> pa.Table:
    """A Spark-shaped checkpoint table: one row per action, every other column null in that row."""
    columns: dict[str, list[Any]] = {f.name: [] for f in CHECKPOINT_SCHEMA}
    for action in actions:
        ((key, body),) = action.items()
        if key not in columns:
            raise ValueError(f"{key} does not go into a checkpoint")
        for f in CHECKPOINT_SCHEMA:
            columns[f.name].append(_struct_value(f.type, body) if f.name == key else None)
    return pa.Table.from_pydict(columns, schema=CHECKPOINT_SCHEMA)


def write_checkpoint(root: Path, version: int, actions: Sequence[Mapping[str, Any]], name: str | None = None) -> Path:
    """Write a classic checkpoint (or a file called ``name``) for ``version`` from the given actions."""
    path = log_dir(root) / (name or f"{version:020d}.checkpoint.parquet")
    pq.write_table(checkpoint_table(actions), path)
    return path


def write_last_checkpoint(root: Path, obj: Mapping[str, Any] | bytes) -> Path:
    path = log_dir(root) / "_last_checkpoint"
    path.write_bytes(obj if isinstance(obj, bytes) else orjson.dumps(obj))
    return path


# ---------------------------------------------------------------------------------------------- observation


def tree_state(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` (relative path -> bytes, mtime ns), and every directory (as ``b""``, -1)."""
    out: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = (b"", -1)
        for f in filenames:
            full = os.path.join(dirpath, f)
            out[os.path.relpath(full, root)] = (Path(full).read_bytes(), os.stat(full).st_mtime_ns)
    return out


def paths_of(table: pa.Table) -> list[str]:
    return sorted(table.column("path").to_pylist())


# ---------------------------------------------------------------------------------------------- races

RACE_NAME = "_delta_log/00000000000000000001.json"


def race_payload(i: int) -> bytes:
    return f"process {i}\n".encode() * 1000


def race_put_if_absent(root: str, i: int, barrier: Any, out: Any) -> None:
    """Child-process body for the put-if-absent race (module level so that ``spawn`` can import it)."""
    from deltalog.errors import FileAlreadyExistsError
    from deltalog.storage.local import LocalLogStore

    store = LocalLogStore(root)
    barrier.wait(timeout=120)
    try:
        store.put_if_absent(RACE_NAME, race_payload(i))
        out.put((i, "won"))
    except FileAlreadyExistsError:
        out.put((i, "lost"))
    except Exception as exc:  # reported by the parent's assertion
        out.put((i, f"error: {exc!r}"))


# ---------------------------------------------------------------------------------------------- V2 checkpoints

SIDECAR_SCHEMA = pa.schema([CHECKPOINT_SCHEMA.field("add"), CHECKPOINT_SCHEMA.field("remove")])
_V2_EXTRA = [
    ("checkpointMetadata", pa.struct([("version", pa.int64()), ("tags", _MAP)])),
    (
        "sidecar",
        pa.struct(
            [("path", pa.string()), ("sizeInBytes", pa.int64()), ("modificationTime", pa.int64()), ("tags", _MAP)]
        ),
    ),
]
V2_CHECKPOINT_SCHEMA = pa.schema(list(CHECKPOINT_SCHEMA) + [pa.field(n, t) for n, t in _V2_EXTRA])


def _rows_table(actions: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    columns: dict[str, list[Any]] = {f.name: [] for f in schema}
    for action in actions:
        ((key, body),) = action.items()
        if key not in columns:
            raise ValueError(f"{key} has no column in this file")
        for f in schema:
            columns[f.name].append(_struct_value(f.type, body) if f.name == key else None)
    return pa.Table.from_pydict(columns, schema=schema)


def write_sidecar(root: Path, name: str, actions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Write ``_delta_log/_sidecars/<name>`` (add/remove rows only); return its ``sidecar`` action."""
    d = log_dir(root) / "_sidecars"
    d.mkdir(exist_ok=True)
    path = d / name
    pq.write_table(_rows_table(actions, SIDECAR_SCHEMA), path)
    return {"sidecar": {"path": name, "sizeInBytes": path.stat().st_size, "modificationTime": T0}}


def write_v2_checkpoint(
    root: Path, version: int, actions: Sequence[Mapping[str, Any]], uuid: str, fmt: str = "json"
) -> Path:
    """A UUID-named V2 checkpoint (JSON lines or parquet) starting with its ``checkpointMetadata``."""
    rows = [{"checkpointMetadata": {"version": version}}, *actions]
    path = log_dir(root) / f"{version:020d}.checkpoint.{uuid}.{fmt}"
    if fmt == "json":
        path.write_bytes(b"".join(orjson.dumps(a) + b"\n" for a in rows))
    else:
        pq.write_table(_rows_table(rows, V2_CHECKPOINT_SCHEMA), path)
    return path
