"""VACUUM on real directories: corpus tables written by Delta Spark and delta-rs, and tables built here.

The corpus tables are copied into ``tmp_path`` first (the corpus stays untouched) and every file is aged
past the retention, so only the log decides what survives. The referenced set each test expects is
computed here from the raw log strings with this file's own decoding (``unquote`` once, a separate Z85
decoder), not with the planner under test, and named files are pinned per table: a ``%``-encoded
partition directory, a deletion vector at a special-character path, a UUID deletion vector.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from deltalog import DeltaLog, InvalidArgumentError, UnsupportedFeatureError
from deltalog import actions as A
from deltalog.cli.main import cli
from deltalog.storage.local import LocalLogStore
from deltalog.storage.uri import store_for
from tests.corpus import corpus_entries, table_path
from tests.unit.logkit import Y2026, protocol
from tests.unit.logwriter import make_table

DAY = 86_400_000
NOW = 1_781_524_800_000  # 2026-06-15T12:00:00Z
OLD = NOW - 30 * DAY
Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def set_mtime(path: Path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def plant(root: Path, rel: str, ms: int = OLD, data: bytes = b"stray") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    set_mtime(path, ms)
    return path


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def at(root: Path, now: int = NOW) -> DeltaLog:
    return DeltaLog.for_table(root, clock=lambda: now / 1000)


def z85_uuid(text: str) -> str:
    """The UUID in a 20-character Z85 string: each 5 characters are one big-endian 32-bit word."""
    words = []
    for i in range(0, 20, 5):
        value = 0
        for c in text[i : i + 5]:
            value = value * 85 + Z85.index(c)
        words.append(value.to_bytes(4, "big"))
    return str(uuid.UUID(bytes=b"".join(words)))


def z85_of(u: uuid.UUID) -> str:
    out = []
    for i in range(0, 16, 4):
        value = int.from_bytes(u.bytes[i : i + 4], "big")
        group = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            group.append(Z85[digit])
        out.append("".join(reversed(group)))
    return "".join(out)


def referenced(root: Path, log: DeltaLog) -> set[str]:
    """Relative names of the files the latest snapshot's adds name, and of their deletion vectors."""
    out: set[str] = set()
    for a in log.snapshot().add_actions():
        out.add(_relative(root, a.path))
        dv = a.deletion_vector
        if dv is not None and dv.storage_type == "u":
            prefix, encoded = dv.path_or_inline_dv[:-20], dv.path_or_inline_dv[-20:]
            out.add((prefix + "/" if prefix else "") + f"deletion_vector_{z85_uuid(encoded)}.bin")
        elif dv is not None and dv.storage_type == "p":
            out.add(_relative(root, dv.path_or_inline_dv))
    return out


def _relative(root: Path, log_path: str) -> str:
    if ":" in log_path.split("/")[0]:
        return Path(unquote(urlsplit(log_path).path)).relative_to(root).as_posix()
    return unquote(log_path)


# ---------------------------------------------------------------------------------------------- corpus
CORPUS_TABLES = [
    "dat/deletion_vectors",
    "delta/basic-dv-no-checkpoint",
    "delta/dv-partitioned-with-checkpoint",
    "delta/hive-deltatbl-special-chars-in-partition-column",
    "delta/log-replay-dv-key-cases",
    "delta/log-replay-special-characters",
    "delta/table-with-dv-large",
    "delta/table-with-dv-small-cm",
    "delta/table-with-dv-special-char",
    "delta-kernel-rs/cdf-table-with-cdc-and-dvs",
    "delta-rs/delta-0.8.0-special-partition",
    "delta-rs/table-with-dv-small",
]
PRESENT = sorted({e["name"] for e in corpus_entries()} & set(CORPUS_TABLES))

