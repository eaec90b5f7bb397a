"""Spark jobs on object stores without a Hadoop connector: the append, the read and the distributed checkpoint
on a moto S3 server and on Azurite.

The bundled Hadoop client has no ``s3a://``/``abfs://`` file systems, so every byte here goes through
deltalog's own stores on the executors, rebuilt from the storage options shipped with each task (a job that
lost them would talk to the real AWS/Azure endpoints and fail). The reader is the data plane's, so a table with
deletion vectors and one with column mapping (written here, and the real Delta Spark tables of the corpus when
it is there, uploaded to the store) read as ``Snapshot.to_arrow`` reads them locally. Every written table is
read back by ``deltalake`` on the store (with the same options dict, in deltalake's key names) and by duckdb on
a byte-for-byte local copy (duckdb's object-store access needs a network install), where the protocol checker
also reads it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

import deltalog.spark
from deltalog import DeltaLog
from deltalog.errors import CorruptDataError
from deltalog.storage.base import LogStore
from deltalog.storage.options import EMULATOR_ACCOUNT, EMULATOR_KEY
from deltalog.storage.uri import store_for
from tests.corpus import table_path
from tests.peers import duckdb_view
from tests.protocol_checker import assert_valid
from tests.storage.servers import (
    BUCKET,
    CONTAINER,
    Server,
    azurite_server,
    moto_server,
    s3_options,
    unique,
)
from tests.tiers import backends

__all__ = ["azurite_server", "moto_server"]

Location = tuple[str, dict[str, Any]]


@pytest.fixture(params=backends("s3", "azure"))
def new_location(request: pytest.FixtureRequest) -> Callable[[], Location]:
    if request.param == "s3":
        server: Server = request.getfixturevalue("moto_server")
        return lambda: (f"s3://{BUCKET}/{unique('spark')}", s3_options(server.endpoint))
    server = request.getfixturevalue("azurite_server")
    options = {  # deltalake's spelling, so that one dict serves deltalog, its executors and deltalake
        "azure_storage_account_name": EMULATOR_ACCOUNT,
        "azure_storage_account_key": EMULATOR_KEY,
        "azure_storage_endpoint": f"{server.endpoint}/{EMULATOR_ACCOUNT}",
        "allow_http": "true",
    }
    return lambda: (f"abfs://{CONTAINER}/{unique('spark')}", options)


def mirror(location: str, options: dict[str, Any], dest: Path) -> Path:
    """Every object under the table root, copied to ``dest`` (for duckdb, which reads it locally)."""
    store = store_for(location, options)
    for info in store.walk(""):
        target = dest / info.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(store.read(info.name))
    return dest


def upload(source: Path, store: LogStore) -> None:
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        store.put_if_absent(path.relative_to(source).as_posix(), path.read_bytes())


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def batch(spark: Any, day: str, first: int, count: int) -> Any:
    data = [(i, f"city-{i % 3}", float(i) / 4, day) for i in range(first, first + count)]
    return spark.createDataFrame(data, "id long, city string, amount double, day string")


def expected(day: str, first: int, count: int) -> list[tuple[Any, ...]]:
    return [(i, f"city-{i % 3}", float(i) / 4, day) for i in range(first, first + count)]


def test_append_read_and_checkpoint_jobs_run_on_the_object_store(
    spark: Any, new_location: Callable[[], Location], tmp_path: Path
) -> None:
    location, options = new_location()
    first = deltalog.spark.write(
        batch(spark, "2026-11-01", 0, 40).repartition(3), location, partition_by=["day"], storage_options=options
    )
    second = deltalog.spark.write(batch(spark, "2026-11-02", 40, 25), location, storage_options=options)
    assert (first.version, second.version) == (0, 1)  # version 0 creates the table with the first job's files
    assert first.num_rows == 40 and second.num_rows == 25

    cp = deltalog.spark.checkpoint(spark, location, parts=2, storage_options=options)
    assert cp.version == 1 and cp.kind == "multipart" and cp.num_add_files == first.num_files + second.num_files
    third = deltalog.spark.write(batch(spark, "2026-11-03", 65, 5), location, storage_options=options)
    assert third.version == 2

    log = DeltaLog.for_table(location, options)
    assert log.segment().checkpoint is not None and log.segment().checkpoint.version == 1  # type: ignore[union-attr]
    everything = expected("2026-11-01", 0, 40) + expected("2026-11-02", 40, 25) + expected("2026-11-03", 65, 5)
    assert rows(deltalog.spark.read(spark, location, storage_options=options)) == sorted(everything)
    assert rows(deltalog.spark.read(spark, location, version=0, storage_options=options)) == expected(
        "2026-11-01", 0, 40
    )
    narrow = deltalog.spark.read(spark, location, storage_options=options, columns=["day", "id"])
    assert narrow.columns == ["day", "id"]
    assert rows(narrow.where("day = '2026-11-03'")) == [("2026-11-03", i) for i in range(65, 70)]

    lake = DeltaTable(location, storage_options=options)
    assert lake.version() == 2
    got = lake.to_pyarrow_table().sort_by("id")
    assert got.column("id").to_pylist() == list(range(70))
    assert got.column("day").to_pylist() == [r[3] for r in sorted(everything)]
    copy = mirror(location, options, tmp_path / "copy")
    assert_valid(copy)
    duck = duckdb_view(copy)
    assert duck.rows == 70
    assert len(duck.files) == first.num_files + second.num_files + third.num_files


def dv_table(root: Path) -> Path:
    """Deletion vectors (before and after a checkpoint) in a partitioned table, written here: what
    delta/dv-partitioned-with-checkpoint has, for a checkout without the corpus."""
    conf = {"delta.enableDeletionVectors": "true"}
    data = pa.table({"id": pa.array(range(40), pa.int64()), "part": pa.array([i % 3 for i in range(40)], pa.int32())})
    deltalog.write(data, str(root), partition_by=["part"], configuration=conf)
    DeltaLog.for_table(root).delete("id IN (1, 5, 31, 35)")
    DeltaLog.for_table(root).checkpoint()
    DeltaLog.for_table(root).delete("id >= 38")
    assert any(a.deletion_vector for a in DeltaLog.for_table(root).snapshot().add_actions())
    return root


def column_mapped_table(root: Path) -> Path:
    """Column mapping in name mode and a timestamp_ntz column, written here: what
    delta/data-reader-timestamp_ntz-name-mode has, for a checkout without the corpus."""
    times = [dt.datetime(2024, 1, 1, 12) + dt.timedelta(hours=i) for i in range(6)]
    data = pa.table({"id": pa.array(range(6), pa.int64()), "ts": pa.array(times, pa.timestamp("us"))})
    deltalog.write(data, str(root), configuration={"delta.columnMapping.mode": "name"})
    assert DeltaLog.for_table(root).snapshot().physical_names["id"] != "id"
    return root


BUILT: dict[str, Callable[[Path], Path]] = {"built-dv": dv_table, "built-column-mapping": column_mapped_table}


@pytest.mark.parametrize(
    "name",
    [
        *BUILT,
        pytest.param("delta/dv-partitioned-with-checkpoint", marks=pytest.mark.corpus),  # DVs, partitions, a checkpoint
        pytest.param("delta/data-reader-timestamp_ntz-name-mode", marks=pytest.mark.corpus),  # name mode, timestamp_ntz
    ],
)
def test_executors_apply_deletion_vectors_and_column_mapping_on_the_store(
    spark: Any, new_location: Callable[[], Location], name: str, tmp_path: Path
) -> None:
    """Tables written here run everywhere; the same shapes as Delta Spark wrote them run with the corpus."""
    source = BUILT[name](tmp_path / "source") if name in BUILT else table_path(name)
    location, options = new_location()
    upload(source, store_for(location, options))
    local = DeltaLog.for_table(source).snapshot().to_arrow()
    read = deltalog.spark.read(spark, location, storage_options=options)
    got = pa.Table.from_pylist([r.asDict(recursive=True) for r in read.collect()], schema=local.schema)

    def key(r: dict[str, Any]) -> str:
        return repr(sorted(r.items()))

    assert sorted(got.to_pylist(), key=key) == sorted(local.to_pylist(), key=key)
    assert got.num_rows == local.num_rows > 0


def test_a_missing_data_file_fails_the_action_with_the_typed_error_carried(
    spark: Any, new_location: Callable[[], Location]
) -> None:
    location, options = new_location()
    result = deltalog.spark.write(batch(spark, "2026-11-01", 0, 5).coalesce(1), location, storage_options=options)
    store_for(location, options).delete(result.paths[0])
    df = deltalog.spark.read(spark, location, storage_options=options)  # lazy: nothing read yet
    with pytest.raises(Exception) as info:
        df.collect()
    carried = deltalog.spark.carried_error(info.value)
    assert isinstance(carried, CorruptDataError)
    assert result.paths[0].rsplit("/", 1)[-1] in str(carried)
