"""Damaging copies of corpus tables on purpose: retyped checkpoint columns, edited JSON lines, odd files.

Shared by the malformed-log tests and the mutation fuzzer. Every helper works on a copy under a test's tmp
directory (:func:`copy_table`); the corpus itself is never touched. :func:`state` is what "reads the same"
means: version, live files (path, size, deletion vector), tombstones, protocol, metadata and txns.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog import DeltaLog, Snapshot
from deltalog.storage.local import LocalLogStore
from tests.corpus import table_path

LOG = "_delta_log"

State = tuple[Any, ...]


def copy_table(name: str, dst: Path) -> Path:
    """A private copy of corpus table ``name`` at ``dst`` (data files included)."""
    shutil.copytree(table_path(name), dst, symlinks=True)
    return dst


def fresh(root: Path) -> DeltaLog:
    """A new reader with nothing cached, as the next process would be."""
    return DeltaLog(LocalLogStore(str(root)), str(root), auto_checkpoint=False)


def state(snap: Snapshot) -> State:
    files = snap.files()
    dvs = files.column("deletion_vector").to_pylist()
    live = sorted(
        (p, s, None if d is None else (d["storage_type"], d["path_or_inline_dv"], d["offset"]))
        for p, s, d in zip(files.column("path").to_pylist(), files.column("size").to_pylist(), dvs, strict=True)
    )
    tomb = sorted(snap.tombstones().column("path").to_pylist())
    m = snap.metadata
    meta = (m.id, m.schema_string, tuple(m.partition_columns), tuple(sorted(m.configuration.items())))
    txns = tuple(sorted((k, t.version) for k, t in snap.txns.items()))
    return (snap.version, tuple(live), tuple(tomb), snap.protocol, meta, txns)


def log_file(root: Path, name: str) -> Path:
    return root / LOG / name


def checkpoint_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / LOG).iterdir() if ".checkpoint." in p.name and p.is_file() and p.name[0] != ".")


# ---------------------------------------------------------------------------------------------- parquet


def rewrite_column(path: Path, column: str, fn: Callable[[pa.Array], pa.Array | None]) -> None:
    """Replace top-level ``column`` of a parquet file by ``fn(old)``; ``None`` drops the column."""
    table = pq.read_table(path)
    idx = table.schema.get_field_index(column)
    assert idx >= 0, f"{path.name} has no {column} column"
    new = fn(table.column(idx).combine_chunks())
    table = table.remove_column(idx) if new is None else table.set_column(idx, column, new)
    pq.write_table(table, path)


def rewrite_field(path: Path, column: str, field: str, fn: Callable[[pa.Array], pa.Array | None]) -> None:
    """Replace ``column.field`` (a struct child) by ``fn(old child)``; ``None`` drops the field."""

    def change(struct: pa.Array) -> pa.Array:
        names = [f.name for f in struct.type]
        assert field in names, f"{path.name}: {column} has no field {field}"
        children, fields = [], []
        for i, f in enumerate(struct.type):
            child = struct.field(i)
            if f.name == field:
                new = fn(child)
                if new is None:
                    continue
                child, f = new, pa.field(f.name, new.type)
            children.append(child)
            fields.append(f)
        return pa.StructArray.from_arrays(children, fields=fields, mask=struct.is_null())

    rewrite_column(path, column, change)


def as_type(t: pa.DataType) -> Callable[[pa.Array], pa.Array]:
    """The values cast to ``t`` where Arrow can, else rendered as text first (a column of another type)."""

    def cast(child: pa.Array) -> pa.Array:
        try:
            return child.cast(t)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            if pa.types.is_string(t):
                return pa.array([None if v is None else str(v) for v in child.to_pylist()], t)
            return pa.array([None if v is None else len(str(v)) for v in child.to_pylist()], t)

    return cast


def null_first_set(child: pa.Array) -> pa.Array:
    """The child with its first non-null value made null."""
    valid = pc.is_valid(child).to_pylist()
    first = valid.index(True)
    mask = pa.array([i == first for i in range(len(child))])
    return pc.if_else(mask, pa.nulls(len(child), child.type), child)


# ---------------------------------------------------------------------------------------------- not files


def replace_with(path: Path, kind: str) -> None:
    """Put something that is not a file where ``path`` is: a directory, a FIFO, or a link to itself."""
    path.unlink()
    if kind == "directory":
        path.mkdir()
    elif kind.lower() == "fifo":
        os.mkfifo(path)
    else:
        os.symlink(path.name, path)  # a link to itself: ELOOP


def replacer(kind: str) -> Callable[[Path], None]:
    return lambda path: replace_with(path, kind)


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()`` in a thread; a hang fails the caller instead of stalling it (the thread is left behind)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed to the calling thread
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise AssertionError(f"no answer within {seconds} s (a hang, e.g. a FIFO opened for reading)")
    if "error" in out:
        raise out["error"]
    return out["value"]


# ---------------------------------------------------------------------------------------------- JSON


def edit_lines(path: Path, fn: Callable[[dict[str, Any]], dict[str, Any] | bytes | None]) -> None:
    """Rewrite each JSON line of ``path`` with ``fn(obj)``: an object, raw bytes, or None to keep it."""
    out = []
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        new = fn(orjson.loads(raw))
        out.append(raw if new is None else new if isinstance(new, bytes) else orjson.dumps(new))
    path.write_bytes(b"\n".join(out) + b"\n")


__all__ = [
    "LOG",
    "as_type",
    "checkpoint_files",
    "copy_table",
    "edit_lines",
    "fresh",
    "log_file",
    "null_first_set",
    "replace_with",
    "replacer",
    "rewrite_column",
    "rewrite_field",
    "state",
    "within",
]
