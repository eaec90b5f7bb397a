"""log.merge and log.update: Delta Spark's semantics, only the rows that change touched, one commit.

With deletion vectors the files holding updated or deleted rows keep their data and get (merged) vectors, the
new values and inserts go to new files; without them only the touched files are rewritten, chosen by the
condition's target-only conjuncts and the source's key values against partitions and statistics. commitInfo
carries Delta Spark's parameters and metric names, and ``CommitResult.metrics`` the same metrics. Duplicate
matches fail exactly where Delta Spark fails, naming the key, with nothing written. Every refusal is typed and
named, and leaves the table and its directory as they were. Generated columns are recomputed and the table's
constraints checked on every written row; ``schema_mode="merge"`` adds the source's new columns; sources come
in every form ``deltalog.write`` takes, one-shot readers included.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable
from deltalake.schema import Field, PrimitiveType, Schema

import deltalog
from deltalog import DeltaLog, DuplicateMatchError
from deltalog import actions as A
from deltalog.errors import (
    ConstraintViolationError,
    InvalidArgumentError,
    InvalidCommitError,
    InvalidExpressionError,
    NotNullViolationError,
    UnsupportedFeatureError,
)
from tests.integration.dml_kit import assert_everyone_reads, commit_info, files_on_disk
from tests.integration.restore_kit import add_json, data_file, field, metadata_json, struct_type, write_commit

ROWS = 3000
DV = {"delta.enableDeletionVectors": "true"}


def numbers(n: int = ROWS) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "amount": pa.array([float(i) for i in range(n)], pa.float64()),
            "name": pa.array([f"n{i}" for i in range(n)], pa.string()),
        }
    )


def table(root: Path, configuration: dict[str, str] | None = None, n: int = ROWS) -> DeltaLog:
    """``n`` rows in files of 300 ids each (written in id order)."""
    log = DeltaLog.for_table(root)
    log.create(numbers(0).schema, configuration=configuration or {})
    for start in range(0, n, 300):
        deltalog.write(numbers(n).slice(start, 300), root)
    return log


def upsert_source(matched: list[int], new: list[int]) -> pa.Table:
    ids = np.array([*matched, *new], dtype=np.int64)
    return pa.table({"id": ids, "amount": -ids.astype(np.float64), "name": pa.array([f"s{i}" for i in ids])})


def expected_upsert(base: pa.Table, source: pa.Table) -> list[dict[str, Any]]:
    rows = {r["id"]: r for r in base.to_pylist()}
    rows.update({r["id"]: r for r in source.to_pylist()})
    return list(rows.values())


def test_an_upsert_with_deletion_vectors_keeps_the_touched_files_and_writes_only_the_changed_rows(
    tmp_path: Path,
) -> None:
    root = tmp_path / "t"
    log = table(root, DV)
    before = {a.path for a in log.snapshot().add_actions()}
    source = upsert_source(list(range(5, ROWS, 97)), [ROWS + 1, ROWS + 7])
    result = (
        log.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert_everyone_reads(root, expected_upsert(numbers(), source))
    adds = [a for a in result.actions if isinstance(a, A.Add)]
    readded = [a for a in adds if a.path in before]
    new = [a for a in adds if a.path not in before]
    # every file holding an updated row is re-added with a deletion vector; nothing is rewritten
    assert readded and all(a.deletion_vector is not None for a in readded)
    assert {a.path for a in result.actions if isinstance(a, A.Remove)} == {a.path for a in readded}
    assert len(list(root.glob("deletion_vector_*.bin"))) == 1
    info = commit_info(root)
    assert info["operation"] == "MERGE"
    assert info["operationParameters"] == {
        "predicate": '["t.id = s.id"]',
        "matchedPredicates": '[{"actionType":"update"}]',
        "notMatchedPredicates": '[{"actionType":"insert"}]',
        "notMatchedBySourcePredicates": "[]",
    }
    metrics = info["operationMetrics"]
    assert metrics == dict(result.metrics)
    matched = len(range(5, ROWS, 97))
    assert metrics["numSourceRows"] == str(source.num_rows)
    assert metrics["numTargetRowsUpdated"] == metrics["numTargetRowsMatchedUpdated"] == str(matched)
    assert metrics["numTargetRowsInserted"] == "2" and metrics["numTargetRowsCopied"] == "0"
    assert metrics["numTargetRowsDeleted"] == "0" and metrics["numOutputRows"] == str(matched + 2)
    assert metrics["numTargetDeletionVectorsAdded"] == str(len(readded)) and metrics["numTargetFilesRemoved"] == "0"
    assert metrics["numTargetFilesAdded"] == str(len(new))
    assert set(metrics) >= {"executionTimeMs", "scanTimeMs", "rewriteTimeMs", "materializeSourceTimeMs"}

    # a second merge over the same files: the vectors grow (merged with the ones they have), never shrink
    again = upsert_source(list(range(6, ROWS, 97)), [])
    log.merge(again, "t.id = s.id").when_matched_delete().execute()
    second = commit_info(root)["operationMetrics"]
    assert int(second["numTargetDeletionVectorsUpdated"]) > 0 and second["numTargetRowsDeleted"] == str(again.num_rows)
    survivors = [r for r in expected_upsert(numbers(), source) if r["id"] not in set(range(6, ROWS, 97))]
    assert_everyone_reads(root, survivors)


def test_without_deletion_vectors_only_the_files_holding_source_keys_are_rewritten(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root)
    files = {a.path: a for a in log.snapshot().add_actions()}
    source = upsert_source([310, 333, 599], [])  # ids 300..599: the second file only
    result = log.merge(source, "t.id = s.id").when_matched_update({"amount": "s.amount", "name": "'x'"}).execute()
    removed = [a for a in result.actions if isinstance(a, A.Remove)]
    assert len(removed) == 1
    holder = files[removed[0].path]
    assert json.loads(holder.stats or "{}")["minValues"]["id"] == 300
    metrics = result.metrics
    assert metrics["numTargetFilesRemoved"] == "1" and metrics["numTargetRowsCopied"] == "297"
    assert metrics["numTargetRowsUpdated"] == "3" and metrics["numOutputRows"] == "300"
    expected = [
        {**r, "amount": -float(r["id"]), "name": "x"} if r["id"] in (310, 333, 599) else r
        for r in numbers().to_pylist()
    ]
    assert_everyone_reads(root, expected)


def test_update_changes_matching_rows_through_the_same_machinery(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, DV)
    result = log.update({"name": "'closed'", "amount": "amount * 2"}, "id % 100 = 7")
    expected = [
        {**r, "name": "closed", "amount": r["amount"] * 2} if r["id"] % 100 == 7 else r for r in numbers().to_pylist()
    ]
    assert_everyone_reads(root, expected)
    info = commit_info(root)
    assert info["operation"] == "UPDATE" and info["operationParameters"] == {"predicate": '["id % 100 = 7"]'}
    metrics = info["operationMetrics"]
    assert metrics == dict(result.metrics)
    assert metrics["numUpdatedRows"] == "30" and metrics["numCopiedRows"] == "0"
    assert metrics["numDeletionVectorsAdded"] == "10" and metrics["numAddedFiles"] == "1"
    assert "numTargetRowsUpdated" not in metrics and "numRemovedBytes" in metrics
    # no predicate: every row; nothing matching: nothing committed
    everything = log.update({"amount": "0.0"})
    assert everything.metrics["numUpdatedRows"] == str(ROWS)
    assert commit_info(root)["operationParameters"] == {"predicate": "[]"}
    nothing = log.update({"amount": "1.0"}, "id < 0")
    assert nothing.version is None and nothing.skipped and nothing.metrics["numUpdatedRows"] == "0"


def _reader(data: pa.Table) -> Iterator[pa.RecordBatch]:
    yield from data.to_batches(max_chunksize=2)


@pytest.mark.parametrize("kind", ["table", "batches", "reader", "generator", "pandas"])
def test_every_source_form_deltalog_write_takes(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "t"
    log = table(root, n=600)
    source = upsert_source([1, 2, 599], [700, 701])
    given: Any = {
        "table": source,
        "batches": source.to_batches(max_chunksize=2),
        "reader": pa.RecordBatchReader.from_batches(source.schema, source.to_batches(max_chunksize=2)),
        "generator": _reader(source),
        "pandas": source.to_pandas(),
    }[kind]
    log.merge(given, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert_everyone_reads(root, expected_upsert(numbers(600), source))


# ---------------------------------------------------------------------------------------------- duplicates
def _dupes(root: Path) -> tuple[DeltaLog, pa.Table]:
    log = table(root, n=600)
    source = pa.table({"id": pa.array([7, 7, 9], pa.int64()), "amount": [1.0, 200.0, 3.0], "name": ["a", "b", "c"]})
    return log, source


def test_a_target_row_two_source_rows_match_fails_naming_its_key_before_anything_is_written(
    tmp_path: Path,
) -> None:
    root = tmp_path / "t"
    log, source = _dupes(root)
    before, version = files_on_disk(root), log.latest_version()
    with pytest.raises(DuplicateMatchError) as info:
        log.merge(source, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert info.value.key == {"id": 7} and info.value.matches == 2 and info.value.path.endswith(".parquet")
    assert files_on_disk(root) == before and log.latest_version() == version
    # with NOT MATCHED clauses any two matches fail, whatever the matched clause's condition says
    with pytest.raises(DuplicateMatchError):
        (
            log.merge(source, "t.id = s.id")
            .when_matched_update({"amount": "s.amount"}, "s.amount > 100")
            .when_not_matched_insert_all()
            .execute()
        )
    # a conditional delete both pairs satisfy fails too
    with pytest.raises(DuplicateMatchError):
        log.merge(source, "t.id = s.id").when_matched_delete("s.amount > 0").execute()
    assert files_on_disk(root) == before and log.latest_version() == version


def test_delta_sparks_exceptions_to_the_duplicate_rule(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log, source = _dupes(root)
    # matched-only: only pairs some matched clause's condition holds for count (one here)
    log.merge(source, "t.id = s.id").when_matched_update({"amount": "s.amount"}, "s.amount > 100").execute()
    rows = {r["id"]: r for r in DeltaLog.for_table(root).snapshot().to_arrow().to_pylist()}
    assert rows[7]["amount"] == 200.0 and rows[9]["amount"] == 9.0
    # the only matched clause an unconditional delete: every pair deletes the same row
    result = log.merge(source, "t.id = s.id").when_matched_delete().execute()
    assert result.metrics["numTargetRowsDeleted"] == "2"
    # insert-only: Delta Spark's insert-only path pairs nothing with the target and checks nothing
    fresh = pa.table({"id": pa.array([9, 1000, 1000], pa.int64()), "amount": [1.0, 2.0, 3.0], "name": ["x"] * 3})
    inserted = log.merge(fresh, "t.id = s.id").when_not_matched_insert_all().execute()
    assert inserted.metrics["numTargetRowsInserted"] == "3"  # 9 was deleted above: it is new again
    expected = [r for r in numbers(600).to_pylist() if r["id"] not in (7, 9)]
    expected = [{**r, "amount": 200.0, "name": "b"} if r["id"] == 7 else r for r in expected]
    assert_everyone_reads(root, [*expected, *fresh.to_pylist()])


# ---------------------------------------------------------------------------------------------- refusals
REFUSALS = [
    ("t.id = s.missing", {}, InvalidExpressionError, "missing"),
    ("x.id = s.id", {}, InvalidExpressionError, "x"),
    ("id = s.id", {}, InvalidExpressionError, "ambiguous"),
    ("t.id = s.id", {"nope": "s.amount"}, InvalidExpressionError, "nope"),
    ("t.id = s.id", {"amount": "s.name"}, InvalidExpressionError, "amount"),
    ("t.id = s.id", {"id": "t.name"}, InvalidExpressionError, "id"),
]


@pytest.mark.parametrize(("predicate", "updates", "error", "named"), REFUSALS)
def test_bad_statements_are_refused_by_name_with_nothing_written(
    tmp_path: Path, predicate: str, updates: dict[str, str], error: type[Exception], named: str
) -> None:
    root = tmp_path / "t"
    log = table(root, n=300)
    before, version = files_on_disk(root), log.latest_version()
    builder = log.merge(upsert_source([1], [5000]), predicate)
    builder = builder.when_matched_update(updates) if updates else builder.when_matched_update_all()
    with pytest.raises(error, match=named):
        builder.when_not_matched_insert_all().execute()
    assert files_on_disk(root) == before and log.latest_version() == version


def test_clause_order_and_shape_are_delta_sparks(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, n=300)
    source = upsert_source([1], [])
    with pytest.raises(InvalidArgumentError, match="only the last one may omit its condition"):
        log.merge(source, "t.id = s.id").when_matched_delete().when_matched_update_all().execute()
    with pytest.raises(InvalidArgumentError, match="at least one WHEN clause"):
        log.merge(source, "t.id = s.id").execute()
    with pytest.raises(InvalidArgumentError, match="needs updates"):
        log.merge(source, "t.id = s.id").when_matched_update({})
    with pytest.raises(InvalidExpressionError):  # a NOT MATCHED clause sees the source only
        log.merge(source, "t.id = s.id").when_not_matched_insert({"id": "t.id"}).execute()
    with pytest.raises(InvalidExpressionError):  # a NOT MATCHED BY SOURCE clause sees the target only
        log.merge(source, "t.id = s.id").when_not_matched_by_source_update({"amount": "s.amount"}).execute()
    with pytest.raises(InvalidArgumentError, match="max_memory"):
        log.merge(source, "t.id = s.id", max_memory=10).when_matched_delete().execute()
    with pytest.raises(InvalidArgumentError, match="schema_mode"):
        log.merge(source, "t.id = s.id", schema_mode="overwrite").when_matched_delete().execute()
    assert log.latest_version() == 1


def test_constraints_and_not_null_are_checked_on_every_written_row(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.float64()), ("name", pa.string())])
    log = DeltaLog.for_table(root)
    log.create(schema, configuration=DV)
    deltalog.write(numbers(300).cast(schema), root)
    log.add_constraint("positive", "amount >= 0")
    before, version = files_on_disk(root), log.latest_version()
    with pytest.raises(ConstraintViolationError, match="positive"):
        log.merge(upsert_source([3], []), "t.id = s.id").when_matched_update_all().execute()
    with pytest.raises(ConstraintViolationError, match="positive"):
        log.update({"amount": "amount - 1000"}, "id = 150")
    with pytest.raises(NotNullViolationError):
        log.merge(upsert_source([], [301]), "t.id = s.id").when_not_matched_insert({"amount": "s.id"}).execute()
    assert files_on_disk(root) == before and log.latest_version() == version


def test_append_only_tables_refuse_merges_that_change_rows_but_take_inserts(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, {"delta.appendOnly": "true"}, n=300)
    with pytest.raises(InvalidCommitError, match="append-only"):
        log.merge(upsert_source([1], []), "t.id = s.id").when_matched_update_all().execute()
    with pytest.raises(InvalidCommitError, match="append-only"):
        log.update({"amount": "0.0"})
    log.merge(upsert_source([1], [400]), "t.id = s.id").when_not_matched_insert_all().execute()
    assert_everyone_reads(root, [*numbers(300).to_pylist(), *upsert_source([], [400]).to_pylist()])


def test_identity_columns_are_never_assigned_by_an_update_and_keep_their_values(tmp_path: Path) -> None:
    """Assigning an identity column in an update clause is refused naming it, even where explicit inserts are
    allowed (Delta Spark's DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED); any other update keeps the values."""
    root = tmp_path / "t"
    root.mkdir()
    identity = {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": True}
    schema = struct_type(field("id", "long", identity), field("v", "long"))
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["identityColumns"]}
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([10, 20], pa.int64())})
    write_commit(
        root, 0, [{"protocol": protocol}, metadata_json(schema, [], {}), add_json(data_file(root, "f.parquet", rows))]
    )
    log = DeltaLog.for_table(root)
    source = pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([5], pa.int64())})
    with pytest.raises(UnsupportedFeatureError, match=r"'id' is an identity column.*UPDATE_NOT_SUPPORTED") as info:
        log.merge(source, "t.v = s.v").when_matched_update({"id": "s.id"}).execute()
    assert info.value.feature == "identityColumns"
    with pytest.raises(UnsupportedFeatureError, match="UPDATE_NOT_SUPPORTED"):
        log.update({"id": "id + 1"})
    assert log.latest_version() == 0 and files_on_disk(root) == {"f.parquet"}
    log.update({"v": "v + 1"})
    assert_everyone_reads(root, [{"id": 1, "v": 11}, {"id": 2, "v": 21}])