#: files that must survive, by table (names as on disk): the cases where a decoding slip deletes live data
PINNED = {
    "dat/deletion_vectors": {
        "part-00000-2a439866-587c-43d5-91fb-dd8e1b3c8ef4-c000.snappy.parquet",
        "deletion_vector_8aebe228-b96c-4831-b0b6-22882eb9a3d3.bin",
    },
    "delta-rs/delta-0.8.0-special-partition": {
        "x=A%2FA/part-00007-b350e235-2832-45df-9918-6cab4f7578f7.c000.snappy.parquet",
        "x=B%20B/part-00015-e9abbc6f-85e9-457b-be8e-e9f5b8a22890.c000.snappy.parquet",
    },
    "delta/hive-deltatbl-special-chars-in-partition-column": {
        "c2=+ %3D%250/part-00000-88ad45a3-9b80-4e66-b474-1748ba085060.c000.snappy.parquet",
        "c2=+ %3D%251/part-00001-3379bbbf-1ab8-4781-8b7e-29038d983f83.c000.snappy.parquet",
    },
    "delta/table-with-dv-special-char": {
        "part-00000-8d24f407-08d3-49ab-9d1c-f7f6c129e882-c000.snappy.parquet",
        "folder&with%special char/test%dv%prefix-deletion_vector_67bc892e-2979-4760-a78c-856aba806564.bin",
    },
    "delta-rs/table-with-dv-small": {"deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"},
}


