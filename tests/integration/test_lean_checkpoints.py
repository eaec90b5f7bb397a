"""Checkpoint files that carry only the action columns they hold, as writers that write each part (or sidecar)
from its own rows leave them: a part of protocol, metaData and txns with no ``add`` column, a part of adds
alone, a part of tombstones alone.

PROTOCOL.md ("Checkpoints"): every action is a column of struct type, and "any missing column should be
treated as null". Such a checkpoint is whole: read from it alone when the commits before it are gone, and it
wins over commits that disagree with it, as for every other reader. Only a column that is present with a type
the protocol does not allow makes it unusable, a :class:`CorruptLogError` naming the file. Each table here is
built by deltalog with real data files, checkpointed by deltalog, then rewritten lean with pyarrow.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import deltalog.checkpoint.v2 as v2
from deltalog import DeltaLog
from deltalog.core.paths import Kind
from deltalog.errors import CorruptLogError
from tests.integration.test_checkpoint_interop import (
    V2_CONF,
    Builder,
    View,
    assert_all_readers_agree,
    deltalog_view,
    drop_commits_before,
    duck,  # noqa: F401 - the module's duckdb connection fixture
)

pytestmark = pytest.mark.interop

#: which action kinds go into which part of a lean three-part checkpoint
THREE_PARTS = ({"protocol", "metaData", "txn", "domainMetadata"}, {"add"}, {"remove"})


def kinds(table: pa.Table) -> list[str]:
    """The action each row of a checkpoint holds (its one non-null column)."""
    valid = {name: pc.is_valid(table.column(name)).to_pylist() for name in table.column_names}
    return [next(n for n in table.column_names if valid[n][i]) for i in range(table.num_rows)]


def lean(table: pa.Table) -> pa.Table:
    """``table`` without the action columns none of its rows holds."""
    return table.select([n for n in table.column_names if table.column(n).null_count < table.num_rows])


def rewrite_lean(
    files: list[Path], groups: tuple[set[str], ...], keep: Callable[[dict], bool] = lambda r: True
) -> None:
    """Spread the rows of ``files`` (a checkpoint's parts) over them again, part ``i`` holding the actions of
    ``groups[i]`` and only their columns; ``keep`` may drop rows (a checkpoint that disagrees with its commits)."""
    rows = pa.concat_tables([pq.read_table(f) for f in files], promote_options="permissive")
    row_kinds = kinds(rows)
    wanted = [i for i, k in enumerate(row_kinds) if keep(rows.slice(i, 1).to_pylist()[0])]
    for path, group in zip(files, groups, strict=True):
        picked = rows.take([i for i in wanted if row_kinds[i] in group])
        pq.write_table(lean(picked), path)


def resize_sidecars(manifest: Path) -> None:
    """Set each ``sidecar`` row's ``sizeInBytes`` to its rewritten file's size (readers fetch by that size)."""
    table = pq.read_table(manifest)
    rows = table.column("sidecar").to_pylist()
    where = manifest.parent / "_sidecars"
    fixed = [r if r is None else {**r, "sizeInBytes": (where / r["path"]).stat().st_size} for r in rows]
    column = pa.array(fixed, table.schema.field("sidecar").type)
    pq.write_table(table.set_column(table.column_names.index("sidecar"), "sidecar", column), manifest)


def test_lean_parts_are_read_from_the_checkpoint_alone(tmp_path: Path, duck: duckdb.DuckDBPyConnection) -> None:  # noqa: F811
    b = Builder(tmp_path / "t", True, {})
    b.history()
    result = b.log.checkpoint(parts=3)
    b.append(2, app=("ingest", 5))
    expected = deltalog_view(b.root)
    parts = [b.root / f for f in result.files]
    rewrite_lean(parts, THREE_PARTS)
    names = [set(pq.ParquetFile(p).schema_arrow.names) for p in parts]
    assert names == [{"protocol", "metaData", "txn"}, {"add"}, {"remove"}], names
    drop_commits_before(b.root, result.version)
    snap = DeltaLog.for_table(b.root, auto_checkpoint=False).snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.kind is Kind.MULTIPART
    assert snap.app_version("ingest") == 5 and snap.app_version("backfill") == 1
    assert snap.tombstones().num_rows == DeltaLog.for_table(b.root).snapshot(version=9).tombstones().num_rows > 0
    assert_all_readers_agree(duck, b.root, expected, lake_rows=True)


def test_a_lean_checkpoint_wins_over_commits_that_disagree(tmp_path: Path, duck: duckdb.DuckDBPyConnection) -> None:  # noqa: F811
    """The commits are all there, but the checkpoint leaves out one live file: every reader reads version 9
    from the checkpoint, so every reader leaves it out (before, deltalog alone rebuilt it from the commits)."""
    b = Builder(tmp_path / "t", False, {})
    b.history()
    result = b.log.checkpoint(parts=3)
    full = deltalog_view(b.root)
    dropped = sorted(full.files)[0]
    rewrite_lean(
        [b.root / f for f in result.files], THREE_PARTS, keep=lambda r: (r["add"] or {}).get("path") != dropped
    )
    files = {p: v for p, v in full.files.items() if p != dropped}
    records = {p: n for p, n in full.records.items() if p != dropped}
    expected = View(full.version, files, records, full.rows - full.records[dropped])
    snap = DeltaLog.for_table(b.root).snapshot()
    assert snap.segment.checkpoint is not None and snap.num_files == len(files)
    assert_all_readers_agree(duck, b.root, expected, lake_rows=True)


def test_a_single_file_checkpoint_without_an_add_column_is_an_empty_table(
    tmp_path: Path,
    duck: duckdb.DuckDBPyConnection,  # noqa: F811
) -> None:
    b = Builder(tmp_path / "t", False, {})
    b.append(3)
    b.append(2)
    live = list(b.log.snapshot().add_actions())
    b.log.start_transaction().commit([a.remove(b.log.now_ms()) for a in live], operation="DELETE")
    result = b.log.checkpoint()
    (path,) = [b.root / f for f in result.files]
    pq.write_table(lean(pq.read_table(path)), path)
    assert "add" not in pq.ParquetFile(path).schema_arrow.names
    drop_commits_before(b.root, result.version)
    snap = DeltaLog.for_table(b.root).snapshot()
    assert snap.num_files == 0 and snap.tombstones().num_rows == len(live)
    assert_all_readers_agree(duck, b.root, View(result.version, {}, {}, 0), lake_rows=True)


def test_lean_v2_sidecars_are_read(
    tmp_path: Path,
    duck: duckdb.DuckDBPyConnection,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sidecar holds adds and removes only (PROTOCOL "Sidecar Files"); one holding removes alone may leave out
    the ``add`` column as well."""
    monkeypatch.setattr(v2, "SIDECAR_ROWS", 4)
    b = Builder(tmp_path / "t", True, V2_CONF)
    b.history()
    result = b.log.checkpoint()
    assert result.kind == "v2"
    b.append(1)
    expected = deltalog_view(b.root)
    sidecars = [b.root / f for f in result.files[1:]]
    assert len(sidecars) >= 2
    rows = pa.concat_tables([pq.read_table(f) for f in sidecars])
    adds = [i for i, k in enumerate(kinds(rows)) if k == "add"]
    chunks = [adds[i :: len(sidecars) - 1] for i in range(len(sidecars) - 1)]
    for path, take in zip(sidecars[:-1], chunks, strict=True):
        pq.write_table(lean(rows.take(take)), path)
    removes = [i for i, k in enumerate(kinds(rows)) if k == "remove"]
    pq.write_table(lean(rows.take(removes)), sidecars[-1])
    assert pq.ParquetFile(sidecars[-1]).schema_arrow.names == ["remove"]
    resize_sidecars(b.root / result.files[0])
    drop_commits_before(b.root, result.version)
    snap = DeltaLog.for_table(b.root, auto_checkpoint=False).snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.kind is Kind.UUID_CHECKPOINT
    assert snap.tombstones().num_rows == len(removes) > 0
    # deltalake refuses to scan data of a v2Checkpoint table (see test_checkpoint_interop): rows from its files
    assert_all_readers_agree(duck, b.root, expected, lake_rows=False)


def test_a_part_with_a_column_of_the_wrong_type_is_a_typed_error_naming_it(tmp_path: Path) -> None:
    b = Builder(tmp_path / "t", False, {})
    b.history()
    result = b.log.checkpoint(parts=3)
    parts = [b.root / f for f in result.files]
    rewrite_lean(parts, THREE_PARTS)
    adds = pq.read_table(parts[1])
    paths = pc.struct_field(adds.column("add"), "path")
    pq.write_table(pa.table({"add": paths}), parts[1])  # an add column of strings, not structs
    drop_commits_before(b.root, result.version)
    with pytest.raises(CorruptLogError, match="column add is string, not a struct") as err:
        DeltaLog.for_table(b.root).snapshot()
    assert err.value.path is not None and err.value.path.endswith(parts[1].name)
    assert parts[1].name in str(err.value)
