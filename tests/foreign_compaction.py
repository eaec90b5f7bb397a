"""Log compaction files as other engines wrote them, for the tests and the conformance runner's ``--compaction``
mode. Written from the issue's account of a delta-kernel-rs table and from PROTOCOL.md, **not** from deltalog:
it imports nothing from ``deltalog``.

delta-kernel-rs reconciled a range newest commit first and wrote what it met in that order; the files of
its test table list the actions of the newest commit first, keep the superseded adds and removes of a file
(the add a later remove cancels, the remove a later re-add cancels) and carry the range's ``cdc`` actions.
Read in file order, such a file brings removed files back. :func:`kernel_rs_shaped` writes that shape from
the raw bytes of the commits; :func:`not_reconciled_metadata` and :func:`torn` write two other ways a file
can be unusable.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import orjson

LOG = "_delta_log"


def compaction_name(start: int, end: int) -> str:
    return f"{start:020d}.{end:020d}.compacted.json"


def _actions(data: bytes) -> list[tuple[str, Any]]:
    """The actions of a commit, in order (a line that is not an object holds none)."""
    out: list[tuple[str, Any]] = []
    for line in data.splitlines():
        obj = orjson.loads(line) if line.strip() else None
        if isinstance(obj, dict):
            out += [(k, v) for k, v in obj.items() if v is not None]
    return out


def _encode(actions: list[tuple[str, Any]]) -> bytes:
    return b"".join(orjson.dumps({k: v}) + b"\n" for k, v in actions)


def _cdc_for(key: str, body: dict[str, Any]) -> dict[str, Any]:
    """A change-data action as a writer with CDF on puts beside a file change (the file need not exist: replay
    never reads one)."""
    return {
        "path": f"_change_data/cdc-{key}-{zlib.crc32(str(body.get('path')).encode()):08x}.parquet",
        "partitionValues": body.get("partitionValues") or {},
        "size": 100,
        "dataChange": False,
    }


def kernel_rs_shaped(commits: list[bytes], cdc: bool = True) -> bytes:
    """The compaction file of ``commits`` (ascending, contiguous) in the shape delta-kernel-rs wrote: newest
    commit first, every add and remove kept (superseded ones too), the newest protocol, metaData, txn per app
    and domainMetadata per domain once (first met, newest first), no commitInfo, and with ``cdc`` a change
    action beside every add and remove the range holds."""
    out: list[tuple[str, Any]] = []
    seen_state: set[tuple[str, Any]] = set()
    for data in reversed(commits):
        for key, body in _actions(data):
            if key == "commitInfo":
                continue
            if key in ("add", "remove"):
                out.append((key, body))
                if cdc and isinstance(body, dict):
                    out.append(("cdc", _cdc_for(key, body)))
                continue
            named = {"txn": "appId", "domainMetadata": "domain"}.get(key)
            ident = (key, body.get(named) if isinstance(body, dict) and named else None)
            if ident not in seen_state:
                seen_state.add(ident)
                out.append((key, body))
    return _encode(out)


def has_superseded(commits: list[bytes]) -> bool:
    """Whether the range names one file key twice (so a kernel-rs-shaped file of it is not reconciled)."""
    keys: list[Any] = []
    for data in commits:
        for key, body in _actions(data):
            if key in ("add", "remove") and isinstance(body, dict):
                dv = body.get("deletionVector") or {}
                keys.append((body.get("path"), dv.get("storageType"), dv.get("pathOrInlineDv"), dv.get("offset")))
    return len(keys) != len(set(keys))


def not_reconciled_metadata(commits: list[bytes]) -> bytes:
    """A file whose file actions are reconciled but which holds two metaData actions (the range's first one
    last, so read in order it would win)."""
    metas = [body for data in commits for key, body in _actions(data) if key == "metaData"]
    first = metas[0] if metas else {"id": "x", "format": {"provider": "parquet", "options": {}}}
    return _encode([("metaData", dict(first, description="stale")), ("metaData", first)])


def torn(_: list[bytes]) -> bytes:
    """A file cut off mid-line, as an interrupted non-atomic writer leaves it."""
    return b'{"add":{"path":"torn.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataC'


def commit_versions(root: Path) -> list[int]:
    """The versions of the commits in ``root``'s log, ascending."""
    return sorted(int(p.name[:20]) for p in (root / LOG).iterdir() if len(p.name) == 25 and p.name.endswith(".json"))


def contiguous_tail(versions: list[int]) -> list[int]:
    """The newest run of consecutive commit versions (a damaged or cleaned log has gaps)."""
    run = versions[-1:]
    for v in reversed(versions[:-1]):
        if v != run[0] - 1:
            break
        run.insert(0, v)
    return run


def commit_bytes(root: Path, start: int, end: int) -> list[bytes]:
    return [(root / LOG / f"{v:020d}.json").read_bytes() for v in range(start, end + 1)]


def write(root: Path, start: int, end: int, data: bytes) -> Path:
    path = root / LOG / compaction_name(start, end)
    path.write_bytes(data)
    return path


__all__ = [
    "commit_bytes",
    "commit_versions",
    "compaction_name",
    "contiguous_tail",
    "has_superseded",
    "kernel_rs_shaped",
    "not_reconciled_metadata",
    "torn",
    "write",
]