# ---------------------------------------------------------------------------------------------- columns
def test_generated_columns_are_recomputed_from_the_new_row(tmp_path: Path) -> None:
    root = tmp_path / "t"
    long = PrimitiveType("long")
    DeltaTable.create(
        str(root),
        schema=Schema(
            [
                Field("id", long),
                Field("v", long),
                Field("twice", long, metadata={"delta.generationExpression": "v * 2"}),
            ]
        ),
        configuration=DV,
    )
    deltalog.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array([10, 20, 30], pa.int64())}), root)
    log = DeltaLog.for_table(root)
    source = pa.table({"id": pa.array([2, 4], pa.int64()), "v": pa.array([200, 400], pa.int64())})
    log.merge(source, "t.id = s.id").when_matched_update({"v": "s.v"}).when_not_matched_insert_all().execute()
    log.update({"v": "v + 1"}, "id = 1")
    assert_everyone_reads(
        root,
        [
            {"id": 1, "v": 11, "twice": 22},
            {"id": 2, "v": 200, "twice": 400},
            {"id": 3, "v": 30, "twice": 60},
            {"id": 4, "v": 400, "twice": 800},
        ],
    )


def test_schema_mode_merge_adds_the_sources_new_columns(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, n=300)
    source = upsert_source([1], [500]).append_column("extra", pa.array(["e1", "e500"]))
    with pytest.raises(InvalidExpressionError):  # without schema evolution a missing target column is an error
        log.merge(source.drop_columns(["name"]), "t.id = s.id").when_matched_update_all().execute()
    log.merge(
        source, "t.id = s.id", schema_mode="merge"
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    assert [f.name for f in DeltaLog.for_table(root).snapshot().to_arrow().schema] == ["id", "amount", "name", "extra"]
    expected = [{**r, "extra": None} for r in numbers(300).to_pylist() if r["id"] != 1]
    expected += [
        {**r, "extra": e} for r, e in zip(source.drop_columns(["extra"]).to_pylist(), ["e1", "e500"], strict=True)
    ]
    assert_everyone_reads(root, expected)


def test_assignments_follow_spark_store_assignment(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, n=300)
    # an int into a double, a CASE over both sides, a swap (every assignment reads the old row)
    source = pa.table({"id": pa.array([1, 2], pa.int32()), "amount": pa.array([5, 6], pa.int32())})
    (
        log.merge(source, "t.id = s.id")
        .when_matched_update(
            {
                "amount": "CASE WHEN s.amount > 5 THEN s.amount ELSE t.amount * 10 END",
                "name": "CAST(t.amount AS STRING)",
            }
        )
        .execute()
    )
    rows = {r["id"]: r for r in DeltaLog.for_table(root).snapshot().to_arrow().to_pylist()}
    assert rows[1] == {"id": 1, "amount": 10.0, "name": "1.0"} and rows[2] == {"id": 2, "amount": 6.0, "name": "2.0"}


def test_a_merge_that_changes_nothing_commits_nothing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, n=300)
    result = log.merge(upsert_source([5000], []), "t.id = s.id").when_matched_update_all().execute()
    assert result.version is None and result.skipped and result.metrics["numSourceRows"] == "1"
    assert log.latest_version() == 1
    assert pc.sum(DeltaLog.for_table(root).snapshot().to_arrow()["id"]).as_py() == sum(range(300))


