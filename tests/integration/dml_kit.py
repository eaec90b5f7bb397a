"""Tables for the tests of deltalog.write and log.delete: deletion vectors switched on as another engine would, and
what every reader must agree on afterwards.

deltalog refuses to set ``delta.enableDeletionVectors`` itself (setting a feature's property is not yet wired),
so :func:`enable_deletion_vectors` commits protocol (3, 7) with ``deletionVectors`` and the property by hand,
as Delta Spark's ``ALTER TABLE ... SET TBLPROPERTIES`` would.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.core.log.codec import encode_actions
from tests.integration.restore_kit import duck_rows, lake_rows
from tests.peers import deltalake_view, duckdb_view
from tests.protocol_checker import assert_valid

DV_PROTOCOL = A.Protocol(3, 7, ("deletionVectors",), ("appendOnly", "deletionVectors", "invariants"))


def hand_commit(log: DeltaLog, actions: Sequence[A.Action], operation: str) -> None:
    """Write the next commit file by hand, as another engine would."""
    version = log.latest_version() + 1
    info = A.CommitInfo(timestamp=int(time.time() * 1000), operation=operation, engine_info="test")
    log.store.put_if_absent(f"_delta_log/{version:020d}.json", encode_actions([info, *actions]))


def enable_deletion_vectors(log: DeltaLog, **properties: str) -> None:
    """Protocol (3, 7) with ``deletionVectors`` and ``delta.enableDeletionVectors=true`` (plus ``properties``)."""
    snap = log.snapshot()
    config = {**snap.configuration, "delta.enableDeletionVectors": "true", **properties}
    hand_commit(log, [DV_PROTOCOL, dataclasses.replace(snap.metadata, configuration=config)], "SET TBLPROPERTIES")


def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def deltalog_rows(root: Path) -> list[dict[str, Any]]:
    """What a fresh deltalog scan reads at the latest version."""
    return ordered(DeltaLog.for_table(root).snapshot().to_arrow().to_pylist())


def assert_everyone_reads(root: Path, expected: list[dict[str, Any]] | pa.Table) -> None:
    """The table passes the protocol checker and deltalog, deltalake's SQL path and duckdb's delta_scan all
    read exactly ``expected`` (the peers apply deletion vectors)."""
    rows = ordered(expected.to_pylist() if isinstance(expected, pa.Table) else list(expected))
    assert_valid(root)
    assert deltalog_rows(root) == rows
    assert deltalake_view(root).rows == duckdb_view(root).rows == len(rows)
    assert ordered(lake_rows(root)) == rows
    assert ordered(duck_rows(root)) == rows


def commit_info(root: Path, version: int | None = None) -> dict[str, Any]:
    """The commitInfo of ``version`` (default: the latest), read from the commit file."""
    log = DeltaLog.for_table(root)
    v = log.latest_version() if version is None else version
    for line in (root / "_delta_log" / f"{v:020d}.json").read_bytes().splitlines():
        doc = json.loads(line)
        if "commitInfo" in doc:
            return dict(doc["commitInfo"])
    raise AssertionError(f"version {v} has no commitInfo")


def files_on_disk(root: Path) -> set[str]:
    """Every file under ``root`` outside ``_delta_log`` (data, DV and change files), relative."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


__all__ = [
    "DV_PROTOCOL",
    "assert_everyone_reads",
    "commit_info",
    "deltalog_rows",
    "enable_deletion_vectors",
    "files_on_disk",
    "hand_commit",
    "ordered",
]
