"""VACUUM and RESTORE against log paths that are not in normal form, or that lead out of the table root.

Delta Spark reads every log path as a Hadoop ``Path`` (double slashes collapsed, ``.``/``..`` removed, a
trailing slash dropped) and relativises it against the qualified root. deltalog used to compare the raw
strings and planned to delete the live file of ``file:///root//a.parquet``, ``<root>/./b.parquet`` and
``<root>/sub/../c.parquet``.

Tables are written by ``deltalake`` with real parquet files; one commit's add is rewritten into another
spelling of the same file, which ``deltalake`` lists as a live add. Neither peer can read the data behind
most of these spellings (deltalake 1.6.6 and duckdb resolve a ``file:`` URI in an add against the table root,
and the operating system resolves ``sub/..`` only when ``sub`` exists: their limitations), so after VACUUM
the add is given its plain path back and both peers must read every row.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from deltalog import DeltaLog, DeltaLogError, PathOutsideRootError
from deltalog.storage.faults import FaultyStore
from deltalog.storage.local import LocalLogStore
from tests.peers import PeerView, try_deltalake, try_duckdb

DAY_S = 86_400
LOG = "_delta_log"


def lake_table(root: Path) -> tuple[Path, str]:
    """Two appends by deltalake; returns the root and the store-relative name of version 1's file."""
    write_deltalake(str(root), pa.table({"id": [1, 2]}))
    write_deltalake(str(root), pa.table({"id": [3]}), mode="append")
    (line,) = [json.loads(x) for x in commit_file(root, 1).read_text().splitlines() if '"add"' in x]
    return root, str(line["add"]["path"])


def commit_file(root: Path, version: int) -> Path:
    return root / LOG / f"{version:020d}.json"


def rewrite_add(root: Path, version: int, new_path: str) -> None:
    """Rewrite the path of the (single) add of ``version``; nothing else in the commit changes."""
    lines = [json.loads(x) for x in commit_file(root, version).read_text().splitlines()]
    for line in lines:
        if "add" in line:
            line["add"]["path"] = new_path
    commit_file(root, version).write_text("".join(json.dumps(x) + "\n" for x in lines))


def assert_peers_read(root: Path, rows: int) -> None:
    """Both peers open every live file of the table and count ``rows`` rows."""
    assert DeltaTable(str(root)).to_pyarrow_table().num_rows == rows
    duck = try_duckdb(root)
    assert isinstance(duck, PeerView) and duck.rows == rows, duck


def later(root: Path | str) -> DeltaLog:
    """A DeltaLog on ``root`` a day after its data files were written (they are back-dated a day), so a zero
    retention makes every unreferenced file a candidate. Not a clock a day ahead: vacuum judges ages by the
    store's clock too, which a fast process clock cannot move."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != LOG]
        for name in files:
            path = os.path.join(directory, name)
            then = os.stat(path).st_mtime - DAY_S
            os.utime(path, (then, then))
    return DeltaLog.for_table(root)


FORMS: dict[str, Callable[[str, str], str]] = {
    "double-slash-uri": lambda root, name: f"file://{root}//{name}",
    "dot-segment-uri": lambda root, name: f"file://{root}/./{name}",
    "dot-dot-segment-uri": lambda root, name: f"file://{root}/sub/../{name}",
    "single-slash-uri": lambda root, name: f"file:{root}/{name}",
    "localhost-uri": lambda root, name: f"file://localhost{root}/{name}",
    "encoded-uri": lambda root, name: f"file://{root}/{name.replace('-', '%2D')}",
    "absolute-double-slash": lambda root, name: f"{root}//{name}",
    "relative-dot": lambda root, name: f"./{name}",
    "relative-dot-dot": lambda root, name: f"sub/../{name}",
    "relative-out-and-back": lambda root, name: f"../{Path(root).name}/{name}",
    "trailing-slash": lambda root, name: f"{name}/",
}


@pytest.mark.parametrize("form", list(FORMS))
def test_an_unnormalised_add_path_keeps_its_file(tmp_path: Path, form: str) -> None:
    root, name = lake_table(tmp_path / "t")
    spelled = FORMS[form](str(root), name)
    rewrite_add(root, 1, spelled)
    (root / "orphan.parquet").write_bytes(b"not referenced")
    lake = try_deltalake(root, rows=False)
    assert isinstance(lake, PeerView) and unquote(spelled) in lake.files  # a live add for deltalake

    plan = later(root).vacuum(retention=0, force=True, dry_run=True)
    assert plan.paths == ("orphan.parquet",)
    result = later(root).vacuum(retention=0, force=True, dry_run=False)
    assert result.deleted == ("orphan.parquet",)
    assert later(root).snapshot().num_files == 2
    rewrite_add(root, 1, name)
    assert_peers_read(root, 3)


def test_a_live_file_outside_the_root_is_never_touched_and_protects_nothing_inside(tmp_path: Path) -> None:
    """A shallow-clone-like add: the file lives in another table's directory, named by an absolute path."""
    source, source_name = lake_table(tmp_path / "source")
    root, name = lake_table(tmp_path / "t")
    absolute = f"file://{source}/{source_name}"
    rewrite_add(root, 1, absolute)
    shutil.copy(source / source_name, root / source_name)  # the same name inside the root: not what the log means
    os.remove(root / name)  # version 1's own file is no longer referenced by the rewritten log
    before = (source / source_name).read_bytes()
    lake = try_deltalake(root, rows=False)
    assert isinstance(lake, PeerView) and absolute in lake.files

    result = later(root).vacuum(retention=0, force=True, dry_run=False)
    assert result.deleted == (source_name,)  # the inside copy is an orphan
    assert (source / source_name).read_bytes() == before  # the live file outside was neither listed nor deleted
    assert_peers_read(source, 3)