def test_a_table_with_every_modern_feature(tmp_path: Path) -> None:
    """Column mapping, in-commit timestamps, clustering, change data feed, deletion vectors and row tracking at
    once: a merge and an update commit what each feature asks (physical names, a later in-commit timestamp,
    clustering statistics, change files, vectors, kept row ids), and the protocol checker and both peers read
    the result."""
    root = tmp_path / "t"
    configuration = {
        "delta.columnMapping.mode": "name",
        "delta.enableInCommitTimestamps": "true",
        "delta.enableChangeDataFeed": "true",
        "delta.enableRowTracking": "true",
        **DV,
    }
    log = DeltaLog.for_table(root)
    log.create(numbers(0).schema, configuration=configuration, clustering_columns=["id"])
    for start in range(0, 600, 200):
        deltalog.write(numbers(600).slice(start, 200), root)
    source = upsert_source([5, 205, 405], [900])
    result = log.merge(source, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert any(isinstance(a, A.Cdc) for a in result.actions)
    new = [a for a in result.actions if isinstance(a, A.Add) and a.deletion_vector is None]
    assert new and all(a.path.split("/")[0] != "id" for a in new)  # random prefixes, no logical names
    info = commit_info(root)
    assert isinstance(info.get("inCommitTimestamp"), int) and info["tags"] == {"delta.rowTracking.preserved": "true"}
    log.update({"name": "upper(name)"}, "id < 3")
    expected = expected_upsert(numbers(600), source)
    expected = [{**r, "name": r["name"].upper()} if r["id"] < 3 else r for r in expected]
    assert_everyone_reads(root, expected)


def test_a_spilled_source_gives_the_same_table(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Past its share of max_memory the source is spilled and the updates that read it wait on disk, bucketed
    by source partition: the same rows, change files and metrics as an in-memory source gives."""
    caplog.set_level(logging.INFO, logger="deltalog.dml.merge.source")
    results = []
    for name, budget in (("in-memory", None), ("spilled", 16 << 20)):
        root = tmp_path / name
        log = table(root, {**DV, "delta.enableChangeDataFeed": "true"}, n=3000)
        ids = np.arange(0, 400_000, 2, dtype=np.int64)  # 1,500 of them match, the rest are new
        source = pa.table({"id": ids, "amount": ids * 0.25, "name": pa.array(["s" * 20] * len(ids))})
        given = source if budget is None else source.to_batches(max_chunksize=10_000)  # a table is never spilled
        result = (
            log.merge(given, "t.id = s.id", max_memory=budget)
            .when_matched_update({"amount": "s.amount + t.amount"}, "s.id % 4 = 0")
            .when_matched_delete()
            .when_not_matched_insert({"id": "s.id", "name": "'new'"}, "s.id < 10000")
            .execute()
        )
        rows = sorted(DeltaLog.for_table(root).snapshot().to_arrow().to_pylist(), key=lambda r: r["id"])
        metrics = {k: v for k, v in result.metrics.items() if not k.endswith("TimeMs")}
        results.append((rows, metrics))
        assert ("spilling" in caplog.text) == (budget is not None)
    assert results[0] == results[1]
    rows, metrics = results[0]
    assert metrics["numTargetRowsUpdated"] == "750" and metrics["numTargetRowsDeleted"] == "750"
    assert metrics["numTargetRowsInserted"] == str(len(range(3000, 10000, 2)))
