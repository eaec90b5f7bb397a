"""A writer never commits into a table deleted and created again under it (issue 23, docs/commits.md).

The old table has versions 0..3 (one column, unpartitioned). It is deleted and created again at the same path
with another schema and partitioning, as long (0..3) or longer (0..4, 0..5). A writer that read the old table
then makes a blind, unpartitioned append: warm (its cached snapshot young, from its own commit or from a load,
so it sends the commit without listing first) or cold (a transaction that listed the old table before it was
replaced). Whatever the shape, it gets a typed error and nothing of its commit stays in the new table, which
``deltalake`` (and duckdb, on local disk) go on reading as it was; its next transaction reads the new table.

On local disk, a moto S3 server and Azurite: the object stores' listing times are seconds, which is why each
version of the new table differs from the old one's in size too (another schema, partition values).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog import CommitNotReachableError, DeltaLog, MetadataChangedError, Transaction
from deltalog import actions as A
from deltalog.storage.uri import store_for
from tests import tiers
from tests.integration.datafiles import assert_peers_agree
from tests.storage.servers import BUCKET, CONTAINER, azure_options, azurite_server, moto_server, s3_options, unique

__all__ = ["azurite_server", "moto_server"]

OLD_SCHEMA = pa.schema([("id", pa.int64())])
NEW_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string())])
DAY_S = 86_400


@dataclass
class Place:
    """A table location on one store; on local disk every add has a real parquet file behind it."""

    uri: str
    options: dict[str, Any] | None
    local: Path | None

    def log(self, clock: Callable[[], float] = time.time) -> DeltaLog:
        return DeltaLog.for_table(self.uri, self.options, clock=clock, auto_checkpoint=False)

    def _file(self, rel: str, table: pa.Table) -> int:
        if self.local is None:
            return 1
        (self.local / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, self.local / rel)
        return (self.local / rel).stat().st_size

    def old_add(self, name: str) -> A.Add:
        rel = f"{name}.parquet"
        size = self._file(rel, pa.table({"id": pa.array([1], pa.int64())}))
        return A.Add(path=rel, partition_values={}, size=size, modification_time=0, data_change=True)

    def new_add(self, name: str) -> A.Add:
        rel = f"part=x/{name}.parquet"
        size = self._file(rel, pa.table({"id": pa.array([1], pa.int64()), "name": ["n"]}))
        return A.Add(path=rel, partition_values={"part": "x"}, size=size, modification_time=0, data_change=True)

    def drop(self) -> None:
        """Delete the table's log, as dropping a table at a path does."""
        if self.local is not None:
            shutil.rmtree(self.local / "_delta_log")
            return
        store = store_for(self.uri, self.options)
        for info in list(store.list_from("_delta_log/")):
            store.delete(f"_delta_log/{info.name}")

    def log_names(self) -> dict[str, int]:
        store = store_for(self.uri, self.options)
        return {info.name: info.size for info in store.list_from("_delta_log/")}

    def live(self) -> set[str]:
        return set(self.log().snapshot().files().column("path").to_pylist())

    def assert_peers_read_it(self) -> None:
        """deltalake (and duckdb on local disk) read the latest version as deltalog does."""
        if self.local is not None:
            assert_peers_agree(self.local)
            return
        if not self.uri.startswith("s3://"):
            return  # deltalake's Azure client takes no connection string for an emulator on a random port
        from deltalake import DeltaTable

        dt = DeltaTable(self.uri, storage_options=self.options)
        assert dt.version() == self.log().snapshot().version
        assert set(dt.get_add_actions(flatten=True).column("path").to_pylist()) == self.live()


@pytest.fixture(params=tiers.backends("local", "s3", "azure"))
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    if request.param == "local":
        yield Place(str(tmp_path), None, tmp_path)
    elif request.param == "s3":
        endpoint = request.getfixturevalue("moto_server").endpoint
        yield Place(f"s3://{BUCKET}/{unique()}", s3_options(endpoint), None)
    else:
        endpoint = request.getfixturevalue("azurite_server").endpoint
        yield Place(f"abfs://{CONTAINER}/{unique()}", azure_options(endpoint), None)