def test_a_path_that_climbs_out_of_the_root_is_neither_protected_nor_deleted(tmp_path: Path) -> None:
    source, source_name = lake_table(tmp_path / "source")
    root, name = lake_table(tmp_path / "t")
    rewrite_add(root, 1, f"../source/{source_name}")
    os.remove(root / name)
    (root / source_name).write_bytes(b"same name, inside")
    plan = later(root).vacuum(retention=0, force=True, dry_run=True)
    assert plan.paths == (source_name,)
    later(root).vacuum(retention=0, force=True, dry_run=False)
    assert not (root / source_name).exists()
    assert_peers_read(source, 3)  # the file the log names outside is intact


def test_absolute_paths_written_through_the_real_directory_are_protected_under_a_symlinked_root(
    tmp_path: Path,
) -> None:
    real, name = lake_table(tmp_path / "real")
    rewrite_add(real, 1, f"file://{real}/{name}")
    link = tmp_path / "link"
    os.symlink(real, link)
    (real / "orphan.parquet").write_bytes(b"not referenced")
    result = later(link).vacuum(retention=0, force=True, dry_run=False)
    assert result.deleted == ("orphan.parquet",)
    rewrite_add(real, 1, name)
    assert_peers_read(link, 3)


def outside_then_removed(tmp_path: Path, spell: Callable[[Path, str], str]) -> tuple[Path, str]:
    """A table whose version 1 adds a file of a sibling table (spelled by ``spell(source, name)``) and whose
    version 2, written by deltalog, removes it again; both peers read version 2."""
    source, source_name = lake_table(tmp_path / "source")
    root, name = lake_table(tmp_path / "t")
    outside = spell(source, source_name)
    rewrite_add(root, 1, outside)
    os.remove(root / name)
    txn = DeltaLog.for_table(root).start_transaction()
    txn.remove_files([outside])
    txn.commit()
    for peer in (try_deltalake(root), try_duckdb(root)):
        assert isinstance(peer, PeerView) and peer.rows == 2
    return root, outside


def test_restore_refuses_to_probe_a_file_outside_the_root(tmp_path: Path) -> None:
    root, climbing = outside_then_removed(tmp_path, lambda source, name: f"../{source.name}/{name}")
    store = FaultyStore(LocalLogStore(str(root)))
    with pytest.raises(PathOutsideRootError) as info:
        DeltaLog(store, store.root).restore(version=1)
    assert info.value.path == climbing and climbing in str(info.value)
    assert not [c for c in store.calls_to("exists") if ".." in c.path]  # nothing outside was probed
    assert DeltaLog.for_table(root).snapshot().version == 2  # nothing was committed
    assert DeltaTable(str(root)).version() == 2


def test_a_restore_of_an_absolute_path_outside_the_root_skips_its_probe(tmp_path: Path) -> None:
    """An absolute path elsewhere is allowed by the protocol: RESTORE re-adds it without probing it."""
    root, absolute = outside_then_removed(tmp_path, lambda source, name: f"file://{source}/{name}")
    store = FaultyStore(LocalLogStore(str(root)))
    result = DeltaLog(store, store.root).restore(version=1)
    assert result.num_restored == 1
    assert not [c for c in store.calls_to("exists") if Path(absolute).name in c.path]
    lake = try_deltalake(root, rows=False)
    assert isinstance(lake, PeerView) and absolute in lake.files and lake.version == 3


def test_restore_still_reports_a_missing_file_inside_the_root(tmp_path: Path) -> None:
    root, name = lake_table(tmp_path / "t")
    rewrite_add(root, 1, FORMS["dot-dot-segment-uri"](str(root), name))
    txn = DeltaLog.for_table(root).start_transaction()
    txn.remove_files([name])  # the plain spelling removes the unnormalised add: one file, one key
    txn.commit()
    assert DeltaLog.for_table(root).snapshot().num_files == 1
    os.remove(root / name)
    with pytest.raises(DeltaLogError, match=name) as info:
        DeltaLog.for_table(root).restore(version=1)
    assert not isinstance(info.value, PathOutsideRootError)
    assert DeltaLog.for_table(root).snapshot().version == 2
    assert_peers_read(root, 2)
