"""Deletion-vector tables written by deltalog (issue 14 item 2): appends, DV deletes that remove the file with
its current vector and re-add it with a merged one, the descriptors a writer brings checked before anything is
written, and conflicts keyed by the canonical path as Delta Spark keys them. Every commit passes the protocol
checker; duckdb and deltalake's SQL path read the rows with the vectors applied."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from deltalog import DeltaLog, InvalidCommitError, UnsupportedFeatureError
from deltalog import actions as A
from deltalog.data.dv import inline_deletion_vector, merge_deletion_vector, write_deletion_vector
from deltalog.errors import ConcurrentAppendError, ConcurrentDeleteReadError
from tests.integration.modern_kit import IDS, append, checked, files_for, log_files, rows

DV_ON = {"delta.enableDeletionVectors": "true"}


def dv_table(root: Path) -> DeltaLog:
    log = DeltaLog.for_table(root)
    log.create(IDS, configuration=DV_ON)
    checked(root)
    return log


def only_file(log: DeltaLog) -> A.Add:
    (add,) = list(log.snapshot().add_actions())
    return add


def dv_delete(log: DeltaLog, add: A.Add, deleted: list[int]) -> int:
    """What a DV DELETE commits: remove(path, current DV) + add(path, merged DV), same file fields."""
    txn = log.start_transaction()
    txn.remove_files([add.path])
    dv = merge_deletion_vector(log.store, add.deletion_vector, deleted, 10)
    version = txn.commit([dataclasses.replace(add, deletion_vector=dv)], operation="DELETE").version
    assert version is not None
    return version


def test_enabling_deletion_vectors_lists_the_feature_and_appends_commit(tmp_path: Path) -> None:
    log = dv_table(tmp_path / "t")
    protocol = log.snapshot().protocol
    assert "deletionVectors" in (protocol.reader_features or ()) and "deletionVectors" in (
        protocol.writer_features or ()
    )
    append(log, rows(*range(10)))
    checked(tmp_path / "t", list(range(10)))


def test_dv_deletes_carry_the_current_vector_and_never_shrink(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = dv_table(root)
    append(log, rows(*range(10)))
    dv_delete(log, only_file(log), [0, 3])
    checked(root, [1, 2, 4, 5, 6, 7, 8, 9])
    first = only_file(log)
    dv_delete(log, first, [5])  # merged with the live vector: rows 0 and 3 stay deleted
    checked(root, [1, 2, 4, 6, 7, 8, 9])
    current = only_file(log)
    assert current.deletion_vector is not None and current.deletion_vector.cardinality == 3

    before = log_files(root)
    stale = dataclasses.replace(current, deletion_vector=first.deletion_vector).remove(1, True)
    smaller = dataclasses.replace(current, deletion_vector=write_deletion_vector(log.store, [1], 10))
    with pytest.raises(InvalidCommitError, match="not the file's current one") as info:
        log.start_transaction().commit([stale], operation="DELETE")  # names a vector that is no longer live
    assert info.value.rule == "deletion-vector"
    with pytest.raises(InvalidCommitError, match="shrinks from 3 deleted rows to 1"):
        log.start_transaction().commit([current.remove(1, True), smaller], operation="DELETE")
    with pytest.raises(InvalidCommitError, match="without removing the live"):
        log.start_transaction().commit([smaller])  # a second logical file for the same path
    assert log_files(root) == before
    checked(root, [1, 2, 4, 6, 7, 8, 9])


def test_a_writers_descriptors_are_checked_before_anything_is_written(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = dv_table(root)
    append(log, rows(*range(10)))
    add = only_file(log)
    txn_remove = add.remove(1, True)
    no_count = dataclasses.replace(add, stats=None, deletion_vector=inline_deletion_vector([1], 10))
    too_many = dataclasses.replace(
        add, deletion_vector=dataclasses.replace(inline_deletion_vector([1], 10), cardinality=11)
    )
    bad_kind = dataclasses.replace(add, deletion_vector=A.DeletionVector("x", "abc", 10, 1))
    relative_p = dataclasses.replace(add, deletion_vector=A.DeletionVector("p", "dv.bin", 10, 1, offset=1))
    before = log_files(root)
    for bad, why in [
        (no_count, "numRecords"),
        (too_many, "deletes 11 rows of a file with 10"),
        (bad_kind, "storageType"),
        (relative_p, "absolute path"),
    ]:
        with pytest.raises(InvalidCommitError, match=why):
            log.start_transaction().commit([txn_remove, bad], operation="DELETE")
    assert log_files(root) == before
    # an inline vector with an accurate count commits, and both peers apply it
    good = dataclasses.replace(add, deletion_vector=inline_deletion_vector([9], 10))
    log.start_transaction().commit([txn_remove, good], operation="DELETE")
    checked(root, list(range(9)))


def test_no_new_vector_while_deletion_vectors_are_disabled(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = dv_table(root)
    append(log, rows(*range(10)))
    dv_delete(log, only_file(log), [0])
    log.set_properties({"delta.enableDeletionVectors": "false"})
    add = only_file(log)
    before = log_files(root)
    with pytest.raises(InvalidCommitError, match=r"delta\.enableDeletionVectors is not true"):
        dv_delete(log, add, [1])
    assert log_files(root) == before
    append(log, rows(10, 11))  # appends stay legal, the live vector stays applied
    txn = log.start_transaction()
    txn.remove_files([add.path])  # a whole-file remove names the live vector
    txn.commit()
    checked(root, [10, 11])


def test_a_vector_on_a_table_without_the_feature_is_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS)
    append(log, rows(*range(10)))
    add = only_file(log)
    with pytest.raises(UnsupportedFeatureError) as info:
        log.start_transaction().commit(
            [add.remove(1, True), dataclasses.replace(add, deletion_vector=inline_deletion_vector([1], 10))]
        )
    assert info.value.feature == "deletionVectors"
    checked(root, list(range(10)))


def test_a_winners_dv_delete_of_a_file_we_read_conflicts_by_path(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = dv_table(root)
    append(log, rows(*range(10)))
    reader = DeltaLog.for_table(root).start_transaction()
    reader.read()  # reads the file (path, no DV) to derive new rows from it
    derived = files_for(log, rows(100))
    target = only_file(log)
    dv_delete(DeltaLog.for_table(root), target, [2])  # the winner changes its DV: same path, other file key
    # Spark checks the winner's re-add before its remove; either names the file we read
    with pytest.raises((ConcurrentAppendError, ConcurrentDeleteReadError), match=target.path):
        reader.commit(derived)
    checked(root, [0, 1, 3, 4, 5, 6, 7, 8, 9])


def test_racing_appends_and_a_dv_delete_all_land(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = dv_table(root)
    append(log, rows(*range(10)))
    target = only_file(log)
    appenders = [DeltaLog.for_table(root).start_transaction() for _ in range(3)]
    # WriteSerializable, as Databricks' default: concurrent blind appends may order before the delete
    deleter = DeltaLog.for_table(root).start_transaction(isolation="WriteSerializable")
    deleter.remove_files([target.path])
    dv = merge_deletion_vector(log.store, None, [0, 1], 10)
    adds = [files_for(log, rows(20 + i)) for i in range(3)]
    for txn, files in zip(appenders, adds, strict=True):
        txn.commit(files)  # blind appends: each retries past the others
        checked(root)
    result = deleter.commit([dataclasses.replace(target, deletion_vector=dv)], operation="DELETE")
    assert result.attempts > 1  # it read version 1 and won after the appends
    checked(root, [2, 3, 4, 5, 6, 7, 8, 9, 20, 21, 22])