def old_table(place: Place) -> DeltaLog:
    """Versions 0..3 of the old table, written by the writer under test (so its last commit is young)."""
    log = place.log()
    log.create(OLD_SCHEMA)
    for i in range(3):
        log.start_transaction().commit([place.old_add(f"old{i}")])
    return log


def recreate(place: Place, last: int, *, change_metadata: bool = False) -> set[str]:
    """Drop the table and create another, partitioned, with versions 0..``last``; its live files.

    With ``change_metadata`` its last version sets a table property (a ``metaData`` action of the new id).
    """
    place.drop()
    other = place.log()
    other.create(NEW_SCHEMA, partition_columns=["part"])
    for i in range(last - (1 if change_metadata else 0)):
        other.start_transaction().commit([place.new_add(f"new{i}")])
    if change_metadata:
        other.set_properties({"delta.appendOnly": "false"})
    assert other.snapshot().version == last
    return place.live()


def writer(place: Place, how: str) -> tuple[DeltaLog, Callable[[], Transaction]]:
    """The old table and a writer that read it: ``how`` says what the transaction starts from.

    ``commit`` / ``load``: warm, its snapshot young from its own commits or from a load; the transaction
    starts after the table was replaced (the returned function), without listing. ``cold``: a writer whose
    clock makes nothing young, its transaction started (listing the old table) before the replacement.
    """
    log = old_table(place)
    if how == "commit":
        return log, log.start_transaction
    if how == "load":
        loaded = place.log()
        assert loaded.snapshot().version == 3
        return loaded, loaded.start_transaction
    cold = place.log(clock=lambda: time.time() + 40 * DAY_S)
    txn = cold.start_transaction()
    assert txn.read_version == 3
    return cold, lambda: txn


@pytest.mark.parametrize("how", ["commit", "load", "cold"])
@pytest.mark.parametrize("last", [3, 4, 5], ids=["as-long", "one-longer", "two-longer"])
def test_a_blind_append_never_lands_in_a_recreated_table(place: Place, how: str, last: int) -> None:
    log, start = writer(place, how)
    live = recreate(place, last)
    before = place.log_names()

    with pytest.raises(CommitNotReachableError, match=r"deleted and (created again|recreated)"):
        start().commit([place.old_add("ours")])

    assert place.log_names() == before  # our commit, if it was written, was withdrawn
    assert place.live() == live
    place.assert_peers_read_it()
    # the writer's next transaction reads the new table and commits onto it
    result = log.start_transaction().commit([place.new_add("next")])
    assert result.version == last + 1
    assert place.live() == live | {"part=x/next.parquet"}
    place.assert_peers_read_it()


@pytest.mark.parametrize("how", ["commit", "load", "cold"])
def test_a_recreated_table_seen_as_a_metadata_change_is_a_conflict_never_a_retry(place: Place, how: str) -> None:
    """The new table's winner carries its own ``metaData`` (another table id): a young writer meets it as
    the winner it reads and fails as Delta Spark does on a metadata change, without the one restart a blind
    append gets on a metadata change of its own table; a cold one's listing already shows the table replaced."""
    _, start = writer(place, how)
    live = recreate(place, 4, change_metadata=True)
    before = place.log_names()

    with pytest.raises((MetadataChangedError, CommitNotReachableError)) as info:
        start().commit([place.old_add("ours")])
    if how == "cold":
        assert isinstance(info.value, CommitNotReachableError)
    else:
        assert isinstance(info.value, MetadataChangedError)
        assert "replaced" in str(info.value) and info.value.winning_version == 4
    assert place.log_names() == before
    assert place.live() == live
    place.assert_peers_read_it()
