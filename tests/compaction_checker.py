"""An independent checker of log compaction files, written from PROTOCOL.md ("Log Compaction Files", "Action
Reconciliation") for the tests, **not** from deltalog: it imports nothing from ``deltalog`` (a test enforces
that), so a bug in deltalog's reconciliation cannot hide in the verdict.

Delta Spark reads compaction files by default instead of the commits they cover, so every file a test writes
is held to the protocol here, against the raw JSON of its commits:

* the name is ``<x>.<y>.compacted.json``, both 20 digits, ``y > x``, and every commit ``x..y`` is there;
* one action per line, each line a JSON object with exactly one key, no ``commitInfo`` (nor ``cdc`` or any
  action that is no table state), no two lines for the same thing;
* the content is the reconciliation of the commits: for each file key ``(path, deletion vector id)`` the
  newest add or remove (a remove stays: it is a tombstone for adds older than ``x``), the newest protocol and
  metaData, the newest txn per app id and domainMetadata per domain (a removed one stays), each body equal to
  the one the commit wrote.

The reference is deliberately plain: a dict per identity, overwritten in log order.

:func:`usable_alone` is the reader's side: what a reader that has not read the commits can tell of a file
another engine wrote (PROTOCOL.md lets readers use these files optionally, so one that is not reconciled is
read around, not trusted).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson

NAME = re.compile(r"([0-9]{20})\.([0-9]{20})\.compacted\.json")
STATE = ("protocol", "metaData", "txn", "domainMetadata")
KEPT = frozenset({"add", "remove", *STATE})


def _path_key(path: str, root: str | None) -> str:
    """A file's identity as the protocol reads a path: a URI reference, decoded once; an absolute spelling of a
    file under the table root is the same file as the relative one."""
    decoded = unquote(path.removeprefix("file://").removeprefix("file:"))
    if root is not None:
        decoded = decoded.removeprefix(root.rstrip("/") + "/")
    return decoded


def _dv_id(dv: Any) -> str | None:
    """PROTOCOL "Deletion Vectors", uniqueId: storageType + pathOrInlineDv, plus ``@offset`` when present."""
    if not isinstance(dv, dict) or not dv:
        return None
    base = f"{dv.get('storageType') or ''}{dv.get('pathOrInlineDv') or ''}"
    return base if dv.get("offset") is None else f"{base}@{dv['offset']}"


def identity(key: str, body: dict[str, Any], root: str | None) -> tuple[str, Any]:
    if key in ("add", "remove"):
        return ("file", (_path_key(body["path"], root), _dv_id(body.get("deletionVector"))))
    if key == "txn":
        return ("txn", body.get("appId"))
    if key == "domainMetadata":
        return ("domainMetadata", body.get("domain"))
    return (key, None)


def reference(commits: list[bytes], root: str | None) -> dict[tuple[str, Any], tuple[str, Any]]:
    """What commits ``x..y`` leave: identity -> (action key, body), the newest in log order."""
    out: dict[tuple[str, Any], tuple[str, Any]] = {}
    for data in commits:
        for line in data.splitlines():
            if not line.strip():
                continue
            obj = orjson.loads(line)
            if not isinstance(obj, dict):
                continue
            for key, body in obj.items():
                if key in KEPT and isinstance(body, dict):
                    out[identity(key, body, root)] = (key, body)
    return out


def usable_alone(data: bytes, root: str | None = None) -> bool:
    """Whether a reader may read the file in place of its commits, judged on the file alone, as a reader that
    has not read the commits must judge it: every line a JSON object, and no two of the actions reconciliation
    keeps for one identity (a file that has them was not reconciled; read in order it would not give the
    commits' state). ``commitInfo``, ``cdc`` and unknown actions say nothing about the state and are passed
    over here, as replay passes over them (their presence is a writer's fault :func:`check_bytes` reports)."""
    seen: set[tuple[str, Any]] = set()
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(obj, dict):
            return False
        for key, body in obj.items():
            if key not in KEPT or body is None:
                continue
            if not isinstance(body, dict) or (key in ("add", "remove") and not isinstance(body.get("path"), str)):
                return False
            ident = identity(key, body, root)
            if ident in seen:
                return False
            seen.add(ident)
    return True


def check_bytes(name: str, data: bytes, commits: list[bytes], root: str | None = None) -> list[str]:
    """The problems of compaction file ``name`` holding ``data``, given the raw bytes of its commits."""
    problems: list[str] = []
    m = NAME.fullmatch(name)
    if m is None:
        return [f"{name}: not a compaction file name (<20 digits>.<20 digits>.compacted.json)"]
    start, end = int(m[1]), int(m[2])
    if end <= start:
        problems.append(f"{name}: end {end} is not above start {start}")
    if len(commits) != end - start + 1:
        problems.append(f"{name}: {len(commits)} commits given for versions {start}..{end}")
    got: dict[tuple[str, Any], tuple[str, Any]] = {}
    for n, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            if n != len(data.split(b"\n")):
                problems.append(f"{name} line {n}: blank line")
            continue
        obj = orjson.loads(line)
        if not isinstance(obj, dict) or len(obj) != 1:
            problems.append(f"{name} line {n}: not one action per line: {line[:80]!r}")
            continue
        ((key, body),) = obj.items()
        if key not in KEPT:
            problems.append(f"{name} line {n}: {key} does not belong in a compaction file")
            continue
        ident = identity(key, body, root)
        if ident in got:
            problems.append(f"{name} line {n}: a second action for {ident}")
        got[ident] = (key, body)
    want = reference(commits, root)
    for ident in sorted(set(want) | set(got), key=repr):
        if want.get(ident) != got.get(ident):
            problems.append(f"{name}: {ident}: commits leave {want.get(ident)!r}, the file holds {got.get(ident)!r}")
    if not data.endswith(b"\n"):
        problems.append(f"{name}: the last line has no newline")
    return problems


def check_table(root: Path) -> tuple[int, list[str]]:
    """Every compaction file in ``root``'s ``_delta_log``: how many were checked, and their problems."""
    log = root / "_delta_log"
    problems: list[str] = []
    names = sorted(p.name for p in log.iterdir() if p.name.endswith(".compacted.json"))
    for name in names:
        m = NAME.fullmatch(name)
        if m is None:
            problems.append(f"{name}: not a compaction file name")
            continue
        start, end = int(m[1]), int(m[2])
        files = [log / f"{v:020d}.json" for v in range(start, end + 1)]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            problems.append(f"{name}: commits {missing} are not there to check it against")
            continue
        problems += check_bytes(name, (log / name).read_bytes(), [f.read_bytes() for f in files], str(root))
    return len(names), problems


def assert_valid(root: Path) -> int:
    """:func:`check_table`, failing with every problem; the number of files checked."""
    count, problems = check_table(root)
    assert not problems, "\n".join(problems)
    return count


__all__ = ["assert_valid", "check_bytes", "check_table", "identity", "reference", "usable_alone"]
