"""``DeltaLog.changes`` on every corpus table with change data, over every version range, against ``deltalake``'s
``load_cdf`` (rows compared as multisets per version), or against the rows PROTOCOL.md defines
(:mod:`tests.integration.change_oracle`) where deltalake cannot read the table.

The tables are found, not listed: every corpus table whose commits hold a ``cdc`` action or a ``metaData`` with
``delta.enableChangeDataFeed``, or whose latest metadata (per the manifest) enables it. Without a corpus there
are no cases.

Where the two readers part, each case is here with its reason:

* ``deltalake`` 1.6.6 does not percent-decode the paths of ``add`` and ``cdc`` actions in ``load_cdf``: the
  delta-kernel-rs tables named ``test%25file%25prefix-...`` (the file ``test%file%prefix-...`` on disk) fail
  there with "Object at location ... not found". Their rows are checked against the PROTOCOL oracle instead.
* deltalog refuses what Delta Spark refuses and deltalake reads: ``table-with-cdf`` versions 3..4, whose latest
  schema made ``id`` NOT NULL (``IncompatibleSchemaChangeError``, Delta Spark's ``isReadCompatible`` with
  ``forbidTightenNullability``), and ``deltalog-getChanges`` from version 2, a version without change data feed
  (``ChangeDataNotRecordedError``: Delta Spark checks the start version's metadata, deltalake only version 0's).
* ``_commit_timestamp``: deltalake gives ``commitInfo.timestamp``, deltalog the time time travel resolves the
  version by (file modification times made monotonic here, the corpus having no in-commit timestamps), so it is
  compared with ``history()`` instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from deltalog import DeltaLog, DeltaLogError
from deltalog.errors import ChangeDataNotRecordedError, ChangeReadError, IncompatibleSchemaChangeError
from tests.corpus import corpus_entries, table_path
from tests.integration.change_oracle import PerVersion, per_version, protocol_rows

#: deltalake cannot read these tables' change data: the reason, and the oracle is used instead
LAKE_CANNOT_READ = {
    "delta-kernel-rs/cdf-table-backtick-column-names": "load_cdf does not percent-decode add paths",
    "delta-kernel-rs/cdf-table-delete-conditional-all-rows": "load_cdf does not percent-decode add and cdc paths",
    "delta-kernel-rs/cdf-table-partitioned": "load_cdf does not percent-decode add and cdc paths",
}
#: ranges deltalake reads and deltalog refuses as Delta Spark does: (table, first start) -> the error
STRICTER = {
    ("delta-kernel-rs/table-with-cdf", 3): IncompatibleSchemaChangeError,  # id became NOT NULL at version 4
    ("delta/deltalog-getChanges", 2): ChangeDataNotRecordedError,  # version 2 has no change data feed
}


def _enables(configuration: Any) -> bool:
    return isinstance(configuration, dict) and str(configuration.get("delta.enableChangeDataFeed")).lower() == "true"


def _has_change_data(entry: dict[str, Any]) -> bool:
    latest = ((entry.get("expected") or {}).get("latest") or {}).get("metadata") or {}
    if _enables(latest.get("configuration")):
        return True
    for commit in sorted((table_path(entry["name"]) / "_delta_log").glob("*.json")):
        for line in commit.read_text(errors="replace").splitlines():
            try:
                action = json.loads(line)
            except ValueError:
                continue
            if not isinstance(action, dict):
                continue
            meta = action.get("metaData")
            if "cdc" in action or (isinstance(meta, dict) and _enables(meta.get("configuration"))):
                return True
    return False


CDF_TABLES = [e["name"] for e in corpus_entries() if _has_change_data(e)]


def _deltalog(root: Path, start: int, end: int) -> PerVersion | DeltaLogError:
    try:
        return per_version(DeltaLog.for_table(root).changes(start, end).read_all())
    except DeltaLogError as exc:
        return exc


def _deltalake(root: Path, start: int, end: int) -> PerVersion | Exception:
    try:
        return per_version(
            pa.table(DeltaTable(str(root)).load_cdf(starting_version=start, ending_version=end).read_all())
        )
    except Exception as exc:  # deltalake's own error classes, whatever they are
        return exc


def _timestamps_are_time_travels(root: Path, start: int, end: int) -> None:
    log = DeltaLog.for_table(root)
    times = {h.version: h.timestamp for h in log.history()}
    rows = log.changes(start, end).read_all().select(["_commit_version", "_commit_timestamp"]).to_pylist()
    for row in rows:
        ms = int(row["_commit_timestamp"].timestamp() * 1000)
        assert ms == times[row["_commit_version"]], row


@pytest.mark.corpus
@pytest.mark.parametrize("name", CDF_TABLES)
def test_changes_over_every_range_equal_the_reference(name: str) -> None:
    root = table_path(name)
    latest = DeltaLog.for_table(root).latest_version()
    compared = 0
    for start in range(latest + 1):
        for end in range(start, latest + 1):
            ours = _deltalog(root, start, end)
            where = f"{name} versions {start}..{end}"
            if name in LAKE_CANNOT_READ:
                assert ours == protocol_rows(root, start, end), where
                compared += 1
                continue
            theirs = _deltalake(root, start, end)
            stricter = next((err for (t, s), err in STRICTER.items() if t == name and start >= s), None)
            if isinstance(theirs, Exception):
                assert isinstance(ours, DeltaLogError), f"{where}: deltalake refused ({theirs}), deltalog read it"
            elif isinstance(ours, DeltaLogError):
                assert stricter is not None and isinstance(ours, stricter), f"{where}: {ours!r}"
                assert isinstance(ours, ChangeReadError) and f"version {ours.version}" in str(ours)
            else:
                assert ours == theirs, where
                assert ours == protocol_rows(root, start, end), where  # deltalake is right on DVs here too
                _timestamps_are_time_travels(root, start, end)
                compared += 1
    assert compared > 0 or name in {t for t, _ in STRICTER}