def corpus_copy(name: str, dest: Path) -> Path:
    """A writable copy, every file aged past the retention; the special-char table gets its real DV path.

    Delta Spark's test fills the ``{{FOLDER_WITH_SPECIAL_CHAR}}`` placeholder with the folder's URI at
    run time; doing the same here makes the ``p`` deletion vector point at the copied file.
    """
    shutil.copytree(table_path(name), dest)
    for p in [dest, *dest.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    for commit in (dest / "_delta_log").glob("*.json"):
        text = commit.read_text()
        if "{{FOLDER_WITH_SPECIAL_CHAR}}" in text:
            folder = quote(str(dest / "folder&with%special char"))
            commit.write_text(text.replace("{{FOLDER_WITH_SPECIAL_CHAR}}", folder))
    for p in dest.rglob("*"):
        if p.is_file():
            set_mtime(p, OLD)
    return dest


@pytest.mark.corpus
@pytest.mark.parametrize("name", PRESENT)
def test_corpus_tables_keep_every_referenced_file_and_lose_the_rest(tmp_path: Path, name: str) -> None:
    root = corpus_copy(name, tmp_path / "t")
    log_before = {p: (root / "_delta_log" / p).read_bytes() for p in files_under(root / "_delta_log")}
    partition_dir = next((d.name for d in root.iterdir() if d.is_dir() and "=" in d.name), None)
    strays = ["stray-old.parquet", "_change_data/cdc-stray.parquet"]
    if partition_dir:
        strays.append(f"{partition_dir}/stray-old.parquet")
    for s in strays:
        plant(root, s)
    keepers = {
        "stray-new.parquet": plant(root, "stray-new.parquet", NOW - DAY),
        "_hidden/old.parquet": plant(root, "_hidden/old.parquet"),
        ".hidden-old.parquet": plant(root, ".hidden-old.parquet"),
        "_delta_log/stray-old.json": plant(root, "_delta_log/stray-old.json"),
    }
    before = files_under(root)
    wanted = referenced(root, at(root))
    assert PINNED.get(name, set()) <= wanted, "the pinned files are what the log references"

    result = at(root).vacuum(dry_run=False)

    after = files_under(root)
    assert set(result.deleted) == before - after
    assert (wanted & before) <= after, "a referenced file was deleted"
    assert PINNED.get(name, set()) <= after
    assert not any(s in after for s in strays)
    assert all(k in after for k in keepers)
    visible_unreferenced = {
        f for f in before if f not in wanted and not f.split("/")[0].startswith(("_delta_log", "_hidden", "."))
    }
    visible_unreferenced = {f for f in visible_unreferenced if not any(p.startswith(".") for p in f.split("/"))}
    assert visible_unreferenced - {"stray-new.parquet"} == set(result.deleted)
    assert {p: (root / "_delta_log" / p).read_bytes() for p in files_under(root / "_delta_log")} == {
        **log_before,
        "stray-old.json": b"stray",
    }
    assert at(root).snapshot().num_files == DeltaLog.for_table(table_path(name)).snapshot().num_files


READABLE = ["delta-rs/delta-0.8.0-special-partition", "delta/hive-deltatbl-special-chars-in-partition-column"]


def rows(root: Path) -> pa.Table:
    table = DeltaTable(str(root)).to_pyarrow_table()
    return table.sort_by([(c, "ascending") for c in table.column_names])


@pytest.mark.corpus
@pytest.mark.parametrize("name", [n for n in PRESENT if n in READABLE])
def test_an_independent_reader_reads_the_same_rows_after_vacuum(tmp_path: Path, name: str) -> None:
    root = corpus_copy(name, tmp_path / "t")
    partition_dir = next(d.name for d in root.iterdir() if d.is_dir() and "=" in d.name)
    plant(root, f"{partition_dir}/stray.parquet")
    expected = rows(root)
    assert expected.num_rows > 0
    at(root).vacuum(dry_run=False)
    assert rows(root) == expected
    assert not (root / partition_dir / "stray.parquet").exists()


@pytest.mark.corpus
@pytest.mark.parametrize("name", [n for n in PRESENT if n == "delta/table-with-dv-small-cm"])
def test_the_dv_file_the_log_does_not_name_is_unreferenced(tmp_path: Path, name: str) -> None:
    """delta/table-with-dv-small-cm ships its DV as ``test%dv%prefix-deletion_vector_<uuid>.bin``; the log's
    20-character descriptor has no prefix, so the file it names is ``deletion_vector_<uuid>.bin`` (the
    corpus manifest notes the mismatch: no reader can resolve that DV either)."""
    root = corpus_copy(name, tmp_path / "t")
    wanted = referenced(root, at(root))
    assert "deletion_vector_b6a98cdd-7843-470d-8897-708cdffa38c5.bin" in wanted
    result = at(root).vacuum(dry_run=False)
    assert result.deleted == ("test%dv%prefix-deletion_vector_b6a98cdd-7843-470d-8897-708cdffa38c5.bin",)


# ---------------------------------------------------------------------------------------------- built tables
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
CONF = {"delta.checkpointInterval": "1000"}


def build(root: Path, partition: str = "p", configuration: dict[str, str] | None = None) -> DeltaLog:
    schema = pa.schema([("id", pa.int64()), (partition, pa.string())])
    log = at(root, OLD)
    log.create(schema, partition_columns=[partition], configuration={**CONF, **(configuration or {})})
    return log


def add(
    root: Path,
    rel_on_disk: str,
    log_path: str | None = None,
    pv: dict[str, str | None] | None = None,
    dv: A.DeletionVector | None = None,
) -> A.Add:
    plant(root, rel_on_disk, OLD, b"data")
    return A.Add(log_path or quote(rel_on_disk, safe="/="), pv or {"p": "1"}, 4, OLD, True, deletion_vector=dv)


def test_tombstones_protect_their_files_for_the_retention_only(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build(root)
    adds = [add(root, f"p=1/f{i}.parquet") for i in range(4)]
    at(root, NOW - 40 * DAY).start_transaction().commit(adds)
    txn = at(root, NOW - 10 * DAY).start_transaction()
    txn.remove_files(["p=1/f0.parquet"])
    txn.commit()
    txn = at(root, NOW - 3 * DAY).start_transaction()
    txn.remove_files(["p=1/f1.parquet"])
    txn.commit()

    week = at(root).vacuum()  # default: delta.deletedFileRetentionDuration, one week
    assert week.dry_run and week.deleted == () and (root / "p=1/f0.parquet").exists()
    assert week.paths == ("p=1/f0.parquet",)  # removed 10 days ago: beyond a week
    month = at(root).vacuum(retention="30 days")
    assert month.paths == ()  # a longer retention also keeps longer-removed files, as in Delta Spark
    with pytest.raises(InvalidArgumentError, match="shorter than"):
        at(root).vacuum(retention=0, dry_run=False)
    assert files_under(root) >= {"p=1/f0.parquet", "p=1/f1.parquet"}
    forced = at(root).vacuum(retention=0, dry_run=False, force=True)
    assert set(forced.deleted) == {"p=1/f0.parquet", "p=1/f1.parquet"}
    assert {f for f in files_under(root) if not f.startswith("_delta_log")} == {"p=1/f2.parquet", "p=1/f3.parquet"}


def test_the_table_property_sets_the_minimum_retention(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build(root, configuration={"delta.deletedFileRetentionDuration": "interval 2 days"})
    plant(root, "p=1/orphan.parquet", NOW - 2 * DAY - 1)
    assert at(root).vacuum().paths == ("p=1/orphan.parquet",)
    assert at(root).vacuum(retention="3d").paths == ()
    with pytest.raises(InvalidArgumentError):
        at(root).vacuum(retention="1d")


def test_paths_are_decoded_once_and_absolute_paths_resolve_under_the_root(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build(root)
    live = [
        add(root, "p=a b/x%y.parquet", "p=a%20b/x%25y.parquet", {"p": "a b"}),
        add(root, "p=1/abs file.parquet", "file://" + quote(str(root / "p=1/abs file.parquet"))),
    ]
    at(root).start_transaction().commit(live)
    plant(root, "p=a%20b/x%25y.parquet")  # the encoded spelling as a real name: not what the log means
    plant(root, "p=a b/x%2525y.parquet")
    result = at(root).vacuum(dry_run=False)
    assert set(result.deleted) == {"p=a%20b/x%25y.parquet", "p=a b/x%2525y.parquet"}
    assert {"p=a b/x%y.parquet", "p=1/abs file.parquet"} <= files_under(root)


def test_deletion_vector_files_of_live_files_and_retained_tombstones_survive(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build(root, configuration={"delta.feature.deletionVectors": "supported"})
    live_id, gone_id, removed_id, stray_id = (uuid.uuid4() for _ in range(4))

    def dv(u: uuid.UUID, prefix: str = "") -> A.DeletionVector:
        return A.DeletionVector("u", prefix + z85_of(u), 36, 2, offset=1)

    plant(root, f"ab/deletion_vector_{live_id}.bin")
    plant(root, f"deletion_vector_{removed_id}.bin")
    plant(root, f"deletion_vector_{gone_id}.bin")
    plant(root, f"ab/deletion_vector_{stray_id}.bin")
    inline = A.DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 1)
    at(root, OLD).start_transaction().commit(
        [
            add(root, "p=1/live.parquet", dv=dv(live_id, "ab")),
            add(root, "p=1/recent.parquet", dv=dv(removed_id)),
            add(root, "p=1/old.parquet", dv=dv(gone_id)),
            add(root, "p=1/inline.parquet", dv=inline),
        ]
    )
    for when, path in ((NOW - 20 * DAY, "p=1/old.parquet"), (NOW - DAY, "p=1/recent.parquet")):
        txn = at(root, when).start_transaction()
        txn.remove_files([path])
        txn.commit()
    result = at(root).vacuum(dry_run=False)
    assert set(result.deleted) == {
        "p=1/old.parquet",
        f"deletion_vector_{gone_id}.bin",
        f"ab/deletion_vector_{stray_id}.bin",
    }
    left = files_under(root)
    assert {f"ab/deletion_vector_{live_id}.bin", f"deletion_vector_{removed_id}.bin", "p=1/recent.parquet"} <= left


def test_hidden_trees_are_never_touched_but_change_data_and_partition_dirs_are_cleaned(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build(root, partition="_p")
    at(root).start_transaction().commit([add(root, "_p=1/live.parquet", pv={"_p": "1"})])
    gone = ["_p=1/old.parquet", "_change_data/cdc-00000.parquet", "_delta_index/idx.bin", "sub/dir/old.parquet"]
    kept = ["_q=1/old.parquet", "_tmp/old.parquet", ".spark-staging/old", "metadata/v1.metadata.json", "p/.x.crc"]
    for rel in gone + kept:
        plant(root, rel)
    outside = tmp_path / "outside"
    plant(outside, "old.parquet")
    os.symlink(outside, root / "linked")
    result = at(root).vacuum(dry_run=False)
    assert set(result.deleted) == set(gone)
    assert all((root / k).exists() for k in kept)
    assert (outside / "old.parquet").exists()
    assert result.plan.protected == 1


def test_progress_reports_listing_and_each_deletion(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build(root)
    for i in range(5):
        plant(root, f"p=1/orphan-{i}.parquet")
    calls: list[tuple[str, int, int]] = []
    result = at(root).vacuum(dry_run=False, progress=lambda s, d, t: calls.append((s, d, t)))
    assert len(result.deleted) == 5
    assert calls[0] == ("list", 5, 5)
    assert calls[1:] == [("delete", i, 5) for i in range(6)]


def test_vacuum_refuses_a_protocol_it_does_not_know_and_accepts_vacuum_protocol_check(tmp_path: Path) -> None:
    # (rowTracking served here until the commit path implemented it in issue 14)
    root = make_table(tmp_path / "t", [[protocol(1, 7, writer_features=["someFutureFeature"]), Y2026.metadata()]])
    plant(root, "orphan.parquet")
    with pytest.raises(UnsupportedFeatureError, match="someFutureFeature"):
        at(root).vacuum(dry_run=False)
    assert (root / "orphan.parquet").exists()
    checked = make_table(
        tmp_path / "v",
        [[protocol(3, 7, ["vacuumProtocolCheck"], ["vacuumProtocolCheck"]), Y2026.metadata()]],
    )
    plant(checked, "orphan.parquet")
    assert at(checked).vacuum(dry_run=False).deleted == ("orphan.parquet",)


def test_walk_over_an_fsspec_store_prunes_hidden_trees(tmp_path: Path) -> None:
    name = f"memory://vacuum-{uuid.uuid4().hex}"
    store = store_for(name)
    for rel in ["a.parquet", "p=1/b.parquet", "_delta_log/0.json", "_tmp/c", "p=1/_sub/d"]:
        store.put(rel, b"x")
    seen = {f.name for f in store.walk("", skip=lambda d: d.rsplit("/", 1)[-1].startswith("_"))}
    assert seen == {"a.parquet", "p=1/b.parquet"}
    assert {f.name for f in store.walk("p=1")} == {"p=1/b.parquet", "p=1/_sub/d"}
    local = LocalLogStore(str(tmp_path))
    assert list(local.walk("missing")) == []


def test_vacuum_through_an_fsspec_store(tmp_path: Path) -> None:
    location = f"memory://vacuum-{uuid.uuid4().hex}"
    log = DeltaLog.for_table(location)
    log.create(SCHEMA, partition_columns=["p"], configuration=CONF)
    log.store.put("p=1/live.parquet", b"data")
    log.store.put("p=1/orphan.parquet", b"data")
    log.start_transaction().commit([A.Add("p=1/live.parquet", {"p": "1"}, 4, 0, True)])
    later = DeltaLog.for_table(location, clock=lambda: (log.now_ms() + DAY) / 1000)
    result = later.vacuum(retention=0, force=True, dry_run=False)
    assert result.deleted == ("p=1/orphan.parquet",)
    assert log.store.exists("p=1/live.parquet") and log.store.exists("_delta_log/00000000000000000001.json")


# ---------------------------------------------------------------------------------------------- CLI
def test_cli_vacuum(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build(root)
    # the CLI runs on the wall clock: make the orphan a year older than that
    orphan = plant(root, "p=1/orphan.parquet", int((time.time() - 365 * 86400) * 1000))
    runner = CliRunner()
    dry = runner.invoke(cli, ["vacuum", str(root), "--json"])
    assert dry.exit_code == 0, dry.output
    doc: dict[str, Any] = json.loads(dry.stdout)
    assert doc["dry_run"] is True and [f["path"] for f in doc["files"]] == ["p=1/orphan.parquet"]
    assert doc["deleted"] == [] and orphan.exists() and doc["retention_ms"] == 7 * DAY
    short = runner.invoke(cli, ["vacuum", str(root), "--retention", "1h", "--apply"])
    assert short.exit_code == 1 and short.stdout == "" and "shorter than" in short.stderr and orphan.exists()
    human = runner.invoke(cli, ["vacuum", str(root), "--retention", "1h", "--force"])
    assert human.exit_code == 0 and "dry run: 1 file would be deleted" in human.stdout and "1h" in human.stdout
    applied = runner.invoke(cli, ["vacuum", str(root), "--apply", "--json"])
    assert applied.exit_code == 0 and json.loads(applied.stdout)["deleted"] == ["p=1/orphan.parquet"]
    assert not orphan.exists()
